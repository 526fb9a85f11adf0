package sqllock

import "testing"

// TestPgConfigParsesOnce: a URL parsed moments ago is not parsed again
// (CheckURL, Hosts and Open share one pgx.ParseConfig), each caller gets
// a copy of its own, and a change of the PG* variables pgx reads parses
// it again.
func TestPgConfigParsesOnce(t *testing.T) {
	const raw = "postgres://u@db.example/x?sslmode=disable"
	a, err := pgConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	at := pgParsed.at
	a.RuntimeParams["application_name"] = "mine"
	b, err := pgConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	if pgParsed.at != at {
		t.Errorf("the URL was parsed again moments later")
	}
	if b == a || b.RuntimeParams["application_name"] == "mine" {
		t.Errorf("the second caller shares the first's config")
	}
	t.Setenv("PGAPPNAME", "other")
	c, err := pgConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	if pgParsed.at == at || c.RuntimeParams["application_name"] != "other" {
		t.Errorf("a changed PGAPPNAME did not parse the URL again: application_name %q", c.RuntimeParams["application_name"])
	}
}
