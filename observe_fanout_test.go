package baton_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batonslog"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/memlock"
)

type ctxKey struct{}

// TestObserversFanOut: every non-nil observer sees every event, in the
// order given, with the same ctx; nested Observers are flattened into
// that order.
func TestObserversFanOut(t *testing.T) {
	var got []string
	mark := func(tag string) baton.Observer {
		return baton.ObserverFunc(func(ctx context.Context, e baton.Event) {
			got = append(got, tag+":"+e.Name+":"+ctx.Value(ctxKey{}).(string))
		})
	}
	o := baton.Observers(mark("a"), nil, baton.Observers(mark("b"), mark("c")), nil, mark("d"))
	ctx := context.WithValue(context.Background(), ctxKey{}, "ctx")
	engine.Emit(ctx, o, baton.Event{Kind: baton.EventGranted, Name: "n1"})
	o.Observe(ctx, baton.Event{Kind: baton.EventReleased, Name: "n2"})
	want := []string{"a:n1:ctx", "b:n1:ctx", "c:n1:ctx", "d:n1:ctx", "a:n2:ctx", "b:n2:ctx", "c:n2:ctx", "d:n2:ctx"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}

// TestObserversNilAndSingle: no observer gives nil (engines' nil fast
// path), a single one is returned as it is (no extra call).
func TestObserversNilAndSingle(t *testing.T) {
	if o := baton.Observers(); o != nil {
		t.Errorf("Observers() = %v, want nil", o)
	}
	if o := baton.Observers(nil, nil); o != nil {
		t.Errorf("Observers(nil, nil) = %v, want nil", o)
	}
	if o := baton.Observers(baton.Observers(), nil); o != nil {
		t.Errorf("Observers(Observers(), nil) = %v, want nil", o)
	}
	one := &recorder{}
	if o := baton.Observers(nil, one, nil); o != baton.Observer(one) {
		t.Errorf("Observers(nil, r, nil) = %T, want r itself", o)
	}
}

// TestObserversPanicNotRecovered: a panicking observer's panic reaches
// the emitter and the observers after it miss the event, as documented.
func TestObserversPanicNotRecovered(t *testing.T) {
	after := &recorder{}
	o := baton.Observers(baton.ObserverFunc(func(context.Context, baton.Event) { panic("observer bug") }), after)
	defer func() {
		if r := recover(); r != "observer bug" {
			t.Errorf("recovered %v, want the observer's panic", r)
		}
		if len(after.kinds()) != 0 {
			t.Errorf("observer after the panicking one saw %v", after.kinds())
		}
	}()
	o.Observe(context.Background(), baton.Event{Kind: baton.EventGranted})
	t.Error("Observe returned after a panicking observer")
}

// One Observer field feeds several adapters: here slog and a counter of
// its own; batonprom's Collector and batonotel's Observer are passed the
// same way (see their examples).
func ExampleObservers() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "acquire", "hold_ms": // vary from run to run
				return slog.Attr{}
			}
			return a
		},
	})
	granted := 0
	count := baton.ObserverFunc(func(_ context.Context, e baton.Event) {
		if e.Kind == baton.EventGranted {
			granted++
		}
	})
	o := baton.Observers(batonslog.New(h, batonslog.Options{}), count)

	srv := memlock.NewServer(memlock.Options{Observer: o})
	defer srv.Close()
	a := srv.Client("a")
	m, _ := a.Mutex("orders/42")
	if _, err := m.Lock(context.Background()); err != nil {
		panic(err)
	}
	fa, _ := baton.As[*memlock.Client](a) // memlock's fault methods
	fa.Expire()                           // the session expires: the lease is lost, which slog logs at Warn
	fmt.Println("granted:", granted)
	// Output:
	// level=WARN msg="baton lost" event=lost engine=mem lock=orders/42 recipe=mutex token=1 owner=orders/42/lock-0000000001 session=a#1 err="baton: lock lost: session a#1 ended: baton: session lost"
	// granted: 1
}
