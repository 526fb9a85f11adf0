package etcdlock

import (
	"github.com/baton-go/baton/engine/queuekit"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// dirOps are the parts of a session's requests on one directory that are
// the same for every entry the session puts there: its key, the compare
// "key absent", the count of the directory, the read of the key, its
// delete, and the put of the value last put (the kind's marker and the
// client's record). clientv3 builds an Op or a Cmp in several allocations
// (the key and value as bytes, the options, a probe of them), and an
// uncontended lock+unlock built seven of them. A Txn reads them and never
// changes them, so a session builds them once per directory, and a
// dirOps is never changed once shared: a new put replaces it.
//
// The transactions go through KV.Do with clientv3.OpTxn, whose slices are
// these, rather than through KV.Txn's builder, which copies each Cmp and
// Op into a slice of its own on every call.
type dirOps struct {
	key    string
	ifGone []clientv3.Cmp // the key is absent
	orGet  []clientv3.Op  // read the key
	del    []clientv3.Op  // delete the key

	putVal string        // the value create puts; create is nil until set
	create []clientv3.Op // put the key on the lease, count the directory
}

// maxDirOps bounds a session's dirOps: a session that serves many names
// starts over instead of keeping one for each.
const maxDirOps = 64

// ops returns the session's dirOps for dir, with its put putting val.
func (s *session) ops(dir, val string) *dirOps {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.dirs[dir]
	if o == nil {
		if len(s.dirs) >= maxDirOps {
			clear(s.dirs)
		}
		key := dir + "/" + s.hex
		o = &dirOps{
			key:    key,
			ifGone: []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
			orGet:  []clientv3.Op{clientv3.OpGet(key)},
			del:    []clientv3.Op{clientv3.OpDelete(key)},
		}
	} else if o.create != nil && o.putVal == val {
		return o
	} else {
		n := *o
		o = &n
	}
	o.putVal = val
	o.create = []clientv3.Op{clientv3.OpPut(o.key, val, clientv3.WithLease(s.id)), countOp(dir)}
	s.dirs[dir] = o
	return o
}

// exact is the guard and the delete of e's key (see guard), as OpTxn's
// slices: from the session's dirOps when e is its entry there with a
// known create revision, built afresh otherwise.
func (s *session) exact(e queuekit.Entry) ([]clientv3.Cmp, []clientv3.Op) {
	s.mu.Lock()
	o := s.dirs[entryDir(e)]
	s.mu.Unlock()
	if o == nil || o.key != e.Key || e.Seq == 0 {
		return []clientv3.Cmp{guard(e, s.id)}, []clientv3.Op{clientv3.OpDelete(e.Key)}
	}
	return []clientv3.Cmp{{
		Key:         o.ifGone[0].Key,
		Target:      pb.Compare_CREATE,
		Result:      pb.Compare_EQUAL,
		TargetUnion: &pb.Compare_CreateRevision{CreateRevision: int64(e.Seq)},
	}}, o.del
}
