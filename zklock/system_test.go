package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/zklock"
)

// TestSystemTreeRefused: without a chroot, a name whose directory would be
// ZooKeeper's own /zookeeper tree (quotas, configuration) is refused by
// every recipe with ErrInvalidName, before anything is written; so is a
// chroot inside it. Under another chroot the same name is an ordinary
// directory and locks.
func TestSystemTreeRefused(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	for _, name := range []string{"zookeeper", "zookeeper/quota", "/zookeeper/quota/x", "zookeeper/config"} {
		if _, err := c.Mutex(name); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("Mutex(%q) = %v, want ErrInvalidName", name, err)
		}
		if _, err := c.RWMutex(name); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("RWMutex(%q) = %v, want ErrInvalidName", name, err)
		}
		if _, err := c.Semaphore(name, 1); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("Semaphore(%q, 1) = %v, want ErrInvalidName", name, err)
		}
		if _, err := c.Election(name); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("Election(%q) = %v, want ErrInvalidName", name, err)
		}
		if _, err := c.Dir(name); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("Dir(%q) = %v, want ErrInvalidName", name, err)
		}
	}
	// Only the exact segment is ZooKeeper's: paths are case-sensitive.
	for _, name := range []string{"zookeeper-quota", "Zookeeper/quota", "baton-test/zookeeper/quota"} {
		if _, err := c.Mutex(name); err != nil {
			t.Errorf("Mutex(%q) = %v, want accepted (not under /zookeeper)", name, err)
		}
	}
	for _, chroot := range []string{"/zookeeper", "/zookeeper/quota"} {
		if _, _, err := zklock.ParseURL("zk://127.0.0.1:2181" + chroot); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("ParseURL(…%s) = %v, want ErrInvalidOption", chroot, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second) // the options are refused before dialling
		cl, err := zklock.Dial(ctx, []string{testenv.ZK(t)}, zklock.Options{Chroot: chroot})
		cancel()
		if cl != nil {
			_ = cl.Close()
		}
		if !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("Dial(Chroot %q) = %v, want ErrInvalidOption", chroot, err)
		}
	}

	chrooted := dial(t, "", zklock.Options{Chroot: "/" + lockName(t)})
	m, err := chrooted.Mutex("zookeeper/quota")
	if err != nil {
		t.Fatalf("under a chroot: Mutex(zookeeper/quota) = %v, want accepted", err)
	}
	l, err := try(t, m.Lock)
	if err != nil {
		t.Fatalf("under a chroot: Lock = %v", err)
	}
	release(t, l)
}
