package engine

import (
	"fmt"
	"strings"
)

// RemoteHost returns the first host of u's host list that is not this
// machine (Loopback), "" when every one is or the URL names none: the
// host a transport warning (Driver.Warn) is about.
func (u URL) RemoteHost() string {
	hosts, _ := u.Hosts()
	for _, h := range strings.Split(hosts, ",") {
		if host, _, _, ok := hostShape(h); ok && h != "" && !Loopback(host) {
			return host
		}
	}
	return ""
}

// HasPassword reports whether u carries a password, in its userinfo or
// as a password parameter.
func (u URL) HasPassword() bool {
	return u.Password != "" || secretParam.MatchString(u.Orig)
}

// PlainWarning is the transport warning of host, reached without TLS
// while credentials are given: they and the locks would cross the
// network readable. use names the TLS form of the URL ("rediss://").
func PlainWarning(scheme, host, use string) string {
	return fmt.Sprintf("warning: %s host %s without TLS: the credentials and the locks cross the network unencrypted; use %s",
		scheme, host, use)
}
