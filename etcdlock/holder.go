package etcdlock

import (
	"bytes"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

// recordStart starts every holder record (engine.ProcessData writes the
// host first), and recordSep parts it from what the value holds before it:
// a record is URL-query escaped, so it holds no space.
const (
	recordStart = "host="
	recordSep   = " "
)

// values are the whole values of a client's entries that carry no data
// of their own, computed once per client (New) so that a grant builds no
// string: the record alone for a mutex, the marker, a space and the
// record for each side of a read/write lock.
type values struct {
	record, read, write string
}

func newValues(o Options) values {
	rec := engine.ProcessData(o.Process)
	return values{
		record: rec,
		read:   string(queuekit.KindRead) + recordSep + rec,
		write:  string(queuekit.KindWrite) + recordSep + rec,
	}
}

// kindValue is the marker that starts an entry's value. A mutex entry has
// none, as `etcdctl lock` and concurrency.Mutex write the empty value;
// other recipes store their marker so readers can tell a reader from a
// writer.
func kindValue(k queuekit.Kind) string {
	if k == queuekit.KindMutex {
		return ""
	}
	return string(k)
}

// entryValue is the whole value of an entry's key: the kind's marker, the
// entry's data ("lease-baton:permits=3"), then the client's holder record,
// after a space when anything precedes it (see "Holder record" in the
// package doc). An election candidate's value is its ID alone, as
// `etcdctl elect NAME PROPOSAL` writes the proposal, so that `etcdctl
// elect -l` and concurrency.Election read baton's leader's ID: it has no
// record.
func (v values) entryValue(k queuekit.Kind, data []byte) string {
	switch {
	case k == queuekit.KindLatch:
		return string(data)
	case len(data) > 0:
		return kindValue(k) + string(data) + recordSep + v.record
	case k == queuekit.KindMutex:
		return v.record
	case k == queuekit.KindRead:
		return v.read
	case k == queuekit.KindWrite:
		return v.write
	}
	return kindValue(k) + recordSep + v.record
}

// splitRecord parts a value into what precedes its holder record and the
// record ("" when it has none: etcdctl's keys, an older baton's).
func splitRecord(v []byte) (head, record []byte) {
	if bytes.HasPrefix(v, []byte(recordStart)) {
		return nil, v
	}
	if i := bytes.Index(v, []byte(recordSep+recordStart)); i >= 0 {
		return v[:i], v[i+len(recordSep):]
	}
	return v, nil
}

// entryData is what an entry of kind k stores after its marker and before
// its record: the inverse of entryValue.
func entryData(k queuekit.Kind, v []byte) []byte {
	if k == queuekit.KindLatch {
		return v
	}
	head, _ := splitRecord(v)
	d, _ := bytes.CutPrefix(head, []byte(kindValue(k)))
	return d
}

// valueKind reads an entry's kind back. An unknown value (another tool's
// key at a directory child, or an election candidate's ID) counts as a
// mutex entry: it blocks rather than being overlooked.
func valueKind(v []byte) queuekit.Kind {
	head, _ := splitRecord(v)
	switch {
	case bytes.Equal(head, []byte(queuekit.KindRead)):
		return queuekit.KindRead
	case bytes.Equal(head, []byte(queuekit.KindWrite)):
		return queuekit.KindWrite
	case bytes.Equal(head, []byte(queuekit.KindLatch)):
		return queuekit.KindLatch
	case bytes.HasPrefix(head, []byte(queuekit.KindLease)):
		return queuekit.KindLease
	}
	return queuekit.KindMutex
}

// process reads the holder record of an entry's value, the zero Process
// when it has none.
func process(v []byte) baton.Process {
	_, rec := splitRecord(v)
	return engine.ParseProcess(string(rec))
}
