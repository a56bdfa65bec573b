package effect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

const testScript = "input.x + 1"

var testRef = contentref.RefOf([]byte(testScript))

// safeCaps is the declaration the effect accepts with default options.
var safeCaps = spi.Capabilities{
	Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard,
	Memory: true, CPU: true, FreshPerRun: true,
}

// recordingReader serves scripts from memory and records every Get, so that
// tests can prove what the effect fetched and when.
type recordingReader struct {
	mu      sync.Mutex
	scripts map[string][]byte
	calls   []string
	get     func(ctx context.Context, ref contentref.Ref) ([]byte, error) // overrides the map when set
}

func newReader(scripts ...string) *recordingReader {
	r := &recordingReader{scripts: map[string][]byte{}}
	for _, s := range scripts {
		r.scripts[contentref.RefOf([]byte(s)).String()] = []byte(s)
	}
	return r
}

func (r *recordingReader) Get(ctx context.Context, ref contentref.Ref) ([]byte, error) {
	r.mu.Lock()
	r.calls = append(r.calls, ref.String())
	get := r.get
	r.mu.Unlock()
	if get != nil {
		return get(ctx, ref)
	}
	if b, ok := r.scripts[ref.String()]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("memory: %s: %w", ref, contentref.ErrNotFound)
}

func (r *recordingReader) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// fakeBackend answers with a function and counts calls.
type fakeBackend struct {
	caps      func(call int) spi.Capabilities
	capsCalls atomic.Int32
	eval      func(ctx context.Context, req spi.Request) (spi.Outcome, error)
	evalCalls atomic.Int32
	mu        sync.Mutex
	requests  []spi.Request
}

func (b *fakeBackend) Capabilities() spi.Capabilities {
	n := int(b.capsCalls.Add(1))
	if b.caps == nil {
		return safeCaps
	}
	return b.caps(n)
}

func (b *fakeBackend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	b.evalCalls.Add(1)
	b.mu.Lock()
	b.requests = append(b.requests, req)
	b.mu.Unlock()
	return b.eval(ctx, req)
}

// returning is a backend that answers every call with the same outcome.
func returning(o spi.Outcome, err error) *fakeBackend {
	return &fakeBackend{eval: func(context.Context, spi.Request) (spi.Outcome, error) { return o, err }}
}

func mustNew(t *testing.T, r effect.ScriptReader, b spi.Backend, opts effect.Options) *effect.Effect {
	t.Helper()
	e, err := effect.New(r, b, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// input is an evaluation of a caller that holds its input as a Go value:
// evaluate turns it into a spi.Evaluation with effect.InputText.
type input struct {
	ScriptRef               contentref.Ref
	Input                   any
	Limits                  spi.Limits
	ExpectedOutputShapeHash string
}

func validInput() input {
	return input{
		ScriptRef: testRef,
		Input:     map[string]any{"x": 1},
		Limits:    spi.Limits{WallClock: time.Second, MemoryBytes: 64 << 20},
	}
}

// evaluate runs in through e.Run, answering with the effect's decision: the
// value, or the error (a typed *spi.Failure among them).
func evaluate(ctx context.Context, e *effect.Effect, in input) (json.RawMessage, error) {
	text, err := effect.InputText(in.Input)
	if err != nil {
		return nil, err
	}
	res, err := e.Run(ctx, spi.Evaluation{ScriptRef: in.ScriptRef, Input: text, Limits: in.Limits,
		ExpectedOutputShapeHash: in.ExpectedOutputShapeHash})
	return res.Value, err
}

// evalWith runs one evaluation of testScript against backend.
func evalWith(t *testing.T, b spi.Backend, opts effect.Options) (string, error) {
	t.Helper()
	e := mustNew(t, newReader(testScript), b, opts)
	out, err := evaluate(context.Background(), e, validInput())
	return string(out), err
}

func asFailure(t *testing.T, err error) *spi.Failure {
	t.Helper()
	var f *spi.Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v (%T) is not a *Failure", err, err)
	}
	return f
}

func assertUntyped(t *testing.T, err error, kind error, retryable bool) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	var f *spi.Failure
	if errors.As(err, &f) {
		t.Fatalf("error %v is typed (%s); want untyped", err, f.Channel)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %q does not match %v", err, kind)
	}
	if got := effect.Retryable(err); got != retryable {
		t.Fatalf("Retryable(%q) = %v, want %v", err, got, retryable)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("untyped error %q passes for a cancellation", err)
	}
	assertStorable(t, err.Error(), spi.MaxMessageUnits)
}

// assertStorable checks that text can go into an append-only log and Postgres
// jsonb as it is.
func assertStorable(t *testing.T, s string, maxUnits int) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("text is not valid UTF-8: %q", truncate(s))
	}
	if strings.IndexByte(s, 0) >= 0 {
		t.Fatalf("text holds NUL: %q", truncate(s))
	}
	if n := len(utf16.Encode([]rune(s))); n > maxUnits {
		t.Fatalf("text is %d UTF-16 units, over %d", n, maxUnits)
	}
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func ptr[T any](v T) *T { return &v }
