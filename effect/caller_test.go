package effect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
)

// ignoresContext is a backend that returns only when release is closed,
// whatever its context says: a backend that does not honour cancellation.
func ignoresContext(release <-chan struct{}) *fakeBackend {
	return &fakeBackend{eval: func(context.Context, effect.Request) (effect.Outcome, error) {
		<-release
		return effect.OK([]byte("1")), nil
	}}
}

// A Caller's call races the backend against wall clock + grace, as the
// effect's does: a backend that ignores its context loses at the deadline
// (untyped, retryable), and finished is called only once it returns.
func TestCallerRacesABackendThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		c, err := effect.NewCaller(ignoresContext(release), effect.Options{BackendGrace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		finished := make(chan struct{})
		start := time.Now()
		_, err = c.Call(context.Background(), effect.Request{Script: "1", InputJSON: "null",
			Limits: effect.Limits{WallClock: 2 * time.Second, MemoryBytes: 1 << 20}}, "inline", func() { close(finished) })
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("answered after %v, want the deadline of wall clock + grace (3s)", took)
		}
		assertUntyped(t, err, effect.ErrBackendDidNotSettle, true)
		select {
		case <-finished:
			t.Fatal("finished before the backend returned")
		default:
		}
		close(release)
		synctest.Wait()
		select {
		case <-finished:
		default:
			t.Fatal("finished not called once the backend returned")
		}
	})
}

// Evaluate's Finished is called once, when nothing of the evaluation runs:
// at once for an evaluation that settled, after the backend returns for one
// the effect stopped waiting for.
func TestFinishedWaitsForAnAbandonedBackend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		in := validInput()
		in.Finished = func() { calls++ }
		e := mustNew(t, newReader(testScript), returning(effect.OK([]byte("1")), nil), effect.Options{})
		if _, err := e.Evaluate(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		if calls != 1 {
			t.Fatalf("Finished called %d times after a settled evaluation, want 1", calls)
		}

		release := make(chan struct{})
		calls = 0
		e = mustNew(t, newReader(testScript), ignoresContext(release), effect.Options{BackendGrace: time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		if _, err := e.Evaluate(ctx, in); !errors.Is(err, context.Canceled) || errors.Is(err, effect.ErrNotRun) {
			t.Fatalf("got %v, want a cancellation after the backend was called", err)
		}
		if calls != 0 {
			t.Fatal("Finished called while the backend still runs")
		}
		close(release)
		synctest.Wait()
		if calls != 1 {
			t.Fatalf("Finished called %d times after the backend returned, want 1", calls)
		}
	})
}

// stallingReader never delivers: it waits for its context.
type stallingReader struct{}

func (stallingReader) Get(ctx context.Context, _ contentref.Ref) ([]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// FetchDeadline ends the fetch, not the evaluation's context: the answer is
// the store's retryable failure. A cancellation during the fetch says the
// script did not run (ErrNotRun).
func TestFetchDeadlineAndErrNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := returning(effect.OK([]byte("1")), nil)
		e := mustNew(t, stallingReader{}, b, effect.Options{})
		in := validInput()
		in.FetchDeadline = time.Now().Add(time.Second)
		_, err := e.Evaluate(context.Background(), in)
		assertUntyped(t, err, effect.ErrScriptFetch, true)

		in.FetchDeadline = time.Now().Add(time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err = e.Evaluate(ctx, in)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, effect.ErrNotRun) {
			t.Fatalf("got %v, want a cancellation that says the script did not run", err)
		}
		if b.evalCalls.Load() != 0 {
			t.Error("the backend was called")
		}
	})
}

// ValidateOutcome keeps only the kind's fields of a valid outcome and names
// every problem of a malformed one.
func TestValidateOutcome(t *testing.T) {
	name := "TypeError"
	o, err := effect.ValidateOutcome(effect.Threw(&name, "boom"))
	if err != nil || o.Kind != effect.KindThrew || *o.Name != name || o.Message != "boom" {
		t.Fatalf("threw: %+v %v", o, err)
	}
	name = "changed"
	if *o.Name != "TypeError" {
		t.Error("the validated outcome shares the backend's name")
	}
	_, err = effect.ValidateOutcome(effect.Outcome{OK: true, Value: []byte("1"), Kind: effect.KindLimit, Message: "x"})
	assertUntyped(t, err, effect.ErrMalformedOutcome, false)
	for _, want := range []string{"kind is not allowed", "message is not allowed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	_, err = effect.ValidateOutcome(effect.LimitHit(effect.LimitOutput))
	assertUntyped(t, err, effect.ErrMalformedOutcome, false)
}
