package redislock

import "github.com/baton-go/baton/engine"

// warning is the engine's transport warning (engine.Driver.Warn): a
// redis:// server off this host given a password, which would cross the
// network readable.
func warning(cfg engine.Config) string {
	u := cfg.URL
	remote := u.RemoteHost()
	if u.Scheme != "redis" || remote == "" || !u.HasPassword() && cfg.Getenv("BATON_REDIS_PASSWORD") == "" {
		return ""
	}
	return engine.PlainWarning("redis", remote, "rediss://")
}
