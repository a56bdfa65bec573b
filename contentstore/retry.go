package contentstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
)

// transientError marks a failure worth another attempt.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// Transient marks err as worth another attempt of Retry (for the stores of
// this package and gcsstore).
func Transient(err error) error { return &transientError{err: err} }

// IsTransient reports whether err was marked by Transient.
func IsTransient(err error) bool {
	var t *transientError
	return errors.As(err, &t)
}

// UnwrapTransient removes the marker so that it never leaves a store.
func UnwrapTransient(err error) error {
	var t *transientError
	if errors.As(err, &t) && t == err {
		return t.err
	}
	return err
}

// Retry runs attempt until it succeeds, fails permanently (an error not
// marked transient), runs out of attempts, or would outlive ctx. Each
// attempt gets its own timeout (opts.AttemptTimeout, never past ctx's
// deadline); an attempt cut by that timeout is transient. Pauses grow
// exponentially with jitter and are skipped when they would end after ctx's
// deadline. A transient failure that is not recovered is returned wrapped in
// ErrUnavailable, together with ctx's error when ctx ended.
func Retry(ctx context.Context, opts Options, what string, attempt func(ctx context.Context) error) error {
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, opts.AttemptTimeout)
		err := attempt(actx)
		attemptTimedOut := actx.Err() != nil
		cancel()
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			// The caller's deadline or cancellation: not worth another
			// attempt, and the caller should see why with errors.Is.
			err = UnwrapTransient(err)
			if !errors.Is(err, cerr) {
				return fmt.Errorf("%w: %s: %w after %d attempt(s) (last: %v)", contentref.ErrUnavailable, what, cerr, n, err)
			}
			return fmt.Errorf("%w: %s: after %d attempt(s): %w", contentref.ErrUnavailable, what, n, err)
		}
		if attemptTimedOut && !IsTransient(err) {
			err = Transient(fmt.Errorf("attempt timed out after %v: %w", opts.AttemptTimeout, err))
		}
		if !IsTransient(err) {
			return err
		}
		if n >= opts.RetryAttempts {
			return fmt.Errorf("%w: %s: giving up after %d attempt(s): %w", contentref.ErrUnavailable, what, n, UnwrapTransient(err))
		}
		pause := backoff(opts, n)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < pause {
			return fmt.Errorf("%w: %s: the deadline leaves no time for attempt %d: %w", contentref.ErrUnavailable, what, n+1, UnwrapTransient(err))
		}
		opts.Logger.Warn("contentstore: transient failure, retrying",
			slog.String("op", what),
			slog.Int("attempt", n),
			slog.String("pause", pause.String()),
			slog.Any("error", UnwrapTransient(err)))
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %s: %w after %d attempt(s) (last: %v)", contentref.ErrUnavailable, what, ctx.Err(), n, UnwrapTransient(err))
		case <-t.C:
		}
	}
}

// backoff is the pause after attempt n (1-based): the initial pause doubled
// n-1 times, capped, then jittered to between half and all of it so that
// clients failing together do not retry together.
func backoff(opts Options, n int) time.Duration {
	d := opts.RetryInitialBackoff
	for i := 1; i < n && d < opts.RetryMaxBackoff; i++ {
		d *= 2
	}
	d = min(d, opts.RetryMaxBackoff)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
