package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func init() { engine.Register(engine.Driver{Open: open, Check: check, Warn: warning}, "etcd", "etcds") }

// Credentials and TLS files baton.Open reads when the URL has no user:
// the variables the CLI documents.
const (
	envUser     = "BATON_ETCD_USER"
	envPassword = "BATON_ETCD_PASSWORD"
	envTLS      = "BATON_ETCD" // BATON_ETCD_CACERT, _CERT, _KEY
)

// probeKey is the key Open reads to see the cluster answer. No lock uses
// it: a lock name has no control characters.
const probeKey = "\x00baton-probe"

// check checks an etcd:// or etcds:// URL offline.
func check(cfg engine.Config) error {
	_, err := endpoints(cfg.URL)
	return err
}

// endpoints reads "etcd://h1:2379,h2:2379" (etcds:// for TLS) as clientv3
// takes its endpoints: "host:port", the port 2379 when none is given. A
// trailing "/" is allowed; a path, a query or a fragment is not (lock
// names are keys from the root).
func endpoints(u engine.URL) ([]string, error) {
	hosts, tail := u.Hosts()
	if strings.ContainsAny(tail, "?#") {
		return nil, u.Badf("query and fragment are not supported")
	}
	if strings.Trim(tail, "/") != "" {
		return nil, u.Badf("a path is not supported (lock names are keys from the root)")
	}
	if hosts == "" {
		return nil, u.Badf("no endpoint")
	}
	var eps []string
	for _, hp := range strings.Split(hosts, ",") {
		if hp == "" {
			return nil, u.Badf("empty endpoint")
		}
		host, port, err := net.SplitHostPort(hp)
		if err != nil { // no port: the whole is the host
			host, port = strings.Trim(hp, "[]"), DefaultPort
		}
		if host == "" {
			return nil, u.Badf("endpoint %q has no host", hp)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, u.Badf("endpoint %q: bad port %q", hp, port)
		}
		eps = append(eps, net.JoinHostPort(host, port))
	}
	return eps, nil
}

// open serves baton.Open for etcd:// and etcds:// URLs: a clientv3
// client of its own, which the Client closes, with the user and password
// of the URL or else of BATON_ETCD_USER and BATON_ETCD_PASSWORD, and for
// etcds:// the TLS files of BATON_ETCD_CACERT, _CERT and _KEY. It returns
// once a linearizable read was answered, so that a wrong address, a
// cluster without quorum, a refused login or certificate fail here, and
// not at the first acquire.
func open(ctx context.Context, cfg engine.Config) (engine.Conn, error) {
	eps, err := endpoints(cfg.URL)
	if err != nil {
		return nil, err
	}
	cc := clientv3.Config{Endpoints: eps, DialTimeout: dialTimeout(ctx, cfg), Logger: zap.NewNop()}
	cc.Username, cc.Password = cfg.URL.User, cfg.URL.Password
	if !cfg.URL.HasUser {
		cc.Username, cc.Password = cfg.Getenv(envUser), cfg.Getenv(envPassword)
	}
	if cfg.URL.Scheme == "etcds" {
		if cc.TLS, err = cfg.TLSFromEnv(envTLS); err != nil {
			return nil, err
		}
		if err := probeTLS(ctx, eps, cc.TLS); err != nil {
			return nil, connectErr(cfg, err)
		}
	}
	cli, err := clientv3.New(cc)
	if err != nil {
		return nil, connectErr(cfg, err)
	}
	if err := probe(ctx, cli); err != nil {
		_ = cli.Close()
		return nil, connectErr(cfg, err)
	}
	c, err := newClient(cli, Options{TTL: cfg.TTL, TokenFloor: cfg.TokenFloor, Observer: cfg.Observer, Process: cfg.Process})
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	c.owned = true
	return connOf(c), nil
}

// dialTimeout is what remains of ctx's connect timeout: clientv3.New
// does not take a context, only a timeout for its dial and login.
func dialTimeout(ctx context.Context, cfg engine.Config) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), time.Millisecond)
	}
	return cfg.ConnectTimeout
}

// probe waits for the cluster to answer a linearizable read: clientv3.New
// waits for no connection unless it logs in, and the read also needs a
// quorum. etcd checks a user's rights on the key after the read's quorum
// round, so a refusal of this key proves the connection and the login;
// the rights on the locks' own keys show at their first acquire.
func probe(ctx context.Context, cli *clientv3.Client) error {
	_, err := cli.Get(ctx, probeKey, clientv3.WithCountOnly())
	if errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrGRPCPermissionDenied) {
		return nil
	}
	return err
}

// connectErr is a failed connect's error: "connect <URL without its
// password>: …", wrapping baton.ErrAuth for a refused login or
// certificate and baton.ErrUnavailable for anything else.
func connectErr(cfg engine.Config, err error) error {
	return fmt.Errorf("connect %s: %w", cfg.URL.Redacted, classify(err))
}

// authErrs are etcd's refusals of a login or of a user's rights, as
// clientv3 returns them and as gRPC carries them.
var authErrs = []error{rpctypes.ErrAuthFailed, rpctypes.ErrPermissionDenied, rpctypes.ErrUserEmpty,
	rpctypes.ErrInvalidAuthToken, rpctypes.ErrAuthOldRevision, rpctypes.ErrGRPCAuthFailed,
	rpctypes.ErrGRPCPermissionDenied}

// classify marks authentication and TLS failures with baton.ErrAuth and
// everything else with baton.ErrUnavailable. gRPC flattens TLS handshake
// errors into text, so those are recognised by their message.
func classify(err error) error {
	if errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrUnavailable) {
		return err
	}
	for _, auth := range authErrs {
		if errors.Is(err, auth) || err.Error() == auth.Error() {
			return fmt.Errorf("%w: %w", baton.ErrAuth, err)
		}
	}
	msg := err.Error()
	if strings.Contains(msg, "authentication handshake failed") || strings.Contains(msg, "x509:") {
		return fmt.Errorf("%w: %w", baton.ErrAuth, err)
	}
	return fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
}
