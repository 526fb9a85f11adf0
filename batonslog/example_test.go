package batonslog_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/baton-go/baton/batonslog"
	"github.com/baton-go/baton/memlock"
)

// The routine flow of one lock at Debug. The time and the durations are
// dropped here only so the output is stable.
func ExampleNew() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "wait_ms", "hold_ms", "acquire", "owner":
				return slog.Attr{}
			}
			return a
		},
	})
	srv := memlock.NewServer(memlock.Options{Observer: batonslog.New(h, batonslog.Options{})})
	defer srv.Close()
	m, _ := srv.Client("worker").Mutex("orders/42")
	ctx := context.Background()
	l, err := m.Lock(ctx)
	if err != nil {
		panic(err)
	}
	_ = l.Release(ctx)
	// Output:
	// level=DEBUG msg="baton acquire_started" event=acquire_started engine=mem lock=orders/42 recipe=mutex
	// level=DEBUG msg="baton granted" event=granted engine=mem lock=orders/42 recipe=mutex token=1 session=worker#1 depth=1
	// level=DEBUG msg="baton released" event=released engine=mem lock=orders/42 recipe=mutex token=1 session=worker#1
}
