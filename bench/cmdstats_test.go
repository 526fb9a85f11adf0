package bench_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// cmdStat is one line of Redis's INFO commandstats: calls and the
// server's microseconds in the command. A script's line (evalsha)
// includes the commands it called, which also count on their own lines.
type cmdStat struct {
	calls int64
	usec  int64
}

// infoSection reads one section of a node's INFO as its "key:value"
// lines.
func infoSection(ctx context.Context, rdb redis.UniversalClient, section string) (map[string]string, error) {
	info, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("INFO %s: %w", section, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// commandStats reads INFO commandstats, keyed by command name in lower
// case ("evalsha", "hget", "set").
func commandStats(ctx context.Context, rdb redis.UniversalClient) (map[string]cmdStat, error) {
	lines, err := infoSection(ctx, rdb, "commandstats")
	if err != nil {
		return nil, err
	}
	out := map[string]cmdStat{}
	for name, fields := range lines {
		if !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var s cmdStat
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				s.calls, err = strconv.ParseInt(v, 10, 64)
			case "usec":
				s.usec, err = strconv.ParseInt(v, 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("INFO commandstats %s:%s: %w", name, fields, err)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = s
	}
	return out, nil
}

// commandProfile runs n lock+unlock of p alone after CONFIG RESETSTAT on
// every node and says, per op, which commands the nodes ran (summed over
// them) and the microseconds they spent in each: where a pair's server
// time goes. Scripts are shown apart from the commands they called, and
// "lua" is a script's time outside them (interpreter, argument and reply
// conversion).
func commandProfile[C redis.UniversalClient](ctx context.Context, p *pair, n int, nodes ...C) (string, error) {
	for _, node := range nodes {
		if err := node.ConfigResetStat(ctx).Err(); err != nil {
			return "", fmt.Errorf("CONFIG RESETSTAT: %w", err)
		}
	}
	if err := p.run(ctx, n); err != nil {
		return "", err
	}
	sum := map[string]cmdStat{}
	for _, node := range nodes {
		st, err := commandStats(ctx, node)
		if err != nil {
			return "", err
		}
		for k, v := range st {
			a := sum[k]
			sum[k] = cmdStat{calls: a.calls + v.calls, usec: a.usec + v.usec}
		}
	}
	return formatProfile(sum, n), nil
}

// formatProfile renders commandstats over n ops; the RESETSTAT and INFO
// themselves are left out. A pair either runs scripts, whose lines include
// the commands they called, or plain commands (the floor's PINGs): with a
// script in the reading every other command counts as called by one.
func formatProfile(st map[string]cmdStat, n int) string {
	scripts := map[string]bool{"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true, "fcall": true}
	var names []string
	var inScripts, others int64
	for name, s := range st {
		if name == "config|resetstat" || name == "info" || s.calls == 0 {
			continue
		}
		names = append(names, name)
		if scripts[name] {
			inScripts += s.usec
		} else {
			others += s.usec
		}
	}
	slices.Sort(names)
	var parts []string
	for _, name := range names {
		s := st[name]
		parts = append(parts, fmt.Sprintf("%s %.2f×%.1fµs", name, float64(s.calls)/float64(n), float64(s.usec)/float64(s.calls)))
	}
	total := others
	if inScripts > 0 {
		total = inScripts
		parts = append(parts, fmt.Sprintf("lua %.1fµs", float64(max(inScripts-others, 0))/float64(n)))
	}
	return fmt.Sprintf("%.1f µs/op in commands: %s", float64(total)/float64(n), strings.Join(parts, ", "))
}

// TestFormatProfile checks the arithmetic on a made-up reading: two
// scripts per op that called three commands between them.
func TestFormatProfile(t *testing.T) {
	st := map[string]cmdStat{
		"evalsha": {calls: 200, usec: 2000}, "hget": {calls: 100, usec: 200},
		"incr": {calls: 100, usec: 100}, "del": {calls: 100, usec: 300},
		"info": {calls: 1, usec: 50}, "config|resetstat": {calls: 1, usec: 5},
	}
	got := formatProfile(st, 100)
	want := "20.0 µs/op in commands: del 1.00×3.0µs, evalsha 2.00×10.0µs, hget 1.00×2.0µs, incr 1.00×1.0µs, lua 14.0µs"
	if got != want {
		t.Errorf("formatProfile = %q,\nwant %q", got, want)
	}
}
