package engine

import (
	"crypto/tls"
	"crypto/x509"
	"os"
)

// TLSFromEnv builds a client TLS config from the variables PREFIX_CACERT
// (a PEM file of the CAs that verify the server; else the system roots)
// and the optional client pair PREFIX_CERT / PREFIX_KEY, read with
// cfg.Getenv. A file that cannot be read is a bad option. The server name
// verified is cfg.URL.TLSName when set.
func (cfg Config) TLSFromEnv(prefix string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cfg.URL.TLSName}
	if ca := cfg.Getenv(prefix + "_CACERT"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, badf("%s_CACERT: %v", prefix, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, badf("%s_CACERT %s: no PEM certificates", prefix, ca)
		}
		tc.RootCAs = pool
	}
	cert, key := cfg.Getenv(prefix+"_CERT"), cfg.Getenv(prefix+"_KEY")
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, badf("%s_CERT/%s_KEY: %v", prefix, prefix, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}
