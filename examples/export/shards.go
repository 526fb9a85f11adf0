package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/tasks"
)

// shardName is the published name of one shard of an export: a pointer
// row in the database, to an object in the store.
func shardName(export string, shard int) string {
	return fmt.Sprintf("exports/%s/shard-%d", export, shard)
}

// export runs one export from its checkpoint (the number of shards
// already published): each shard is uploaded as an object of its own
// (named after the permit's token, so nothing is ever overwritten), then
// published through the fenced pointer, then checkpointed.
func (e *exporter) export(ctx context.Context, cl *tasks.Claim, permit *baton.Lease) error {
	done := 0
	if cp := cl.Task().Checkpoint; len(cp) > 0 {
		var err error
		if done, err = strconv.Atoi(string(cp)); err != nil {
			return fmt.Errorf("%s checkpoint %q: %w", cl.Key(), cp, err)
		}
	}
	for shard := done + 1; shard <= shards; shard++ {
		time.Sleep(shardTime) // the query behind the shard
		data := fmt.Sprintf("%s shard %d: rows %d..%d\n", cl.Key(), shard, (shard-1)*1000+1, shard*1000)
		name := shardName(cl.Key(), shard)
		object, err := e.pub.Put(ctx, name, permit.Token(), permit.Owner(), strings.NewReader(data))
		if err != nil {
			return err
		}
		if e.sh.kill != nil && e.sh.kill(cl.Key(), shard) {
			e.Link.Freeze() // for good: the process is gone
			e.sh.killedObject, e.sh.killedToken = object, permit.Token()
			e.say("is killed (OOM) in %s after uploading %s, before publishing it", cl.Key(), object)
			return errKilled
		}
		if err := e.publish(ctx, name, permit); err != nil {
			return err
		}
		if err := cl.Heartbeat(ctx); err != nil {
			return err
		}
		if err := cl.Checkpoint(ctx, []byte(strconv.Itoa(shard))); err != nil {
			return err
		}
		if cl.Key() == "E-2" {
			e.say("%s shard %d/%d published, checkpoint %d", cl.Key(), shard, shards, shard)
		}
	}
	if err := cl.Complete(ctx, fmt.Appendf(nil, "%d shards", shards)); err != nil {
		return err
	}
	e.say("%s done: %d shards published", cl.Key(), shards)
	return nil
}

// publish points name at this permit's object, in a transaction of its
// own; a stale permit's pointer would be refused (baton.ErrStaleToken).
func (e *exporter) publish(ctx context.Context, name string, permit *baton.Lease) error {
	tx, err := e.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := e.pub.Publish(ctx, tx, name, permit.Token(), permit.Owner()); err != nil {
		return err
	}
	return tx.Commit()
}
