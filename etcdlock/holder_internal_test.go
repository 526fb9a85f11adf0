package etcdlock

import (
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
)

// TestValueLayout: every kind's value carries the holder record after
// what it held before, and reads back as the same kind and data; values
// without a record (etcdctl's, an older baton's) read as they always did.
func TestValueLayout(t *testing.T) {
	v := newValues(Options{Process: baton.Process{Host: "web-1", PID: 42, Program: "job"}})
	const rec = "host=web-1&pid=42&prog=job"
	permits := queuekit.PermitsData(3)
	for _, tc := range []struct {
		kind  queuekit.Kind
		data  []byte
		value string
		rec   bool
	}{
		{queuekit.KindMutex, nil, rec, true},
		{queuekit.KindRead, nil, "__READ__ " + rec, true},
		{queuekit.KindWrite, nil, "__WRIT__ " + rec, true},
		{queuekit.KindLease, permits, "lease-baton:permits=3 " + rec, true},
		{queuekit.KindLatch, []byte("web-1:42"), "web-1:42", false},
	} {
		got := v.entryValue(tc.kind, tc.data)
		if got != tc.value {
			t.Errorf("entryValue(%s, %q) = %q, want %q", tc.kind, tc.data, got, tc.value)
		}
		if tc.kind != queuekit.KindLatch {
			if k := valueKind([]byte(got)); k != tc.kind {
				t.Errorf("valueKind(%q) = %s, want %s", got, k, tc.kind)
			}
		}
		if d := entryData(tc.kind, []byte(got)); string(d) != string(tc.data) {
			t.Errorf("entryData(%s, %q) = %q, want %q", tc.kind, got, d, tc.data)
		}
		if p := process([]byte(got)); (p.Host == "web-1" && p.PID == 42 && p.Program == "job") != tc.rec {
			t.Errorf("process(%q) = %+v, want the record: %v", got, p, tc.rec)
		}
	}
	for _, tc := range []struct {
		value string
		kind  queuekit.Kind
	}{
		{"", queuekit.KindMutex}, // etcdctl lock, concurrency.Mutex
		{"__READ__", queuekit.KindRead},
		{"__WRIT__", queuekit.KindWrite},
		{"lease-baton:permits=3", queuekit.KindLease},
		{"some proposal", queuekit.KindMutex}, // etcdctl elect
	} {
		if k := valueKind([]byte(tc.value)); k != tc.kind {
			t.Errorf("valueKind(%q) = %s, want %s", tc.value, k, tc.kind)
		}
		if p := process([]byte(tc.value)); p.Host != "" || p.PID != 0 {
			t.Errorf("process(%q) = %+v, want none", tc.value, p)
		}
	}
	if n, ok := queuekit.ParsePermits(entryData(queuekit.KindLease, []byte("lease-baton:permits=3"))); !ok || n != 3 {
		t.Errorf("an older baton's lease reads N = %d, %v; want 3", n, ok)
	}
}
