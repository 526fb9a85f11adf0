package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisInspectEscapes: a holder's owner on Redis is written by other
// clients; inspect's table must escape the control characters a crafted
// one carries, as it does on SQL (TestSafeInspectEscapes).
func TestRedisInspectEscapes(t *testing.T) {
	t.Parallel()
	addr := privateRedis(t)
	url := "redis://" + addr + "/0"
	env := []string{"BATON_REDIS_PASSWORD=" + redisPassword}
	name := lockName(t)
	holder := startBaton(t, env, "run", "--backend", url, "--ttl", "5", name, "--", "sleep", "30")
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: redisPassword})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var key string
	for key == "" {
		keys, err := rdb.Keys(ctx, "*"+name+"*").Result()
		if err != nil {
			t.Fatalf("KEYS: %v", err)
		}
		for _, k := range keys {
			if typ, _ := rdb.Type(ctx, k).Result(); typ == "hash" {
				if owner, _ := rdb.HGet(ctx, k, "owner").Result(); owner != "" {
					key = k
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := rdb.HSet(ctx, key, "owner", craftedOwner).Err(); err != nil {
		t.Fatal(err)
	}
	r := runBaton(t, env, "inspect", "--backend", url, name)
	if r.code != 0 {
		t.Fatalf("inspect exit = %d; stderr:\n%s", r.code, r.stderr)
	}
	rawControls(t, "table", r.stdout)
	if !strings.Contains(r.stdout, `own\x1b[2J`) {
		t.Errorf("table does not show the escaped owner:\n%s", r.stdout)
	}
	_ = holder.cmd.Process.Kill()
}
