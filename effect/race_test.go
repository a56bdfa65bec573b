package effect_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
)

// untilCancelled is a backend that never returns on its own: it waits for its
// context, as a well-behaved backend whose run is stuck would.
func untilCancelled() *fakeBackend {
	return &fakeBackend{eval: func(ctx context.Context, _ spi.Request) (spi.Outcome, error) {
		<-ctx.Done()
		return spi.Outcome{}, ctx.Err()
	}}
}

// TestCancelledBeforeTheCall proves an already-cancelled context yields the
// cancellation, not a channel, and touches neither the store nor the backend.
func TestCancelledBeforeTheCall(t *testing.T) {
	reader := newReader(testScript)
	b := returning(spi.OK([]byte("1")), nil)
	e := mustNew(t, reader, b, effect.Options{})
	cause := errors.New("flow aborted by its owner")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	in := validInput()
	in.Limits = spi.Limits{} // even an evaluation no run can have loses to the cancellation
	_, err := evaluate(ctx, e, in)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Fatalf("got %v", err)
	}
	var f *spi.Failure
	if errors.As(err, &f) || effect.Retryable(err) {
		t.Errorf("cancellation is typed or retryable: %v", err)
	}
	assertStorable(t, err.Error(), spi.MaxMessageUnits)
	if reader.Calls() != 0 || b.evalCalls.Load() != 0 {
		t.Error("store or backend used after cancellation")
	}
}

func TestCallerDeadlineIsACancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := mustNew(t, newReader(testScript), untilCancelled(), effect.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := evaluate(ctx, e, validInput())
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, effect.ErrBackendDidNotSettle) {
			t.Errorf("got %v", err)
		}
	})
}

// TestCancellationWinsOverEveryOutcome proves that an outcome arriving after
// the caller cancelled is discarded for the cancellation, whatever it was.
func TestCancellationWinsOverEveryOutcome(t *testing.T) {
	for name, o := range map[string]spi.Outcome{
		"success":     spi.OK([]byte(`{"done":true}`)),
		"threw":       spi.Threw(nil, "boom"),
		"limit":       spi.LimitHit(spi.LimitCPU),
		"malformed":   {Kind: "exploded"},
		"infra":       spi.Infrastructure("pool closed"),
		"inputTooBig": spi.InputTooLarge(),
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b := &fakeBackend{eval: func(context.Context, spi.Request) (spi.Outcome, error) {
				cancel() // the caller aborts while the backend is finishing
				return o, nil
			}}
			e := mustNew(t, newReader(testScript), b, effect.Options{})
			_, err := evaluate(ctx, e, validInput())
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v", err)
			}
		})
	}
	t.Run("success that ignores the cancellation", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			b := &fakeBackend{eval: func(ctx context.Context, _ spi.Request) (spi.Outcome, error) {
				<-ctx.Done()
				return spi.OK([]byte("1")), nil
			}}
			e := mustNew(t, newReader(testScript), b, effect.Options{})
			time.AfterFunc(time.Second, cancel)
			if _, err := evaluate(ctx, e, validInput()); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v", err)
			}
		})
	})
}

func TestCancelledDuringFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := newReader()
		reader.get = func(ctx context.Context, _ contentref.Ref) ([]byte, error) {
			<-ctx.Done()
			return nil, errors.Join(contentref.ErrUnavailable, ctx.Err())
		}
		b := returning(spi.OK([]byte("1")), nil)
		e := mustNew(t, reader, b, effect.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		if _, err := evaluate(ctx, e, validInput()); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
		if b.evalCalls.Load() != 0 {
			t.Error("backend called")
		}
	})
}

// TestNeverSettles proves a backend that does not return loses to the
// deadline (wall clock + grace) and to cancellation, and that its goroutine
// is gone afterwards: synctest.Test fails if any goroutine started inside the
// bubble is still blocked when the test function returns. The bubble's fake
// clock also lets the default 60 s grace be measured exactly.
func TestNeverSettles(t *testing.T) {
	t.Run("deadline with the default grace", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := untilCancelled()
			e := mustNew(t, newReader(testScript), b, effect.Options{})
			start := time.Now()
			_, err := evaluate(context.Background(), e, validInput()) // wall clock 1 s
			if elapsed := time.Since(start); elapsed != time.Second+effect.DefaultBackendGrace {
				t.Errorf("gave up after %v, want 1m1s", elapsed)
			}
			assertUntyped(t, err, effect.ErrBackendDidNotSettle, true)
			if !strings.Contains(err.Error(), "sandbox backend did not settle within 1m1s") {
				t.Errorf("text %q", err)
			}
		})
	})
	t.Run("deadline with a configured grace", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := mustNew(t, newReader(testScript), untilCancelled(), effect.Options{BackendGrace: 5 * time.Second})
			start := time.Now()
			_, err := evaluate(context.Background(), e, validInput())
			if elapsed := time.Since(start); elapsed != 6*time.Second {
				t.Errorf("gave up after %v, want 6s", elapsed)
			}
			assertUntyped(t, err, effect.ErrBackendDidNotSettle, true)
		})
	})
	t.Run("cancellation", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := mustNew(t, newReader(testScript), untilCancelled(), effect.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(500*time.Millisecond, cancel)
			start := time.Now()
			_, err := evaluate(ctx, e, validInput())
			if !errors.Is(err, context.Canceled) || time.Since(start) != 500*time.Millisecond {
				t.Errorf("got %v after %v", err, time.Since(start))
			}
		})
	})
	t.Run("backend that ignores its context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var logs servicetest.Logs
			release := make(chan struct{})
			b := &fakeBackend{eval: func(context.Context, spi.Request) (spi.Outcome, error) {
				<-release
				return spi.OK([]byte("1")), nil
			}}
			e := mustNew(t, newReader(testScript), b, effect.Options{
				BackendGrace: time.Second,
				Logger:       slog.New(slog.NewJSONHandler(&logs, nil)),
			})
			_, err := evaluate(context.Background(), e, validInput())
			assertUntyped(t, err, effect.ErrBackendDidNotSettle, true)
			// Nothing can stop a goroutine that ignores its context; once the
			// backend does return (2 s after the deadline: Run's stop grace
			// of 1 s and a second more), its goroutine exits and says how
			// long after the effect stopped waiting, with every duration in
			// its unit, whatever the logger
			time.Sleep(time.Second)
			close(release)
			synctest.Wait()
			if !strings.Contains(logs.String(), "returned after the effect stopped waiting") {
				t.Errorf("no late-return warning in %q", logs.String())
			}
			for _, want := range []string{`"wallClock":"1s"`, `"grace":"1s"`, `"after":"2s"`} {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("no %s in %s", want, logs.String())
				}
			}
		})
	})
	t.Run("the caller leaves: no warning", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// a backend that stops at its next poll, 300 ms after the caller
			// left: ordinary, so a debug line and no warning
			var logs servicetest.Logs
			b := &fakeBackend{eval: func(ctx context.Context, _ spi.Request) (spi.Outcome, error) {
				<-ctx.Done()
				time.Sleep(300 * time.Millisecond)
				return spi.Outcome{}, ctx.Err()
			}}
			e := mustNew(t, newReader(testScript), b, effect.Options{BackendGrace: time.Second,
				Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			if _, err := evaluate(ctx, e, validInput()); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v", err)
			}
			synctest.Wait()
			if strings.Contains(logs.String(), `"level":"WARN"`) {
				t.Errorf("a caller that left is warned about: %s", logs.String())
			}
			if !strings.Contains(logs.String(), `"msg":"sandbox backend returned after the caller left"`) || !strings.Contains(logs.String(), `"after":"300ms"`) {
				t.Errorf("no debug line saying how long after the caller left: %s", logs.String())
			}
		})
	})
	t.Run("backend that stops when the deadline tells it to", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := &fakeBackend{eval: func(ctx context.Context, _ spi.Request) (spi.Outcome, error) {
				<-ctx.Done()
				time.Sleep(time.Millisecond) // returns just after the effect gave up, or races it
				return spi.Outcome{}, errors.New("interrupted")
			}}
			e := mustNew(t, newReader(testScript), b, effect.Options{BackendGrace: time.Second})
			_, err := evaluate(context.Background(), e, validInput())
			assertUntyped(t, err, effect.ErrBackendDidNotSettle, true)
			time.Sleep(time.Millisecond) // let the backend finish stopping
			synctest.Wait()
		})
	})
}

// TestBackendContextReleased proves the combined context, and with it its
// timer, is released on the success path too: by the time Evaluate returns,
// the context the backend saw is cancelled (not timed out).
func TestBackendContextReleased(t *testing.T) {
	var seen context.Context
	b := &fakeBackend{eval: func(ctx context.Context, _ spi.Request) (spi.Outcome, error) {
		seen = ctx
		if _, ok := ctx.Deadline(); !ok {
			t.Error("backend context has no deadline")
		}
		return spi.OK([]byte("1")), nil
	}}
	if _, err := evalWith(t, b, effect.Options{}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(seen.Err(), context.Canceled) || !errors.Is(context.Cause(seen), context.Canceled) {
		t.Errorf("backend context after return: err %v, cause %v", seen.Err(), context.Cause(seen))
	}
}

// TestNoGoroutinesLeftBehind counts goroutines in real time: after many
// evaluations against a backend that only returns when its context ends,
// cancelled or timed out, the count returns to where it started.
func TestNoGoroutinesLeftBehind(t *testing.T) {
	e := mustNew(t, newReader(testScript), untilCancelled(), effect.Options{BackendGrace: time.Millisecond})
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			in := validInput()
			in.Limits.WallClock = 5 * time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%2 == 0 {
				time.AfterFunc(time.Millisecond, cancel)
			}
			if _, err := evaluate(ctx, e, in); err == nil {
				t.Error("a backend that never settles succeeded")
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
