package redlock

import "github.com/baton-go/baton/internal/rediseval"

// The scripts of the hot path, their digests boxed (see rediseval).
var (
	evAcquire = rediseval.New(acquireScript)
	evRelease = rediseval.New(releaseScript)
	evRaise   = rediseval.New(raiseScript)
	evUnlock  = rediseval.New(unlockScript)
)
