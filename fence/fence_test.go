package fence_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
)

type stored struct {
	token uint64
	owner string
}

func TestAdvanceRule(t *testing.T) {
	cases := []struct {
		name      string
		before    *stored // nil: the resource was never written
		token     uint64
		owner     string
		wantStale bool
	}{
		{name: "first write", token: 7, owner: "a"},
		{name: "first write with token 0", token: 0, owner: "a"},
		{name: "higher token", before: &stored{5, "a"}, token: 6, owner: "b"},
		{name: "higher token same owner", before: &stored{5, "a"}, token: 6, owner: "a"},
		{name: "equal token same owner", before: &stored{5, "a"}, token: 5, owner: "a"},
		{name: "equal token other owner", before: &stored{5, "a"}, token: 5, owner: "b", wantStale: true},
		// MySQL's default collations would call these equal owners.
		{name: "equal token owner differs in case", before: &stored{5, "a"}, token: 5, owner: "A", wantStale: true},
		{name: "equal token owner with trailing space", before: &stored{5, "a"}, token: 5, owner: "a ", wantStale: true},
		{name: "lower token", before: &stored{5, "a"}, token: 4, owner: "b", wantStale: true},
		{name: "lower token same owner", before: &stored{5, "a"}, token: 4, owner: "a", wantStale: true},
		{name: "zero after one", before: &stored{1, "a"}, token: 0, owner: "b", wantStale: true},
		{name: "largest token", before: &stored{5, "a"}, token: fence.MaxToken, owner: "b"},
	}
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		for _, c := range cases {
			resource := "rule/" + c.name
			if c.before != nil {
				if err := b.write(ctx, b.table, resource, c.before.token, c.before.owner, "before"); err != nil {
					t.Fatalf("%s: first write (%d, %q) = %v", c.name, c.before.token, c.before.owner, err)
				}
				if got := fence.Accepts(c.before.token, c.before.owner, c.token, c.owner); got == c.wantStale {
					t.Errorf("%s: Accepts(%d, %q, %d, %q) = %v, want %v", c.name, c.before.token, c.before.owner, c.token, c.owner, got, !c.wantStale)
				}
			}
			err := b.write(ctx, b.table, resource, c.token, c.owner, "after")
			want := stored{c.token, c.owner}
			wantValue := "after"
			if c.wantStale {
				want, wantValue = *c.before, "before"
				var se *fence.StaleError
				if !errors.Is(err, baton.ErrStaleToken) || !errors.As(err, &se) {
					t.Errorf("%s: Advance(%q, %d, %q) = %v, want a *StaleError wrapping %v", c.name, resource, c.token, c.owner, err, baton.ErrStaleToken)
				} else if *se != (fence.StaleError{Resource: resource, Token: c.token, Owner: c.owner, StoredToken: c.before.token, StoredOwner: c.before.owner}) {
					t.Errorf("%s: StaleError = %+v, want the write and the stored (%d, %q)", c.name, *se, c.before.token, c.before.owner)
				}
			} else if err != nil {
				t.Errorf("%s: Advance(%q, %d, %q) = %v, want nil", c.name, resource, c.token, c.owner, err)
			}
			if tok, owner := b.current(t, resource); (stored{tok, owner}) != want {
				t.Errorf("%s: Current(%q) = (%d, %q), want (%d, %q)", c.name, resource, tok, owner, want.token, want.owner)
			}
			if v, _ := b.get(t, resource); v != wantValue {
				t.Errorf("%s: business row = %q, want %q", c.name, v, wantValue)
			}
		}
	})
}

// TestRejectedWriteChangesNothing writes business rows before the fence
// check (the worst order) and shows that the rejection plus the rollback
// it calls for leave both the business row and the fence as they were.
func TestRejectedWriteChangesNothing(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		const res = "orders/1001"
		if err := b.write(ctx, b.table, res, 502, "B", "PAID by B"); err != nil {
			t.Fatalf("B's write with 502 = %v", err)
		}

		tx, err := b.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatalf("BeginTx = %v", err)
		}
		if err := b.put(ctx, tx, res, "CANCELLED by A"); err != nil {
			t.Fatalf("A's business write = %v", err)
		}
		err = b.table.Advance(ctx, tx, res, 501, "A")
		if !errors.Is(err, baton.ErrStaleToken) {
			t.Errorf("Advance(%q, 501, A) = %v, want %v", res, err, baton.ErrStaleToken)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatalf("Rollback = %v", err)
		}

		// Through Write, the business function never runs.
		ran := false
		err = b.table.Write(ctx, b.db, res, 501, "A", func(tx *sql.Tx) error {
			ran = true
			return b.put(ctx, tx, res, "CANCELLED by A")
		})
		if !errors.Is(err, baton.ErrStaleToken) || ran {
			t.Errorf("Write(%q, 501, A) = %v (fn ran: %v), want %v without running fn", res, err, ran, baton.ErrStaleToken)
		}

		if v, h := b.get(t, res); v != "PAID by B" || len(h) != 1 {
			t.Errorf("business row = %q, history %q, want %q written once", v, h, "PAID by B")
		}
		if tok, owner := b.current(t, res); tok != 502 || owner != "B" {
			t.Errorf("Current(%q) = (%d, %q), want (502, B)", res, tok, owner)
		}
	})
}

// TestWriteRollsBackOnError: an error from the business function is
// returned unchanged and the fence advance is rolled back with it.
func TestWriteRollsBackOnError(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		const res = "jobs/j7"
		if err := b.write(ctx, b.table, res, 10, "A", "v10"); err != nil {
			t.Fatalf("first write = %v", err)
		}
		boom := errors.New("business rule refused")
		err := b.table.Write(ctx, b.db, res, 11, "B", func(tx *sql.Tx) error {
			if err := b.put(ctx, tx, res, "v11"); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Errorf("Write(%q, 11, B) = %v, want %v unchanged", res, err, boom)
		}
		if tok, owner := b.current(t, res); tok != 10 || owner != "A" {
			t.Errorf("Current(%q) = (%d, %q), want (10, A): the fence advance must roll back", res, tok, owner)
		}
		if v, _ := b.get(t, res); v != "v10" {
			t.Errorf("business row = %q, want v10", v)
		}
	})
}

// TestPausedHolderStories replays two paused-holder stories — a stock
// adjustment (A holds 501 and pauses, B adjusts with 502, A's late 501
// write arrives) and the export-88 publish (A 701 loses the lock, B 702
// publishes and retries after a lost response, A repeats its publish) — on
// the fenced table and on the unfenced twin: the fenced resource keeps the
// newer holder's write, the unfenced one lets the paused holder's late
// write overwrite it — the negative control that shows the test can tell
// the two apart.
func TestPausedHolderStories(t *testing.T) {
	type step struct {
		who       string
		token     uint64
		value     string
		wantStale bool // under the fence
	}
	stories := []struct {
		name     string
		resource string
		steps    []step
		want     string // the business value the fence must leave
	}{{
		// A holds 501 and pauses past its session; B is granted 502 and
		// adjusts the stock; A resumes and sends its 501 adjustment.
		name: "inventory 501 vs 502", resource: "inventory/sku-31",
		steps: []step{
			{"A", 501, "stock=40 by A", false},
			{"B", 502, "stock=35 by B", false},
			{"A", 501, "stock=39 by A (late)", true},
		},
		want: "stock=35 by B",
	}, {
		// export-88: A (701) loses the lock; B (702) publishes the result
		// and, its response lost, retries the same request; A resumes and
		// repeats its original publish.
		name: "export-88 701 vs 702", resource: "export-88",
		steps: []step{
			{"B", 702, "pointer=export-88/702.out", false},
			{"B", 702, "pointer=export-88/702.out", false},
			{"A", 701, "pointer=export-88/701.out", true},
		},
		want: "pointer=export-88/702.out",
	}}
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		for _, s := range stories {
			for _, f := range []struct {
				name   string
				fence  fence.Fence
				prefix string
			}{{"fenced", b.table, "fenced/"}, {"unfenced", fence.Unfenced{Table: b.table}, "unfenced/"}} {
				res := f.prefix + s.resource
				var last step
				for _, st := range s.steps {
					err := b.write(ctx, f.fence, res, st.token, st.who, st.value)
					wantStale := st.wantStale && f.name == "fenced"
					if got := errors.Is(err, baton.ErrStaleToken); got != wantStale || (err != nil && !got) {
						t.Errorf("%s, %s: %s writes %q with %d = %v, want stale %v", s.name, f.name, st.who, st.value, st.token, err, wantStale)
					}
					if !wantStale {
						last = st
					}
				}
				v, _ := b.get(t, res)
				tok, owner := b.current(t, res)
				switch f.name {
				case "fenced":
					if v != s.want {
						t.Errorf("%s, fenced: business value = %q, want %q", s.name, v, s.want)
					}
				case "unfenced":
					// The control must go red: the late stale write landed.
					if v == s.want || v != last.value {
						t.Errorf("%s, unfenced: business value = %q, want the late write %q", s.name, v, last.value)
					}
				}
				if tok != last.token || owner != last.who {
					t.Errorf("%s, %s: Current(%q) = (%d, %q), want (%d, %q)", s.name, f.name, res, tok, owner, last.token, last.who)
				}
			}
		}
	})
}

// TestConcurrentWriters races writers that each hold their own grant
// (token) through Advance plus a business update, many times. Accepted
// writes, in commit order (the business row's history: fenced writers of
// one resource commit one at a time), must never go back in token, and
// the fence must end at the largest accepted token.
func TestConcurrentWriters(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		writers, rounds := 8, 25
		if b.table.Dialect == fence.SQLite {
			writers, rounds = 4, 15 // one writer at a time anyway; this checks busy handling
		}
		const res = "race/r1"
		type result struct {
			accepted []uint64
			stale    int
			err      error
		}
		results := make([]result, writers)
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				r := &results[g]
				for round := range rounds {
					// Writer g's grant in this round; grants never share a token.
					token := uint64(round*writers + g + 1)
					owner := fmt.Sprintf("w%d/r%d", g, round)
					for range 2 { // one grant writes twice
						err := b.write(ctx, b.table, res, token, owner, strconv.FormatUint(token, 10))
						switch {
						case err == nil:
							r.accepted = append(r.accepted, token)
						case errors.Is(err, baton.ErrStaleToken):
							r.stale++
						default:
							r.err = fmt.Errorf("writer %d, token %d: %w", g, token, err)
							return
						}
					}
				}
			})
		}
		wg.Wait()

		var accepted []uint64
		stale := 0
		for _, r := range results {
			if r.err != nil {
				t.Fatalf("concurrent write failed: %v", r.err)
			}
			accepted = append(accepted, r.accepted...)
			stale += r.stale
		}
		_, history := b.get(t, res)
		var order []uint64
		for _, h := range history {
			tok, err := strconv.ParseUint(h, 10, 64)
			if err != nil {
				t.Fatalf("history entry %q: %v", h, err)
			}
			order = append(order, tok)
		}
		for i := 1; i < len(order); i++ {
			if order[i] < order[i-1] {
				t.Errorf("commit order went back from token %d to %d at write %d", order[i-1], order[i], i)
			}
		}
		slices.Sort(accepted)
		sorted := slices.Sorted(slices.Values(order))
		if !slices.Equal(sorted, accepted) {
			t.Errorf("committed history has %d writes, writers saw %d accepted; they must be the same writes", len(order), len(accepted))
		}
		if len(accepted) == 0 {
			t.Fatalf("no write accepted")
		}
		maxTok := accepted[len(accepted)-1]
		tok, owner := b.current(t, res)
		wantOwner := fmt.Sprintf("w%d/r%d", (maxTok-1)%uint64(writers), (maxTok-1)/uint64(writers))
		if tok != maxTok || owner != wantOwner || order[len(order)-1] != maxTok {
			t.Errorf("Current(%q) = (%d, %q), last committed %d, want the largest accepted (%d, %q)", res, tok, owner, order[len(order)-1], maxTok, wantOwner)
		}
		t.Logf("%d writes accepted, %d rejected as stale", len(accepted), stale)
	})
}

// TestTokenBounds: tokens up to MaxToken are stored exactly; larger ones
// are refused before anything is sent.
func TestTokenBounds(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		if err := b.write(ctx, b.table, "bounds", fence.MaxToken-1, "a", "x"); err != nil {
			t.Fatalf("Advance(MaxToken-1) = %v", err)
		}
		if err := b.write(ctx, b.table, "bounds", fence.MaxToken, "b", "y"); err != nil {
			t.Fatalf("Advance(MaxToken) = %v", err)
		}
		for _, tok := range []uint64{fence.MaxToken + 1, math.MaxUint64} {
			for _, f := range []fence.Fence{b.table, fence.Unfenced{Table: b.table}} {
				if err := b.write(ctx, f, "bounds", tok, "c", "z"); !errors.Is(err, baton.ErrInvalidOption) {
					t.Errorf("%T.Advance(%d) = %v, want %v", f, tok, err, baton.ErrInvalidOption)
				}
			}
		}
		if tok, owner := b.current(t, "bounds"); tok != fence.MaxToken || owner != "b" {
			t.Errorf("Current = (%d, %q), want (%d, b)", tok, owner, uint64(fence.MaxToken))
		}
		if err := b.write(ctx, b.table, "other", 3, "a", "x"); err != nil {
			t.Fatalf("Advance(other, 3) = %v", err)
		}
		if m, err := b.table.Max(ctx, b.db); err != nil || m != fence.MaxToken {
			t.Errorf("Max = %d, %v, want %d", m, err, uint64(fence.MaxToken))
		}
	})
}

func TestCurrentUnknownResource(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		if _, _, err := b.table.Current(t.Context(), b.db, "never/written"); !errors.Is(err, sql.ErrNoRows) {
			t.Errorf("Current(never/written) = %v, want %v", err, sql.ErrNoRows)
		}
		if m, err := b.table.Max(t.Context(), b.db); err != nil || m != 0 {
			t.Errorf("Max of an empty table = %d, %v, want 0, nil", m, err)
		}
	})
}

// TestBadInput: bad table names, resources, owners and dialects are refused
// with baton.ErrInvalidOption before any SQL runs, so no table appears.
func TestBadInput(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		names := []string{
			`a b`, `t; DROP TABLE x`, `x"y`, `1abc`, `a.b.c`, `.a`, `a.`, `tbl-name`, `naïve`,
			"a\x00b", `x` + string(make([]byte, 63)), "fencing_tokens_" + "0123456789012345678901234567890123456789012345678",
		}
		for _, name := range names {
			tb := fence.Table{Name: name, Dialect: b.table.Dialect}
			if err := tb.Migrate(ctx, b.db); !errors.Is(err, baton.ErrInvalidOption) {
				t.Errorf("Table{Name: %q}.Migrate = %v, want %v", name, err, baton.ErrInvalidOption)
			}
			if err := b.write(ctx, tb, "r", 1, "a", "x"); !errors.Is(err, baton.ErrInvalidOption) {
				t.Errorf("Table{Name: %q}.Advance = %v, want %v", name, err, baton.ErrInvalidOption)
			}
			if _, _, err := tb.Current(ctx, b.db, "r"); !errors.Is(err, baton.ErrInvalidOption) {
				t.Errorf("Table{Name: %q}.Current = %v, want %v", name, err, baton.ErrInvalidOption)
			}
		}
		for _, d := range []fence.Dialect{0, 99} {
			tb := fence.Table{Name: b.table.Name, Dialect: d}
			if err := b.write(ctx, tb, "r", 1, "a", "x"); !errors.Is(err, baton.ErrInvalidOption) {
				t.Errorf("Table{Dialect: %v}.Advance = %v, want %v", d, err, baton.ErrInvalidOption)
			}
		}
		writes := []struct{ resource, owner string }{
			{"", "a"}, {"r", ""}, {"r\x00", "a"}, {"\xff", "a"}, {"r", "a\x00"},
			{string(make([]byte, fence.MaxResourceLen+1)), "a"},
		}
		for _, w := range writes {
			for _, f := range []fence.Fence{b.table, fence.Unfenced{Table: b.table}} {
				if err := b.write(ctx, f, w.resource, 1, w.owner, "x"); !errors.Is(err, baton.ErrInvalidOption) {
					t.Errorf("%T.Advance(%q, 1, %q) = %v, want %v", f, w.resource, w.owner, err, baton.ErrInvalidOption)
				}
			}
		}
		// Good names work, including reserved words and schema.table.
		schema := "main"
		switch b.table.Dialect {
		case fence.Postgres:
			schema = "public"
		case fence.MySQL:
			schema = mysqlDatabase(t, b.db)
		}
		for _, name := range []string{"order", schema + ".fence_" + engine.NewOwnerID()[:8], "_X9"} {
			tb := fence.Table{Name: name, Dialect: b.table.Dialect}
			if err := tb.Migrate(ctx, b.db); err != nil {
				t.Errorf("Table{Name: %q}.Migrate = %v", name, err)
				continue
			}
			if err := b.write(ctx, tb, "r", 1, "a", "x"); err != nil {
				t.Errorf("Table{Name: %q}.Advance = %v", name, err)
			}
			if _, err := b.db.ExecContext(context.Background(), `DROP TABLE `+quote(b.table.Dialect, name)); err != nil {
				t.Errorf("DROP TABLE %s = %v", name, err)
			}
		}
		var n int
		q := `SELECT count(*) FROM sqlite_master WHERE type = 'table'`
		switch b.table.Dialect {
		case fence.Postgres:
			q = `SELECT count(*) FROM pg_tables WHERE tablename IN ('a b', 'x"y', 'tbl-name', '1abc')`
		case fence.MySQL:
			q = `SELECT count(*) FROM information_schema.tables WHERE table_name IN ('a b', 'x"y', 'tbl-name', '1abc', 'x')`
		}
		if err := b.db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatalf("count tables = %v", err)
		}
		if want := map[fence.Dialect]int{fence.SQLite: 2, fence.Postgres: 0, fence.MySQL: 0}[b.table.Dialect]; n != want {
			t.Errorf("%d tables after the bad names, want %d (only the test's own)", n, want)
		}
	})
}

// mysqlDatabase returns the database the MySQL DSN selected.
func mysqlDatabase(t *testing.T, db *sql.DB) string {
	t.Helper()
	var name string
	if err := db.QueryRowContext(t.Context(), `SELECT DATABASE()`).Scan(&name); err != nil {
		t.Fatalf("SELECT DATABASE() = %v", err)
	}
	return name
}

type unknownDriver struct{}

func (unknownDriver) Open(string) (driver.Conn, error) { return nil, errors.New("not a database") }

func init() { sql.Register("fence_test_unknown", unknownDriver{}) }

func TestDialectOf(t *testing.T) {
	cases := []struct {
		driver  string
		want    fence.Dialect
		wantErr error
	}{
		{driver: "sqlite", want: fence.SQLite},
		{driver: "pgx", want: fence.Postgres},
		{driver: "mysql", want: fence.MySQL},
		{driver: "fence_test_unknown", wantErr: baton.ErrInvalidOption},
	}
	for _, c := range cases {
		db, err := sql.Open(c.driver, "u@tcp(127.0.0.1:1)/unused") // sql.Open does not connect
		if err != nil {
			t.Fatalf("sql.Open(%q) = %v", c.driver, err)
		}
		got, err := fence.DialectOf(db)
		_ = db.Close()
		if got != c.want || !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
			t.Errorf("DialectOf(%s) = %v, %v, want %v, %v", c.driver, got, err, c.want, c.wantErr)
		}
	}
}
