package memlock

// SessionID returns the ID of c's current session, "" before its first
// call.
func SessionID(c *Client) string { return c.sessionID() }
