package backend

// The engines the CLI opens, each registering its schemes with baton.Open
// when linked in. An engine the CLI needs nothing more of is one line
// here; one with a power of the CLI's own also has a row in powers.
import (
	_ "github.com/baton-go/baton/etcdlock"
	_ "github.com/baton-go/baton/kubelock"
	_ "github.com/baton-go/baton/redislock"
	_ "github.com/baton-go/baton/redlock"
	_ "github.com/baton-go/baton/sqllock"
	_ "github.com/baton-go/baton/zklock"
	_ "modernc.org/sqlite" // pure Go: baton stays a static binary; sqllock opens sqlite:// with it
)
