package backend

import (
	"github.com/baton-go/baton/cmd/baton/internal/cli"
	"github.com/baton-go/baton/engine"
)

// warnTransport shows, once per Env and before connecting, the engine's
// warning about how the URL reaches its servers (engine.Warning): a
// server off this host reached without TLS while credentials are given,
// TLS that does not verify the server, ZooKeeper without digest auth.
// Each engine words it in its own terms (sslmode, tls=, zk+tls://).
func warnTransport(env *cli.Env, u URL) {
	if w := engine.Warning(u.Orig, env.Getenv); w != "" {
		env.NoteOnce("transport", "%s", w)
	}
}

// tlsTwin is the TLS scheme of each plain-text scheme that has one.
var tlsTwin = map[string]string{"zk": "zk+tls", "etcd": "etcds", "redis": "rediss"}
