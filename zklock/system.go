package zklock

import (
	"fmt"
	"strings"

	"github.com/baton-go/baton"
)

// systemTree is ZooKeeper's own tree: the quotas (/zookeeper/quota), the
// dynamic configuration (/zookeeper/config). The server lets a client
// create nodes under it, and a lock there would put baton's entries among
// the nodes the server itself reads (quota limits and statistics are
// nodes under /zookeeper/quota).
const systemTree = "/zookeeper"

// inSystemTree reports whether the absolute path p (with the chroot) is
// systemTree or below it. Only ZooKeeper reserves that tree, so it is
// checked here, where the chroot is known, not by engine.ValidateName:
// under a chroot, "zookeeper/quota" is an ordinary name.
func inSystemTree(p string) bool { return p == systemTree || strings.HasPrefix(p, systemTree+"/") }

// inSystemTreeAt is inSystemTree(chroot + "/" + n) without building the
// path. A path is in the tree when its first segment is the tree's: the
// chroot's first segment when there is a chroot (normalizeChroot refuses
// one in the tree, so nothing below it is), else n's.
func inSystemTreeAt(chroot, n string) bool {
	if chroot != "" {
		return inSystemTree(chroot)
	}
	first, _, _ := strings.Cut(n, "/")
	return first == systemTree[1:]
}

// systemName is the error of a lock name whose directory p is in
// systemTree: it wraps baton.ErrInvalidName.
func systemName(name, p string) error {
	return fmt.Errorf("%w %q: its znode %s is inside ZooKeeper's own %s tree (quotas, configuration); "+
		"use another name or a chroot", baton.ErrInvalidName, name, p, systemTree)
}

// mapped returns the recipe r that queue made of name, unless its
// directory falls in ZooKeeper's own tree: so the constructors refuse such
// a name at once, not at the first acquire.
func mapped[R interface{ Name() string }](c *Client, r R, err error) (R, error) {
	if err == nil {
		_, err = c.dirPath(r.Name())
	}
	if err != nil {
		var zero R
		return zero, err
	}
	return r, nil
}
