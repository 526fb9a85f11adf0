package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/baton-go/baton/tasks"
)

// release sends a wave's pick lists to the floor, from the one after the
// last checkpoint: a checkpoint after every pick list, a heartbeat too.
func (r *runner) release(ctx context.Context, cl *tasks.Claim) error {
	task := cl.Task()
	picks, err := strconv.Atoi(string(task.Payload))
	if err != nil {
		return fmt.Errorf("wave %s payload %q: %w", task.Key, task.Payload, err)
	}
	done := 0
	if len(task.Checkpoint) > 0 {
		if done, err = strconv.Atoi(string(task.Checkpoint)); err != nil {
			return fmt.Errorf("wave %s checkpoint %q: %w", task.Key, task.Checkpoint, err)
		}
	}
	c := cl.Claimant()
	r.say("releases %s (epoch %d), pick lists %d..%d", task.Key, c.Epoch, done+1, picks)
	for pick := done + 1; pick <= picks; pick++ {
		if r.beforePick != nil {
			r.beforePick(task.Key, pick)
		}
		if err := r.send(ctx, task.Key, pick, c); err != nil {
			return fmt.Errorf("pick list %d of %s: %w", pick, task.Key, err)
		}
		time.Sleep(pickTime)
		if err := cl.Heartbeat(ctx); err != nil {
			return err
		}
		if err := cl.Checkpoint(ctx, []byte(strconv.Itoa(pick))); err != nil {
			return err
		}
	}
	if err := cl.Complete(ctx, fmt.Appendf(nil, "%d pick lists", picks)); err != nil {
		return err
	}
	r.say("%s done", task.Key)
	return nil
}

// send puts one pick list on the floor, fenced by the wave's fence with
// the claimant's epoch, in one transaction with the message.
func (r *runner) send(ctx context.Context, wave string, pick int, c tasks.Claimant) error {
	return floorFence.Write(ctx, r.DB, "wave/"+wave, c.Epoch, c.Owner, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO floor_messages (wave, pick, runner, epoch) VALUES (?, ?, ?, ?)`,
			wave, pick, r.name, c.Epoch)
		return err
	})
}

// messages counts the floor messages per "wave/pick".
func messages(ctx context.Context, db *sql.DB) (map[string]int, error) {
	rows, err := db.QueryContext(ctx, `SELECT wave, pick, COUNT(*) FROM floor_messages GROUP BY wave, pick`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	n := map[string]int{}
	for rows.Next() {
		var wave string
		var pick, c int
		if err := rows.Scan(&wave, &pick, &c); err != nil {
			return nil, err
		}
		n[fmt.Sprintf("%s/%d", wave, pick)] = c
	}
	return n, rows.Err()
}
