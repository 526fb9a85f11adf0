package etcdlock

import "github.com/baton-go/baton/engine/queuekit"

// Backend returns the queuekit.Backend the client's recipes run on, so tests
// can drive sessions directly.
func (c *Client) Backend() queuekit.Backend { return backend{c} }
