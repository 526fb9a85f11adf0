package queuekit

import "github.com/baton-go/baton"

// Inspection turns one lock's entries, as an Inspector reads them, into
// the baton.Inspection every engine returns: holders first, then waiters
// in queue order, then the foreign entries that take no part.
func Inspection(name, engine string, entries []EntryInfo) baton.Inspection {
	in := baton.Inspection{Name: name, Engine: engine}
	for _, e := range entries {
		be := baton.Entry{
			Mode: kindModes[e.Kind], Token: e.Token, Owner: e.Entry, Process: e.Process,
			Age: e.Age, Dead: e.DeadSession, Duplicate: e.Duplicate, Foreign: e.Foreign, Note: e.Note,
		}
		switch {
		case e.Foreign:
			in.Other = append(in.Other, be)
		case e.Holder:
			in.Holders = append(in.Holders, be)
		default:
			in.Waiters = append(in.Waiters, be)
		}
	}
	return in
}

// kindModes names each recipe marker's mode as baton.Entry.Mode does.
var kindModes = map[Kind]string{
	KindMutex: "mutex", KindRead: "read", KindWrite: "write", KindLatch: "leader", KindLease: "permit",
}
