package effect_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// ignoresContext is a backend that returns only when release is closed,
// whatever its context says: a backend that does not honour cancellation.
func ignoresContext(release <-chan struct{}) *fakeBackend {
	return &fakeBackend{eval: func(context.Context, spi.Request) (spi.Outcome, error) {
		<-release
		return spi.OK([]byte("1")), nil
	}}
}

// Run's call races the backend against wall clock + grace: a backend that ignores its context loses at the deadline (untyped,
// retryable), and Run reports the call as still going when it returns.
func TestRunRacesABackendThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		e := mustNew(t, effect.NoStore, ignoresContext(release), effect.Options{BackendGrace: time.Second, StopGrace: time.Nanosecond})
		start := time.Now()
		res, err := e.Run(context.Background(), spi.Evaluation{Script: "1", Input: []byte("null"),
			Limits: spi.Limits{WallClock: 2 * time.Second, MemoryBytes: 1 << 20}, Answer: spi.AnswerOutcome})
		if took := time.Since(start); took != 3*time.Second+time.Nanosecond {
			t.Errorf("answered after %v, want the deadline of wall clock + grace (3s) and the stop grace", took)
		}
		assertUntyped(t, err, effect.ErrBackendDidNotSettle, true)
		if res.Call.Start.IsZero() || !res.Call.End.IsZero() {
			t.Errorf("the call is %+v, want started and not ended", res.Call)
		}
		close(release)
		synctest.Wait()
	})
}

// Run returns once nothing of the evaluation runs: after a backend it gave up
// on has returned, or StopGrace after it gave up.
func TestRunWaitsForAnAbandonedBackend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := spi.Evaluation{ScriptRef: testRef, Input: []byte("null"), Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 1 << 20}}

		// the backend returns 400 ms after the caller left, within the grace
		release := make(chan struct{})
		e := mustNew(t, newReader(testScript), ignoresContext(release), effect.Options{BackendGrace: time.Second, StopGrace: time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		time.AfterFunc(500*time.Millisecond, func() { close(release) })
		start := time.Now()
		res, err := e.Run(ctx, in)
		if !errors.Is(err, context.Canceled) || errors.Is(err, effect.ErrNotRun) {
			t.Fatalf("got %v, want a cancellation after the backend was called", err)
		}
		if took := time.Since(start); took != 500*time.Millisecond || res.Call.End.IsZero() {
			t.Errorf("Run returned after %v with the call %+v, want once the backend returned (500ms)", took, res.Call)
		}

		// the backend does not return within the grace: Run answers anyway
		release = make(chan struct{})
		var logs servicetest.Logs
		e = mustNew(t, newReader(testScript), ignoresContext(release), effect.Options{BackendGrace: time.Second, StopGrace: time.Second,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start = time.Now()
		if _, err := e.Run(ctx, in); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
		if took := time.Since(start); took != 1100*time.Millisecond {
			t.Errorf("Run returned after %v, want the stop grace after the caller left (1.1s)", took)
		}
		if !strings.Contains(logs.String(), "had not returned a grace after the effect gave up") {
			t.Errorf("no warning in %q", logs.String())
		}
		close(release)
		synctest.Wait()
	})
}

// stallingReader never delivers: it waits for its context, then fails with
// the context's error, bare or wrapped as contentstore.Cache wraps it.
type stallingReader struct{ wrapped bool }

func (r stallingReader) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	<-ctx.Done()
	if r.wrapped {
		return nil, fmt.Errorf("%w: waiting for %s: %w", contentref.ErrUnavailable, ref, ctx.Err())
	}
	return nil, ctx.Err()
}

// The fetch has a deadline of its own, the caller's deadline less the run's
// (wall clock + grace): a store that stalls ends the fetch, not the
// evaluation, and the answer is the store's retryable failure. When the
// caller's deadline leaves the fetch less than a second, it ends the fetch,
// and the answer says the script did not run (ErrNotRun). Whatever error
// the store returns once its context ended, the deadline decides.
func TestFetchDeadlineAndErrNotRun(t *testing.T) {
	for _, wrapped := range []bool{false, true} {
		t.Run(fmt.Sprintf("wrapped=%v", wrapped), func(t *testing.T) { fetchDeadlineAndErrNotRun(t, stallingReader{wrapped}) })
	}
}

func fetchDeadlineAndErrNotRun(t *testing.T, reader effect.ScriptReader) {
	synctest.Test(t, func(t *testing.T) {
		b := returning(spi.OK([]byte("1")), nil)
		e := mustNew(t, reader, b, effect.Options{BackendGrace: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		_, err := evaluate(ctx, e, validInput()) // wall clock 1 s
		if took := time.Since(start); took != 58*time.Second {
			t.Errorf("the fetch ended after %v, want 1m - (1s + 1s)", took)
		}
		assertUntyped(t, err, effect.ErrScriptFetch, true)
		var nr *effect.NotRunError
		if !errors.As(err, &nr) || nr.Reason != effect.StoreUnavailable || nr.ScriptRef != testRef {
			t.Errorf("got %#v, want a script not run for its store", nr)
		}

		ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err = evaluate(ctx, e, validInput())
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, effect.ErrNotRun) ||
			!errors.As(err, &nr) || nr.Reason != effect.Stopped {
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
	o, err := effect.ValidateOutcome(spi.Threw(&name, "boom"))
	if err != nil || o.Kind != spi.KindThrew || *o.Name != name || o.Message != "boom" {
		t.Fatalf("threw: %+v %v", o, err)
	}
	name = "changed"
	if *o.Name != "TypeError" {
		t.Error("the validated outcome shares the backend's name")
	}
	_, err = effect.ValidateOutcome(spi.Outcome{OK: true, Value: []byte("1"), Kind: spi.KindLimit, Message: "x"})
	assertUntyped(t, err, effect.ErrMalformedOutcome, false)
	for _, want := range []string{"kind is not allowed", "message is not allowed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	_, err = effect.ValidateOutcome(spi.LimitHit(spi.LimitOutput))
	assertUntyped(t, err, effect.ErrMalformedOutcome, false)
}
