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
	// The mutex's key holds "<owner> <token> <holder record>".
	var key, rest string
	for key == "" {
		keys, err := rdb.Keys(ctx, "*"+name+"*:mutex").Result()
		if err != nil {
			t.Fatalf("KEYS: %v", err)
		}
		for _, k := range keys {
			if v, _ := rdb.Get(ctx, k).Result(); v != "" {
				key, rest = k, v[strings.Index(v, " "):]
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := rdb.SetArgs(ctx, key, craftedOwner+rest, redis.SetArgs{KeepTTL: true}).Err(); err != nil {
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
