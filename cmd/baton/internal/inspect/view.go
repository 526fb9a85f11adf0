package inspect

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// writeInspection prints one lock as `baton inspect` shows it on every
// engine: holders, then waiters in the order they will be served, then
// what lies under the name and takes no part. Every string comes from the
// backend, written by any client: it is shown through cli.TermSafe.
func writeInspection(w io.Writer, in baton.Inspection) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tPOS\tMODE\tTOKEN\tOWNER\tHOST\tPID\tPROGRAM\tAGE\tLEFT\tFLAGS\tNOTE")
	for _, part := range Parts(in) {
		for i, e := range part.Entries {
			pos := strconv.Itoa(i)
			if part.Role == "other" {
				pos = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", part.Role, pos,
				cli.TermSafe(orDash(e.Mode)), tokenText(e.Token), cli.TermSafe(orDash(e.Owner)), cli.TermSafe(orDash(e.Host)),
				pidText(e.PID), cli.TermSafe(orDash(programText(e.Process))), ageText(e.Age), leftText(e.Left),
				entryFlags(e), cli.TermSafe(e.Note))
		}
	}
	for _, n := range in.Notes {
		fmt.Fprintf(tw, "note\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", cli.TermSafe(n))
	}
	return tw.Flush()
}

// Part is one role's entries, in order.
type Part struct {
	Role    string // holder, waiting or other
	Entries []baton.Entry
}

// Parts are in's entries by role, holders first.
func Parts(in baton.Inspection) []Part {
	return []Part{{"holder", in.Holders}, {"waiting", in.Waiters}, {"other", in.Other}}
}

// programText is the program and its labels, "worker team=pay".
func programText(p baton.Process) string {
	parts := []string{p.Program}
	for _, k := range slices.Sorted(maps.Keys(p.Labels)) {
		parts = append(parts, k+"="+p.Labels[k])
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

func pidText(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// leftText is a lease's time left: "?" unknown, "expired" at or below 0
// when the engine said so (Note tells).
func leftText(d time.Duration) string {
	if d == 0 {
		return "?"
	}
	if d < 0 {
		return "expired"
	}
	return ageText(d)
}

func entryFlags(e baton.Entry) string {
	var f []string
	for _, fl := range []struct {
		on   bool
		name string
	}{{e.Foreign, "foreign"}, {e.Duplicate, "duplicate"}, {e.Dead, "dead"}} {
		if fl.on {
			f = append(f, fl.name)
		}
	}
	if len(f) == 0 {
		return "-"
	}
	return strings.Join(f, ",")
}

// inspectionJSON is `baton inspect --json`: the same document on every
// engine. Unknown tokens, ages and times left are null.
type inspectionJSON struct {
	Name    string      `json:"name"`
	Engine  string      `json:"engine"`
	Permits int         `json:"permits,omitempty"`
	Holders []EntryJSON `json:"holders"`
	Waiters []EntryJSON `json:"waiters"`
	Other   []EntryJSON `json:"other,omitempty"`
	Notes   []string    `json:"notes,omitempty"`
}

type EntryJSON struct {
	Mode      string            `json:"mode"`
	Token     *uint64           `json:"token"`
	Owner     string            `json:"owner"`
	Host      string            `json:"host,omitempty"`
	PID       int               `json:"pid,omitempty"`
	Program   string            `json:"program,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	AgeMS     *int64            `json:"age_ms"`
	LeftMS    *int64            `json:"lease_left_ms"`
	Dead      bool              `json:"dead,omitempty"`
	Duplicate bool              `json:"duplicate,omitempty"`
	Foreign   bool              `json:"foreign,omitempty"`
	Note      string            `json:"note,omitempty"`
}

func toInspectionJSON(in baton.Inspection) inspectionJSON {
	conv := func(es []baton.Entry) []EntryJSON {
		out := make([]EntryJSON, 0, len(es))
		for _, e := range es {
			out = append(out, ToEntryJSON(e))
		}
		return out
	}
	j := inspectionJSON{Name: in.Name, Engine: in.Engine, Permits: in.Permits,
		Holders: conv(in.Holders), Waiters: conv(in.Waiters), Notes: in.Notes}
	if len(in.Other) > 0 {
		j.Other = conv(in.Other)
	}
	return j
}

// ToEntryJSON is one entry of the JSON document; the exporter's page shows
// the same.
func ToEntryJSON(e baton.Entry) EntryJSON {
	return EntryJSON{
		Mode: e.Mode, Token: nonZero(e.Token), Owner: e.Owner, Host: e.Host, PID: e.PID,
		Program: e.Program, Labels: e.Labels, AgeMS: optMillis(e.Age), LeftMS: optMillis(e.Left),
		Dead: e.Dead, Duplicate: e.Duplicate, Foreign: e.Foreign, Note: e.Note,
	}
}

func nonZero(v uint64) *uint64 {
	if v == 0 {
		return nil
	}
	return &v
}

// optMillis is d in milliseconds, nil when unknown (0).
func optMillis(d time.Duration) *int64 {
	if d == 0 {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}
