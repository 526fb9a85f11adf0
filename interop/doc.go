// Package interop proves that baton shares locks with other real clients on
// the same server: `baton run` and `baton elect` beside Apache Curator's
// recipes (Java, compiled in the test run against Debian's
// libcurator-recipes-java) on one ZooKeeper path, and beside `etcdctl lock`
// and `etcdctl elect` on one etcd name. baton promises wire compatibility
// with both (Curator's `_c_<uuid>-<marker><seq>` layouts for
// InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2 and
// LeaderLatch; etcdctl's `<name>/<lease hex>` keys in create-revision
// order); these tests are where that promise is checked against the real
// programs rather than against our reading of them.
//
// The Curator tests run twice: on the plain ZooKeeper server, and on the
// one that speaks only TLS and wants a client certificate
// (scripts/servers.d/tls.sh), where baton (zk+tls://, BATON_ZK_*) and
// Curator (ZooKeeper's Netty TLS client) authenticate as one digest user
// and every node of a lock, whichever client created it, must carry that
// user's digest ACL alone.
//
// Every holder, whatever its client, runs the same critical section
// (testdata/critical.sh, java/CuratorRecipes.java): it creates a marker
// directory named after its kind (mutex, write, read, permit, leader) and
// itself, lists the markers present, and appends one log line on entry
// (with what it saw) and one on exit. The tests replay the log and fail
// when holders that may not share were inside together — by the replay or
// by the markers a holder saw: any pair with a mutex, writer or leader, a
// reader with a writer, more permits than N — on a participant that did
// not enter as often as it should, on a start order that was not kept, on
// entries that do not match the shared layout, and on baton tokens that do
// not order the grants they must (a writer's or a leader's against every
// earlier grant).
//
// The package has no code of its own: everything is in its tests.
package interop
