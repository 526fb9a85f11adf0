package bench_test

import (
	"fmt"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// resultsDir is where the report writes its charts, beside README.md.
const resultsDir = "results"

// chart is one PNG the report writes: its file (under resultsDir) and
// what it shows, for the README.
type chart struct {
	file, title string
}

// writeCharts draws the run's charts into dir and returns them in README
// order; the uncontended chart only when unc has figures.
func writeCharts(dir string, c curves, unc map[string][3]float64, peers map[string]string) ([]chart, error) {
	var out []chart
	draw := []func(string) (chart, error){
		func(path string) (chart, error) { return handoffChart(path, c) },
		func(path string) (chart, error) { return uncontendedChart(path, unc, peers) },
		func(path string) (chart, error) { return throughputChart(path, c) },
	}
	if len(unc) == 0 { // the uncontended sections did not run
		draw = slices.Delete(draw, 1, 2)
	}
	for _, f := range draw {
		ch, err := f(dir)
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

// line adds one named polyline with markers to p, styled by index i.
func line(p *plot.Plot, i int, name string, pts plotter.XYs, dashed bool) error {
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	s.Color = plotutil.Color(i)
	s.Shape = plotutil.Shape(i)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

func logAxes(p *plot.Plot) {
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
}

// handoffChart: p50 handoff latency against waiters, one line per engine,
// etcd's concurrency.Mutex dashed beside them.
func handoffChart(dir string, c curves) (chart, error) {
	ch := chart{file: "handoff.png", title: "p50 handoff latency against waiters (log–log), etcd's concurrency.Mutex dashed"}
	p := plot.New()
	p.Title.Text = "Handoff p50 latency vs waiters"
	p.X.Label.Text, p.Y.Label.Text = "waiters", "p50 handoff (µs)"
	logAxes(p)
	for i, e := range append(slices.Clone(curveEngines), "etcd-peer") {
		var pts plotter.XYs
		for _, hp := range c.handoff[e] {
			if hp.failed != nil {
				continue
			}
			pts = append(pts, plotter.XY{X: float64(hp.waiters), Y: max(float64(hp.p50.Microseconds()), 1)})
		}
		if len(pts) == 0 {
			continue
		}
		name := e
		if e == "etcd-peer" {
			name = "etcd concurrency.Mutex"
		}
		if err := line(p, i, name, pts, e == "etcd-peer"); err != nil {
			return ch, err
		}
	}
	return ch, p.Save(9*vg.Inch, 6*vg.Inch, filepath.Join(dir, ch.file))
}

// uncontendedChart: median µs per uncontended lock+unlock, baton beside
// the engine's floor and its usual peer, grouped by engine.
func uncontendedChart(dir string, unc map[string][3]float64, peers map[string]string) (chart, error) {
	ch := chart{file: "uncontended.png", title: "uncontended lock+unlock, median µs: baton, the bare round-trip floor, the engine's usual peer (zk.Lock, concurrency.Mutex, bsm/redislock, go-redsync, the database's session lock)"}
	p := plot.New()
	p.Title.Text = "Uncontended lock+unlock (median µs)"
	p.Y.Label.Text = "µs per lock+unlock"
	p.Legend.Top = true
	var engines []string
	for _, e := range curveEngines {
		if _, ok := unc[e]; ok {
			engines = append(engines, e)
		}
	}
	w := vg.Points(14)
	for k, label := range []string{"baton", "floor", "peer"} {
		vals := make(plotter.Values, len(engines))
		for i, e := range engines {
			vals[i] = unc[e][k]
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return ch, err
		}
		b.Color = plotutil.Color(k)
		b.LineStyle.Width = 0
		b.Offset = vg.Length(k-1) * w
		p.Add(b)
		p.Legend.Add(label, b)
	}
	names := make([]string, len(engines))
	for i, e := range engines {
		names[i] = e
		if peers[e] != "" {
			names[i] = fmt.Sprintf("%s\n(%s)", e, peers[e])
		}
	}
	p.NominalX(names...)
	p.Add(plotter.NewGrid())
	return ch, p.Save(11*vg.Inch, 6*vg.Inch, filepath.Join(dir, ch.file))
}

// throughputChart: lock+unlock per second against names, one line per
// engine, its floor as a dashed line of the same colour.
func throughputChart(dir string, c curves) (chart, error) {
	ch := chart{file: "throughput.png", title: fmt.Sprintf("lock+unlock per second of %d clients against distinct names (log–log), each engine's floor dashed", c.sizes.clients)}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Throughput of %d clients vs names", c.sizes.clients)
	p.X.Label.Text, p.Y.Label.Text = "distinct names", "lock+unlock per second"
	logAxes(p)
	for i, e := range curveEngines {
		var pts, floor plotter.XYs
		for _, tp := range c.tput[e] {
			pts = append(pts, plotter.XY{X: float64(tp.names), Y: max(tp.ops, 1)})
			floor = append(floor, plotter.XY{X: float64(tp.names), Y: max(c.tputFloor[e].ops, 1)})
		}
		if err := line(p, i, e, pts, false); err != nil {
			return ch, err
		}
		l, err := plotter.NewLine(floor)
		if err != nil {
			return ch, err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
	}
	return ch, p.Save(9*vg.Inch, 6*vg.Inch, filepath.Join(dir, ch.file))
}
