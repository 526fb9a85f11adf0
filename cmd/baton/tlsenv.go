package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
)

// tlsFromEnv builds a client TLS config from the environment variables
// PREFIX_CACERT (a PEM file of the CAs that verify the server; else the
// system roots) and the optional client pair PREFIX_CERT / PREFIX_KEY.
// A file that cannot be read is a usage error. serverName, when set, is
// the name the server's certificate must carry (engineURL.tlsName).
func tlsFromEnv(prefix, serverName string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
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
