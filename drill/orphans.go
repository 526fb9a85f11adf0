package drill

import (
	"context"
	"fmt"
	"time"
)

// Orphans polls entries until it lists nothing or wait has passed, and
// returns an I8 violation naming what is left. entries is the engine's
// orphan scan (zklock and etcdlock Client.Entries).
func Orphans(ctx context.Context, name string, wait time.Duration, entries func(context.Context, string) ([]string, error)) []Violation {
	deadline := time.Now().Add(wait)
	for {
		es, err := entries(ctx, name)
		if err == nil && len(es) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err != nil {
				return []Violation{{"I8", fmt.Sprintf("%q: orphan scan failed: %v", name, err)}}
			}
			return []Violation{{"I8", fmt.Sprintf("%q: %d entries left after %v: %v", name, len(es), wait, es)}}
		}
		time.Sleep(50 * time.Millisecond)
	}
}
