package exporter

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric descriptions of the directory layer, one series per lock. The
// lock label is bounded: the operator names the locks (a prefix expands
// to the locks that exist under it).
var (
	descEntries = prometheus.NewDesc("baton_lock_entries",
		"Entries of the lock: holders, waiters, and on queue engines dead and duplicate entries.", []string{"lock"}, nil)
	descHolders = prometheus.NewDesc("baton_lock_holders",
		"Entries the lock grants now (more than one for readers and semaphore permits).", []string{"lock"}, nil)
	descWaiters = prometheus.NewDesc("baton_lock_waiters",
		"Entries waiting for the lock.", []string{"lock"}, nil)
	descOldest = prometheus.NewDesc("baton_lock_oldest_entry_age_seconds",
		"Age of the lock's oldest entry, where the engine keeps creation times (ZooKeeper).", []string{"lock"}, nil)
	descToken = prometheus.NewDesc("baton_lock_holder_token",
		"Fencing token of the lock's holder (the largest among shared holders), where the engine tells it from outside.",
		[]string{"lock"}, nil)
	descHolderAge = prometheus.NewDesc("baton_lock_holder_age_seconds",
		"How long the lock's oldest holder has held it, where the engine keeps creation times (ZooKeeper).",
		[]string{"lock"}, nil)
	descDuplicates = prometheus.NewDesc("baton_lock_duplicates",
		"Protected-create duplicate entries of the lock (queue engines): residue for baton clean.", []string{"lock"}, nil)
	descDead = prometheus.NewDesc("baton_lock_dead_entries",
		"Entries of the lock that no live session owns (queue engines): nothing removes them by itself.", []string{"lock"}, nil)
	// descHolderInfo is exported with --holder-labels only: a pid is new
	// at every run, so each hold is a new series.
	descHolderInfo = prometheus.NewDesc("baton_lock_holder_info",
		"1 for each process holding the lock, by the host, pid and program its grant recorded (--holder-labels).",
		[]string{"lock", "host", "pid", "program"}, nil)
)

// lockCollector exports the poller's last snapshot. A scrape reads no
// backend: the poller does, every --interval. A lock whose last read
// failed has no series until a read works, rather than stale ones.
type lockCollector struct{ p *poller }

func (c lockCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEntries, descHolders, descWaiters, descOldest, descToken,
		descHolderAge, descDuplicates, descDead} {
		ch <- d
	}
	if c.p.holderLabels {
		ch <- descHolderInfo
	}
}

func (c lockCollector) Collect(ch chan<- prometheus.Metric) {
	s, _ := c.p.snapshot()
	for _, l := range s.Locks {
		if l.Error != "" {
			continue
		}
		m := measure(l)
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l.Name)
		}
		gauge(descEntries, float64(m.entries))
		gauge(descHolders, float64(m.holders))
		gauge(descWaiters, float64(m.waiters))
		if m.oldestMS >= 0 {
			gauge(descOldest, float64(m.oldestMS)/1000)
		}
		if m.token > 0 {
			gauge(descToken, float64(m.token))
		}
		if m.holderMS >= 0 {
			gauge(descHolderAge, float64(m.holderMS)/1000)
		}
		if c.p.queue {
			gauge(descDuplicates, float64(m.duplicates))
			gauge(descDead, float64(m.dead))
		}
		if c.p.holderLabels {
			for _, h := range holderProcesses(l) {
				ch <- prometheus.MustNewConstMetric(descHolderInfo, prometheus.GaugeValue, 1, l.Name, h.host, h.pid, h.program)
			}
		}
	}
}

// holderLabel is the label values of one holding process.
type holderLabel struct{ host, pid, program string }

// holderProcesses lists the processes that hold l, each once (a process
// may hold several permits), leaving out holders with no record.
func holderProcesses(l pageLock) []holderLabel {
	var out []holderLabel
	for _, e := range l.Holders {
		if e.Expired || e.Host == "" && e.PID == 0 {
			continue
		}
		h := holderLabel{host: e.Host, pid: strconv.Itoa(e.PID), program: e.Program}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// lockMeasures are the numbers of one lock; -1 and 0 mean unknown for
// the ages and the token.
type lockMeasures struct {
	entries, holders, waiters, duplicates, dead int
	oldestMS, holderMS                          int64
	token                                       uint64
}

// measure counts a lock's entries: holders, waiters and the entries
// that take no part. Expired entries (a SQL row past its deadline) are
// free to the next acquire: they are not counted.
func measure(l pageLock) lockMeasures {
	m := lockMeasures{oldestMS: -1, holderMS: -1}
	count := func(es []pageEntry, role *int, holder bool) {
		for _, e := range es {
			if e.Expired {
				continue
			}
			m.entries++
			*role++
			if e.Duplicate {
				m.duplicates++
			}
			if e.Dead {
				m.dead++
			}
			if e.AgeMS != nil {
				m.oldestMS = max(m.oldestMS, *e.AgeMS)
				if holder {
					m.holderMS = max(m.holderMS, *e.AgeMS)
				}
			}
			if holder && e.Token != nil {
				m.token = max(m.token, *e.Token)
			}
		}
	}
	var other int
	count(l.Holders, &m.holders, true)
	count(l.Waiters, &m.waiters, false)
	count(l.Other, &other, false)
	return m
}
