package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/internal/gopool"
)

// Client is one process's handle on the locks table of one database,
// behind the *baton.Client that New and baton.Open return. A program
// reaches it with baton.As[*sqllock.Client] for what only the SQL engine
// does: Migrate, SetNoMigrate, Prune, DB and Stats. It owns a keeper (see package keeper: two long-lived goroutines, plus one
// per renewal request in flight, renewing every lease it holds) and, on
// PostgreSQL with pgx, a share of the process's LISTEN connection for its
// server and table (see listen.go). Close stops and releases them.
type Client struct {
	db     *sql.DB
	o      Options
	q      *statements
	st     *store
	k      *keeper.Keeper
	eng    *leasekit.Engine // the recipes, on st
	engine string
	hubp   atomic.Pointer[tableHub] // set at the first use, once the server is identified
	// holder is the holder record every grant and intent row stores
	// (engine.ProcessData of Options.Process), encoded and boxed once:
	// an argument built per statement would cost an allocation per grant.
	holder any
	// ttlMicros is o.TTL in microseconds, boxed once: every acquire sends
	// it.
	ttlMicros any
	// ownDB is set when the client opened db itself (Open): Close then
	// closes it too.
	ownDB bool

	// schema is the gate of the first use's preparation (see
	// lockSchema): a channel of one token rather than a mutex, so that an
	// acquire waiting behind another's preparation ends with its context.
	schema   chan struct{}
	migrated bool        // the schema is known to exist: Migrate ran, or the first use's check
	schemaOK atomic.Bool // the first use's preparation is done

	ctx    context.Context // cancelled by Close: in-flight attempts end with it
	cancel context.CancelFunc
	// settling counts the attempt statements still running after their
	// acquire gave up (see settle.go); Close waits for them.
	settling sync.WaitGroup
	pool     *gopool.Pool // the goroutines those statements run on
	mu       sync.Mutex
	closed   bool
}

// New returns a client on db, which the caller keeps owning (Close does not
// close it). It does not touch the database: the schema is created at the
// first use (or by Migrate; with Options.NoMigrate the first use only
// checks that it exists), and the PostgreSQL listener connects in the
// background. baton.As[*sqllock.Client] on it reaches Migrate, Prune and
// the rest of the engine's own powers.
func New(db *sql.DB, o Options) (*baton.Client, error) {
	c, err := newClient(db, o)
	if err != nil {
		return nil, err
	}
	return engine.NewClient(connOf(c)), nil
}

// newClient is New's client, before package engine wraps it.
func newClient(db *sql.DB, o Options) (*Client, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: sqllock: nil *sql.DB", baton.ErrInvalidOption)
	}
	o, err := o.validate()
	if err != nil {
		return nil, err
	}
	if o.Dialect == 0 {
		if o.Dialect, err = fence.DialectOf(db); err != nil {
			return nil, fmt.Errorf("sqllock: %w", err)
		}
	}
	switch o.Dialect {
	case fence.Postgres, fence.MySQL, fence.SQLite:
	default:
		return nil, fmt.Errorf("%w: sqllock: unknown dialect %v", baton.ErrInvalidOption, o.Dialect)
	}
	c := &Client{
		db:        db,
		o:         o,
		q:         newStatements(o.Dialect, o.TablePrefix),
		engine:    o.Dialect.String(),
		holder:    engine.ProcessData(engine.OrThisProcess(o.Process)),
		ttlMicros: o.TTL.Microseconds(),
		schema:    make(chan struct{}, 1),
	}
	c.st = &store{c: c, db: db, q: c.q, batch: o.BatchSize,
		// Each leaves at least two connections of the pool to acquires.
		renewConn: warmConn{spare: 2}, releaseConn: warmConn{spare: 3, idleFirst: true}}
	c.k, err = keeper.New(c.st, keeper.Options{TTL: o.TTL, DriftMargin: o.DriftMargin, Backoff: o.Backoff,
		Observer: o.Observer, Engine: c.engine})
	if err != nil {
		return nil, fmt.Errorf("sqllock: %w", err)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.pool = gopool.New(c.ctx.Done(), 8) // a few workers wait for the next statement
	c.eng = &leasekit.Engine{
		Name: c.engine, Pkg: "sqllock", Opts: o.common(), Keeper: c.k, Store: c.st,
		Ctx: c.ctx, Err: c.checkOpen, AttemptTimeout: c.attemptTimeout(),
	}
	return c, nil
}

// Stats returns the counters of the keeper that renews this client's
// leases (rounds, batches, releases, suspensions, losses), for tests and
// monitoring. It is reached through baton.As[*sqllock.Client].
func (c *Client) Stats() keeper.Stats { return c.k.Stats() }

// table returns the name of the locks table.
func (c *Client) table() string { return c.q.locks }

// DB returns the *sql.DB the client runs on: the caller's (New), or the
// one baton.Open made, which fenced writes to the same database can
// share. It is reached through baton.As[*sqllock.Client].
func (c *Client) DB() *sql.DB { return c.db }

// Migrate creates the schema (see the package doc) if it does not exist,
// and upgrades a table an older version made. It is idempotent and safe
// to run from several processes at once. The first use then neither
// creates nor checks the schema again. It is reached through
// baton.As[*sqllock.Client]; a deployment step without a client runs the
// package's Migrate.
func (c *Client) Migrate(ctx context.Context) error {
	if err := c.lockSchema(ctx); err != nil {
		return err
	}
	defer c.unlockSchema()
	if err := migrate(ctx, c.db, c.q); err != nil {
		return Classify(err)
	}
	c.migrated = true
	return nil
}

// SetNoMigrate makes the client run no DDL, as Options.NoMigrate does,
// for a client that baton.Open made (its Options are Open's). It takes
// effect at the first use: call it before. It is reached through
// baton.As[*sqllock.Client].
func (c *Client) SetNoMigrate() {
	_ = c.lockSchema(context.Background())
	defer c.unlockSchema()
	c.o.NoMigrate = true
}

// Migrate creates the schema for o (dialect, table prefix) on db without
// a client, for deployment steps with DDL rights; clients with
// Options.NoMigrate then only check that it exists.
func Migrate(ctx context.Context, db *sql.DB, o Options) error {
	o, err := o.validate()
	if err != nil {
		return err
	}
	if o.Dialect == 0 {
		if o.Dialect, err = fence.DialectOf(db); err != nil {
			return fmt.Errorf("sqllock: %w", err)
		}
	}
	return Classify(migrate(ctx, db, newStatements(o.Dialect, o.TablePrefix)))
}

func migrate(ctx context.Context, db *sql.DB, q *statements) error {
	if q.d == fence.MySQL {
		// DDL commits implicitly in MySQL; IF NOT EXISTS and INSERT IGNORE
		// make each statement safe to race.
		for _, stmt := range q.schema {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("sqllock: migrate: %w", err)
			}
		}
		if err := migrateSequence(ctx, db, q); err != nil {
			return fmt.Errorf("sqllock: migrate: token sequence: %w", err)
		}
		return addColumns(ctx, db, q)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqllock: migrate: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if q.d == fence.Postgres {
		// Concurrent CREATE … IF NOT EXISTS can still collide in the
		// catalog on PostgreSQL: serialise migrations.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "baton-migrate:"+q.locks); err != nil {
			return fmt.Errorf("sqllock: migrate: %w", err)
		}
	}
	for _, stmt := range q.schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqllock: migrate: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqllock: migrate: %w", err)
	}
	if q.d == fence.SQLite {
		return addColumns(ctx, db, q)
	}
	return nil
}

// addedColumns are the columns of the locks table that came after its
// first version, in the order they came, with their MySQL and SQLite
// types: data (candidate IDs, semaphore sizes) with the read/write lock,
// semaphore and election; holder (the holder record) with baton.Open.
var addedColumns = []struct{ name, mysql, sqlite string }{
	{"data", `VARCHAR(1024) NOT NULL DEFAULT ''`, `TEXT NOT NULL DEFAULT ''`},
	{"holder", `VARCHAR(256) NULL`, `TEXT`},
}

// addColumns adds the columns of addedColumns that a locks table created
// before them lacks. PostgreSQL does it in the schema (ADD COLUMN IF NOT
// EXISTS); MySQL and SQLite lack that clause, so the columns are looked
// up first, and a concurrent migration that added one in between
// ("duplicate column") counts as success.
func addColumns(ctx context.Context, db *sql.DB, q *statements) error {
	var look string
	switch q.d {
	case fence.MySQL:
		look = `SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?`
	case fence.SQLite:
		look = `SELECT name FROM pragma_table_info(?)`
	default:
		return nil
	}
	have, err := columnsOf(ctx, db, look, q.locks)
	if err != nil {
		return fmt.Errorf("sqllock: migrate: %w", err)
	}
	for _, col := range addedColumns {
		if have[col.name] {
			continue
		}
		typ := col.sqlite
		if q.d == fence.MySQL {
			typ = col.mysql
		}
		_, err := db.ExecContext(ctx, `ALTER TABLE `+q.locks+` ADD COLUMN `+col.name+` `+typ)
		if err != nil && !strings.Contains(strings.ToLower(err.Error()), "duplicate column") {
			return fmt.Errorf("sqllock: migrate: %w", err)
		}
	}
	return nil
}

// columnsOf runs look (the column names of the table given as its
// parameter) and returns the names, lower case.
func columnsOf(ctx context.Context, db *sql.DB, look, table string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, look, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		have[strings.ToLower(name)] = true
	}
	return have, rows.Err()
}

// ensureSchema migrates once per client, at the first use.
func (c *Client) ensureSchema(ctx context.Context) error {
	if c.schemaOK.Load() {
		return nil
	}
	if err := c.lockSchema(ctx); err != nil {
		return err
	}
	defer c.unlockSchema()
	if c.schemaOK.Load() {
		return nil
	}
	switch {
	case c.migrated:
	case c.o.NoMigrate:
		// No DDL: only check that the table is there with every column
		// this version uses, and say what to do when it is not.
		rows, err := c.db.QueryContext(ctx, c.q.probe())
		if err != nil {
			return fmt.Errorf("sqllock: table %s is missing or lacks a column this version needs "+
				"(Options.NoMigrate is set: run sqllock.Migrate with DDL rights first): %w", c.q.locks, err)
		}
		_ = rows.Close()
	default:
		if err := migrate(ctx, c.db, c.q); err != nil {
			return err
		}
	}
	c.migrated = true
	if err := c.identify(ctx); err != nil {
		return err
	}
	if err := c.findTokenSource(ctx); err != nil {
		return err
	}
	c.st.pin(ctx)
	c.schemaOK.Store(true)
	return nil
}

// lockSchema takes the schema gate, or returns ctx's error as soon as ctx
// ends. The first use's preparation holds it for several round trips
// (the schema's check or DDL, the server's identity, the token source,
// the warm connections), and an acquire of another goroutine on the same
// client waits for it: behind a mutex, such a Lock went on waiting after
// its context was cancelled (281 ms in a drill's cancel-bulk, I6).
func (c *Client) lockSchema(ctx context.Context) error {
	select {
	case c.schema <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sqllock: waiting for the client's first-use preparation: %w", ctx.Err())
	}
}

// unlockSchema gives the gate back.
func (c *Client) unlockSchema() { <-c.schema }

// findTokenSource sets whether the client's MySQL-dialect tokens come
// from the sequence (see sequence.go). It runs under the schema gate,
// before the client's first acquire.
func (c *Client) findTokenSource(ctx context.Context) error {
	seq, err := usesSequence(ctx, c.db, c.q)
	if err != nil {
		return fmt.Errorf("sqllock: looking up the token sequence %s: %w", c.q.seq, err)
	}
	c.st.seq.Store(seq)
	return nil
}

// identify names the database server and table, so that clients of one
// process on the same table wake each other and share one LISTEN
// connection, whatever route (proxy, DSN) their *sql.DB takes. It runs
// once, under the schema gate.
func (c *Client) identify(ctx context.Context) error {
	if c.hubp.Load() != nil {
		return nil
	}
	var q string
	switch c.q.d {
	case fence.Postgres:
		q = `SELECT current_database() || '@' || coalesce(host(inet_server_addr()), 'local') || ':' || coalesce(inet_server_port()::text, '')`
	case fence.MySQL:
		q = `SELECT CONCAT(DATABASE(), '@', @@hostname, ':', @@port)`
	default:
		q = `SELECT file FROM pragma_database_list WHERE name = 'main'`
	}
	var id string
	if err := c.db.QueryRowContext(ctx, q).Scan(&id); err != nil {
		return fmt.Errorf("sqllock: identify the server: %w", err)
	}
	h := &tableHub{id: c.engine + "://" + id + "/" + c.q.locks}
	c.hubp.Store(h)
	if c.q.d == fence.Postgres && !c.o.NoListen && c.checkOpen() == nil {
		register(c, h.id)
	}
	return nil
}

// hub returns the client's wake-up hub (a no-op one before the first use).
func (c *Client) hub() *tableHub {
	if h := c.hubp.Load(); h != nil {
		return h
	}
	return &tableHub{id: "\x00unidentified/" + c.q.locks}
}

// attemptTimeout bounds one acquire attempt: TTL/3, so a waiter on a dead
// connection tries again on another within its session bound. A cut-off
// attempt discards its pooled connection (the driver closes it), so a
// database slower than TTL/3 per attempt grants no waiter (drill row 8 at
// 0.25×TTL latency reports it); the holder's renewals get up to TTL/2.
func (c *Client) attemptTimeout() time.Duration { return c.o.TTL / 3 }

// checkOpen returns an error wrapping baton.ErrClosed after Close.
func (c *Client) checkOpen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("sqllock: %w", baton.ErrClosed)
	}
	return nil
}

// shutdown is the *baton.Client's Close: it ends every lease of the
// client (Lost, cause wrapping baton.ErrClosed), frees their rows, wakes
// its waiters with ErrClosed and stops its goroutines. It does not close
// a *sql.DB given to New (it does close the one baton.Open made). A second
// call returns an error wrapping baton.ErrClosed.
func (c *Client) shutdown() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("sqllock: %w", baton.ErrClosed)
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.settling.Wait() // their grants are abandoned before the keeper closes
	c.pool.Wait()
	_ = c.lockSchema(context.Background()) // no registration in flight
	if h := c.hubp.Load(); h != nil && c.q.d == fence.Postgres && !c.o.NoListen {
		unregister(c, h.id)
	}
	c.unlockSchema()
	err := c.k.Close()
	c.st.unpin()
	if c.ownDB {
		err = errors.Join(err, c.db.Close())
	}
	return err
}

// entries lists the owned rows of name as "slot/kind/owner", read on the
// database: holders and the waiters' intent rows (see the package doc). A
// holder's row whose lease expired but was not taken yet is listed; an
// expired intent row is not (its waiter is gone).
func (c *Client) entries(ctx context.Context, name string) ([]string, error) {
	n, err := engine.ValidateName(name)
	if err != nil {
		return nil, err
	}
	if err := c.ensureSchema(ctx); err != nil {
		return nil, err
	}
	rows, err := c.db.QueryContext(ctx, c.q.entries(), n)
	if err != nil {
		return nil, fmt.Errorf("sqllock: entries %q: %w", n, err)
	}
	defer rows.Close()
	var es []string
	for rows.Next() {
		var (
			slot        int64
			kind, owner string
		)
		if err := rows.Scan(&slot, &kind, &owner); err != nil {
			return nil, fmt.Errorf("sqllock: entries %q: %w", n, err)
		}
		es = append(es, fmt.Sprintf("%d/%s/%s", slot, kind, owner))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqllock: entries %q: %w", n, err)
	}
	return es, nil
}

// Prune deletes the rows whose lease ended more than olderThan ago (free
// rows and expired rows nobody took), and returns how many it deleted.
// olderThan must be far beyond any statement's duration; see "Acquire,
// renew, release" in the package doc for why (an hour is the suggestion).
// It is reached through baton.As[*sqllock.Client].
func (c *Client) Prune(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan < time.Minute {
		return 0, fmt.Errorf("%w: sqllock: Prune(%v), want ≥ 1m", baton.ErrInvalidOption, olderThan)
	}
	if err := c.ensureSchema(ctx); err != nil {
		return 0, err
	}
	res, err := c.db.ExecContext(ctx, c.q.prune(), olderThan.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("sqllock: prune: %w", err)
	}
	return res.RowsAffected()
}

// micros is ttl in microseconds as a statement argument: the TTL's is
// boxed once.
func (c *Client) micros(ttl time.Duration) any {
	if ttl == c.o.TTL {
		return c.ttlMicros
	}
	return ttl.Microseconds()
}

// kindArg is kind as a statement argument: a string boxed per statement
// is an allocation.
func kindArg(kind string) any {
	switch kind {
	case kindMutex:
		return argMutex
	case kindRead:
		return argRead
	case kindWrite:
		return argWrite
	case kindPermit:
		return argPermit
	case kindLeader:
		return argLeader
	}
	return kind
}

var argMutex, argRead, argWrite, argPermit, argLeader any = kindMutex, kindRead, kindWrite, kindPermit, kindLeader
