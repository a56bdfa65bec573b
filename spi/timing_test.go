package spi_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Each party gives up one step after the one nearer the guest: the hard kill
// a grace past the wall clock, the worker's backstop a grace later, the
// caller a second after that.
func TestTimingDeadlines(t *testing.T) {
	tm := spi.EngineTiming(5*time.Second, 500*time.Millisecond)
	for name, c := range map[string]struct{ got, want time.Duration }{
		"HardKill":       {tm.HardKill(), 5500 * time.Millisecond},
		"Backstop":       {tm.Backstop(), 6 * time.Second},
		"CallerGrace":    {tm.CallerGrace, 2 * time.Second},
		"CallerDeadline": {tm.CallerDeadline(), 7 * time.Second},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
	// A wall clock near the largest duration saturates, never wraps.
	huge := spi.EngineTiming(math.MaxInt64-time.Second, time.Minute)
	for name, got := range map[string]time.Duration{"HardKill": huge.HardKill(), "Backstop": huge.Backstop(), "CallerDeadline": huge.CallerDeadline()} {
		if got != math.MaxInt64 {
			t.Errorf("%s of a huge wall clock = %v, want the largest duration", name, got)
		}
	}
}

// The fetch ends the caller's deadline before the request's, so that the run
// still fits; it gets at least a second, and no deadline of its own when that
// second reaches the request's.
func TestTimingFetchDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := spi.EngineTiming(5*time.Second, 500*time.Millisecond) // caller deadline 7 s
		now := time.Now()
		for _, c := range []struct {
			name     string
			deadline time.Time
			want     time.Time
		}{
			{"room for the run", now.Add(time.Minute), now.Add(53 * time.Second)},
			{"the run takes nearly all", now.Add(7500 * time.Millisecond), now.Add(time.Second)},
			{"the run takes more than all", now.Add(3 * time.Second), now.Add(time.Second)},
			{"less than a second left", now.Add(800 * time.Millisecond), time.Time{}},
			{"no deadline", time.Time{}, time.Time{}},
		} {
			if got := tm.FetchDeadline(c.deadline); !got.Equal(c.want) {
				t.Errorf("%s: FetchDeadline = %v, want %v", c.name, got.Sub(now), c.want.Sub(now))
			}
		}
		huge := spi.EngineTiming(math.MaxInt64, time.Second)
		if got := huge.FetchDeadline(now.Add(time.Minute)); !got.Equal(now.Add(time.Second)) {
			t.Errorf("a huge wall clock: FetchDeadline = %v from now, want 1s", got.Sub(now))
		}
	})
}
