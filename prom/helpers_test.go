package batonprom_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/baton-go/baton"
	batonprom "github.com/baton-go/baton/prom"
)

// scraper serves a registry holding one Collector over HTTP, as Prometheus
// would scrape it.
type scraper struct {
	t   *testing.T
	c   *batonprom.Collector
	url string
}

func newScraper(t *testing.T, opts batonprom.Options) *scraper {
	t.Helper()
	c := batonprom.New(opts)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	t.Cleanup(srv.Close)
	return &scraper{t: t, c: c, url: srv.URL}
}

// observe delivers events as an engine would.
func (s *scraper) observe(es ...baton.Event) {
	for _, e := range es {
		s.c.Observe(context.Background(), e)
	}
}

// scrape fetches and parses the exposition text.
type families map[string]*dto.MetricFamily

func (s *scraper) scrape() families {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("scrape: status %s", resp.Status)
	}
	if ft := expfmt.ResponseFormat(resp.Header).FormatType(); ft != expfmt.TypeTextPlain {
		s.t.Fatalf("scrape: format %v, want text", ft)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	fams := families{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			s.t.Fatalf("parse scrape: %v", err)
		}
		fams[mf.GetName()] = &mf
	}
	return fams
}

// metric returns the series of name whose labels include want
// ("k=v,k=v"), failing unless there is exactly one.
func (f families) metric(t *testing.T, name, want string) *dto.Metric {
	t.Helper()
	mf := f[name]
	if mf == nil {
		t.Fatalf("no metric family %s", name)
	}
	var found []*dto.Metric
	for _, m := range mf.GetMetric() {
		if hasLabels(m, want) {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s{%s}: %d series match, want 1 (have %s)", name, want, len(found), labelSets(mf))
	}
	return found[0]
}

func hasLabels(m *dto.Metric, want string) bool {
	have := map[string]string{}
	for _, lp := range m.GetLabel() {
		have[lp.GetName()] = lp.GetValue()
	}
	for _, kv := range strings.Split(want, ",") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func labelSets(mf *dto.MetricFamily) string {
	var sets []string
	for _, m := range mf.GetMetric() {
		var kv []string
		for _, lp := range m.GetLabel() {
			kv = append(kv, lp.GetName()+"="+lp.GetValue())
		}
		sets = append(sets, "{"+strings.Join(kv, ",")+"}")
	}
	sort.Strings(sets)
	return strings.Join(sets, " ")
}

// value returns a counter's or gauge's value.
func (f families) value(t *testing.T, name, labels string) float64 {
	t.Helper()
	m := f.metric(t, name, labels)
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s{%s} is neither counter nor gauge", name, labels)
	return 0
}

// hist returns a histogram's count and sum.
func (f families) hist(t *testing.T, name, labels string) (uint64, float64) {
	t.Helper()
	h := f.metric(t, name, labels).GetHistogram()
	if h == nil {
		t.Fatalf("%s{%s} is not a histogram", name, labels)
	}
	return h.GetSampleCount(), h.GetSampleSum()
}

// bucket returns a histogram's cumulative count at upper bound le.
func (f families) bucket(t *testing.T, name, labels string, le float64) uint64 {
	t.Helper()
	for _, b := range f.metric(t, name, labels).GetHistogram().GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount()
		}
	}
	t.Fatalf("%s{%s} has no bucket le=%g", name, labels, le)
	return 0
}

func wantValue(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func wantCount(t *testing.T, what string, got, want uint64) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

// gauges checks the three gauges of one label set.
func (f families) gauges(t *testing.T, when, labels string, waiting, held, suspended float64) {
	t.Helper()
	wantValue(t, fmt.Sprintf("%s: baton_acquires_waiting{%s}", when, labels), f.value(t, "baton_acquires_waiting", labels), waiting)
	wantValue(t, fmt.Sprintf("%s: baton_leases_held{%s}", when, labels), f.value(t, "baton_leases_held", labels), held)
	wantValue(t, fmt.Sprintf("%s: baton_leases_suspended{%s}", when, labels), f.value(t, "baton_leases_suspended", labels), suspended)
}
