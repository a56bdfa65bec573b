package conformance

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// TestCheckEndsOnlyTheFailingCase: a Fatalf in one case and a panic in
// another end those cases only; every other case still runs and passes, in
// order, each reported as it ends, and every cleanup runs.
func TestCheckEndsOnlyTheFailingCase(t *testing.T) {
	fx := JavaScriptFixtures()
	var made, cleaned atomic.Int32
	var reported []string
	results := Check(t.Context(), func(t T) spi.Backend {
		t.Cleanup(func() { cleaned.Add(1) })
		f := goodFake(bestCaps)
		switch made.Add(1) {
		case 1: // echo: the effect's result is wrong, and the case fails at once
			f.acts[fx.Echo] = value(`"something else"`)
		case 3: // syntax_error: the factory panics
			panic("the factory exploded")
		case 9: // fresh_per_run: fails fatally on its first run
			f.acts[fx.StatefulProbe] = value(`{}`)
		}
		return f
	}, fastOptions(), func(r Result) { reported = append(reported, r.Case+" "+string(r.Status)) })

	want := map[string]string{"echo": "echo result differs", "syntax_error": "panic: the factory exploded", "fresh_per_run": "lacks run or sawEarlierState"}
	if len(results) != len(cases) {
		t.Fatalf("%d results for %d cases", len(results), len(cases))
	}
	for i, r := range results {
		if r.Case != cases[i].name {
			t.Errorf("result %d is %s, want %s", i, r.Case, cases[i].name)
		}
		if reported[i] != r.Case+" "+string(r.Status) {
			t.Errorf("reported %q for %s", reported[i], r.Case)
		}
		mention, bad := want[r.Case]
		switch {
		case bad && (r.Status != Fail || !strings.Contains(r.Reason, mention)):
			t.Errorf("%s: %s %q, want a failure saying %q", r.Case, r.Status, r.Reason, mention)
		case !bad && r.Status != Pass:
			t.Errorf("%s: %s: %s", r.Case, r.Status, text(r))
		}
	}
	if r := results[2]; !strings.Contains(strings.Join(r.Logs, "\n"), "goroutine") {
		t.Errorf("the panic's stack is not in the log: %q", r.Logs)
	}
	if n := cleaned.Load(); n != made.Load() {
		t.Errorf("%d cleanups ran for %d backends", n, made.Load())
	}
	if s := Summarize(results); s.OK() || s.Failed != 3 || s.Passed != len(cases)-3 {
		t.Errorf("summary %+v", s)
	}
}

// TestCheckAfterTheContextEnds: the cases after the end of the run fail
// without running; none passes by default.
func TestCheckAfterTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var calls atomic.Int32
	results := Check(ctx, func(T) spi.Backend { calls.Add(1); return goodFake(bestCaps) }, fastOptions(), func(Result) { cancel() })
	if results[0].Status != Pass {
		t.Errorf("first case: %s %s", results[0].Status, text(results[0]))
	}
	for _, r := range results[1:] {
		if r.Status != Fail || !strings.Contains(r.Reason, "not run: context canceled") {
			t.Errorf("%s: %s %q", r.Case, r.Status, r.Reason)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d backends made", n)
	}
}

// TestCheckBoundsEachCase: a backend that never answers fails the first
// case once its bound has passed, saying so, and every other case still
// runs and is reported.
func TestCheckBoundsEachCase(t *testing.T) {
	fx := JavaScriptFixtures()
	opts := fastOptions()
	opts.BackendGrace = time.Hour // the effect would wait for the backend far longer than the bound
	opts.CaseTimeout = 2 * time.Second
	var reported []Result
	start := time.Now()
	results := Check(t.Context(), func(T) spi.Backend {
		f := goodFake(bestCaps)
		f.acts[fx.Echo] = func(ctx context.Context, _ spi.Request) (spi.Outcome, error) {
			<-ctx.Done() // never answers; returns once told to stop
			return spi.Outcome{}, ctx.Err()
		}
		return f
	}, opts, func(r Result) { reported = append(reported, r) })
	if len(results) != len(cases) || len(reported) != len(cases) {
		t.Fatalf("%d results, %d reported, for %d cases", len(results), len(reported), len(cases))
	}
	first := results[0]
	if first.Case != "echo" || first.Status != Fail ||
		!strings.HasPrefix(first.Reason, "the case did not finish within its bound of 2s (the backend may not be answering); it was stopped") {
		t.Errorf("echo: %s %q", first.Status, first.Reason)
	}
	if first.Elapsed > opts.CaseTimeout+opts.StopWithin {
		t.Errorf("echo took %v, over its bound of %v and the %v it may take to stop", first.Elapsed, opts.CaseTimeout, opts.StopWithin)
	}
	for _, r := range results[1:] {
		if r.Status != Pass {
			t.Errorf("%s: %s: %s", r.Case, r.Status, text(r))
		}
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the run took %v", d)
	}
}

func TestCheckNilFactory(t *testing.T) {
	results := Check(t.Context(), nil, Options{}, nil)
	if s := Summarize(results); s.OK() || s.Failed != len(cases) {
		t.Errorf("summary %+v", s)
	}
}

// TestSummaryOK: a pass needs no failure and at least one case that ran; a
// run of skips only, or of nothing, proves nothing.
func TestSummaryOK(t *testing.T) {
	for _, tc := range []struct {
		statuses []Status
		ok       bool
	}{
		{nil, false},
		{[]Status{Skip, Skip}, false},
		{[]Status{Pass, Skip}, true},
		{[]Status{Pass, Fail}, false},
		{[]Status{Pass, "unknown"}, false},
	} {
		var rs []Result
		for _, s := range tc.statuses {
			rs = append(rs, Result{Status: s})
		}
		if got := Summarize(rs).OK(); got != tc.ok {
			t.Errorf("%v: OK %v, want %v", tc.statuses, got, tc.ok)
		}
	}
}
