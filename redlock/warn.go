package redlock

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/baton-go/baton/engine"
)

// warning is the engine's transport warning (engine.Driver.Warn): nodes
// off this host reached without tls=true while a password is given,
// which would cross the network readable.
func warning(cfg engine.Config) string {
	u := cfg.URL
	remote := u.RemoteHost()
	_, query, _ := strings.Cut(u.Raw, "?")
	q, _ := url.ParseQuery(query)
	tlsOn, _ := strconv.ParseBool(q.Get("tls"))
	if tlsOn || remote == "" || !u.HasPassword() && cfg.Getenv(envPrefix+"_PASSWORD") == "" {
		return ""
	}
	return engine.PlainWarning("redlock", remote, "?tls=true")
}
