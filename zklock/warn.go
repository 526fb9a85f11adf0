package zklock

import (
	"fmt"

	"github.com/baton-go/baton/engine"
)

// warning is the engine's transport warning (engine.Driver.Warn), for a
// server off this host: credentials sent without TLS cross the network
// readable; without digest auth, baton's entries carry the open ACL
// (world:anyone), so any client of the ensemble may delete them, and
// with them someone's lock.
func warning(cfg engine.Config) string {
	u := cfg.URL
	remote := u.RemoteHost()
	switch {
	case remote == "":
		return ""
	case !u.HasUser && cfg.Getenv("BATON_ZK_USER") == "":
		return fmt.Sprintf("warning: ZooKeeper host %s without digest auth: baton's entries carry the open ACL (world:anyone), "+
			"so any client of the ensemble can delete them; give BATON_ZK_USER and BATON_ZK_PASSWORD", remote)
	case u.Scheme == "zk":
		return engine.PlainWarning("zk", remote, "zk+tls://")
	}
	return ""
}
