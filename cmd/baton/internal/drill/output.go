package drill

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/drill/scenario"
)

// progress shows a running drill on stderr: one line rewritten in place
// on a terminal, plain lines otherwise (a CI log keeps every line).
type progress struct {
	mu     sync.Mutex // Options.Progress may be called from any goroutine
	w      io.Writer
	tty    bool
	failed int
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && cli.IsTerminal(f)}
}

func (p *progress) start(engine string, cfg *drillConfig) {
	fmt.Fprintf(p.w, "baton: drill on %s (%s): %d trial(s) per scenario, seed %d, TTL %v, names under %s/\n",
		engine, cfg.URL.Redacted, cfg.trials, cfg.seed, cfg.TTL, cfg.prefix)
}

// step is the scenario's Progress callback.
func (p *progress) step(s scenario.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var line string
	stays := false // a line a terminal keeps
	switch {
	case !s.Done:
		line = fmt.Sprintf("%s: trial %d/%d running", s.Scenario, s.Trial+1, s.Trials)
	case s.Interrupted:
		line, stays = fmt.Sprintf("%s: trial %d/%d interrupted: no verdict", s.Scenario, s.Trial+1, s.Trials), true
	case s.Err != nil:
		p.failed++
		line, stays = fmt.Sprintf("%s: trial %d/%d FAILED: %v", s.Scenario, s.Trial+1, s.Trials, s.Err), true
	default:
		line = fmt.Sprintf("%s: trial %d/%d ok", s.Scenario, s.Trial+1, s.Trials)
	}
	if p.tty {
		if stays { // a failure or an interruption stays on the screen
			fmt.Fprintf(p.w, "\r\033[K%s\n", line)
			return
		}
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		return
	}
	if s.Done { // a plain log gets one line per trial
		fmt.Fprintf(p.w, "baton: drill: %s\n", line)
	}
}

// end clears the progress line of a terminal.
func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// writeDrillTable prints the summary of a drill, one row per scenario.
func writeDrillTable(w io.Writer, rep scenario.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tENGINE\tTRIALS\tFENCED STALE\tUNFENCED STALE\tNEXT GRANT p50/max\tLOST LEAD min\tORPHANS\tRESULT")
	for _, s := range rep.Scenarios {
		if s.Skipped != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\tskipped: %s\n", s.Name, s.Engine, s.Skipped)
			continue
		}
		grant := "-"
		if p50, mx, ok := p50Max(s.NextGrant); ok {
			grant = fmtMS(p50) + " / " + fmtMS(mx)
		}
		lead := "-"
		if len(s.LostLead) > 0 {
			lead = fmtMS(slices.Min(s.LostLead))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%d\t%s\n", s.Name, s.Engine, s.Trials,
			s.FencedStaleAccepted, s.UnfencedStaleAccepted, grant, lead, s.Orphans, resultWord(s))
	}
	return tw.Flush()
}

// fmtMS prints a duration in milliseconds, the unit of the JSON report.
func fmtMS(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// p50Max returns the median (the lower of the middle two) and the
// maximum of ds; ok is false when ds is empty.
func p50Max(ds []time.Duration) (p50, mx time.Duration, ok bool) {
	if len(ds) == 0 {
		return 0, 0, false
	}
	s := slices.Sorted(slices.Values(ds))
	return s[(len(s)-1)/2], s[len(s)-1], true
}

// drillJSON is the --json report: one object, the scenarios in the order
// they ran.
type drillJSON struct {
	Engine string `json:"engine"`
	Seed   uint64 `json:"seed"`
	Prefix string `json:"prefix"`
	TTLMS  int64  `json:"ttl_ms"`
	Passed bool   `json:"passed"`
	// Interrupted: a signal cut a trial short (its interrupted_trial).
	Interrupted bool               `json:"interrupted,omitempty"`
	Scenarios   []drillScenarioOut `json:"scenarios"`
}

// drillScenarioOut is one scenario of the --json report. Measurements a
// scenario did not take (no trial produced one) are null.
type drillScenarioOut struct {
	Name                  string      `json:"name"`
	Engine                string      `json:"engine"`
	Trials                int         `json:"trials"`
	Skipped               string      `json:"skipped,omitempty"`
	FencedStaleAccepted   int         `json:"fenced_stale_accepted"`
	UnfencedStaleAccepted int         `json:"unfenced_stale_accepted"`
	NextGrantMS           *p50MaxJSON `json:"next_grant_ms"`
	LostLeadMS            *minJSON    `json:"lost_lead_ms"`
	Orphans               int         `json:"orphans"`
	Passed                bool        `json:"passed"`
	Violations            []string    `json:"violations"`
	History               string      `json:"history,omitempty"`
	// InterruptedTrial is the trial (from 0) a signal cut short: no
	// violation of it is reported, it has no verdict.
	InterruptedTrial *int `json:"interrupted_trial,omitempty"`
}

type p50MaxJSON struct {
	P50 int64 `json:"p50"`
	Max int64 `json:"max"`
}

type minJSON struct {
	Min int64 `json:"min"`
}

// toDrillJSON converts a report for --json.
func toDrillJSON(rep scenario.Report, ttl time.Duration) drillJSON {
	out := drillJSON{Engine: rep.Engine, Seed: rep.Seed, Prefix: rep.Prefix, TTLMS: ttl.Milliseconds(),
		Passed: rep.Passed(), Scenarios: []drillScenarioOut{}}
	for _, s := range rep.Scenarios {
		j := drillScenarioOut{Name: s.Name, Engine: s.Engine, Trials: s.Trials, Skipped: s.Skipped,
			FencedStaleAccepted: s.FencedStaleAccepted, UnfencedStaleAccepted: s.UnfencedStaleAccepted,
			Orphans: s.Orphans, Passed: s.Passed, Violations: append([]string{}, s.Violations...), History: s.History}
		if p50, mx, ok := p50Max(s.NextGrant); ok {
			j.NextGrantMS = &p50MaxJSON{P50: p50.Milliseconds(), Max: mx.Milliseconds()}
		}
		if len(s.LostLead) > 0 {
			j.LostLeadMS = &minJSON{Min: slices.Min(s.LostLead).Milliseconds()}
		}
		if s.Interrupted {
			i := s.Trials - 1
			j.InterruptedTrial, out.Interrupted = &i, true
		}
		out.Scenarios = append(out.Scenarios, j)
	}
	return out
}

// saveDrillFiles writes --json and --html, each atomically: a reader
// never sees half a report, and a failed write leaves the old file.
func saveDrillFiles(cfg *drillConfig, rep scenario.Report) error {
	if cfg.jsonFile != "" {
		var b bytes.Buffer
		if err := cli.WriteJSON(&b, toDrillJSON(rep, cfg.TTL)); err != nil {
			return err
		}
		if err := writeAtomic(cfg.jsonFile, b.Bytes()); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if cfg.htmlFile != "" {
		var b bytes.Buffer
		if err := writeDrillHTML(&b, rep, cfg.TTL); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		if err := writeAtomic(cfg.htmlFile, b.Bytes()); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	return nil
}

// checkDrillFiles makes sure --json and --html can be written before the
// drill runs, rather than finding out after it: each names a file (not a
// directory) in a directory where the drill can create the temporary
// file writeAtomic renames, and they are not the same file; and that
// --keep-dir is a directory (created when missing).
func checkDrillFiles(cfg *drillConfig) error {
	if cfg.jsonFile != "" && cfg.htmlFile != "" && filepath.Clean(cfg.jsonFile) == filepath.Clean(cfg.htmlFile) {
		return cli.Usagef("drill: --json and --html are both %q", cfg.jsonFile)
	}
	for _, f := range []struct{ flag, path string }{{"--json", cfg.jsonFile}, {"--html", cfg.htmlFile}} {
		if f.path == "" {
			continue
		}
		if err := checkWritable(f.path); err != nil {
			return cli.Usagef("drill: %s %q cannot be written: %v", f.flag, f.path, err)
		}
	}
	if cfg.keepDir != "" {
		// Created here, before anything connects: a path that is a file
		// (--keep-dir /etc/passwd) or cannot be made is the command
		// line's mistake, not an unreachable backend.
		if err := os.MkdirAll(cfg.keepDir, 0o700); err != nil {
			return cli.Usagef("drill: --keep-dir %q cannot be used: %v", cfg.keepDir, err)
		}
	}
	return nil
}

// checkWritable reports why writeAtomic could not write path: path is a
// directory, or its directory takes no new file.
func checkWritable(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return errors.New("it is a directory")
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// writeAtomic writes data to a temporary file beside path and renames it
// over path.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}
