package redlock

import (
	"context"
	"time"

	"github.com/baton-go/baton"
)

// The defaults, for the tests of Options.
const (
	DefaultTTL = defaultTTL
	DriftFixed = driftFixed
)

// NodeEntry is what one node holds for a lock (Inspect).
type NodeEntry = nodeEntry

// Raw returns c's own client (tests only).
func Raw(c *baton.Client) *Client {
	rc, ok := baton.As[*Client](c)
	if !ok {
		panic("redlock: not a Redlock client")
	}
	return rc
}

// Inspect reads what every node holds for lock name (tests only).
func Inspect(ctx context.Context, c *baton.Client, name string) ([]NodeEntry, error) {
	return Raw(c).inspect(ctx, name)
}

// Entries lists the nodes holding lock name as "node<i>/<owner>" (tests
// only).
func Entries(ctx context.Context, c *baton.Client, name string) ([]string, error) {
	return Raw(c).entries(ctx, name)
}

// Majority returns N/2+1 (tests only).
func Majority(c *baton.Client) int { return Raw(c).majority() }

// Nodes returns N (tests only).
func Nodes(c *baton.Client) int { return len(Raw(c).nodes) }

// TTL returns the lease time of a lock key (tests only).
func TTL(c *baton.Client) time.Duration { return Raw(c).ttl() }

// DriftMargin returns the keeper's margin, the Redlock drift included
// (tests only).
func DriftMargin(c *baton.Client) time.Duration { return Raw(c).driftMargin() }

// SkipWriteBack makes c keep every grant without raising any counter: the
// negative control of row 7 (tests only).
func SkipWriteBack(c *baton.Client) {
	Raw(c).hooks.writeBack = func([]int, int) []int { return nil }
}

// MisdirectWriteBack makes c raise only the node that minted the token,
// where the raise is a no-op, instead of the other granting nodes: the
// "misdirected" negative control of row 7 (tests only).
func MisdirectWriteBack(c *baton.Client) {
	Raw(c).hooks.writeBack = func(_ []int, minter int) []int { return []int{minter} }
}

// ListenNode returns the node whose messages c listens to (tests only).
func ListenNode(c *baton.Client) int { return Raw(c).wo.listen }
