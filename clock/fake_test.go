package clock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton/clock"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeTimersFireInOrder(t *testing.T) {
	f := clock.NewFake(epoch)
	late, early := f.NewTimer(3*time.Second), f.NewTimer(time.Second)
	f.Advance(2 * time.Second)
	select {
	case at := <-early.C():
		if want := epoch.Add(time.Second); !at.Equal(want) {
			t.Errorf("early fired at %v, want %v", at, want)
		}
	default:
		t.Fatal("the 1s timer did not fire after Advance(2s)")
	}
	select {
	case <-late.C():
		t.Fatal("the 3s timer fired after Advance(2s)")
	default:
	}
	if got := f.Timers(); got != 1 {
		t.Errorf("Timers() = %d, want 1", got)
	}
	if !late.Stop() {
		t.Error("Stop() of an active timer = false, want true")
	}
	f.Advance(time.Hour)
	select {
	case <-late.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	if got, want := f.Now(), epoch.Add(time.Hour+2*time.Second); !got.Equal(want) {
		t.Errorf("Now() = %v, want %v", got, want)
	}
}

func TestFakeResetDrainsAndRearms(t *testing.T) {
	f := clock.NewFake(epoch)
	tm := f.NewTimer(time.Second)
	f.Advance(time.Second)
	if tm.Reset(time.Second) {
		t.Error("Reset of a fired timer = true, want false")
	}
	select {
	case <-tm.C():
		t.Fatal("a stale value was received after Reset")
	default:
	}
	f.Advance(time.Second)
	select {
	case <-tm.C():
	default:
		t.Fatal("the re-armed timer did not fire")
	}
	tm.Reset(0)
	select {
	case <-tm.C():
	default:
		t.Fatal("Reset(0) did not fire at once")
	}
}

func TestFakeAfterFuncAndBlockUntil(t *testing.T) {
	f := clock.NewFake(epoch)
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		tm := f.NewTimer(5 * time.Second)
		<-tm.C()
		close(done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.BlockUntil(ctx, 1); err != nil {
		t.Fatalf("BlockUntil(1) = %v", err)
	}
	stopped := f.AfterFunc(time.Second, func() { n.Add(100) })
	f.AfterFunc(time.Second, func() { n.Add(1) })
	stopped.Stop()
	f.Advance(5 * time.Second)
	<-done
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("AfterFunc calls added %d, want 1 (the stopped one must not run)", got)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if err := f.BlockUntil(short, 1); err == nil {
		t.Error("BlockUntil(1) with no timers = nil, want the context's error")
	}
}

func TestOrDefaultsToReal(t *testing.T) {
	if clock.Or(nil) != clock.Real {
		t.Error("Or(nil) is not Real")
	}
	f := clock.NewFake(epoch)
	if clock.Or(f) != clock.Clock(f) {
		t.Error("Or(f) is not f")
	}
}

func TestFakeNext(t *testing.T) {
	f := clock.NewFake(epoch)
	if _, ok := f.Next(); ok {
		t.Error("Next() with no timers: ok = true, want false")
	}
	f.NewTimer(3 * time.Second)
	early := f.NewTimer(time.Second)
	if got, ok := f.Next(); !ok || !got.Equal(epoch.Add(time.Second)) {
		t.Errorf("Next() = %v, %v, want %v, true", got, ok, epoch.Add(time.Second))
	}
	early.Stop()
	if got, ok := f.Next(); !ok || !got.Equal(epoch.Add(3*time.Second)) {
		t.Errorf("Next() after Stop = %v, %v, want %v, true", got, ok, epoch.Add(3*time.Second))
	}
}
