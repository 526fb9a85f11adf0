package redislock

import "github.com/baton-go/baton/internal/rediseval"

// Classify marks an error of a Redis call with baton.ErrAuth when the
// server refused it (a NOAUTH, WRONGPASS or NOPERM reply, a refused TLS
// handshake), else with baton.ErrUnavailable; an error already marked
// with baton.ErrAuth or baton.ErrInvalidOption is returned as it is. A
// user whose ACL lacks the lock's keys connects fine and is refused only
// by the acquire script: a caller that tells refusals from outages (the
// CLI's exit codes) classifies the acquire's error with it.
func Classify(err error) error { return rediseval.Classify(err) }
