package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// testEnv is an Env writing to buffers, with no variables.
func testEnv() (*Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errw bytes.Buffer
	return &Env{Stdout: &out, Stderr: &errw, Getenv: func(string) string { return "" },
		LookupEnv: func(string) (string, bool) { return "", false }, Environ: func() []string { return nil }}, &out, &errw
}

// TestEnvNoteOnce: a note keyed once is printed once per Env, whatever
// its arguments the next times; other keys and other Envs are apart.
func TestEnvNoteOnce(t *testing.T) {
	env, _, stderr := testEnv()
	env.NoteOnce("k", "first %d", 1)
	env.NoteOnce("k", "second %d", 2)
	env.NoteOnce("other", "third")
	if got, want := stderr.String(), "baton: first 1\nbaton: third\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	env2, _, stderr2 := testEnv()
	env2.NoteOnce("k", "again")
	if got := stderr2.String(); got != "baton: again\n" {
		t.Errorf("a second Env's stderr = %q, want its own note", got)
	}
}

// TestEnvFail: a usage error points at the help of the topic and exits
// 64; another error is one line with its own code; help goes to stdout.
func TestEnvFail(t *testing.T) {
	env, stdout, stderr := testEnv()
	env.SetTopic("run")
	if code := env.Fail(Usagef("run: missing NAME")); code != ExitUsage {
		t.Errorf("Fail(usage) = %d, want %d", code, ExitUsage)
	}
	if got, want := stderr.String(), "baton: run: missing NAME\nRun 'baton help run' for usage.\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	stderr.Reset()
	if code := env.Fail(WithCode(ExitNoEntry, errors.New("gone"))); code != ExitNoEntry || stderr.String() != "baton: gone\n" {
		t.Errorf("Fail(exit 66) = %d, stderr %q; want 66 and one line", code, stderr.String())
	}
	if env.ShowHelp("usage\n") != ExitOK || stdout.String() != "usage\n" {
		t.Errorf("ShowHelp wrote %q to stdout, want the help", stdout.String())
	}
}

// TestEnvJSON: with SetJSON, notes and failures are records of the
// logger, with the exit code and the help a usage error points at.
func TestEnvJSON(t *testing.T) {
	env, _, stderr := testEnv()
	env.SetTopic("elect")
	env.SetJSON(slog.New(slog.NewJSONHandler(stderr, nil)))
	env.Note("held %q", "n")
	env.Fail(Usagef("elect: bad"))
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("stderr = %q, want two records", stderr.String())
	}
	var note, fail map[string]any
	if json.Unmarshal([]byte(lines[0]), &note) != nil || json.Unmarshal([]byte(lines[1]), &fail) != nil {
		t.Fatalf("stderr = %q, want JSON records", stderr.String())
	}
	if note["level"] != "WARN" || note["msg"] != `held "n"` {
		t.Errorf("note record = %v", note)
	}
	if fail["level"] != "ERROR" || fail["exit"] != float64(ExitUsage) || fail["help"] != "baton help elect" {
		t.Errorf("failure record = %v", fail)
	}
}
