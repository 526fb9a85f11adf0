package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
)

// urls are the engines' URLs built from the test servers' variables,
// with the variable each needs ("" for none).
func urls(t *testing.T) []struct{ name, env, url string } {
	env := os.Getenv
	mysql := strings.NewReplacer("tcp(", "", ")", "").Replace(env("BATON_TEST_MYSQL"))
	return []struct{ name, env, url string }{
		{"mem", "", "mem://anyengine"},
		{"sqlite", "", "sqlite://" + filepath.Join(t.TempDir(), "locks.db")},
		{"zk", "BATON_TEST_ZK", "zk://" + env("BATON_TEST_ZK")},
		{"etcd", "BATON_TEST_ETCD", "etcd://" + env("BATON_TEST_ETCD")},
		{"redis", "BATON_TEST_REDIS", "redis://" + env("BATON_TEST_REDIS")},
		{"redlock", "BATON_TEST_REDLOCK", "redlock://" + env("BATON_TEST_REDLOCK")},
		{"postgres", "BATON_TEST_POSTGRES", env("BATON_TEST_POSTGRES")},
		{"mysql", "BATON_TEST_MYSQL", "mysql://" + mysql},
		{"kube", "BATON_TEST_K8S", "k8s://?kubeconfig=" + env("BATON_TEST_K8S")},
	}
}

// TestRoundOnEveryEngine is the one-API promise: the same function, with
// no engine-specific line, on every engine's URL.
func TestRoundOnEveryEngine(t *testing.T) {
	for _, e := range urls(t) {
		t.Run(e.name, func(t *testing.T) {
			if e.env != "" {
				testenv.Require(t, e.env, e.name)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			r, err := Round(ctx, e.url, "anyengine/"+t.Name())
			if err != nil {
				t.Fatal(err)
			}
			if r.Engine != e.name {
				t.Errorf("Engine() = %q, want %q", r.Engine, e.name)
			}
			t.Logf("%s: tokens %d < %d, holder %+v", r.Engine, r.First, r.Second, r.Holder)
		})
	}
}
