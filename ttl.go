package baton

import "time"

// MaxTTL is the longest lease time, session timeout or fixed lease time
// any engine accepts: 24 hours. ZooKeeper carries a session timeout as
// int32 milliseconds and go-zookeeper converts a time.Duration to it
// unchecked, so about 24.8 days wraps to a negative timeout; and a lock
// whose crashed holder keeps it for more than a day is a configuration
// mistake on every engine. Each engine checks its TTL options against it
// where it validates them, with an error wrapping ErrInvalidOption.
const MaxTTL = 24 * time.Hour
