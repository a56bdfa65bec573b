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
	"fmt"
	"log/slog"
	"strings"
	"time"

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
