package engine

import "github.com/baton-go/baton"

// Recipes are Conn's four recipe methods over an engine client's own
// constructors, for a Conn to embed: engines whose client returns its own
// recipe types (zklock's *queuekit.Mutex, sqllock's unexported *mutex, …) get
// the interface results, typed nils excluded, without writing the four
// methods again. An engine without a recipe (Redlock) writes its methods
// itself.
type Recipes struct {
	mutex func(name string) (baton.Locker, error)
	rw    func(name string) (RWLocker, error)
	sem   func(name string, n int) (SemLocker, error)
	el    func(name string) (baton.Elector, error)
}

// NewRecipes returns the Recipes of an engine client's constructors:
// engine.NewRecipes(c.Mutex, c.RWMutex, c.Semaphore, c.Election).
func NewRecipes[M baton.Locker, RW RWLocker, S SemLocker, E baton.Elector](
	mutex func(string) (M, error), rw func(string) (RW, error),
	sem func(string, int) (S, error), el func(string) (E, error),
) Recipes {
	return Recipes{
		mutex: func(name string) (baton.Locker, error) { return Recipe[baton.Locker](mutex(name)) },
		rw:    func(name string) (RWLocker, error) { return Recipe[RWLocker](rw(name)) },
		sem:   func(name string, n int) (SemLocker, error) { return Recipe[SemLocker](sem(name, n)) },
		el:    func(name string) (baton.Elector, error) { return Recipe[baton.Elector](el(name)) },
	}
}

// Mutex is Conn.Mutex.
func (r Recipes) Mutex(name string) (baton.Locker, error) { return r.mutex(name) }

// RWMutex is Conn.RWMutex.
func (r Recipes) RWMutex(name string) (RWLocker, error) { return r.rw(name) }

// Semaphore is Conn.Semaphore.
func (r Recipes) Semaphore(name string, n int) (SemLocker, error) { return r.sem(name, n) }

// Election is Conn.Election.
func (r Recipes) Election(name string) (baton.Elector, error) { return r.el(name) }
