package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// The cases, a function each, in the order of the table (cases): each runs
// through the effect its env built and reports through t.

func caseEcho(t T, e *env) {
	const input = `{"greeting":"hello","n":[1,2,3],"nested":{"ok":true,"none":null},"s":"é😀"}`
	out, err := e.evaluate(e.fx.Echo, input, defaultLimits)
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	assertSameJSON(t, "echo result", out, []byte(input))
}

func caseThrow(t T, e *env) {
	_, err := e.evaluate(e.fx.Throw, "null", defaultLimits)
	f := wantFailure(t, "throw", err, spi.ChannelScriptError)
	if f.Message != ThrowMessage {
		t.Errorf("throw: message %q, want %q", f.Message, ThrowMessage)
	}
	if want := e.fx.ThrowName; want != nil && (f.Name == nil || *f.Name != *want) {
		t.Errorf("throw: name %v, want %q", show(f.Name), *want)
	}
}

func caseSyntaxError(t T, e *env) {
	_, err := e.evaluate(e.fx.SyntaxError, "null", defaultLimits)
	wantFailure(t, "syntax error", err, spi.ChannelScriptError)
}

func caseRunawayLoop(t T, e *env) {
	start := time.Now()
	_, err := e.evaluate(e.fx.RunawayLoop, "null", runawayLimits)
	f := wantFailure(t, "runaway loop", err, spi.ChannelLimitExceeded)
	if f.Kind != spi.LimitCPU && f.Kind != spi.LimitWallClock {
		t.Errorf("runaway loop: limit %q, want cpu or wallClock", f.Kind)
	}
	t.Logf("runaway loop stopped as %s after %v", f.Kind, time.Since(start).Round(time.Millisecond))
}

// caseNoValueAfterDeadline: a run that overruns its wall clock where the
// backend cannot interrupt it answers the wall-clock limit, never its value
// (docs/spi.md, "Timing"), however soon after the deadline it ended.
func caseNoValueAfterDeadline(t T, e *env) {
	start := time.Now()
	out, err := e.evaluate(e.fx.NativeOverrun, "null", overrunLimits)
	took := time.Since(start).Round(time.Millisecond)
	if err == nil {
		t.Fatalf("no value after the deadline: the run overran its wall clock of %v and answered its value %s after %v, want limitExceeded wallClock",
			overrunLimits.WallClock, clip(out), took)
	}
	f := wantFailure(t, "no value after the deadline", err, spi.ChannelLimitExceeded)
	if f.Kind != spi.LimitWallClock {
		t.Errorf("no value after the deadline: limit %q, want wallClock", f.Kind)
	}
	t.Logf("the overrun ended as %s after %v", f.Kind, took)
}

func caseAllocationBomb(t T, e *env) {
	_, err := e.evaluate(e.fx.AllocationBomb, "null", bombLimits)
	f := wantFailure(t, "allocation bomb", err, spi.ChannelLimitExceeded)
	if f.Kind != spi.LimitMemory {
		t.Errorf("allocation bomb: limit %q, want memory (the backend declares memory: true)", f.Kind)
	}
}

// caseRichValue takes the backend's own evidence: it calls the backend
// directly, so that the effect's canonical round-trip cannot hide a lossy
// bridge, and then checks that the effect delivers the same value.
func caseRichValue(t T, e *env) {
	ctx, cancel := context.WithTimeout(e.ctx, e.opts.Timeout)
	defer cancel()
	o, err := e.raw.Evaluate(ctx, spi.Request{Script: e.fx.RichValue, InputJSON: string(e.fx.RichInput), Limits: defaultLimits})
	switch {
	case err != nil:
		t.Errorf("rich value, backend directly: %v", err)
	case !o.OK:
		t.Errorf("rich value, backend directly: outcome %s, want ok", describe(o))
	default:
		assertSameJSON(t, "rich value from the backend", o.Value, e.fx.RichExpected)
	}
	out, err := e.evaluate(e.fx.RichValue, string(e.fx.RichInput), defaultLimits)
	if err != nil {
		t.Fatalf("rich value through the effect: %v", err)
	}
	assertSameJSON(t, "rich value through the effect", out, e.fx.RichExpected)
}

func caseNoNetworkNoEscape(t T, e *env) {
	for _, probe := range []struct{ name, script string }{
		{"network probe", e.fx.NetworkProbe},
		{"escape probe", e.fx.EscapeProbe},
	} {
		out, err := e.evaluate(probe.script, `{"a":[1],"s":"x"}`, defaultLimits)
		if err != nil {
			t.Errorf("%s: %v", probe.name, err)
			continue
		}
		var res struct {
			Reachable *[]string `json:"reachable"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.Reachable == nil {
			t.Errorf("%s: result %s does not carry a reachable list", probe.name, clip(out))
			continue
		}
		if len(*res.Reachable) > 0 {
			t.Errorf("%s: the script reached %s (the backend declares network: \"none\")", probe.name, strings.Join(*res.Reachable, ", "))
		}
	}
	out, err := e.evaluate(e.fx.ImportProbe, "null", defaultLimits)
	var f *spi.Failure
	switch {
	case errors.As(err, &f) && f.Channel == spi.ChannelScriptError:
		// import() is not available at all: it fails.
	case err != nil:
		t.Errorf("import probe: %v", err)
	case string(out) == `"escaped"`:
		t.Errorf("import probe: a dynamic import() loaded a host module")
	}
}

// caseFreshPerRun runs the stateful probe 16 times in sequence and then 8 at
// once; a pool of reused contexts fails by the third run.
func caseFreshPerRun(t T, e *env) {
	probe := func(run int) string {
		out, err := e.evaluate(e.fx.StatefulProbe, fmt.Sprintf(`{"run":%d}`, run), defaultLimits)
		if err != nil {
			return fmt.Sprintf("run %d: %v", run, err)
		}
		var res struct {
			Run             *int     `json:"run"`
			SawEarlierState *bool    `json:"sawEarlierState"`
			Seen            []string `json:"seen"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.Run == nil || res.SawEarlierState == nil {
			return fmt.Sprintf("run %d: result %s lacks run or sawEarlierState", run, clip(out))
		}
		if *res.Run != run {
			return fmt.Sprintf("run %d: got the result of run %d", run, *res.Run)
		}
		if *res.SawEarlierState {
			return fmt.Sprintf("run %d saw state left by an earlier run (%s); the backend declares freshPerRun: true", run, strings.Join(res.Seen, ", "))
		}
		return ""
	}
	for run := 1; run <= 16; run++ {
		if msg := probe(run); msg != "" {
			t.Fatalf("sequential %s", msg)
		}
	}
	var wg sync.WaitGroup
	msgs := make([]string, 8)
	for i := range msgs {
		wg.Go(func() { msgs[i] = probe(100 + i) })
	}
	wg.Wait()
	for _, msg := range msgs {
		if msg != "" {
			t.Errorf("concurrent %s", msg)
		}
	}
}

// caseAbortBeforeCall: an already-cancelled context yields the
// cancellation, not a channel. The effect answers so without calling the
// backend, whatever the backend does; so the case also calls the backend
// itself, as rich_value does, with a context that is already cancelled: it
// must return the cancellation, and at once. An outcome means it ran the
// script, or answered, for a caller that had already left; a call that does
// not return means it ignores its context.
func caseAbortBeforeCall(t T, e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := run(ctx, e.eff, e.fx.Echo, `"x"`, defaultLimits)
	var f *spi.Failure
	if errors.As(err, &f) || !errors.Is(err, context.Canceled) {
		t.Errorf("abort before the call: the effect returned %v, want the cancellation", errText(err))
	}
	select {
	case <-e.watched.calls:
		t.Errorf("abort before the call: the effect called the backend")
	default:
	}

	done := make(chan backendReturn, 1)
	go func() {
		done <- callBackend(ctx, e.raw, spi.Request{Script: e.fx.Echo, InputJSON: `"x"`, Limits: defaultLimits})
	}()
	select {
	case r := <-done:
		switch {
		case r.panicked != "":
			t.Errorf("abort before the call: the backend, called with a context already cancelled, panicked: %s", r.panicked)
		case r.err == nil:
			t.Errorf("abort before the call: the backend, called with a context already cancelled, answered an outcome (%s) instead of returning the cancellation", describe(r.outcome))
		case !errors.Is(r.err, context.Canceled):
			t.Errorf("abort before the call: the backend, called with a context already cancelled, returned %v, want the cancellation (context.Canceled)", r.err)
		}
	case <-time.After(e.opts.StopWithin):
		t.Errorf("abort before the call: the backend, called with a context already cancelled, did not return within %v: it ignores its context", e.opts.StopWithin)
	}
}

// backendReturn is what a backend's call returned.
type backendReturn struct {
	outcome  spi.Outcome
	err      error
	panicked string // the panic's value, when the call panicked
}

// callBackend calls b and returns what it returned, a panic included, so
// that a call on a goroutine of its own cannot end the program.
func callBackend(ctx context.Context, b spi.Backend, req spi.Request) (r backendReturn) {
	defer func() {
		if p := recover(); p != nil {
			r = backendReturn{panicked: oneLine(fmt.Sprint(p))}
		}
	}()
	r.outcome, r.err = b.Evaluate(ctx, req)
	return r
}

// what says what a call that returned did, in the SPI's words.
func (r backendReturn) what() string {
	switch {
	case r.panicked != "":
		return "the backend panicked: " + r.panicked
	case r.err != nil:
		return "the backend failed: it returned the error " + oneLine(r.err.Error())
	case r.outcome.Kind == spi.KindInfrastructure:
		return "the backend failed: it reported " + describe(r.outcome)
	case r.outcome.Kind == spi.KindLimit:
		return "the runaway ended on its own: the backend reported " + describe(r.outcome)
	}
	return "the backend reported " + describe(r.outcome)
}

// caseAbortMidRun cancels a runaway once the backend has it, and requires
// both the effect and the backend's own call to return: a backend that
// declares a hard wall clock stops the run when its context ends.
func caseAbortMidRun(t T, e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	type result struct{ err error }
	done := make(chan result, 1)
	go func() {
		_, err := run(ctx, e.eff, e.fx.RunawayLoop, "null", spi.Limits{WallClock: e.opts.MaxWallClock, MemoryBytes: abortLimits.MemoryBytes})
		done <- result{err}
	}()
	var call *watchedCall
	select {
	case call = <-e.watched.calls:
	case r := <-done:
		// a backend that answered at once leaves both ready: the call is
		// what the case is about
		select {
		case call = <-e.watched.calls:
			done <- r
		default:
			t.Fatalf("abort mid-run: the effect returned before calling the backend: %v", r.err)
		}
	case <-time.After(e.opts.Timeout):
		t.Fatalf("abort mid-run: the backend was not called within %v", e.opts.Timeout)
	}
	time.Sleep(abortDelay)
	select {
	case <-call.returned:
		t.Fatalf("abort mid-run: the backend's call returned within %v, before it could be aborted: %s", abortDelay, call.result.what())
	default:
	}
	cancel()
	aborted := time.Now()
	select {
	case r := <-done:
		var f *spi.Failure
		if errors.As(r.err, &f) || !errors.Is(r.err, context.Canceled) {
			t.Errorf("abort mid-run: the effect returned %v, want the cancellation", r.err)
		}
	case <-time.After(e.opts.StopWithin):
		t.Errorf("abort mid-run: the effect did not return within %v of the cancellation", e.opts.StopWithin)
	}
	select {
	case <-call.returned:
		t.Logf("abort mid-run: the backend stopped %v after the cancellation", time.Since(aborted).Round(time.Millisecond))
	case <-time.After(e.opts.StopWithin - time.Since(aborted)):
		t.Errorf("abort mid-run: the backend's own call did not return within %v of the cancellation; a hard wall clock must stop the run when its context ends", e.opts.StopWithin)
	}
}

// caseComposition checks the effect around the backend: an oversized thrown
// message reaches the caller bounded and storable, whatever the backend did.
func caseComposition(t T, e *env) {
	_, err := e.evaluate(e.fx.OversizedThrow, "null", compositionLimits)
	f := wantFailure(t, "composition", err, spi.ChannelScriptError)
	if f.Message == "" {
		t.Errorf("composition: empty message")
	}
	assertStorable(t, "composition: message", f.Message, spi.MaxMessageUnits)
	if f.Name != nil {
		assertStorable(t, "composition: name", *f.Name, spi.MaxNameUnits)
	}
	assertStorable(t, "composition: error text", err.Error(), spi.MaxMessageUnits)
	j, jerr := json.Marshal(f)
	if jerr != nil {
		t.Fatalf("composition: the failure does not marshal: %v", jerr)
	}
	if strings.Contains(string(j), `\u0000`) || strings.Contains(strings.ToLower(string(j)), `\ud8`) ||
		strings.Contains(strings.ToLower(string(j)), `\udc`) {
		t.Errorf("composition: the failure's JSON is not storable in jsonb: %s", clip(j))
	}
}
