package etcdlock

import "github.com/baton-go/baton/engine"

// warning is the engine's transport warning (engine.Driver.Warn): an
// etcd:// server off this host given credentials, which would cross the
// network readable.
func warning(cfg engine.Config) string {
	u := cfg.URL
	remote := u.RemoteHost()
	if u.Scheme != "etcd" || remote == "" || !u.HasUser && cfg.Getenv("BATON_ETCD_USER") == "" {
		return ""
	}
	return engine.PlainWarning("etcd", remote, "etcds://")
}
