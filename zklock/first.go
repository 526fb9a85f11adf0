package zklock

import (
	"context"
	"errors"
	"path"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/go-zookeeper/zk"
)

var _ queuekit.FirstReleaser = (*session)(nil)

// releasedPrefix starts the data a first holder's release leaves on its
// lock directory: releasedPrefix + the released node's name.
const releasedPrefix = "baton:released="

// ReleaseFirst deletes e, granted as the first entry of its directory with
// others behind it, and in the same multi sets the directory's data to e's
// name (queuekit.FirstReleaser). The waiter behind e then reads the directory's
// data and stat, a few dozen bytes, where it would read every child: in a
// queue of 2 000 the getChildren answer is about 100 KB, and decoding it
// was most of a handoff's time.
//
// The data stays valid until the next first holder's release: after e's,
// that can only be the waiter behind e. Curator and zk.Lock read no
// directory data, and a directory whose ACL refuses the write is released
// with a plain delete.
func (s *session) ReleaseFirst(ctx context.Context, e queuekit.Entry) error {
	if st, _ := s.Observe(); st == baton.Lost {
		return s.lostErr()
	}
	dir, name := path.Split(e.Key)
	_, err := callIdem(ctx, s, func() (struct{}, error) {
		res, err := s.conn.Multi(
			&zk.SetDataRequest{Path: path.Clean(dir), Data: []byte(releasedPrefix + name), Version: -1},
			&zk.DeleteRequest{Path: e.Key, Version: -1},
		)
		return struct{}{}, multiErr(res, err)
	})
	switch {
	case err == nil, errors.Is(err, zk.ErrNoNode):
		return nil
	case errors.Is(err, zk.ErrNoAuth):
		return s.Delete(ctx, e)
	}
	return s.opErr(ctx, "delete "+e.Key, err)
}

// multiErr is the first error of a multi: the request's, or that of the
// operation that failed it.
func multiErr(res []zk.MultiResponse, err error) error {
	for _, r := range res {
		if r.Error != nil {
			return r.Error
		}
	}
	return err
}

// AfterFirst reads dir's data and stat (queuekit.FirstReleaser). If the data
// names gone, gone was released as the first of the queue, so own, which
// was directly behind it, is first now: nothing can be created before a
// node once it exists. The token is the Pzxid of the same stat, as List's,
// and it is past gone's release.
//
// Own is not read: an answer on this session proves the session alive,
// hence its ephemeral node there, as List's answer does for a holder.
func (s *session) AfterFirst(ctx context.Context, dir string, own, gone queuekit.Entry) (queuekit.Snapshot, bool, error) {
	parent, err := s.c.dirPath(dir)
	if err != nil {
		return queuekit.Snapshot{}, false, err
	}
	if path.Dir(gone.Key) != parent || path.Dir(own.Key) != parent {
		return queuekit.Snapshot{}, false, nil
	}
	type read struct {
		data []byte
		st   *zk.Stat
	}
	r, err := callIdem(ctx, s, func() (read, error) {
		d, st, err := s.conn.Get(parent)
		return read{d, st}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return queuekit.Snapshot{}, false, nil
	}
	if err != nil {
		return queuekit.Snapshot{}, false, s.opErr(ctx, "read "+parent, err)
	}
	if st, _ := s.Observe(); st == baton.Lost {
		return queuekit.Snapshot{}, false, s.lostErr()
	}
	if string(r.data) != releasedPrefix+path.Base(gone.Key) {
		return queuekit.Snapshot{}, false, nil
	}
	t, err := s.token(parent, r.st)
	if err != nil {
		return queuekit.Snapshot{}, false, err
	}
	return queuekit.Snapshot{Entries: []queuekit.Entry{own}, Own: 0, Token: t, Alone: r.st.NumChildren == 1}, true, nil
}
