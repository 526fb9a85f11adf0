package zklock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

var (
	_ engine.Lister = conn{}
	_ engine.Purger = conn{}
)

// Names lists the locks directly under prefix: the children of its
// directory that are no entries (a lock's directory holds only entries,
// so a lock name is no parent of another).
func (k conn) Names(_ context.Context, prefix string) ([]string, error) {
	dir, err := k.c.dirPath(prefix)
	if err != nil {
		return nil, err
	}
	kids, err := k.c.children(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: list %s: %w", baton.ErrUnavailable, prefix, err)
	}
	var out []string
	for _, kid := range kids {
		if !strings.HasPrefix(kid, "_c_") && !strings.Contains(kid, "-lock-") {
			out = append(out, prefix+"/"+kid)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Purge deletes prefix's directory and everything under it, children
// first: ZooKeeper keeps every lock's persistent directory. The tokens
// stay monotonic, as they are the entries' sequence numbers, kept by
// the parent directory.
func (k conn) Purge(ctx context.Context, prefix string) error {
	dir, err := k.c.dirPath(prefix)
	if err != nil {
		return err
	}
	return k.c.deleteTree(ctx, dir)
}

func (c *Client) deleteTree(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	kids, err := c.children(p)
	if err != nil {
		return fmt.Errorf("list %s: %w", p, err)
	}
	for _, kid := range kids {
		if err := c.deleteTree(ctx, p+"/"+kid); err != nil {
			return err
		}
	}
	conn := c.Conn()
	if conn == nil {
		return errors.New("zk: no session")
	}
	if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	return nil
}

// children lists the children of p; none when p is gone.
func (c *Client) children(p string) ([]string, error) {
	conn := c.Conn()
	if conn == nil {
		return nil, errors.New("zk: no session")
	}
	kids, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}
