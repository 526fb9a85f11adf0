package sqllock

// CounterOnly keeps c on MySQL's token counter even on MariaDB: its
// migration creates no sequence, and its tokens come from the counter
// table, as on MySQL. Call it before c's first use.
func CounterOnly(c *Client) { c.q.noSeq = true }

// Identified reports whether c has named its server and table (at its
// first use): what its wake-ups and PostgreSQL's LISTEN are keyed by.
func Identified(c *Client) bool { return c.hubp.Load() != nil }
