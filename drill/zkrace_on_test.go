//go:build race

package drill_test

// zkRaceBuild: the test binary has the race detector on. go-zookeeper
// v1.0.4 reads Conn.lastZxid in sendSetWatches while its receive loop
// writes it, at every reconnect of a session that has watches
// (go-zookeeper/zk#35, samuel/go-zookeeper#260): the detector fails any
// test in which a waiter keeps its session across a member change.
const zkRaceBuild = true
