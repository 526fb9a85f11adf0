package redislock

import (
	"context"
	"time"

	"github.com/baton-go/baton"
)

// Exported for the external tests: the key layout helpers.
var (
	EscapeName = escapeName
	SlotOf     = slotOf
	SlotTag    = slotTag
)

// The defaults, for the tests of Options.
const (
	DefaultTTL    = defaultTTL
	DefaultPrefix = defaultPrefix
)

// Inspection is what Inspect reads about one lock name.
type Inspection = inspection

// Inspect reads every entry of name as c's own client reads them.
func Inspect(ctx context.Context, c *baton.Client, name string) (Inspection, error) {
	return raw(c).inspect(ctx, name)
}

// Entries lists the entries of name as "recipe/role/owner".
func Entries(ctx context.Context, c *baton.Client, name string) ([]string, error) {
	return raw(c).entries(ctx, name)
}

// DriftMargin returns the margin c's keeper subtracts from every deadline.
func DriftMargin(c *baton.Client) time.Duration { return raw(c).driftMargin() }

// raw returns c's own client.
func raw(c *baton.Client) *Client {
	rc, ok := baton.As[*Client](c)
	if !ok {
		panic("redislock: not a Redis client")
	}
	return rc
}
