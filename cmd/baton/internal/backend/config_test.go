package backend

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine"
)

// envWith is an Env whose variables are vars alone.
func envWith(vars map[string]string) *cli.Env {
	return &cli.Env{
		Getenv:    func(k string) string { return vars[k] },
		LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
	}
}

// TestResolve: --backend, else BATON_BACKEND, else the embedded default
// in the state directory, parsed once; an empty --backend or a set but
// blank BATON_BACKEND is a usage error, not a request for the default.
func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flag    string
		given   bool
		vars    map[string]string
		backend string // "" for a usage error containing errText
		errText string
	}{
		{"flag", "redis://u:pw@h:1", true, map[string]string{"BATON_BACKEND": "etcd://x"}, "redis://u:pw@h:1", ""},
		{"variable", "", false, map[string]string{"BATON_BACKEND": "etcd://x"}, "etcd://x", ""},
		{"embedded", "", false, map[string]string{"XDG_STATE_HOME": "/st", "HOME": "/home/u"}, "sqlite:///st/baton/locks.db", ""},
		{"embedded in home", "", false, map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/home/u"},
			"sqlite:///home/u/.local/state/baton/locks.db", ""},
		{"empty flag", "", true, nil, "", "--backend is empty"},
		{"blank variable", "", false, map[string]string{"BATON_BACKEND": " "}, "", "BATON_BACKEND is set but empty"},
		{"empty variable", "", false, map[string]string{"BATON_BACKEND": ""}, "", "BATON_BACKEND is set but empty"},
		{"no home", "", false, nil, "", "$HOME is not defined"},
	} {
		cfg := Config{Backend: tc.flag}
		err := Resolve("run", envWith(tc.vars), &cfg, tc.given)
		var ue *cli.UsageError
		switch {
		case tc.backend == "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), tc.errText)):
			t.Errorf("%s: Resolve = %v, want a usage error with %q", tc.name, err, tc.errText)
		case tc.backend != "" && (err != nil || cfg.Backend != tc.backend || cfg.URL.Orig == ""):
			t.Errorf("%s: Resolve = %v, backend %q (URL %q); want %q, parsed", tc.name, err, cfg.Backend, cfg.URL.Redacted, tc.backend)
		case tc.backend != "" && (cfg.FromArgv != tc.given || cfg.Embedded != (tc.flag == "" && tc.vars["BATON_BACKEND"] == "")):
			t.Errorf("%s: FromArgv %v, Embedded %v", tc.name, cfg.FromArgv, cfg.Embedded)
		}
	}
}

// TestPowersAreEngines: every scheme with a power is one an engine linked
// in serves, and every linked engine's scheme is known.
func TestPowersAreEngines(t *testing.T) {
	for s := range powers {
		if err := Known(URL{engine.URL{Scheme: s}}); err != nil {
			t.Errorf("power for %s: %v", s, err)
		}
	}
	if err := Known(URL{engine.URL{Scheme: "consul", Redacted: "consul://h"}}); err == nil ||
		!strings.Contains(err.Error(), "unknown scheme \"consul\" (etcd://, etcds://") || !strings.Contains(err.Error(), "zk+tls://)") {
		t.Errorf("Known(consul) = %v, want the schemes there are", err)
	}
}
