package exporter

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// minTokenLen is the shortest --token-file token accepted: the login
// answers as often as it is asked, so the token alone must resist
// guessing (32 hex digits are 128 bits).
const minTokenLen = 16

// checkExporterFlags validates the exporter's flags that need no file
// nor connection, so that a typo exits 64 before anything connects.
func checkExporterFlags(cfg *exporterConfig) error {
	switch {
	case cfg.interval <= 0:
		return cli.Usagef("exporter: --interval must be positive, got %v", cfg.interval)
	case cfg.maxStreams < 1 || cfg.maxStreams > maxMaxStreams:
		return cli.Usagef("exporter: --max-streams %d: want 1 to %d", cfg.maxStreams, maxMaxStreams)
	case (cfg.tlsCert == "") != (cfg.tlsKey == ""):
		return cli.Usagef("exporter: --tls-cert and --tls-key go together")
	}
	return checkListen(cfg.listen)
}

// checkListen validates --listen: HOST:PORT with a numeric port and a
// HOST that is empty (every interface), an IP address or a host name.
func checkListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return cli.Usagef("exporter: --listen %q: want HOST:PORT (e.g. 127.0.0.1:9187): %v", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return cli.Usagef("exporter: --listen %q: port %q is not a number from 0 to 65535", addr, port)
	}
	if host != "" && net.ParseIP(host) == nil && !isHostName(host) {
		return cli.Usagef("exporter: --listen %q: %q is neither an IP address nor a host name", addr, host)
	}
	return nil
}

// isHostName reports whether s is a DNS host name: dot-separated labels
// of letters, digits and hyphens.
func isHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
				return false
			}
		}
	}
	return true
}

// allowedHostName normalises an --allow-host NAME: lower case, without a
// trailing dot nor brackets; an IP address or a host name, without port.
func allowedHostName(s string) (string, error) {
	h := strings.ToLower(strings.TrimSuffix(s, "."))
	if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil {
		return ip.String(), nil
	}
	if !isHostName(h) {
		return "", fmt.Errorf("%q is neither a host name nor an IP address (give it without a port)", s)
	}
	return h, nil
}

// loadToken reads the --token-file token. A file other users can read is
// refused: the token is the exporter's only credential.
func loadToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", cli.Usagef("exporter: --token-file: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return "", cli.Usagef("exporter: --token-file %q is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o004 != 0 {
		return "", cli.Usagef("exporter: --token-file %q is readable by every user (mode %04o): chmod 600 it", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", cli.Usagef("exporter: --token-file: %v", err)
	}
	tok := strings.TrimSpace(string(b))
	for _, c := range []byte(tok) {
		if c <= ' ' || c > '~' {
			return "", cli.Usagef("exporter: --token-file %q: the token must be one word of printable ASCII", path)
		}
	}
	if len(tok) < minTokenLen {
		return "", cli.Usagef("exporter: --token-file %q: the token has %d characters, want at least %d (openssl rand -hex 32)",
			path, len(tok), minTokenLen)
	}
	return tok, nil
}

// loadTLS returns the TLS configuration of --tls-cert and --tls-key, nil
// without them.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, cli.Usagef("exporter: --tls-cert/--tls-key: %v", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
