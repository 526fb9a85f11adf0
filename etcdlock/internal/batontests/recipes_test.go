package batontest_test

import (
	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/queue"
)

// The adapters below turn baton's queue recipes, which zklock and etcdlock
// both return, into the suite's interfaces. They only convert types; every
// call goes straight to the engine.

func electOf(e *queue.Election, err error) (batontest.Elect, error) {
	if err != nil {
		return nil, err
	}
	// A queue engine names a leadership by its entry's key.
	return batontest.ElectorOf(e, func(c baton.Candidate) string { return c.Entry }), nil
}
