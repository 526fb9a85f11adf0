package main

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// secretEnv are the variables whose values are passwords: baton's own and
// the drivers'. Logs, the exporter's page and its API never show them,
// whatever a driver echoes.
var secretEnv = []string{"BATON_ZK_PASSWORD", "BATON_ETCD_PASSWORD", "BATON_REDIS_PASSWORD", "BATON_SQL_PASSWORD",
	"PGPASSWORD", "MYSQL_PWD"}

// minSecret is the shortest secret replaced: a shorter one would blank
// out parts of ordinary words, and is no secret anyway.
const minSecret = 4

// secretReplacer returns a Replacer that turns password (as it stands in
// a backend URL) and the secret variables' values (getenv) into "***" in
// every form they may be printed in: as given, unescaped from the URL,
// URL-escaped, and escaped inside quotes as JSON and Go quoting write
// strings. It returns nil when there is nothing to hide.
func secretReplacer(password string, getenv func(string) string) *strings.Replacer {
	secrets := []string{password}
	if raw, err := url.PathUnescape(password); err == nil {
		secrets = append(secrets, raw) // what the driver is given
	}
	for _, k := range secretEnv {
		secrets = append(secrets, getenv(k))
	}
	var pairs []string
	for _, s := range secrets {
		if len(s) < minSecret {
			continue
		}
		js, _ := json.Marshal(s)
		q := strconv.Quote(s)
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s), string(js[1 : len(js)-1]), q[1 : len(q)-1]} {
			pairs = append(pairs, form, "***")
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return strings.NewReplacer(pairs...)
}
