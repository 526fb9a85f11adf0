package zklock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/go-zookeeper/zk"
)

// DefaultSessionTimeout is the session timeout requested when
// Options.SessionTimeout is zero. A holder is told Suspended at once when
// its connection drops, or half of it after the last reply when the link
// goes silent, and Lost before it runs out (at 9/10 of it after the last
// proven contact); a crashed holder's lock passes on after about this
// long.
const DefaultSessionTimeout = 15 * time.Second

// DefaultPort is the port used for a server address without one.
const DefaultPort = 2181

// Digest is a ZooKeeper digest credential ("user:password"). With
// credentials, every node baton creates (entries, lock directories and
// the chroot's missing parents) gets a digest ACL granting all rights to
// these users and nothing to anyone else: only clients authenticated as
// one of them can read, create under or delete them. The ACL names the
// digest identities themselves, not the session's "auth" identities, so a
// TLS client certificate (ZooKeeper's x509 identity) grants nothing.
type Digest struct {
	User     string
	Password string
}

// Options configure Dial. The zero value requests DefaultSessionTimeout,
// no chroot, no token floor and the default backoff.
type Options struct {
	// SessionTimeout is the session timeout requested from the server; 0
	// means DefaultSessionTimeout. It must be in 1ms…baton.MaxTTL (the
	// wire carries int32 milliseconds). The server may clamp it into its
	// [minSessionTimeout, maxSessionTimeout]; baton reads the negotiated
	// value from the wire and times Suspended/Lost from it (SessionTimeout
	// on Client reports it).
	SessionTimeout time.Duration
	// Chroot is a path prefix applied by baton itself (go-zookeeper has no
	// chroot): "/app" puts every lock under /app. Empty or "/" means none;
	// ZooKeeper's own /zookeeper and anything below it are refused.
	Chroot string
	// TokenFloor is added to every fencing token: token = Pzxid +
	// TokenFloor. Every client of a name must use the same floor; an
	// acquire whose sum would pass 2^64 fails with an error wrapping
	// baton.ErrInvalidOption. See "Token floor" in the baton package doc
	// (the recovery procedure after rebuilding the ensemble).
	TokenFloor uint64
	// Backoff paces reconnects after a lost session, re-creates after an
	// unknown create result, and cleanup retries.
	Backoff baton.Backoff
	// Auth are digest credentials added to every session before use.
	Auth []Digest
	// TLS, if set, connects with TLS (a server's secureClientPort with the
	// Netty connection factory): RootCAs verify the server, Certificates
	// hold the client certificate a server with ssl.clientAuth=need
	// requires. An empty ServerName verifies each server against the host
	// of its address as given. A certificate refused by either side fails
	// Dial (and ends a client already dialled) with an error wrapping
	// baton.ErrAuth, since no retry can fix it.
	TLS *tls.Config
	// Observer, if set, is told of every acquire and lease of the client's
	// recipes (see queuekit.MutexOptions.Observer) and of each create of
	// unknown outcome that recovery resolved by adopting the entry
	// (baton.EventRecovered); nil reports nothing.
	Observer baton.Observer
	// Process is the holder record stored in the data of every entry the
	// client creates (engine.ProcessData), so that Inspect, baton inspect
	// and Curator's tools show who holds and who waits. The zero value
	// records this process (engine.ThisProcess).
	Process baton.Process
}

// normalize fills defaults and validates o.
func (o Options) normalize() (Options, error) {
	if o.SessionTimeout < 0 {
		return o, fmt.Errorf("zklock: session timeout %v: %w", o.SessionTimeout, baton.ErrInvalidOption)
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.SessionTimeout < time.Millisecond || o.SessionTimeout > baton.MaxTTL {
		return o, fmt.Errorf("zklock: session timeout %v, want 1ms…%v: %w", o.SessionTimeout, baton.MaxTTL, baton.ErrInvalidOption)
	}
	chroot, err := normalizeChroot(o.Chroot)
	if err != nil {
		return o, err
	}
	o.Chroot = chroot
	for _, d := range o.Auth {
		if d.User == "" || strings.Contains(d.User, ":") {
			return o, fmt.Errorf("zklock: digest user %q: %w", d.User, baton.ErrInvalidOption)
		}
	}
	return o, nil
}

func normalizeChroot(c string) (string, error) {
	if strings.Trim(c, "/") == "" {
		return "", nil
	}
	n, err := engine.ValidatePath(c)
	if err != nil {
		return "", fmt.Errorf("zklock: chroot: %w: %w", baton.ErrInvalidOption, err)
	}
	if inSystemTree("/" + n) {
		return "", fmt.Errorf("zklock: chroot %q: %w: inside ZooKeeper's own %s tree (quotas, configuration)",
			c, baton.ErrInvalidOption, systemTree)
	}
	return "/" + n, nil
}

// ParseURL parses "zk://h1:2181,h2:2181/chroot". A host without a port
// gets DefaultPort; IPv6 hosts are bracketed ("[::1]:2181"). Credentials,
// query strings and fragments are refused: secrets come from Options.Auth
// (baton.Open takes a URL's user:password@ out before it calls ParseURL,
// so that no error shows it). Errors wrap baton.ErrInvalidOption.
func ParseURL(raw string) (servers []string, chroot string, err error) {
	bad := func(why string) ([]string, string, error) {
		return nil, "", fmt.Errorf("zklock: URL %q: %s: %w", raw, why, baton.ErrInvalidOption)
	}
	const scheme = "zk://"
	if len(raw) < len(scheme) || !strings.EqualFold(raw[:len(scheme)], scheme) {
		return bad("scheme must be zk://")
	}
	rest := raw[len(scheme):]
	if strings.ContainsAny(rest, "?#") {
		return bad("query and fragment are not supported")
	}
	hosts, path, _ := strings.Cut(rest, "/")
	if strings.Contains(hosts, "@") {
		return bad("credentials in the URL are not supported (use Options.Auth)")
	}
	if hosts == "" {
		return bad("no server")
	}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return bad("empty server address")
		}
		host, port := h, strconv.Itoa(DefaultPort)
		if strings.HasPrefix(h, "[") { // [v6] or [v6]:port
			end := strings.Index(h, "]")
			if end < 0 {
				return bad("unclosed [ in " + h)
			}
			host = h[1:end]
			if tail := h[end+1:]; tail != "" {
				if !strings.HasPrefix(tail, ":") {
					return bad("bad address " + h)
				}
				port = tail[1:]
			}
		} else if i := strings.LastIndex(h, ":"); i >= 0 {
			host, port = h[:i], h[i+1:]
			if strings.Contains(host, ":") {
				return bad("IPv6 address must be bracketed: " + h)
			}
		}
		if host == "" {
			return bad("empty host in " + h)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return bad("bad port in " + h)
		}
		servers = append(servers, net.JoinHostPort(host, port))
	}
	if chroot, err = normalizeChroot(path); err != nil {
		return nil, "", fmt.Errorf("zklock: URL %q: %w", raw, err)
	}
	return servers, chroot, nil
}

// Client is the ZooKeeper engine behind a *baton.Client: it owns one
// ZooKeeper session at a time and replaces it when it is lost, and the
// recipes of the *baton.Client share that session. Users reach it with
// baton.As[*zklock.Client] for what only ZooKeeper has: the session
// (Conn, SessionID, SessionTimeout), the lock directories (Dir) and the
// raw entries tests and operators read and remove (Entries, Inspect,
// Remove, TokenBound).
type Client struct {
	servers []string
	opts    Options
	acl     []zk.ACL
	// proc is the holder record every entry's create carries, encoded
	// once: it is the same for every grant.
	proc []byte

	mu      sync.Mutex
	cur     *session
	curCh   chan struct{} // closed when cur changes
	fatal   error         // permanent failure (authentication refused)
	closed  bool
	closing chan struct{}
	wg      sync.WaitGroup // run and the closers of lost sessions
}

var (
	_ queuekit.Backend     = backend{}
	_ queuekit.DirWatcher  = (*session)(nil)
	_ queuekit.DataSession = (*session)(nil)
)

// Dial connects to servers and returns once the first session is
// established, or fails with an error wrapping baton.ErrUnavailable and
// ctx.Err() when ctx ends first (the half-open connection is then closed in
// the background within a few seconds). The client lives until Close; ctx
// bounds only the dial. baton.As[*zklock.Client] on it returns the
// engine's own Client.
func Dial(ctx context.Context, servers []string, opts Options) (*baton.Client, error) {
	c, err := dial(ctx, servers, opts)
	if err != nil {
		return nil, err
	}
	return engine.NewClient(connOf(c)), nil
}

// dial is Dial, returning the engine's own client.
func dial(ctx context.Context, servers []string, opts Options) (*Client, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("zklock: no servers: %w", baton.ErrInvalidOption)
	}
	c := &Client{
		servers: slices.Clone(servers),
		opts:    opts,
		acl:     zk.WorldACL(zk.PermAll),
		proc:    holderRecord(opts.Process),
		curCh:   make(chan struct{}),
		closing: make(chan struct{}),
	}
	if len(opts.Auth) > 0 {
		c.acl = digestACL(opts.Auth)
	}
	c.wg.Go(c.run)
	if _, err := c.session(ctx); err != nil {
		// go-zookeeper's Close can wait a few seconds for an unreachable
		// server; Dial returns by its deadline and lets the close finish
		// on its own (it is bounded by those timeouts).
		go c.close()
		return nil, err
	}
	return c, nil
}

// run keeps one session alive: it starts a session, publishes it, and when
// the session is lost closes it and starts the next after a backoff.
// Owner: the client; it returns at Close.
func (c *Client) run() {
	attempt := 0
	for {
		s := newSession(c)
		start := time.Now()
		if err := s.start(); err != nil {
			s.lose(err)
		} else if err := c.authenticate(s); err != nil {
			s.lose(err)
		} else {
			c.publish(s)
		}
		select {
		case <-s.lost:
			c.wg.Go(s.shutdown)
		case <-c.closing:
			s.lose(fmt.Errorf("zklock: %w", baton.ErrClosed))
			s.shutdown()
			return
		}
		if c.failed() {
			return
		}
		if time.Since(start) > c.opts.SessionTimeout {
			attempt = 0
		}
		t := time.NewTimer(c.opts.Backoff.Delay(attempt))
		attempt++
		select {
		case <-t.C:
		case <-c.closing:
			t.Stop()
			return
		}
	}
}

// authenticate adds the digest credentials to a new session before anyone
// uses it; go-zookeeper re-sends them after a reconnect.
func (c *Client) authenticate(s *session) error {
	for _, d := range c.opts.Auth {
		o := goOp(s, func() (struct{}, error) {
			return struct{}{}, s.conn.AddAuth("digest", []byte(d.User+":"+d.Password))
		})
		select {
		case <-o.done:
		case <-s.lost:
			return s.lostErr()
		case <-c.closing:
			return fmt.Errorf("zklock: %w", baton.ErrClosed)
		}
		if o.err != nil {
			if errors.Is(o.err, zk.ErrAuthFailed) || errors.Is(o.err, zk.ErrNoAuth) {
				err := fmt.Errorf("zklock: digest user %q: %w: %w", d.User, baton.ErrAuth, o.err)
				c.setFatal(err)
				return err
			}
			return o.err
		}
	}
	return nil
}

// setFatal ends the client with err (the first one wins): no session
// will be started again, and every waiter returns err.
func (c *Client) setFatal(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fatal != nil {
		return
	}
	c.fatal = err
	close(c.curCh)
	c.curCh = make(chan struct{})
}

// aclHint says who a NoAuth refused, for its message. ZooKeeper accepts
// any digest password at AddAuth: a wrong one shows only here.
func (c *Client) aclHint() string {
	if len(c.opts.Auth) == 0 {
		return "the ACL grants nothing to a client without digest credentials"
	}
	users := make([]string, len(c.opts.Auth))
	for i, d := range c.opts.Auth {
		users[i] = strconv.Quote(d.User)
	}
	return "the ACL grants nothing to digest user " + strings.Join(users, ", ") + " with this password"
}

// digestACL grants every right to each digest user, and none to others.
func digestACL(auth []Digest) []zk.ACL {
	var acl []zk.ACL
	for _, d := range auth {
		acl = append(acl, zk.DigestACL(zk.PermAll, d.User, d.Password)...)
	}
	return acl
}

func (c *Client) failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fatal != nil
}

func (c *Client) publish(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur = s
	close(c.curCh)
	c.curCh = make(chan struct{})
}

// session waits for a Held session.
func (c *Client) session(ctx context.Context) (*session, error) {
	for {
		c.mu.Lock()
		closed, fatal, s, curCh := c.closed, c.fatal, c.cur, c.curCh
		c.mu.Unlock()
		switch {
		case closed:
			return nil, fmt.Errorf("zklock: %w", baton.ErrClosed)
		case fatal != nil:
			return nil, fatal
		}
		var changed <-chan struct{}
		if s != nil {
			st, ch := s.Observe()
			if st == baton.Held {
				return s, nil
			}
			changed = ch
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("zklock: no ZooKeeper session with %s: %w: %w",
				strings.Join(c.servers, ","), baton.ErrUnavailable, ctx.Err())
		case <-curCh:
		case <-changed:
		case <-c.closing:
		}
	}
}

// backend is the queuekit.Backend the client's recipes run on. It is a type
// of its own so that the engine plumbing stays off the Client's API.
type backend struct{ c *Client }

func (b backend) Engine() string { return "zk" }

// Session returns the current session once it is Held.
func (b backend) Session(ctx context.Context, dir string) (queuekit.Session, error) {
	s, err := b.c.session(ctx)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Done does nothing: all recipes share the client's one session.
func (b backend) Done(queuekit.Session, string) {}

// mutex returns the reentrant mutex called name, wire-compatible with
// Curator's InterProcessMutex on the same path. Its znode directory is the
// chroot plus "/" plus the normalised name.
func (c *Client) mutex(name string) (*queuekit.Mutex, error) {
	if c.isClosed() {
		return nil, fmt.Errorf("zklock: %w", baton.ErrClosed)
	}
	m, err := queuekit.NewMutex(backend{c}, name, queuekit.MutexOptions{Observer: c.opts.Observer})
	return mapped(c, m, err)
}

// rwMutex returns the read/write lock called name, wire-compatible with
// Curator's InterProcessReadWriteLock on the same path: readers' entries
// "_c_<uuid>-__READ__<seq>" and writers' "_c_<uuid>-__WRIT__<seq>" share
// the directory and interleave by sequence.
func (c *Client) rwMutex(name string) (*queuekit.RWMutex, error) {
	if c.isClosed() {
		return nil, fmt.Errorf("zklock: %w", baton.ErrClosed)
	}
	rw, err := queuekit.NewRWMutex(backend{c}, name, queuekit.MutexOptions{Observer: c.opts.Observer})
	return mapped(c, rw, err)
}

// semaphore returns the semaphore called name with n permits,
// wire-compatible with Curator's InterProcessSemaphoreV2 on the same path
// and n: guard entries "locks/_c_<uuid>-lock-<seq>", leases
// "leases/_c_<uuid>-lease-<seq>" with the data "baton:permits=<n>" and the
// holder record on the next line. n below
// 1 returns an error wrapping baton.ErrInvalidOption.
func (c *Client) semaphore(name string, n int) (*queuekit.Semaphore, error) {
	if c.isClosed() {
		return nil, fmt.Errorf("zklock: %w", baton.ErrClosed)
	}
	s, err := queuekit.NewSemaphore(backend{c}, name, n, queuekit.MutexOptions{Observer: c.opts.Observer})
	return mapped(c, s, err)
}

// election returns the leader election called name, wire-compatible with
// Curator's LeaderLatch on the same path: candidates
// "_c_<uuid>-latch-<seq>" whose data is the candidate ID (LeaderLatch's
// participant id). The first entry leads; since a candidate only ever
// counts its own entry of its current session, it leads only while that
// entry's ephemeral owner is its live session.
func (c *Client) election(name string) (*queuekit.Election, error) {
	if c.isClosed() {
		return nil, fmt.Errorf("zklock: %w", baton.ErrClosed)
	}
	e, err := queuekit.NewElection(backend{c}, name, queuekit.MutexOptions{Observer: c.opts.Observer})
	return mapped(c, e, err)
}

// Dir returns the znode directory of the lock called name. Names and the
// directories the recipes derive from them ("<name>/locks") are checked
// with engine.ValidatePath, so a directory never escapes the chroot, and
// must not fall in ZooKeeper's own tree (see systemTree). It is reached
// through baton.As[*zklock.Client].
func (c *Client) Dir(name string) (string, error) { return c.dirPath(name) }

func (c *Client) dirPath(name string) (string, error) { return c.parentOf(name, "") }

// dirName is name validated and normalised, refused when its directory
// (the chroot, "/", then it) falls in ZooKeeper's own tree. It builds no
// string, where dirPath builds the directory's.
func (c *Client) dirName(name string) (string, error) {
	n, err := engine.ValidatePath(name)
	if err != nil {
		return "", err
	}
	if inSystemTreeAt(c.opts.Chroot, n) {
		return "", systemName(name, c.opts.Chroot+"/"+n)
	}
	return n, nil
}

// parentOf is dirPath(name), taken from key when key is a path below that
// directory (the caller's own entry): a substring of key then, so a
// lock+unlock builds its directory's path once, with its entry's.
func (c *Client) parentOf(name, key string) (string, error) {
	n, err := c.dirName(name)
	if err != nil {
		return "", err
	}
	ch := c.opts.Chroot
	if end := len(ch) + 1 + len(n); len(key) > end && key[end] == '/' && key[len(ch)] == '/' &&
		key[:len(ch)] == ch && key[len(ch)+1:end] == n {
		return key[:end], nil
	}
	return ch + "/" + n, nil
}

// Entries lists the raw child names under the lock directory of name,
// sorted (for tests, inspect and orphan scans), waiting for a live session
// and returning by ctx's end as the recipes' calls do. A missing
// directory has no entries. It is reached through baton.As.
func (c *Client) Entries(ctx context.Context, name string) ([]string, error) {
	dir, err := c.dirPath(name)
	if err != nil {
		return nil, err
	}
	s, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	kids, err := callIdem(ctx, s, func() ([]string, error) {
		k, _, err := s.conn.Children(dir)
		return k, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, s.opErr(ctx, "list "+dir, err)
	}
	slices.Sort(kids)
	return kids, nil
}

// Conn returns the current session's go-zookeeper connection (nil before
// the first session), reached through baton.As[*zklock.Client]. It is
// replaced when the session is lost; nodes made through it do not get
// baton's chroot or ACLs.
func (c *Client) Conn() *zk.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return nil
	}
	return c.cur.conn
}

// SessionID returns the current session's ID (0 before the first
// session), reached through baton.As[*zklock.Client].
func (c *Client) SessionID() int64 {
	c.mu.Lock()
	s := c.cur
	c.mu.Unlock()
	if s == nil {
		return 0
	}
	return s.sessionID()
}

// SessionTimeout returns the timeout the server negotiated for the current
// session, which may differ from the requested one (the CLI reports a
// clamp). It is reached through baton.As[*zklock.Client].
func (c *Client) SessionTimeout() time.Duration {
	c.mu.Lock()
	s := c.cur
	c.mu.Unlock()
	if s == nil {
		return c.opts.SessionTimeout
	}
	return s.timeout()
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// close ends the session — the server deletes its entries at once, so every
// lease of this client becomes Lost — and waits for the client's
// goroutines (a few seconds at most when the server is unreachable). Later
// calls return baton.ErrClosed; closing again returns nil. The
// *baton.Client's Close calls it.
func (c *Client) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.closing)
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}
