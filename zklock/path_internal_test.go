package zklock

import (
	"strings"
	"testing"

	"github.com/baton-go/baton/engine/queuekit"
)

// TestInSystemTreeAt: the check without the path agrees with the check
// on the path, for every chroot normalizeChroot lets through.
func TestInSystemTreeAt(t *testing.T) {
	for _, chroot := range []string{"", "/app", "/zoo", "/zookeeperx", "/a/zookeeper"} {
		for _, n := range []string{"zookeeper", "zookeeper/quota", "zookeeperx", "zoo/keeper", "a", "a/zookeeper"} {
			if got, want := inSystemTreeAt(chroot, n), inSystemTree(chroot+"/"+n); got != want {
				t.Errorf("inSystemTreeAt(%q, %q) = %v, inSystemTree(%q) = %v", chroot, n, got, chroot+"/"+n, want)
			}
		}
	}
}

// TestParentOf: the directory taken from an entry's path is dirPath's,
// a substring of the path; any other key, or none, builds it.
func TestParentOf(t *testing.T) {
	for _, chroot := range []string{"", "/app"} {
		c := &Client{opts: Options{Chroot: chroot}}
		dir, err := c.dirPath("jobs/nightly")
		if err != nil {
			t.Fatal(err)
		}
		path, dirLen := protectedPath(chroot, "jobs/nightly", queuekit.KindMutex)
		if path[:dirLen-1] != dir || !strings.HasPrefix(path[dirLen:], "_c_") || !strings.HasSuffix(path, "-lock-") {
			t.Errorf("protectedPath(%q, jobs/nightly) = %q (dir %q), want %s/_c_<uuid>-lock-", chroot, path, path[:dirLen-1], dir)
		}
		key := path + "0000000007"
		for _, k := range []string{key, "", dir, dir + "x/_c_1-lock-0000000001", "/other/jobs/nightly/e", chroot + "/jobs/nightly2/e"} {
			got, err := c.parentOf("jobs/nightly", k)
			if err != nil || got != dir {
				t.Errorf("chroot %q: parentOf(jobs/nightly, %q) = %q, %v; want %q", chroot, k, got, err, dir)
			}
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = c.parentOf("jobs/nightly", key) }); n != 0 {
			t.Errorf("chroot %q: parentOf from the entry's path: %v allocations, want 0", chroot, n)
		}
		if _, err := c.parentOf("zookeeper/quota", ""); (chroot == "") != (err != nil) {
			t.Errorf("chroot %q: parentOf(zookeeper/quota) error = %v", chroot, err)
		}
	}
}
