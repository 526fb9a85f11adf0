package main_test

import "testing"

// TestEtcdSharedSizeDisagreement: the same warning on etcd, where the
// --shared 1000 run is granted at its create, beside the --shared 1 lease.
func TestEtcdSharedSizeDisagreement(t *testing.T) {
	sharedSizeDisagreement(t, etcdURL(t))
}
