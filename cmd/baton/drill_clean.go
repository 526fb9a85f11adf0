package main

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/sqllock"
	"github.com/baton-go/baton/zklock"
)

// drillClean returns the Target.Clean of the engine of u: what a drill
// removes under its prefix once nothing holds or waits there. ZooKeeper
// keeps every lock's persistent directory; the SQL engine keeps a row per
// lock name (a released row keeps its token). etcd deletes a lock's keys
// with its last entry, and Redis keeps only its per-slot token counters,
// which other locks share and must not lose: nil for them.
func drillClean(cfg *drillConfig, u engineURL, admin *backend) func(context.Context, string) error {
	switch {
	case u.scheme == "zk":
		c, ok := baton.As[*zklock.Client](admin.client)
		if !ok {
			return nil
		}
		_, chroot, _ := zklock.ParseURL(u.raw)
		return func(ctx context.Context, prefix string) error {
			return zkDeleteTree(ctx, c, path.Join("/", chroot, prefix))
		}
	case sqlEngine(u.scheme) != "":
		return func(ctx context.Context, prefix string) error { return sqlDeletePrefix(ctx, cfg, u, prefix) }
	}
	return nil
}

// zkDeleteTree deletes root and everything under it, children first.
func zkDeleteTree(ctx context.Context, c *zklock.Client, root string) error {
	conn := c.Conn()
	if conn == nil {
		return errors.New("zk: no session")
	}
	var del func(p string) error
	del = func(p string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		kids, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", p, err)
		}
		for _, k := range kids {
			if err := del(p + "/" + k); err != nil {
				return err
			}
		}
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("delete %s: %w", p, err)
		}
		return nil
	}
	return del(root)
}

// sqlDeletePrefix deletes the locks table's rows of every name under
// prefix. The tokens stay monotonic: they come from a sequence, not from
// the rows.
func sqlDeletePrefix(ctx context.Context, cfg *drillConfig, u engineURL, prefix string) error {
	db, eng, closeDB, err := sqlDB(ctx, cfg.connectTimeout, u)
	if err != nil {
		return err
	}
	defer closeDB()
	p := "?"
	if eng == "postgres" {
		p = "$1"
	}
	under := prefix + "/"
	// substr, not LIKE: a prefix may hold % or _, and substr is spelled
	// alike by PostgreSQL, MySQL and SQLite.
	q := fmt.Sprintf("DELETE FROM %slocks WHERE substr(name, 1, %d) = %s", sqllock.DefaultTablePrefix, len(under), p)
	if _, err := db.ExecContext(ctx, q, under); err != nil {
		return fmt.Errorf("remove the drill's rows: %w", sqlErr(u.scrub(err)))
	}
	return nil
}
