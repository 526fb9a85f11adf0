package drill

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"time"

	"github.com/baton-go/baton/drill/scenario"
)

// drillHTML is the --html report: one self-contained page (inline CSS and
// SVG, no script, nothing fetched), so it can be mailed, archived as a CI
// artifact and opened offline.
//
//go:embed report.html
var drillHTML string

var drillTmpl = template.Must(template.New("drill").Parse(drillHTML))

// Geometry of a timeline, in SVG user units.
const (
	tlLabel  = 110 // lane labels
	tlWidth  = 900 // the time axis
	tlLane   = 30  // one client
	tlTop    = 8
	tlAxis   = 22 // tick labels under the lanes
	tlMarkSz = 6
)

// markShapes draws each mark kind around (0,0), so the kind can be told
// without colour too.
var markShapes = map[string]string{
	"pause":          "M-5,-6h3v12h-3zM2,-6h3v12h-3z",
	"resume":         "M-5,-6L6,0L-5,6z",
	"kill":           "M-6,-6L6,6M6,-6L-6,6",
	"cut":            "M-1,-7L4,-1L-3,1L2,7",
	"heal":           "M-6,0h12M0,-6v12",
	"cancel":         "M-5,0a5,5 0 1,0 10,0a5,5 0 1,0 -10,0M-3.5,3.5L3.5,-3.5",
	"release":        "M0,-6V5M-4,1L0,5L4,1",
	"lost":           "M0,-7L7,6h-14z",
	"write-ok":       "M-4,0a4,4 0 1,0 8,0a4,4 0 1,0 -8,0",
	"write-refused":  "M-5,-5h10v10h-10z",
	"stale-accepted": "M0,-7L2,-2L7,-2L3,1L5,7L0,3L-5,7L-3,1L-7,-2L-2,-2z",
}

// faultMarks are the injected faults: the moment every lane is judged
// against.
var faultMarks = map[string]bool{"pause": true, "kill": true, "cut": true, "cancel": true}

// markOrder is the legend's order of the mark kinds.
var markOrder = []string{"pause", "resume", "kill", "cut", "heal", "cancel", "release", "lost", "write-ok", "write-refused", "stale-accepted"}

type htmlReport struct {
	Engine, Prefix string
	Seed           uint64
	TTL            time.Duration
	Passed         bool
	Rows           []drillScenarioOut
	Scenarios      []htmlScenario
	Legend         []htmlLegend
}

type htmlLegend struct{ Kind, Shape string }

type htmlScenario struct {
	Name, Skipped string
	Passed        bool
	Result        string // ok, FAILED or interrupted
	Violations    []string
	Timelines     []htmlTimeline
}

type htmlTimeline struct {
	Trial         int
	Number        int // Trial counted from 1, as the progress lines do
	Seed          uint64
	Width, Height int
	LaneH         int // a lane's background, a pixel short of the lane
	GridBottom    int // the tick lines end here
	AxisY         int // the tick labels' baseline
	Lanes         []htmlLane
	Spans         []htmlSpan
	Marks         []htmlMark
	Ticks         []htmlTick
	Faults        []htmlTick // a line across every lane where a fault was injected
}

type htmlLane struct {
	Client string
	Y, Mid int
}

type htmlSpan struct {
	Kind, Title string
	X, Y, W, H  float64
}

type htmlMark struct {
	Kind, Title, Shape string
	X, Y               float64
}

type htmlTick struct {
	X     float64
	Label string
}

// writeDrillHTML renders rep as the --html page.
func writeDrillHTML(w io.Writer, rep scenario.Report, ttl time.Duration) error {
	j := toDrillJSON(rep, ttl)
	h := htmlReport{Engine: rep.Engine, Prefix: rep.Prefix, Seed: rep.Seed, TTL: ttl, Passed: rep.Passed(), Rows: j.Scenarios}
	for _, k := range markOrder {
		h.Legend = append(h.Legend, htmlLegend{Kind: k, Shape: markShapes[k]})
	}
	for _, s := range rep.Scenarios {
		hs := htmlScenario{Name: s.Name, Skipped: s.Skipped, Passed: s.Passed, Result: resultWord(s), Violations: s.Violations}
		for _, tl := range s.Timelines {
			hs.Timelines = append(hs.Timelines, layoutTimeline(tl))
		}
		h.Scenarios = append(h.Scenarios, hs)
	}
	return drillTmpl.Execute(w, h)
}

// layoutTimeline places one trial: a lane per client in the order the
// clients first appear, time on x.
func layoutTimeline(tl scenario.Timeline) htmlTimeline {
	var clients []string
	var end time.Duration
	see := func(c string, at time.Duration) {
		if !slices.Contains(clients, c) {
			clients = append(clients, c)
		}
		end = max(end, at)
	}
	for _, s := range tl.Spans {
		see(s.Client, s.To)
	}
	for _, m := range tl.Marks {
		see(m.Client, m.At)
	}
	end = max(end, time.Millisecond)
	end += end / 10 // room for the marks at the very end
	x := func(d time.Duration) float64 { return tlLabel + float64(d)/float64(end)*tlWidth }
	lane := map[string]int{}
	out := htmlTimeline{Trial: tl.Trial, Number: tl.Trial + 1, Seed: tl.Seed, Width: tlLabel + tlWidth + 20,
		Height: tlTop + len(clients)*tlLane + tlAxis, LaneH: tlLane - 1,
		GridBottom: tlTop + len(clients)*tlLane, AxisY: tlTop + len(clients)*tlLane + 15}
	for i, c := range clients {
		y := tlTop + i*tlLane
		lane[c] = y
		out.Lanes = append(out.Lanes, htmlLane{Client: c, Y: y, Mid: y + tlLane/2})
	}
	for _, s := range tl.Spans {
		w := max(x(s.To)-x(s.From), 1)
		out.Spans = append(out.Spans, htmlSpan{Kind: s.Kind, X: x(s.From), Y: float64(lane[s.Client] + 6), W: w, H: tlLane - 12,
			Title: fmt.Sprintf("%s %s %v – %v", s.Client, s.Kind, roundMS(s.From), roundMS(s.To))})
	}
	type cluster struct {
		x float64 // where the cluster's first mark is
		n int     // marks in it so far
	}
	near := map[string]*cluster{} // per client: its latest cluster of marks
	for _, m := range tl.Marks {
		mx, y := x(m.At), float64(lane[m.Client]+tlLane/2)
		if c := near[m.Client]; c != nil && mx-c.x < 2*tlMarkSz {
			// Marks at about the same time (a write to each twin, a
			// refusal and an acceptance) are dodged sideways in order;
			// their titles keep the exact times.
			c.n++
			mx = c.x + float64(c.n)*(2*tlMarkSz+1)
		} else {
			near[m.Client] = &cluster{x: mx}
		}
		title := fmt.Sprintf("%s %s at %v", m.Client, m.Kind, roundMS(m.At))
		if m.Detail != "" {
			title += ": " + m.Detail
		}
		out.Marks = append(out.Marks, htmlMark{Kind: m.Kind, Title: title, Shape: markShapes[m.Kind],
			X: mx, Y: y})
		if faultMarks[m.Kind] {
			out.Faults = append(out.Faults, htmlTick{X: x(m.At), Label: m.Kind})
		}
	}
	step := tickStep(end)
	for t := time.Duration(0); t <= end; t += step {
		out.Ticks = append(out.Ticks, htmlTick{X: x(t), Label: roundMS(t).String()})
	}
	return out
}

// roundMS rounds a time of the timeline for a label.
func roundMS(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// tickStep picks a round step that puts 4 to 10 ticks on an axis of end.
func tickStep(end time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond,
		100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
		5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute} {
		if end/s <= 10 {
			return s
		}
	}
	return end / 10
}
