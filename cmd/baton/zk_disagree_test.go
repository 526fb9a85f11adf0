package main_test

import (
	"testing"

	"github.com/baton-go/baton/batontest/testenv"
)

// TestZKSharedSizeDisagreement: the same warning on ZooKeeper.
func TestZKSharedSizeDisagreement(t *testing.T) {
	sharedSizeDisagreement(t, "zk://"+testenv.ZK(t)+"/baton-cli-test")
}
