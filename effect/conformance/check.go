package conformance

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Status is how a case ended.
type Status string

// The statuses of a case.
const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP" // the declaration does not claim what the case proves
)

// Result is what one case did.
type Result struct {
	Case   string
	Status Status
	// Reason is, for a failure, every failure the case reported, in order,
	// joined by "; "; for a skip, the declaration that gates the case.
	Reason string
	// Logs is everything the case logged, in order (a panic's stack
	// included).
	Logs    []string
	Elapsed time.Duration
}

// Check runs every case of the kit, in order, each against a new backend from
// factory (called on the case's goroutine, with the case's T, so that it may
// fail the case or register a cleanup), and returns one Result per case. It
// calls report, if not nil, with each result as soon as the case ends.
//
// Each case runs on a goroutine of its own, so that a failure that ends a
// case (Fatalf, or a panic, which is the case's failure) ends only that
// case, and the next one still runs. Each case is bounded by
// Options.CaseTimeout: when it passes, the case's context ends, the case is
// given Options.StopWithin to return, and it fails saying so; the next case
// runs. When ctx ends, the running case is given Options.StopWithin to
// return before it is reported as failed, and the cases after it fail
// without running.
func Check(ctx context.Context, factory func(t T) spi.Backend, opts Options, report func(Result)) []Result {
	results := make([]Result, 0, len(cases))
	for _, c := range cases {
		var r Result
		switch {
		case factory == nil:
			r = Result{Case: c.name, Status: Fail, Reason: "conformance: nil factory"}
		case ctx.Err() != nil:
			r = Result{Case: c.name, Status: Fail, Reason: fmt.Sprintf("not run: %v", context.Cause(ctx))}
		default:
			r = checkCase(ctx, c, factory, opts)
		}
		results = append(results, r)
		if report != nil {
			report(r)
		}
	}
	return results
}

// errCaseTimeout is the cause of a case's context when its bound passes.
var errCaseTimeout = errors.New("the case's bound passed")

// checkCase runs one case on a goroutine of its own, within its bound.
func checkCase(ctx context.Context, c kitCase, factory func(t T) spi.Backend, opts Options) Result {
	t := &caseT{}
	start := time.Now()
	bound, stopWithin := opts.withDefaults().CaseTimeout, opts.withDefaults().StopWithin
	caseCtx, cancel := context.WithTimeoutCause(ctx, bound, errCaseTimeout)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer t.runCleanups()
		defer func() {
			// A panic is the case's failure. Fatalf and Skipf end the
			// goroutine with runtime.Goexit, for which recover returns nil.
			if p := recover(); p != nil {
				t.Errorf("panic: %v", p)
				t.Logf("%s", debug.Stack())
			}
		}()
		Case{c}.Run(caseCtx, t, factory(t), opts)
	}()
	select {
	case <-done:
	case <-caseCtx.Done():
		timedOut := ctx.Err() == nil
		if timedOut {
			t.failFirst(fmt.Sprintf("the case did not finish within its bound of %v (the backend may not be answering); it was stopped", bound))
		}
		select {
		case <-done:
		case <-time.After(stopWithin):
			if timedOut {
				t.Errorf("the case did not return within %v of being stopped", stopWithin)
			} else {
				t.Errorf("the case did not return within %v of the end of the run (%v)", stopWithin, context.Cause(ctx))
			}
		}
	}
	return t.result(c.name, time.Since(start))
}

// caseT is the T of one case under Check.
type caseT struct {
	mu       sync.Mutex
	failures []string
	skip     string
	skipped  bool
	logs     []string
	cleanups []func()
}

var _ T = (*caseT)(nil)

func (t *caseT) Helper() {}

func (t *caseT) Logf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.logs = append(t.logs, fmt.Sprintf(format, args...))
}

func (t *caseT) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failures = append(t.failures, fmt.Sprintf(format, args...))
}

// failFirst records a failure that the case's other failures follow: why
// the case was stopped, which explains them.
func (t *caseT) failFirst(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failures = append([]string{msg}, t.failures...)
}

func (t *caseT) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	runtime.Goexit()
}

func (t *caseT) Skipf(format string, args ...any) {
	t.mu.Lock()
	t.skipped = true
	t.skip = fmt.Sprintf(format, args...)
	t.mu.Unlock()
	runtime.Goexit()
}

func (t *caseT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// runCleanups runs the cleanups last-registered first; a panic in one is the
// case's failure and does not stop the others.
func (t *caseT) runCleanups() {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("panic in a cleanup: %v", p)
				}
			}()
			f()
		}()
	}
}

// result is the case's outcome so far. A case that reported a failure has
// failed, even if it skipped afterwards (as under testing).
func (t *caseT) result(name string, elapsed time.Duration) Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := Result{Case: name, Status: Pass, Logs: append([]string(nil), t.logs...), Elapsed: elapsed}
	switch {
	case len(t.failures) > 0:
		r.Status, r.Reason = Fail, strings.Join(t.failures, "; ")
	case t.skipped:
		r.Status, r.Reason = Skip, t.skip
	}
	return r
}

// Summary counts the results of a run.
type Summary struct {
	Passed, Failed, Skipped int
}

// Summarize counts results by status.
func Summarize(results []Result) Summary {
	var s Summary
	for _, r := range results {
		switch r.Status {
		case Pass:
			s.Passed++
		case Skip:
			s.Skipped++
		default:
			s.Failed++
		}
	}
	return s
}

// Ran is the number of cases that ran (passed or failed).
func (s Summary) Ran() int { return s.Passed + s.Failed }

// OK says whether the backend conforms: no case failed, and at least one ran.
// A run in which nothing ran proves nothing, so it is not a pass.
func (s Summary) OK() bool { return s.Failed == 0 && s.Ran() > 0 }
