package redlock

// SkipWriteBack makes c keep every grant without raising any counter: the
// negative control of row 7 (tests only).
func SkipWriteBack(c *Client) {
	c.hooks.writeBack = func([]int, int) []int { return nil }
}

// MisdirectWriteBack makes c raise only the node that minted the token,
// where the raise is a no-op, instead of the other granting nodes: the
// "misdirected" negative control of row 7 (tests only).
func MisdirectWriteBack(c *Client) {
	c.hooks.writeBack = func(_ []int, minter int) []int { return []int{minter} }
}

// ListenNode returns the node whose messages c listens to (tests only).
func ListenNode(c *Client) int { return c.wo.listen }
