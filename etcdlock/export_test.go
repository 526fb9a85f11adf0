package etcdlock

import "github.com/baton-go/baton/queue"

// Backend returns the queue.Backend the client's recipes run on, so tests
// can drive sessions directly.
func (c *Client) Backend() queue.Backend { return backend{c} }
