package effect_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// byRef is an evaluation of testScript by its reference.
func byRef(answer spi.Answer) spi.Evaluation {
	return spi.Evaluation{ScriptRef: testRef, Input: []byte(`{"x":1}`),
		Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 64 << 20}, Answer: answer}
}

// Each way a script never runs is a NotRunError with its reason, and the
// backend is never called: the one reading of a store's errors.
func TestRunNotRunReasons(t *testing.T) {
	failing := func(err error) *recordingReader {
		r := newReader()
		r.get = func(context.Context, contentref.Ref) ([]byte, error) { return nil, err }
		return r
	}
	huge := strings.Repeat("1;", 600)
	for _, tc := range []struct {
		name      string
		reader    effect.ScriptReader
		ev        spi.Evaluation
		reason    effect.NotRunReason
		kind      error // what the error also matches
		retryable bool
		check     func(*testing.T, *effect.NotRunError)
	}{
		{name: "not found", reader: newReader(), reason: effect.ScriptNotFound, kind: contentref.ErrNotFound},
		{name: "no store", reader: effect.NoStore, reason: effect.NoScriptStore, kind: effect.ErrNoScriptStore},
		{name: "unavailable", reader: failing(fmt.Errorf("%w: outage", contentref.ErrUnavailable)), reason: effect.StoreUnavailable, kind: effect.ErrScriptFetch, retryable: true},
		{name: "the store's deadline", reader: failing(context.DeadlineExceeded), reason: effect.StoreUnavailable, kind: effect.ErrScriptFetch, retryable: true},
		{name: "refused", reader: failing(fmt.Errorf("%w: IAM", contentref.ErrPermission)), reason: effect.StoreRefused, kind: contentref.ErrPermission},
		{name: "panicked", reader: failing(fmt.Errorf("%w while reading", contentref.ErrPanicked)), reason: effect.StorePanicked, kind: contentref.ErrPanicked},
		{name: "failed", reader: failing(errors.New("disk on fire")), reason: effect.StoreFailed, kind: effect.ErrScriptFetch},
		{name: "integrity reported", reader: failing(contentref.ErrIntegrity), reason: effect.ScriptIntegrity, kind: contentref.ErrIntegrity},
		{name: "integrity found", reader: func() effect.ScriptReader {
			r := newReader()
			r.get = func(context.Context, contentref.Ref) ([]byte, error) { return []byte("evil()"), nil }
			return r
		}(), reason: effect.ScriptIntegrity, kind: contentref.ErrIntegrity},
		{name: "too large for the store", reader: failing(fmt.Errorf("%w: no size", contentref.ErrTooLarge)), reason: effect.ScriptTooLarge, kind: contentref.ErrTooLarge,
			check: func(t *testing.T, nr *effect.NotRunError) {
				if nr.Size != -1 || nr.Limit != 1000 || nr.StoreLimit {
					t.Errorf("size %d, limit %d, store's %v; want -1, MaxScriptBytes", nr.Size, nr.Limit, nr.StoreLimit)
				}
			}},
		{name: "too large at the effect's cap", reader: failing(&contentref.TooLargeError{Object: "x", Size: 5000, Limit: 1000}), reason: effect.ScriptTooLarge, kind: contentref.ErrTooLarge,
			check: func(t *testing.T, nr *effect.NotRunError) {
				if nr.Size != 5000 || nr.Limit != 1000 || nr.StoreLimit {
					t.Errorf("size %d, limit %d, store's %v", nr.Size, nr.Limit, nr.StoreLimit)
				}
			}},
		{name: "too large for a smaller store", reader: failing(&contentref.TooLargeError{Object: "x", Size: 700, Limit: 512}), reason: effect.ScriptTooLarge, kind: contentref.ErrTooLarge,
			check: func(t *testing.T, nr *effect.NotRunError) {
				if nr.Size != 700 || nr.Limit != 512 || !nr.StoreLimit {
					t.Errorf("size %d, limit %d, store's %v", nr.Size, nr.Limit, nr.StoreLimit)
				}
			}},
		{name: "delivered over MaxScriptBytes", reader: newReader(huge), ev: spi.Evaluation{ScriptRef: contentref.RefOf([]byte(huge))}, reason: effect.ScriptTooLarge, kind: effect.ErrScriptFetch,
			check: func(t *testing.T, nr *effect.NotRunError) {
				if nr.Size != int64(len(huge)) || nr.Limit != 1000 || nr.StoreLimit {
					t.Errorf("size %d, limit %d, store's %v", nr.Size, nr.Limit, nr.StoreLimit)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := returning(spi.OK([]byte("1")), nil)
			e := mustNew(t, tc.reader, b, effect.Options{MaxScriptBytes: 1000})
			ev := byRef(spi.AnswerOutcome)
			if !tc.ev.ScriptRef.IsZero() {
				ev.ScriptRef = tc.ev.ScriptRef
			}
			res, err := e.Run(context.Background(), ev)
			var nr *effect.NotRunError
			if !errors.As(err, &nr) || nr.Reason != tc.reason || nr.ScriptRef != ev.ScriptRef {
				t.Fatalf("got %v (%#v), want a script not run for %s", err, nr, tc.reason)
			}
			if !errors.Is(err, tc.kind) || effect.Retryable(err) != tc.retryable {
				t.Errorf("%v: matches %v %v, retryable %v, want %v", err, tc.kind, errors.Is(err, tc.kind), effect.Retryable(err), tc.retryable)
			}
			var f *spi.Failure
			if isFailure := errors.As(err, &f); isFailure != (tc.reason == effect.ScriptNotFound) {
				t.Errorf("typed %v, want the typed scriptMissing only for a missing script", f)
			}
			assertStorable(t, err.Error(), spi.MaxMessageUnits)
			if b.evalCalls.Load() != 0 || !res.Call.Start.IsZero() {
				t.Error("the backend was called")
			}
			if tc.reason != effect.NoScriptStore && (res.Fetch.Start.IsZero() || res.Fetch.End.Before(res.Fetch.Start)) {
				t.Errorf("the fetch is %+v", res.Fetch)
			}
			if tc.check != nil {
				tc.check(t, nr)
			}
		})
	}
	t.Run("stopped", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := mustNew(t, newReader(testScript), returning(spi.OK([]byte("1")), nil), effect.Options{}).Run(ctx, byRef(spi.AnswerChannel))
		var nr *effect.NotRunError
		if !errors.As(err, &nr) || nr.Reason != effect.Stopped || !errors.Is(err, context.Canceled) || !errors.Is(err, effect.ErrNotRun) {
			t.Fatalf("got %v", err)
		}
	})
}

// spi.AnswerOutcome answers with the backend's outcome as it is (its text not
// bounded: the caller's effect does that), and spi.AnswerChannel with the
// effect's decision, on the same run.
func TestRunAnswers(t *testing.T) {
	long := strings.Repeat("m", 3*spi.MaxMessageUnits)
	name := "TypeError"
	b := returning(spi.Threw(&name, long), nil)
	e := mustNew(t, newReader(testScript), b, effect.Options{})
	res, err := e.Run(context.Background(), byRef(spi.AnswerOutcome))
	if err != nil || res.Outcome.Kind != spi.KindThrew || res.Outcome.Message != long || res.Value != nil {
		t.Fatalf("outcome answer: %+v, %v", res, err)
	}
	res, err = e.Run(context.Background(), byRef(spi.AnswerChannel))
	f := asFailure(t, err)
	if f.Channel != spi.ChannelScriptError || len(f.Message) != spi.MaxMessageUnits {
		t.Fatalf("channel answer: %+v", f)
	}
	if res.Outcome.Kind != spi.KindThrew {
		t.Errorf("the channel answer's result lost the outcome: %+v", res.Outcome)
	}

	ok := mustNew(t, newReader(testScript), returning(spi.OK([]byte(`{ "b" : 1, "a" : 2 }`)), nil), effect.Options{})
	res, err = ok.Run(context.Background(), byRef(spi.AnswerChannel))
	if err != nil || string(res.Value) != `{"b":1,"a":2}` {
		t.Fatalf("the value is %s (%v), want its JSON round-trip", res.Value, err)
	}
	res, err = ok.Run(context.Background(), byRef(spi.AnswerOutcome))
	if err != nil || string(res.Outcome.Value) != `{ "b" : 1, "a" : 2 }` || res.Value != nil {
		t.Fatalf("the outcome's value is %s (%v), want the backend's text", res.Outcome.Value, err)
	}
}

// The outcome's value is bounded by what a run within the memory maximum can
// make; beyond it the outcome is malformed, never answered.
func TestRunBoundsAnOutcomesValue(t *testing.T) {
	max := spi.MaxValueBytes(1 << 20)
	value := func(n int64) []byte {
		v := []byte(strings.Repeat("x", int(n)))
		v[0], v[n-1] = '"', '"'
		return v
	}
	for _, tc := range []struct {
		n  int64
		ok bool
	}{{max, true}, {max + 1, false}} {
		e := mustNew(t, effect.NoStore, returning(spi.OK(value(tc.n)), nil), effect.Options{MaxMemoryBytes: 1 << 20})
		_, err := e.Run(context.Background(), spi.Evaluation{Script: "s", Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 1 << 20}, Answer: spi.AnswerOutcome})
		if tc.ok && err != nil {
			t.Errorf("%d bytes: %v", tc.n, err)
		}
		if !tc.ok {
			assertUntyped(t, err, effect.ErrMalformedOutcome, false)
			if !strings.Contains(err.Error(), fmt.Sprint(tc.n)) {
				t.Errorf("the error does not say the size: %v", err)
			}
		}
	}
	if _, err := effect.New(effect.NoStore, &maxMemoryBackend{fakeBackend: returning(spi.OK([]byte("1")), nil), max: 1 << 20},
		effect.Options{MaxMemoryBytes: 2 << 20}); !errors.Is(err, effect.ErrInvalidOptions) || !strings.Contains(err.Error(), "engine's maximum") {
		t.Errorf("a memory maximum over the engine's: %v", err)
	}
}

type maxMemoryBackend struct {
	*fakeBackend
	max int64
}

func (b *maxMemoryBackend) MaxMemoryBytes() int64 { return b.max }

// consoleBackend is a Reporter whose runs log one line.
type consoleBackend struct{ *fakeBackend }

func (b consoleBackend) Run(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	o, err := b.Evaluate(ctx, req.Request)
	return spi.Report{Outcome: o, Logs: "hello\n"}, err
}

// The console output is captured when the evaluation asks for it, from a
// backend that can give it; a failure keeps it too.
func TestRunCapturesTheConsole(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend spi.Backend
		capture bool
		want    string
	}{
		{"asked", consoleBackend{returning(spi.OK([]byte("1")), nil)}, true, "hello\n"},
		{"not asked", consoleBackend{returning(spi.OK([]byte("1")), nil)}, false, ""},
		{"asked, with a failure", consoleBackend{returning(spi.Threw(nil, "x"), nil)}, true, "hello\n"},
		{"a backend without a console", returning(spi.OK([]byte("1")), nil), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := byRef(spi.AnswerChannel)
			ev.CaptureLogs = tc.capture
			res, _ := mustNew(t, newReader(testScript), tc.backend, effect.Options{}).Run(context.Background(), ev)
			if res.Logs != tc.want {
				t.Errorf("logs %q, want %q", res.Logs, tc.want)
			}
			if res.Call.Start.IsZero() || res.Call.End.Before(res.Call.Start) || res.ScriptBytes != len(testScript) {
				t.Errorf("the result does not say when the call ran or what was fetched: %+v", res)
			}
		})
	}
}

// An evaluation that no run can have is refused before the store or the
// backend is asked.
func TestRunRefusesAnImpossibleEvaluation(t *testing.T) {
	reader := newReader(testScript)
	b := returning(spi.OK([]byte("1")), nil)
	ev := byRef(spi.AnswerChannel)
	ev.Limits = spi.Limits{}
	ev.ExpectedOutputShapeHash = "md5:x"
	_, err := mustNew(t, reader, b, effect.Options{}).Run(context.Background(), ev)
	invalidInput("limits.wallClock", "limits.memoryBytes", "expectedOutputShapeHash")(t, err)
	if reader.Calls() != 0 || b.evalCalls.Load() != 0 {
		t.Error("the store or the backend was asked")
	}
}

// Run reports what the run used: the effect's own steps (the store's read
// and the check of the bytes), with the backend's report when it is a
// Reporter, and the call's wall time as the run otherwise.
func TestRunReportsUsage(t *testing.T) {
	slowStore := newReader(testScript)
	slowStore.get = func(ctx context.Context, ref contentref.Ref) ([]byte, error) {
		time.Sleep(2 * time.Millisecond)
		return []byte(testScript), nil
	}
	byReference := spi.Evaluation{ScriptRef: testRef, Input: []byte("null"), Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 1 << 20}}

	plain := &fakeBackend{eval: func(context.Context, spi.Request) (spi.Outcome, error) {
		time.Sleep(3 * time.Millisecond)
		return spi.OK([]byte("1")), nil
	}}
	res, err := mustNew(t, slowStore, plain, effect.Options{}).Run(context.Background(), byReference)
	u := res.Usage
	if err != nil || u.Fetch < 2*time.Millisecond || u.Verify <= 0 || u.Run < 3*time.Millisecond || u.MemoryLimitBytes != 1<<20 {
		t.Errorf("a plain backend: %+v, %v", u, err)
	}

	report := spi.Usage{Setup: 1, Run: 2, Serialise: 3, CPU: 4, CPUBudgetUsed: 5, CPUBudget: 6, PeakMemoryBytes: 7, MemoryLimitBytes: 1 << 20}
	reporting := reportingBackend{fakeBackend: returning(spi.OK([]byte("1")), nil), usage: report}
	res, err = mustNew(t, slowStore, reporting, effect.Options{}).Run(context.Background(), byReference)
	u = res.Usage
	if err != nil || u.Fetch < 2*time.Millisecond || u.Verify <= 0 {
		t.Errorf("a Reporter: %+v, %v", u, err)
	}
	u.Fetch, u.Verify = 0, 0
	if u != report {
		t.Errorf("a Reporter's usage came back as %+v, want %+v", u, report)
	}

	// by value: nothing fetched, nothing verified
	res, _ = mustNew(t, effect.NoStore, plain, effect.Options{}).Run(context.Background(), spi.Evaluation{Script: "1", Input: []byte("null"), Limits: byReference.Limits})
	if res.Usage.Fetch != 0 || res.Usage.Verify != 0 || res.Usage.Run <= 0 {
		t.Errorf("a script by value: %+v", res.Usage)
	}
}

// reportingBackend is a Reporter that reports a fixed usage.
type reportingBackend struct {
	*fakeBackend
	usage spi.Usage
}

func (b reportingBackend) Run(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	o, err := b.Evaluate(ctx, req.Request)
	return spi.Report{Outcome: o, Usage: b.usage}, err
}

// faultBackend is a Reporter whose every run reports an engine fault
// beside its outcome.
type faultBackend struct {
	*fakeBackend
	fault string
}

func (b faultBackend) Run(ctx context.Context, req spi.RunRequest) (spi.Report, error) {
	o, err := b.Evaluate(ctx, req.Request)
	return spi.Report{Outcome: o, EngineFault: b.fault}, err
}

// An engine fault reaches the caller of Run beside the answer, which stays
// infrastructure (untyped and retryable on spi.AnswerChannel, the outcome
// itself on spi.AnswerOutcome); its text bounded as a message is. A backend
// that reports a fault beside any other outcome contradicts itself: the
// run is a malformed outcome, neither the script's answer nor a fault.
func TestRunReportsAnEngineFault(t *testing.T) {
	infra := spi.Infrastructure("quickjs: engine failed: wasm error: unreachable")
	for _, answer := range []spi.Answer{spi.AnswerOutcome, spi.AnswerChannel} {
		b := faultBackend{returning(infra, nil), "wasm error: unreachable"}
		res, err := mustNew(t, newReader(testScript), b, effect.Options{}).Run(context.Background(), byRef(answer))
		if res.EngineFault != "wasm error: unreachable" || res.Outcome.Kind != spi.KindInfrastructure {
			t.Errorf("answer %d: engine fault %q, outcome %+v", answer, res.EngineFault, res.Outcome)
		}
		if answer == spi.AnswerOutcome && err != nil {
			t.Errorf("the outcome answered with %v", err)
		}
		if answer == spi.AnswerChannel {
			assertUntyped(t, err, effect.ErrBackendFailed, true)
		}
	}

	long := faultBackend{returning(infra, nil), strings.Repeat("\x00trap ", 2000)}
	res, _ := mustNew(t, newReader(testScript), long, effect.Options{}).Run(context.Background(), byRef(spi.AnswerOutcome))
	if res.EngineFault == "" {
		t.Fatal("a long engine fault was dropped")
	}
	assertStorable(t, res.EngineFault, spi.MaxMessageUnits)

	res, _ = mustNew(t, newReader(testScript), returning(infra, nil), effect.Options{}).Run(context.Background(), byRef(spi.AnswerOutcome))
	if res.EngineFault != "" {
		t.Errorf("an infrastructure outcome without a fault reported %q", res.EngineFault)
	}

	name := "Error"
	for _, o := range []spi.Outcome{spi.OK([]byte("1")), spi.Threw(&name, "wasm error: unreachable"), spi.LimitHit(spi.LimitWallClock), spi.InputTooLarge()} {
		for _, answer := range []spi.Answer{spi.AnswerOutcome, spi.AnswerChannel} {
			b := faultBackend{returning(o, nil), "wasm error: unreachable"}
			res, err := mustNew(t, newReader(testScript), b, effect.Options{}).Run(context.Background(), byRef(answer))
			assertUntyped(t, err, effect.ErrMalformedOutcome, false)
			if res.EngineFault != "" || res.Outcome.OK || res.Outcome.Kind != "" || res.Value != nil {
				t.Errorf("a fault beside %+v (answer %d) came back as %+v", o, answer, res)
			}
		}
	}
}
