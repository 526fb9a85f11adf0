package inspect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine/queuekit"
)

// evidence is what --force-release saves before it removes anything.
type evidence struct {
	Time       time.Time   `json:"time"`
	Engine     string      `json:"engine"`
	Backend    string      `json:"backend"` // credentials redacted
	Lock       string      `json:"lock"`
	Entry      entryJSON   `json:"entry"`
	FenceToken *uint64     `json:"fence_token"` // raise the fence to this
	FenceExact bool        `json:"fence_token_exact"`
	Queue      []entryJSON `json:"queue"` // the whole queue at the time
}

// evidenceDir is where evidence goes without --evidence-dir: the user's
// state directory (XDG), beside baton's embedded default backend.
func evidenceDir(env *cli.Env, flagDir string) (string, error) {
	if flagDir != "" {
		return flagDir, nil
	}
	d, err := backend.StateDir(env.Getenv)
	if err != nil {
		return "", fmt.Errorf("no --evidence-dir, and %w", err)
	}
	return d, nil
}

// saveEvidence writes ev to a new file (never overwriting one) and returns
// its path.
func saveEvidence(env *cli.Env, flagDir, name string, ev evidence) (string, error) {
	dir, err := evidenceDir(env, flagDir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r < ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, name)
	if len(safe) > 100 {
		safe = safe[:100]
	}
	path := filepath.Join(dir, fmt.Sprintf("baton-evidence-%s-%s.json", safe, ev.Time.Format("20060102T150405.000000000Z")))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if err := cli.WriteJSON(f, ev); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", errors.Join(err, os.Remove(path))
	}
	return path, nil
}

// entryJSON is one queue entry in clean's evidence, as the engine lists
// it: the exact entry name --force-release takes, its session, and the
// holder record (host, pid, program) where its creator stored one.
// Unknown token and age are null.
type entryJSON struct {
	Position    int               `json:"position"`
	Entry       string            `json:"entry"`
	Kind        string            `json:"kind"`
	Marker      string            `json:"marker"`
	Session     string            `json:"session"`
	Host        string            `json:"host,omitempty"`
	PID         int               `json:"pid,omitempty"`
	Program     string            `json:"program,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Token       *uint64           `json:"token"`
	AgeMS       *int64            `json:"age_ms"`
	State       string            `json:"state"`
	Holder      bool              `json:"holder"`
	Duplicate   bool              `json:"duplicate"`
	DeadSession bool              `json:"dead_session"`
	Foreign     bool              `json:"foreign,omitempty"` // not baton's: never ordered, never removed
	Note        string            `json:"note,omitempty"`
}

func entryToJSON(e queuekit.EntryInfo) entryJSON {
	return entryJSON{
		Position: e.Position, Entry: e.Entry, Kind: kindName(e.Kind), Marker: string(e.Kind),
		Session: e.Session, Host: e.Process.Host, PID: e.Process.PID, Program: e.Process.Program, Labels: e.Process.Labels,
		Token: nonZero(e.Token), AgeMS: optMillis(e.Age), State: stateName(e), Holder: e.Holder,
		Duplicate: e.Duplicate, DeadSession: e.DeadSession, Foreign: e.Foreign, Note: e.Note,
	}
}

func toJSON(q []queuekit.EntryInfo) []entryJSON {
	out := make([]entryJSON, 0, len(q))
	for _, e := range q {
		out = append(out, entryToJSON(e))
	}
	return out
}

// kindName is the word clean shows for an entry's recipe.
func kindName(k queuekit.Kind) string {
	switch k {
	case queuekit.KindMutex:
		return "mutex"
	case queuekit.KindRead:
		return "read"
	case queuekit.KindWrite:
		return "write"
	case queuekit.KindLatch:
		return "leader"
	case queuekit.KindLease:
		return "lease"
	}
	return string(k)
}

func stateName(e queuekit.EntryInfo) string {
	if e.Holder {
		return "holder"
	}
	return "waiting"
}
