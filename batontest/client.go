package batontest

import (
	"testing"

	"github.com/baton-go/baton"
)

// FromClient adapts a *baton.Client to the suite's Client, with every
// recipe: the suite then runs through the API users hold. kill cuts the
// client off as Client.Kill describes (a fault proxy's blackhole,
// memlock's Partition).
func FromClient(c *baton.Client, kill func(testing.TB)) Client {
	return batonClient{c: c, kill: kill}
}

type batonClient struct {
	c    *baton.Client
	kill func(testing.TB)
}

func (b batonClient) Kill(t testing.TB) { b.kill(t) }
func (b batonClient) Close() error      { return b.c.Close() }

func (b batonClient) Mutex(name string) (baton.Locker, error) {
	return As[baton.Locker](b.c.Mutex(name))
}

func (b batonClient) RWMutex(name string) (RW, error) {
	return As[RW](b.c.RWMutex(name))
}

func (b batonClient) Semaphore(name string, n int) (Sem, error) {
	return As[Sem](b.c.Semaphore(name, n))
}

// Election names a leadership by its entry where the engine has one (the
// queue engines' node or key), else by its grant owner.
func (b batonClient) Election(name string) (Elect, error) {
	e, err := b.c.Election(name)
	if err != nil {
		return nil, err
	}
	return ElectorOf(e, func(c baton.Candidate) string {
		if c.Entry != "" {
			return c.Entry
		}
		return c.Session
	}), nil
}
