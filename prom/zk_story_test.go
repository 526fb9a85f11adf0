package batonprom_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	batonprom "github.com/baton-go/baton/prom"
	"github.com/baton-go/baton/testkit/storytest"
	"github.com/baton-go/baton/zklock"
)

func TestMain(m *testing.M) {
	if storytest.IsHolder() {
		os.Exit(storytest.HolderMain(newChild))
	}
	os.Exit(m.Run())
}

// newChild gives the paused holder a Collector as its Observer; it dumps
// the Collector's exposition text.
func newChild() (storytest.Child, error) {
	c := batonprom.New(batonprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	return storytest.Child{
		Observer: c,
		Dump:     func(_ context.Context, path string) error { return dumpText(reg, path) },
	}, nil
}

// dumpText writes what reg gathers as Prometheus exposition text to
// the file at path.
func dumpText(reg prometheus.Gatherer, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := dumpTextTo(reg, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// dumpTextTo writes what reg gathers as Prometheus exposition text to w.
func dumpTextTo(reg prometheus.Gatherer, w io.Writer) error {
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// parseText parses exposition text with the Prometheus text parser.
func parseText(t *testing.T, r io.Reader) families {
	t.Helper()
	dec := expfmt.NewDecoder(r, expfmt.NewFormat(expfmt.TypeTextPlain))
	fams := families{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				return fams
			}
			t.Fatalf("parse exposition text: %v", err)
		}
		fams[mf.GetName()] = &mf
	}
}

// TestPausedHolderZK is the paused-holder story on a real ZooKeeper, in
// two processes: the child holder is SIGSTOPped past its session timeout,
// the parent is granted the lock with a larger token and writes, and the
// child, resumed, finds its lease lost and its late write refused. The
// child's exposition text, parsed, must count exactly that.
// The child is cut off before it is stopped (see storytest.PausedHolder),
// so a suspension is counted for certain.
func TestPausedHolderZK(t *testing.T) {
	needSessionTimeout(t, storytest.PausedTimeout)
	name := "baton-test/prom-paused/" + engine.NewOwnerID()[:8]
	var mu sync.Mutex
	var grants []baton.Event
	c := batonprom.New(batonprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	obs := baton.ObserverFunc(func(ctx context.Context, e baton.Event) {
		c.Observe(ctx, e)
		if e.Kind == baton.EventGranted {
			mu.Lock()
			grants = append(grants, e)
			mu.Unlock()
		}
	})
	story := storytest.PausedHolder(t, name, "holder.prom", obs)
	lb := story.Lease

	f, err := os.Open(story.Out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	child := parseText(t, f)
	zkLock := zkMutex
	wantValue(t, "holder: baton_suspensions_total", child.value(t, "baton_suspensions_total", zkLock), 1)
	causes := child["baton_losses_total"]
	if causes == nil || len(causes.GetMetric()) != 1 {
		t.Fatalf("holder: baton_losses_total series: %v", causes)
	}
	lossCause := ""
	for _, lp := range causes.GetMetric()[0].GetLabel() {
		if lp.GetName() == "cause" {
			lossCause = lp.GetValue()
		}
	}
	t.Logf("holder: a ZooKeeper session expiry is counted with cause=%q", lossCause)
	if lossCause != "session_expired" && lossCause != "other" {
		t.Errorf("holder: loss cause %q, want session_expired (or other, before the queue wraps baton.ErrSessionLost)", lossCause)
	}
	wantValue(t, "holder: baton_losses_total", child.value(t, "baton_losses_total", zkLock+",cause="+lossCause), 1)
	wantValue(t, "holder: baton_stale_rejections_total", child.value(t, "baton_stale_rejections_total", "engine=fence"), 1)
	child.gauges(t, "holder at exit", zkLock, 0, 0, 0)
	wantValue(t, "holder: baton_acquires_total{granted}", child.value(t, "baton_acquires_total", zkLock+",result=granted"), 1)
	n, _ := child.hist(t, "baton_hold_seconds", zkLock+",end=lost")
	wantCount(t, "holder: lost holds", n, 1)

	// The parent's own collector: its grant, held, and no stale write.
	mu.Lock()
	if len(grants) != 1 || grants[0].Token != lb.Token() || grants[0].Owner != lb.Owner() {
		t.Errorf("second client's Granted events %+v, want one with token %d", grants, lb.Token())
	}
	mu.Unlock()
	var buf strings.Builder
	if err := dumpTextTo(reg, &buf); err != nil {
		t.Fatal(err)
	}
	parent := parseText(t, strings.NewReader(buf.String()))
	parent.gauges(t, "second client holding", zkLock, 0, 1, 0)
	wantValue(t, "second client: baton_acquires_total{granted}", parent.value(t, "baton_acquires_total", zkLock+",result=granted"), 1)
	wantValue(t, "second client: baton_stale_rejections_total", parent.value(t, "baton_stale_rejections_total", "engine=fence"), 0)
	if err := lb.Release(t.Context()); err != nil {
		t.Errorf("Release = %v", err)
	}
}

// needSessionTimeout asks the test server for a session of timeout and
// reads what it negotiated. The paused-holder story is timed on its
// session timeout T: the child is stopped in the 0.4·T between Suspended
// (T/2) and Lost (0.9·T), and every wait of the story is sized for
// T = PausedTimeout. A server whose minSessionTimeout/maxSessionTimeout
// range leaves T out clamps it and tells another story (a shorter T
// leaves a child under -race less than its scheduling delays), so the
// test skips by hand and fails under CI=true, saying why.
func needSessionTimeout(t *testing.T, timeout time.Duration) {
	t.Helper()
	zk := testenv.ZK(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := zklock.Dial(ctx, []string{zk}, zklock.Options{SessionTimeout: timeout})
	if err != nil {
		t.Fatalf("zklock.Dial(%s) = %v", zk, err)
	}
	zc, _ := baton.As[*zklock.Client](c)
	got := zc.SessionTimeout()
	c.Close()
	if got == timeout {
		return
	}
	testenv.Unavailable(t, fmt.Sprintf("ZooKeeper at %s negotiates a %v session for the %v this story is timed on: its minSessionTimeout/maxSessionTimeout exclude %v (scripts/servers.sh starts it with 400ms–60s)", zk, got, timeout, timeout))
}
