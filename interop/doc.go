// Package interop proves that baton shares locks with other real clients on
// the same server: `baton run` and Apache Curator's InterProcessMutex (Java,
// compiled in the test run against Debian's libcurator-recipes-java) on one
// ZooKeeper path, and `baton run` and `etcdctl lock` on one etcd name. The
// brief promises wire compatibility with both (Curator's
// `_c_<uuid>-lock-<seq>` layout; etcdctl's `<name>/<lease hex>` keys in
// create-revision order); these tests are where that promise is checked
// against the real programs rather than against our reading of them.
//
// Every holder, whatever its client, runs the same critical section
// (testdata/critical.sh, java/CuratorMutex.java): an atomic mkdir of a
// marker directory that fails if another holder is inside, and one
// appended log line on entry and on exit. The tests replay the log and
// fail on any overlap, on a participant that did not enter as often as it
// should, on a start order that was not kept, and on baton tokens that do
// not strictly increase.
//
// The package has no code of its own: everything is in its tests.
package interop
