package batontest_test

import (
	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/queue"
)

// The adapters below turn baton's queue recipes, which zklock and etcdlock
// both return, into the suite's interfaces. They only convert types; every
// call goes straight to the engine.

// rwOf keeps a failed constructor's nil out of the interface.
func rwOf(m *queue.RWMutex, err error) (batontest.RW, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}

func semOf(s *queue.Semaphore, err error) (batontest.Sem, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

func electOf(e *queue.Election, err error) (batontest.Elect, error) {
	if err != nil {
		return nil, err
	}
	// A queue engine names a leadership by its entry's key.
	return batontest.ElectorOf(e, func(c baton.Candidate) string { return c.Entry }), nil
}
