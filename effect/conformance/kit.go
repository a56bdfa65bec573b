// Package conformance proves a sandbox backend (docs/spi.md, "The conformance
// kit"): it runs loom's security list for the sandbox against any spi.Backend,
// through the effect, so it proves the composition that is actually deployed,
// and it checks each capability the backend declares against what the backend
// does. A declaration that nothing verifies is a guarantee in name only.
//
// The kit does not import the testing package: its cases report through T, a
// small interface that *testing.T satisfies, so that go test and a program
// (the service binary's conformance verb) run the same cases. A backend's test
// runs them as subtests through the conformancetest package:
//
//	func TestConformance(t *testing.T) {
//		conformancetest.Run(t, func(t *testing.T) spi.Backend {
//			b, err := mybackend.New(…)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { b.Close(context.Background()) })
//			return b
//		}, conformance.Options{})
//	}
//
// A program calls Check, which runs every case on a goroutine of its own and
// returns one Result per case.
//
// Cases a declaration does not claim are skipped with the reason; a backend
// for a language without fixtures fails every case rather than pass
// vacuously.
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// Options tune the kit. The zero value suits an in-process engine.
type Options struct {
	// Fixtures are the scripts to run. Nil selects JavaScriptFixtures for a
	// backend whose language is "javascript"; any other language must bring
	// its own.
	Fixtures *Fixtures
	// BackendGrace is the effect's grace (see effect.Options). Zero selects
	// 10 s: tighter than the effect's default so that a backend which does
	// not stop fails in seconds, not minutes. Raise it for a remote backend
	// with a slow cold start.
	BackendGrace time.Duration
	// Timeout bounds every call the kit makes; finishing inside it is the
	// proof for the runaway cases. Zero selects 60 s.
	Timeout time.Duration
	// StopWithin is how soon after cancellation the effect, and a backend
	// that declares a hard wall clock, must return. Zero selects 5 s.
	StopWithin time.Duration
	// MaxWallClock is the longest wall clock the backend accepts (a remote
	// service's maximum, say). Abort-mid-run asks for it, so that only the
	// cancellation can stop the runaway. Zero selects an hour.
	MaxWallClock time.Duration
	// CaseTimeout bounds each case under Check: a case still running when
	// it passes is stopped (its context ends), fails saying so, and the
	// next case runs, so that a backend that never answers costs each case
	// this long, not the whole run. Zero selects 2 minutes, which a case
	// needs only when its backend is failing. Case.Run leaves the bound to
	// its caller (go test has its own timeout).
	CaseTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.BackendGrace == 0 {
		o.BackendGrace = 10 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	if o.StopWithin == 0 {
		o.StopWithin = 5 * time.Second
	}
	if o.MaxWallClock == 0 {
		o.MaxWallClock = time.Hour
	}
	if o.CaseTimeout == 0 {
		o.CaseTimeout = 2 * time.Minute
	}
	return o
}

// T is what a case reports through: the part of testing.TB the kit uses.
// *testing.T satisfies it; Check supplies its own. Fatalf and Skipf must not
// return: like testing's, they end the goroutine that runs the case
// (runtime.Goexit), after which Cleanup functions run.
type T interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Cleanup(func())
}

// Case is one row of the table of docs/spi.md, "The conformance kit".
type Case struct{ c kitCase }

// Cases returns the kit's cases in the order that table lists them.
func Cases() []Case {
	out := make([]Case, len(cases))
	for i, c := range cases {
		out[i] = Case{c}
	}
	return out
}

// Name is the case's name, as Check reports it and go test names its subtest.
func (c Case) Name() string { return c.c.name }

// Run runs the case against backend, reporting through t, on the calling
// goroutine. A case the declaration does not claim ends in t.Skipf with the
// declaration that gates it. Every call the case makes is bounded by
// Options.Timeout and ends when ctx does.
func (c Case) Run(ctx context.Context, t T, backend spi.Backend, opts Options) {
	t.Helper()
	runCase(ctx, t, c.c, backend, opts)
}

// kitCase is the content of a Case: one row of the kit's table.
type kitCase struct {
	name string
	// gate returns why the declaration does not claim what the case proves,
	// or "" when the case applies.
	gate func(spi.Capabilities) string
	run  func(t T, env *env)
}

var cases = []kitCase{
	{"echo", always, caseEcho},
	{"throw", always, caseThrow},
	{"syntax_error", always, caseSyntaxError},
	{"runaway_loop", always, caseRunawayLoop},
	{"no_value_after_deadline", always, caseNoValueAfterDeadline},
	{"allocation_bomb", func(c spi.Capabilities) string {
		return unless(c.Memory, "the backend declares memory: false")
	}, caseAllocationBomb},
	{"rich_value", always, caseRichValue},
	{"no_network_no_escape", func(c spi.Capabilities) string {
		return unless(c.Network == spi.NetworkNone, fmt.Sprintf("the backend declares network: %q", c.Network))
	}, caseNoNetworkNoEscape},
	{"fresh_per_run", func(c spi.Capabilities) string {
		return unless(c.FreshPerRun, "the backend declares freshPerRun: false")
	}, caseFreshPerRun},
	{"abort_before_call", always, caseAbortBeforeCall},
	{"abort_mid_run", func(c spi.Capabilities) string {
		return unless(c.WallClock == spi.WallClockHard, "the backend declares wallClock: \"soft\", which cannot be preempted")
	}, caseAbortMidRun},
	{"composition", always, caseComposition},
}

func always(spi.Capabilities) string { return "" }

func unless(claimed bool, reason string) string {
	if claimed {
		return ""
	}
	return reason
}

// Limits the cases run under (documented on Fixtures).
var (
	defaultLimits     = spi.Limits{WallClock: 10 * time.Second, MemoryBytes: 64 << 20}
	runawayLimits     = spi.Limits{WallClock: time.Second, MemoryBytes: 64 << 20}
	overrunLimits     = spi.Limits{WallClock: OverrunWallClock, MemoryBytes: 64 << 20}
	bombLimits        = spi.Limits{WallClock: 20 * time.Second, MemoryBytes: 32 << 20}
	abortLimits       = spi.Limits{MemoryBytes: 64 << 20} // wall clock: Options.MaxWallClock
	compositionLimits = spi.Limits{WallClock: 10 * time.Second, MemoryBytes: 128 << 20}
)

// abortDelay is how long abort_mid_run lets the runaway run before it
// cancels: long enough that the script is running, far shorter than any
// budget a backend would derive from a one-hour wall clock.
const abortDelay = 50 * time.Millisecond

// env is what a case runs against: the backend, watched, inside an effect
// that serves the fixture scripts from memory.
type env struct {
	ctx     context.Context // every call the case makes ends when it does
	opts    Options
	fx      *Fixtures
	raw     spi.Backend
	watched *watchedBackend
	eff     *effect.Effect
	caps    spi.Capabilities
}

func runCase(ctx context.Context, t T, c kitCase, backend spi.Backend, opts Options) {
	t.Helper()
	e := newEnv(ctx, t, backend, opts)
	if reason := c.gate(e.caps); reason != "" {
		t.Skipf("%s", reason)
	}
	c.run(t, e)
}

func newEnv(ctx context.Context, t T, backend spi.Backend, opts Options) *env {
	t.Helper()
	if backend == nil {
		t.Fatalf("conformance: the factory returned a nil backend")
	}
	opts = opts.withDefaults()
	declared := backend.Capabilities()
	fx := opts.Fixtures
	if fx == nil {
		if declared.Language != "javascript" {
			t.Fatalf("conformance: no fixtures for language %q: a backend for a language other than javascript must pass Options.Fixtures (the kit refuses to pass vacuously)", declared.Language)
		}
		fx = JavaScriptFixtures()
	}
	if fx.Language != declared.Language {
		t.Fatalf("conformance: fixtures are for language %q but the backend declares %q", fx.Language, declared.Language)
	}
	if m := fx.missing(); len(m) > 0 {
		t.Fatalf("conformance: fixtures lack %s", strings.Join(m, ", "))
	}
	for name, text := range map[string][]byte{"RichInput": fx.RichInput, "RichExpected": fx.RichExpected} {
		if err := jsontext.Validate(text); err != nil {
			t.Fatalf("conformance: fixture %s is not JSON: %v", name, err)
		}
	}
	watched := &watchedBackend{inner: backend, calls: make(chan *watchedCall, 64)}
	eff, err := effect.New(newMemReader(fx.scripts()...), watched, effectOptions(declared, opts))
	if err != nil {
		t.Fatalf("conformance: the effect refused the backend: %v", err)
	}
	return &env{ctx: ctx, opts: opts, fx: fx, raw: backend, watched: watched, eff: eff, caps: eff.Capabilities()}
}

// effectOptions passes AllowNetwork and AllowReusedEnvironment exactly when
// the declaration needs them (docs/spi.md, "Capabilities"), so that a backend
// that claims more than it did earns nothing by it.
func effectOptions(declared spi.Capabilities, opts Options) effect.Options {
	return effect.Options{
		BackendGrace:           opts.BackendGrace,
		AllowNetwork:           declared.Network != spi.NetworkNone,
		AllowReusedEnvironment: !declared.FreshPerRun,
		Logger:                 slog.New(slog.DiscardHandler), // a late backend may log after the test ended
	}
}

// evaluate runs script through the effect, bounded by the kit's timeout.
func (e *env) evaluate(script, input string, limits spi.Limits) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(e.ctx, e.opts.Timeout)
	defer cancel()
	return run(ctx, e.eff, script, input, limits)
}

// run runs script on input through eff, as the effect's caller does: the
// script by its reference, the input as JSON text.
func run(ctx context.Context, eff *effect.Effect, script, input string, limits spi.Limits) (json.RawMessage, error) {
	in, err := effect.InputText(json.RawMessage(input))
	if err != nil {
		return nil, err
	}
	res, err := eff.Run(ctx, spi.Evaluation{ScriptRef: contentref.RefOf([]byte(script)), Input: in, Limits: limits})
	return res.Value, err
}

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

// wantFailure requires err to be a typed failure on channel.
func wantFailure(t T, what string, err error, channel spi.Channel) *spi.Failure {
	t.Helper()
	var f *spi.Failure
	if !errors.As(err, &f) {
		t.Fatalf("%s: got %v, want a %s failure", what, errText(err), channel)
	}
	if f.Channel != channel {
		t.Fatalf("%s: got %v, want a %s failure", what, err, channel)
	}
	return f
}

func errText(err error) string {
	if err == nil {
		return "success"
	}
	return err.Error()
}

func assertSameJSON(t T, what string, got, want []byte) {
	t.Helper()
	g, err := jsontext.JCS(got)
	if err != nil {
		t.Errorf("%s is not JSON: %v (%s)", what, err, clip(got))
		return
	}
	w, err := jsontext.JCS(want)
	if err != nil {
		t.Errorf("expected %s is not JSON: %v", what, err)
		return
	}
	if string(g) != string(w) {
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		from := max(0, i-40)
		t.Errorf("%s differs from byte %d (RFC 8785 form):\n got  …%s\n want …%s", what, i, clip(g[from:]), clip(w[from:]))
	}
}

func assertStorable(t T, what, s string, maxUnits int) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%s is not valid UTF-8", what)
	}
	if strings.IndexByte(s, 0) >= 0 {
		t.Errorf("%s holds NUL", what)
	}
	if n := len(utf16.Encode([]rune(s))); n > maxUnits {
		t.Errorf("%s is %d UTF-16 units, over %d", what, n, maxUnits)
	}
}

func clip(b []byte) string {
	const max = 160
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

func show(p *string) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprintf("%q", *p)
}

// describe says what an outcome is, in the words of docs/spi.md, "Outcomes",
// its texts clipped to one short line.
func describe(o spi.Outcome) string {
	switch {
	case o.OK:
		return "ok, value " + oneLine(string(o.Value))
	case o.Kind == spi.KindLimit:
		return fmt.Sprintf("limit %q", o.Limit)
	case o.Kind == spi.KindThrew:
		return fmt.Sprintf("threw, name %s, message %q", show(o.Name), oneLine(o.Message))
	case o.Kind == spi.KindInputTooLarge:
		return "inputTooLarge"
	case o.Kind == spi.KindInfrastructure:
		return fmt.Sprintf("infrastructure, message %q", oneLine(o.Message))
	}
	return fmt.Sprintf("of unknown kind %q", oneLine(string(o.Kind)))
}

// oneLine folds s onto one line of at most 200 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

// watchedBackend lets the kit see when the effect has called the backend and
// when the backend's own call returned.
type watchedBackend struct {
	inner spi.Backend
	calls chan *watchedCall
}

// watchedCall is one call: returned is closed when it returns, after
// result is set.
type watchedCall struct {
	returned chan struct{}
	result   backendReturn
}

func (w *watchedBackend) Capabilities() spi.Capabilities { return w.inner.Capabilities() }

func (w *watchedBackend) Evaluate(ctx context.Context, req spi.Request) (o spi.Outcome, err error) {
	c := &watchedCall{returned: make(chan struct{})}
	select {
	case w.calls <- c:
	default: // only the abort cases read the calls; the others need not block
	}
	defer func() {
		if p := recover(); p != nil {
			c.result = backendReturn{panicked: oneLine(fmt.Sprint(p))}
			close(c.returned)
			panic(p) // the effect's to report
		}
		c.result = backendReturn{outcome: o, err: err}
		close(c.returned)
	}()
	return w.inner.Evaluate(ctx, req)
}

// memReader serves the fixture scripts by content reference.
type memReader struct{ scripts map[string][]byte }

func newMemReader(scripts ...string) *memReader {
	r := &memReader{scripts: make(map[string][]byte, len(scripts))}
	for _, s := range scripts {
		r.scripts[contentref.RefOf([]byte(s)).String()] = []byte(s)
	}
	return r
}

func (r *memReader) Get(_ context.Context, ref contentref.Ref) ([]byte, error) {
	if b, ok := r.scripts[ref.String()]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("conformance: %s: %w", ref, contentref.ErrNotFound)
}
