package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
)

// tlsServerName, when set, is the name every TLS connection verifies the
// server's certificate against, instead of the host it dials. Only baton
// drill sets it: its clients dial the servers through fault proxies on
// 127.0.0.1, and the servers' certificates name the real hosts.
var tlsServerName string

// tlsFromEnv builds a client TLS config from the environment variables
// PREFIX_CACERT (a PEM file of the CAs that verify the server; else the
// system roots) and the optional client pair PREFIX_CERT / PREFIX_KEY.
// A file that cannot be read is a usage error.
func tlsFromEnv(prefix string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: tlsServerName}
	if ca := os.Getenv(prefix + "_CACERT"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, usagef("%s_CACERT: %v", prefix, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usagef("%s_CACERT %s: no PEM certificates", prefix, ca)
		}
		tc.RootCAs = pool
	}
	cert, key := os.Getenv(prefix+"_CERT"), os.Getenv(prefix+"_KEY")
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, usagef("%s_CERT/%s_KEY: %v", prefix, prefix, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}
