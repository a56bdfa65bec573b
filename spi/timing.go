package spi

import (
	"math"
	"time"
)

// Timing is one run's clock: every deadline at which some party gives up
// on the run, each later than the one before, so that the party nearest the
// guest acts first and the one further out sees its answer rather than a
// run it had to abandon. Each is a duration from the start of the run:
//
//	WallClock        the engine's interrupt handler stops the guest (limit wallClock)
//	HardKill         a run still going is stopped from outside the guest: the
//	                 worker pool kills its worker, an in-process engine abandons it
//	Backstop         the worker's own kernel timer kills the worker process, in
//	                 case the pool could not
//	CallerDeadline   the caller of the backend stops waiting for its answer
//	                 (the effect's race, docs/spi.md)
//
// A script fetched by reference must arrive by FetchDeadline, so that the
// caller's whole deadline still fits in the request's.
//
// EngineTiming gives the Timing of an engine that enforces the wall clock
// itself (the quickjs engine, the worker pool); a caller of a backend whose
// timeline it does not know sets only WallClock and CallerGrace.
type Timing struct {
	// WallClock is the run's wall-clock limit.
	WallClock time.Duration
	// Grace is how far apart the engine's own deadlines are: the hard kill
	// one Grace past the wall clock, the backstop one Grace past the hard
	// kill (the service's HARD_KILL_GRACE).
	Grace time.Duration
	// CallerGrace is how long past the wall clock the caller waits for the
	// backend's answer.
	CallerGrace time.Duration
}

// handOff is what an engine's caller grace adds past the backstop: the time
// for a worker to be free and for the answer to cross the channel.
const handOff = time.Second

// minFetchTime is the least a fetch is given when the caller's deadline
// takes (nearly) all of the request's time.
const minFetchTime = time.Second

// EngineTiming is the Timing of a run with this wall clock on an engine that
// enforces it with this grace. Its caller waits for the hard kill's grace,
// the backstop's and the hand-off: a caller that gave up sooner would turn a
// wall-clock limit into an untyped failure.
func EngineTiming(wallClock, grace time.Duration) Timing {
	return Timing{WallClock: wallClock, Grace: grace, CallerGrace: after(after(grace, grace), handOff)}
}

// HardKill is when a run that has not stopped is stopped from outside the
// guest: one grace past the wall clock.
func (t Timing) HardKill() time.Duration { return after(t.WallClock, t.Grace) }

// Backstop is when the kernel timer of the process that runs the guest
// kills that process: one grace past the hard kill, so that it fires only
// where the hard kill could not (a garbage collection that stalls every
// goroutine while a guest is stuck in native code).
func (t Timing) Backstop() time.Duration { return after(t.HardKill(), t.Grace) }

// CallerDeadline is when the caller of the backend stops waiting for the
// answer: CallerGrace past the wall clock.
func (t Timing) CallerDeadline() time.Duration { return after(t.WallClock, t.CallerGrace) }

// FetchDeadline is when fetching the run's script must end for the run to
// fit in a request that ends at deadline: the caller's deadline before it,
// but at least a second from now; zero (no deadline but the request's) when
// that reaches the request's deadline, or deadline is zero. A store that
// stalls or keeps failing then ends the fetch, not the request: the script
// never ran, and the answer blames the store rather than the wall clock.
func (t Timing) FetchDeadline(deadline time.Time) time.Time {
	if deadline.IsZero() {
		return time.Time{}
	}
	caller := t.CallerDeadline()
	now := time.Now()
	left := deadline.Sub(now)
	d := deadline.Add(-caller)
	if caller >= left || left-caller < minFetchTime {
		d = now.Add(minFetchTime)
	}
	if !d.Before(deadline) {
		return time.Time{}
	}
	return d
}

// after is d + grace, saturating rather than overflowing: a wall clock
// near the largest duration still has a deadline after it.
func after(d, grace time.Duration) time.Duration {
	if grace > 0 && d > math.MaxInt64-grace {
		return math.MaxInt64
	}
	return d + grace
}
