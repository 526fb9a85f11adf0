package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// gateway is the payment provider, simulated in-process: it charges per
// merchant reference (the order ID) and, if it has a status API, looks a
// charge up by reference. It is deliberately naive about duplicates: two
// requests for one reference make two charges, as a provider without
// idempotency support does. Faults are armed per reference.
type gateway struct {
	name      string
	hasLookup bool // a status API to ask "did reference R go through?"

	mu       sync.Mutex
	seq      int
	charges  map[string][]string // reference → charge IDs made
	arrived  map[string]int      // reference → requests that reached the provider
	drop     map[string]bool     // the next request is lost on the way: never arrives
	loseResp map[string]bool     // the next charge is made but its response is lost
}

func newGateway(name string, hasLookup bool) *gateway {
	return &gateway{
		name: name, hasLookup: hasLookup,
		charges: map[string][]string{}, arrived: map[string]int{},
		drop: map[string]bool{}, loseResp: map[string]bool{},
	}
}

// Charge charges cents for ref. A lost request or response leaves the
// caller waiting until ctx ends: all it sees is a timeout.
func (g *gateway) Charge(ctx context.Context, ref string, cents int) (string, error) {
	g.mu.Lock()
	if g.drop[ref] {
		delete(g.drop, ref)
		g.mu.Unlock()
		<-ctx.Done()
		return "", ctx.Err()
	}
	g.arrived[ref]++
	g.seq++
	id := fmt.Sprintf("%s_%d", g.name, g.seq)
	g.charges[ref] = append(g.charges[ref], id)
	lost := g.loseResp[ref]
	delete(g.loseResp, ref)
	g.mu.Unlock()
	if lost {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return id, nil
}

// Lookup is the status API: the charge made for ref, if any.
func (g *gateway) Lookup(_ context.Context, ref string) (id string, found bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ids := g.charges[ref]; len(ids) > 0 {
		return ids[0], true, nil
	}
	return "", false, nil
}

// statement lists the charges made for ref, as the provider's statement
// shows them to a person: what a shop without a status API reads by hand.
func (g *gateway) statement(ref string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.charges[ref])
}

// made returns how many charges the provider made for ref.
func (g *gateway) made(ref string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.charges[ref])
}

func (g *gateway) arm(ref string, dropRequest, loseResponse bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.drop[ref], g.loseResp[ref] = dropRequest, loseResponse
}
