package effect_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// TestNewRefusesWhatItCannotVouchFor proves the refusals of docs/spi.md,
// "Capabilities", and the validation of the declaration and of the options.
func TestNewRefusesWhatItCannotVouchFor(t *testing.T) {
	with := func(edit func(*spi.Capabilities)) spi.Capabilities {
		c := safeCaps
		edit(&c)
		return c
	}
	for _, tc := range []struct {
		name  string
		caps  spi.Capabilities
		opts  effect.Options
		wants []error // nil: accepted
	}{
		{"safe", safeCaps, effect.Options{}, nil},
		{"allowlist network refused", with(func(c *spi.Capabilities) { c.Network = spi.NetworkAllowlist }), effect.Options{}, []error{effect.ErrNetworkRefused}},
		{"open network refused", with(func(c *spi.Capabilities) { c.Network = spi.NetworkOpen }), effect.Options{}, []error{effect.ErrNetworkRefused}},
		{"open network allowed", with(func(c *spi.Capabilities) { c.Network = spi.NetworkOpen }), effect.Options{AllowNetwork: true}, nil},
		{"reused environment refused", with(func(c *spi.Capabilities) { c.FreshPerRun = false }), effect.Options{}, []error{effect.ErrReusedEnvironmentRefused}},
		{"reused environment allowed", with(func(c *spi.Capabilities) { c.FreshPerRun = false }), effect.Options{AllowReusedEnvironment: true}, nil},
		{"both refused at once", with(func(c *spi.Capabilities) { c.FreshPerRun = false; c.Network = spi.NetworkOpen }), effect.Options{},
			[]error{effect.ErrNetworkRefused, effect.ErrReusedEnvironmentRefused}},
		{"worst case allowed", with(func(c *spi.Capabilities) {
			*c = spi.Capabilities{Language: "python", Network: spi.NetworkOpen, WallClock: spi.WallClockSoft}
		}), effect.Options{AllowNetwork: true, AllowReusedEnvironment: true}, nil},
		{"unknown network", with(func(c *spi.Capabilities) { c.Network = "wifi" }), effect.Options{AllowNetwork: true}, []error{effect.ErrInvalidCapabilities}},
		{"empty network", with(func(c *spi.Capabilities) { c.Network = "" }), effect.Options{}, []error{effect.ErrInvalidCapabilities}},
		{"unknown wall clock", with(func(c *spi.Capabilities) { c.WallClock = "firm" }), effect.Options{}, []error{effect.ErrInvalidCapabilities}},
		{"empty language", with(func(c *spi.Capabilities) { c.Language = "" }), effect.Options{}, []error{effect.ErrInvalidCapabilities}},
		{"language with a space", with(func(c *spi.Capabilities) { c.Language = "java script" }), effect.Options{}, []error{effect.ErrInvalidCapabilities}},
		{"language too long", with(func(c *spi.Capabilities) { c.Language = strings.Repeat("j", 65) }), effect.Options{}, []error{effect.ErrInvalidCapabilities}},
		{"negative grace", safeCaps, effect.Options{BackendGrace: -time.Second}, []error{effect.ErrInvalidOptions}},
		{"negative input bound", safeCaps, effect.Options{MaxInputBytes: -1}, []error{effect.ErrInvalidOptions}},
		{"negative output bound", safeCaps, effect.Options{MaxOutputBytes: -1}, []error{effect.ErrInvalidOptions}},
		{"negative memory floor", safeCaps, effect.Options{MinMemoryBytes: -1}, []error{effect.ErrInvalidOptions}},
		{"memory floor above the maximum", safeCaps, effect.Options{MinMemoryBytes: 2 << 20, MaxMemoryBytes: 1 << 20}, []error{effect.ErrInvalidOptions}},
		{"negative wall clock maximum", safeCaps, effect.Options{MaxWallClock: -time.Second}, []error{effect.ErrInvalidOptions}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps := tc.caps
			e, err := effect.New(newReader(), &fakeBackend{caps: func(int) spi.Capabilities { return caps }}, tc.opts)
			if tc.wants == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if e.Capabilities() != caps {
					t.Fatalf("Capabilities() = %+v, want %+v", e.Capabilities(), caps)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, want := range tc.wants {
				if !errors.Is(err, want) {
					t.Errorf("error %q does not match %v", err, want)
				}
			}
		})
	}
}

func TestNewRefusesNilsAndPanics(t *testing.T) {
	if _, err := effect.New(nil, &fakeBackend{}, effect.Options{}); !errors.Is(err, effect.ErrInvalidOptions) {
		t.Errorf("nil reader: %v", err)
	}
	if _, err := effect.New(newReader(), nil, effect.Options{}); !errors.Is(err, effect.ErrInvalidOptions) {
		t.Errorf("nil backend: %v", err)
	}
	panicky := &fakeBackend{caps: func(int) spi.Capabilities { panic("no declaration today") }}
	if _, err := effect.New(newReader(), panicky, effect.Options{}); !errors.Is(err, effect.ErrInvalidCapabilities) ||
		!strings.Contains(err.Error(), "no declaration today") {
		t.Errorf("panicking Capabilities: %v", err)
	}
}

// TestIdempotent proves that idempotency follows the declaration: true only
// for network none AND freshPerRun.
func TestIdempotent(t *testing.T) {
	opts := effect.Options{AllowNetwork: true, AllowReusedEnvironment: true}
	for _, tc := range []struct {
		network spi.Network
		fresh   bool
		want    bool
	}{
		{spi.NetworkNone, true, true},
		{spi.NetworkNone, false, false},
		{spi.NetworkAllowlist, true, false},
		{spi.NetworkOpen, true, false},
		{spi.NetworkOpen, false, false},
	} {
		c := safeCaps
		c.Network, c.FreshPerRun = tc.network, tc.fresh
		e := mustNew(t, newReader(), &fakeBackend{caps: func(int) spi.Capabilities { return c }}, opts)
		if got := e.Idempotent(); got != tc.want {
			t.Errorf("network %s, freshPerRun %v: Idempotent() = %v, want %v", tc.network, tc.fresh, got, tc.want)
		}
	}
}

// TestCapabilitiesSnapshot proves the declaration is read once: a backend
// that answers differently later changes nothing the effect reports or
// decides.
func TestCapabilitiesSnapshot(t *testing.T) {
	b := &fakeBackend{
		caps: func(call int) spi.Capabilities {
			if call == 1 {
				return safeCaps
			}
			return spi.Capabilities{Language: "javascript", Network: spi.NetworkOpen, WallClock: spi.WallClockSoft}
		},
		eval: func(context.Context, spi.Request) (spi.Outcome, error) { return spi.OK([]byte("2")), nil },
	}
	e := mustNew(t, newReader(testScript), b, effect.Options{})
	for range 3 {
		if _, err := evaluate(context.Background(), e, validInput()); err != nil {
			t.Fatal(err)
		}
	}
	got := e.Capabilities()
	got.Network = spi.NetworkOpen // the caller's copy, not the effect's
	if e.Capabilities() != safeCaps || !e.Idempotent() {
		t.Errorf("snapshot changed: %+v, idempotent %v", e.Capabilities(), e.Idempotent())
	}
	if n := b.capsCalls.Load(); n != 1 {
		t.Errorf("Capabilities() called %d times, want once", n)
	}
}

// TestOutcomeMapping proves every well-formed outcome kind maps to its
// channel (docs/spi.md, "The effect", step 6).
func TestOutcomeMapping(t *testing.T) {
	t.Run("ok is returned as its JSON round-trip", func(t *testing.T) {
		out, err := evalWith(t, returning(spi.OK([]byte(` {"b" : [1, 2.50, -0, 1E2], "a":"\u00e9\/", "s":"\ud800"} `)), nil), effect.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"b":[1,2.5,0,100],"a":"é/","s":"\ud800"}`; out != want {
			t.Errorf("got %s, want %s", out, want)
		}
	})
	for _, l := range []spi.LimitKind{spi.LimitCPU, spi.LimitMemory, spi.LimitWallClock} {
		t.Run("limit "+string(l), func(t *testing.T) {
			_, err := evalWith(t, returning(spi.LimitHit(l), nil), effect.Options{})
			f := asFailure(t, err)
			if f.Channel != spi.ChannelLimitExceeded || f.Kind != l {
				t.Errorf("got %+v", f)
			}
			if effect.Retryable(err) {
				t.Error("a typed failure is retryable")
			}
		})
	}
	t.Run("threw with a name", func(t *testing.T) {
		_, err := evalWith(t, returning(spi.Threw(ptr("TypeError"), "x is not a function"), nil), effect.Options{})
		f := asFailure(t, err)
		if f.Channel != spi.ChannelScriptError || f.Name == nil || *f.Name != "TypeError" || f.Message != "x is not a function" {
			t.Errorf("got %+v", f)
		}
		if err.Error() != "sandbox: scriptError: TypeError: x is not a function" {
			t.Errorf("Error() = %q", err)
		}
	})
	t.Run("threw without a name", func(t *testing.T) {
		_, err := evalWith(t, returning(spi.Threw(nil, "42"), nil), effect.Options{})
		f := asFailure(t, err)
		if f.Channel != spi.ChannelScriptError || f.Name != nil || f.Message != "42" {
			t.Errorf("got %+v", f)
		}
	})
	// "threw without a message": in Go an empty message cannot be told from
	// a missing one, and the quickjs engine reports `throw new Error("")` and
	// `throw ""` this way. Both are the script's own exception, a pure
	// function of (script, input), so they stay typed rather than malformed.
	t.Run("threw with an empty message", func(t *testing.T) {
		_, err := evalWith(t, returning(spi.Threw(ptr("Error"), ""), nil), effect.Options{})
		f := asFailure(t, err)
		if f.Channel != spi.ChannelScriptError || f.Name == nil || *f.Name != "Error" || f.Message != "" {
			t.Errorf("got %+v", f)
		}
		_, err = evalWith(t, returning(spi.Threw(nil, ""), nil), effect.Options{})
		if f := asFailure(t, err); f.Channel != spi.ChannelScriptError || f.Name != nil || f.Message != "" {
			t.Errorf("got %+v", f)
		}
	})
	t.Run("inputTooLarge", func(t *testing.T) {
		_, err := evalWith(t, returning(spi.InputTooLarge(), nil), effect.Options{MaxInputBytes: 4096})
		f := asFailure(t, err)
		if f.Channel != spi.ChannelInputTooLarge || f.LimitBytes != 4096 {
			t.Errorf("got %+v", f)
		}
	})
	t.Run("infrastructure is untyped and retryable", func(t *testing.T) {
		_, err := evalWith(t, returning(spi.Infrastructure("worker pool closed"), nil), effect.Options{})
		assertUntyped(t, err, effect.ErrBackendFailed, true)
		if !strings.Contains(err.Error(), "worker pool closed") {
			t.Errorf("error %q lost the backend's message", err)
		}
	})
}

// TestMalformedOutcomes proves a malformed outcome fails untyped and not
// retryable, never as a guessed channel.
func TestMalformedOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    spi.Outcome
	}{
		{"zero outcome", spi.Outcome{}},
		{"ok with a kind", spi.Outcome{OK: true, Value: []byte("1"), Kind: spi.KindThrew}},
		{"ok with a limit", spi.Outcome{OK: true, Value: []byte("1"), Limit: spi.LimitCPU}},
		{"ok with a name", spi.Outcome{OK: true, Value: []byte("1"), Name: ptr("Error")}},
		{"ok with a message", spi.Outcome{OK: true, Value: []byte("1"), Message: "hi"}},
		{"ok without a value", spi.Outcome{OK: true}},
		{"ok with a value that is not JSON", spi.OK([]byte("{oops"))},
		{"ok with JavaScript that is not JSON", spi.OK([]byte("undefined"))},
		{"ok with NaN", spi.OK([]byte("NaN"))},
		{"ok with two values", spi.OK([]byte("1 2"))},
		{"ok with invalid UTF-8", spi.OK([]byte("\"\xff\""))},
		{"ok with raw surrogate bytes", spi.OK([]byte("\"\xed\xa0\x80\""))},
		{"ok with duplicate keys", spi.OK([]byte(`{"a":1,"a":2}`))},
		{"unknown kind", spi.Outcome{Kind: "exploded", Message: "boom"}},
		{"failure without a kind", spi.Outcome{Message: "boom"}},
		{"limit of disk", spi.LimitHit("disk")},
		{"limit of output (only the effect bounds output)", spi.LimitHit(spi.LimitOutput)},
		{"limit without a limit", spi.Outcome{Kind: spi.KindLimit}},
		{"limit with a message", spi.Outcome{Kind: spi.KindLimit, Limit: spi.LimitCPU, Message: "x"}},
		{"limit with a value", spi.Outcome{Kind: spi.KindLimit, Limit: spi.LimitCPU, Value: []byte("1")}},
		{"threw with a value", spi.Outcome{Kind: spi.KindThrew, Message: "m", Value: []byte("1")}},
		{"threw with a limit", spi.Outcome{Kind: spi.KindThrew, Message: "m", Limit: spi.LimitCPU}},
		{"inputTooLarge with a message", spi.Outcome{Kind: spi.KindInputTooLarge, Message: "m"}},
		{"infrastructure without a message", spi.Infrastructure("")},
		{"infrastructure with a name", spi.Outcome{Kind: spi.KindInfrastructure, Message: "m", Name: ptr("E")}},
		{"kind of 5 MB", spi.Outcome{Kind: spi.OutcomeKind(strings.Repeat("k\x00\xed\xa0\x80", 1<<20))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evalWith(t, returning(tc.o, nil), effect.Options{})
			assertUntyped(t, err, effect.ErrMalformedOutcome, false)
		})
	}
}

// TestBackendErrors proves what evaluate's error becomes: never a channel,
// bounded, with the original kept as the cause unless it would pass for a
// channel or a cancellation.
func TestBackendErrors(t *testing.T) {
	t.Run("plain error is untyped, retryable, cause kept", func(t *testing.T) {
		cause := errors.New("instance failed to start")
		_, err := evalWith(t, returning(spi.Outcome{}, cause), effect.Options{})
		assertUntyped(t, err, effect.ErrBackendFailed, true)
		if !errors.Is(err, cause) {
			t.Errorf("cause lost from %q", err)
		}
	})
	t.Run("error wins over an outcome returned with it", func(t *testing.T) {
		_, err := evalWith(t, returning(spi.OK([]byte("1")), errors.New("x")), effect.Options{})
		assertUntyped(t, err, effect.ErrBackendFailed, true)
	})
	t.Run("typed failure returned as an error is rewrapped untyped", func(t *testing.T) {
		typed := &spi.Failure{Channel: spi.ChannelLimitExceeded, Kind: spi.LimitCPU}
		_, err := evalWith(t, returning(spi.Outcome{}, typed), effect.Options{})
		assertUntyped(t, err, effect.ErrBackendFailed, false) // includes: errors.As finds no *spi.Failure
		if !strings.Contains(err.Error(), "limitExceeded") {
			t.Errorf("text of the typed failure lost: %q", err)
		}
	})
	t.Run("backend's own cancellation is not the caller's", func(t *testing.T) {
		_, err := evalWith(t, returning(spi.Outcome{}, context.Canceled), effect.Options{})
		assertUntyped(t, err, effect.ErrBackendFailed, true)
	})
	t.Run("5 MB error text is bounded, cause kept", func(t *testing.T) {
		cause := errors.New(strings.Repeat("\x00\xed\xa0\x80x", 1<<20))
		_, err := evalWith(t, returning(spi.Outcome{}, cause), effect.Options{})
		assertUntyped(t, err, effect.ErrBackendFailed, true)
		if !errors.Is(err, cause) {
			t.Error("cause lost")
		}
	})
	t.Run("panic is untyped and not retryable", func(t *testing.T) {
		b := &fakeBackend{eval: func(context.Context, spi.Request) (spi.Outcome, error) { panic("nil map write") }}
		_, err := evalWith(t, b, effect.Options{})
		assertUntyped(t, err, effect.ErrBackendPanicked, false)
		if !strings.Contains(err.Error(), "nil map write") {
			t.Errorf("panic value lost: %q", err)
		}
	})
}

// TestBoundedScriptError proves the effect bounds and scrubs threw's name and
// message whatever the backend did: a 5 MB message with lone surrogates and
// NUL arrives at 2048 units, storable.
func TestBoundedScriptError(t *testing.T) {
	lone := "\xed\xa0\x80" // WTF-8 for a lone U+D800, as an engine writes it
	message := strings.Repeat("a"+lone+"\x00😀", 5<<20/8)
	name := strings.Repeat("N\x00", 200)
	_, err := evalWith(t, returning(spi.Threw(&name, message), nil), effect.Options{})
	f := asFailure(t, err)
	assertStorable(t, f.Message, spi.MaxMessageUnits)
	assertStorable(t, *f.Name, spi.MaxNameUnits)
	assertStorable(t, err.Error(), spi.MaxMessageUnits)
	// 2048 units of "a\uFFFD\uFFFD😀" (5 units each): 409 whole groups and
	// "a\uFFFD\uFFFD", since the next pair would pass the bound.
	want := strings.Repeat("a\uFFFD\uFFFD😀", 409) + "a\uFFFD\uFFFD"
	if f.Message != want {
		t.Errorf("message is %q…, want %q…", truncate(f.Message), truncate(want))
	}
	if *f.Name != strings.Repeat("N\uFFFD", 64) {
		t.Errorf("name = %q", *f.Name)
	}
	j, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(j), `\u0000`) || strings.Contains(string(j), `\ud8`) {
		t.Errorf("JSON of the failure is not storable: %s", truncate(string(j)))
	}

	// The same bound applies to infrastructure text.
	_, err = evalWith(t, returning(spi.Infrastructure(message), nil), effect.Options{})
	assertUntyped(t, err, effect.ErrBackendFailed, true)
}

func TestFailureJSON(t *testing.T) {
	for _, tc := range []struct {
		f    spi.Failure
		want string
	}{
		{spi.Failure{Channel: spi.ChannelLimitExceeded, Kind: spi.LimitOutput}, `{"channel":"limitExceeded","kind":"output"}`},
		{spi.Failure{Channel: spi.ChannelScriptError, Message: "42"}, `{"channel":"scriptError","message":"42"}`},
		{spi.Failure{Channel: spi.ChannelScriptError, Name: ptr("E"), Message: "m"}, `{"channel":"scriptError","name":"E","message":"m"}`},
		{spi.Failure{Channel: spi.ChannelShapeMismatch, Expected: "sha256:a", Observed: "sha256:b"}, `{"channel":"shapeMismatch","expected":"sha256:a","observed":"sha256:b"}`},
		{spi.Failure{Channel: spi.ChannelScriptMissing, ScriptRef: testRef.String()}, `{"channel":"scriptMissing","scriptRef":"` + testRef.String() + `"}`},
		{spi.Failure{Channel: spi.ChannelInputTooLarge, LimitBytes: 10}, `{"channel":"inputTooLarge","limitBytes":10}`},
		{spi.Failure{Channel: spi.ChannelInputNotSerializable, Message: "m"}, `{"channel":"inputNotSerializable","message":"m"}`},
	} {
		j, err := json.Marshal(&tc.f)
		if err != nil || string(j) != tc.want {
			t.Errorf("got %s, %v; want %s", j, err, tc.want)
		}
	}
	if _, err := json.Marshal(&spi.Failure{Channel: "made-up"}); err == nil {
		t.Error("unknown channel marshalled")
	}
}

// TestOrderOfChecks proves the input is parsed, serialised and bounded before
// the script is fetched, and that nothing reaches the backend before that.
func TestOrderOfChecks(t *testing.T) {
	self := map[string]any{}
	self["self"] = self
	for _, tc := range []struct {
		name  string
		edit  func(*input)
		check func(t *testing.T, err error)
	}{
		{"zero wall clock", func(in *input) { in.Limits.WallClock = 0 }, invalidInput("limits.wallClock must be > 0")},
		{"negative memory", func(in *input) { in.Limits.MemoryBytes = -1 }, invalidInput("limits.memoryBytes must be > 0")},
		{"bad shape hash", func(in *input) { in.ExpectedOutputShapeHash = "sha256:XYZ" }, invalidInput("expectedOutputShapeHash")},
		{"every problem at once", func(in *input) { *in = input{ExpectedOutputShapeHash: "sha256:XYZ"} }, invalidInput("wallClock", "memoryBytes", "expectedOutputShapeHash")},
		{"NaN", func(in *input) { in.Input = math.NaN() }, notSerializable},
		{"infinity in a map", func(in *input) { in.Input = map[string]float64{"x": math.Inf(1)} }, notSerializable},
		{"channel", func(in *input) { in.Input = make(chan int) }, notSerializable},
		{"func", func(in *input) { in.Input = func() {} }, notSerializable},
		{"complex", func(in *input) { in.Input = 1 + 2i }, notSerializable},
		{"cycle", func(in *input) { in.Input = self }, notSerializable},
		{"raw text that is not JSON", func(in *input) { in.Input = json.RawMessage(`{"a":`) }, notSerializable},
		{"empty raw text", func(in *input) { in.Input = json.RawMessage{} }, notSerializable},
		{"raw text with duplicate keys", func(in *input) { in.Input = json.RawMessage(`{"a":1,"a":2}`) }, notSerializable},
		{"nested raw text with invalid UTF-8", func(in *input) {
			in.Input = map[string]any{"x": json.RawMessage("\"\xff\"")}
		}, notSerializable},
		{"too large", func(in *input) { in.Input = strings.Repeat("x", 100) }, func(t *testing.T, err error) {
			if f := asFailure(t, err); f.Channel != spi.ChannelInputTooLarge || f.LimitBytes != 64 {
				t.Errorf("got %+v", f)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := newReader(testScript)
			b := returning(spi.OK([]byte("1")), nil)
			e := mustNew(t, reader, b, effect.Options{MaxInputBytes: 64})
			in := validInput()
			tc.edit(&in)
			_, err := evaluate(context.Background(), e, in)
			tc.check(t, err)
			if reader.Calls() != 0 || b.evalCalls.Load() != 0 {
				t.Errorf("fetched %d times and called the backend %d times before refusing the input", reader.Calls(), b.evalCalls.Load())
			}
		})
	}
}

func invalidInput(mentions ...string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		assertUntyped(t, err, effect.ErrInvalidInput, false)
		for _, m := range mentions {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("error %q does not mention %q", err, m)
			}
		}
	}
}

func notSerializable(t *testing.T, err error) {
	t.Helper()
	f := asFailure(t, err)
	if f.Channel != spi.ChannelInputNotSerializable || f.Message == "" {
		t.Errorf("got %+v", f)
	}
	assertStorable(t, f.Message, spi.MaxMessageUnits)
}

// TestInputReachesBackend proves what the backend receives: verified source
// text, the input as JSON text (raw text passed through untouched, lone
// surrogate escapes included), and the limits.
func TestInputReachesBackend(t *testing.T) {
	for _, tc := range []struct {
		input any
		want  string
	}{
		{nil, "null"},
		{json.RawMessage(nil), "null"},
		{json.RawMessage(` {"s":"\ud800","n":9007199254740993} `), ` {"s":"\ud800","n":9007199254740993} `},
		{map[string]any{"html": "<&>", "n": 1}, `{"html":"<&>","n":1}`},
		{[]int{1, 2}, `[1,2]`},
		{strings.Repeat("x", 62), `"` + strings.Repeat("x", 62) + `"`}, // exactly the 64-byte bound
	} {
		b := returning(spi.OK([]byte("1")), nil)
		e := mustNew(t, newReader(testScript), b, effect.Options{MaxInputBytes: 64})
		in := validInput()
		in.Input = tc.input
		if _, err := evaluate(context.Background(), e, in); err != nil {
			t.Fatalf("%v: %v", tc.input, err)
		}
		req := b.requests[0]
		if req.InputJSON != tc.want || req.Script != testScript || req.Limits != in.Limits {
			t.Errorf("backend got %+v; want input %s", req, tc.want)
		}
	}
}

func TestScriptMissing(t *testing.T) {
	b := returning(spi.OK([]byte("1")), nil)
	e := mustNew(t, newReader(), b, effect.Options{})
	_, err := evaluate(context.Background(), e, validInput())
	f := asFailure(t, err)
	if f.Channel != spi.ChannelScriptMissing || f.ScriptRef != testRef.String() {
		t.Errorf("got %+v", f)
	}
	if b.evalCalls.Load() != 0 {
		t.Error("backend called for a missing script")
	}
}

// TestScriptIntegrity proves bytes that do not hash to the reference fail
// untyped and never reach the backend, whether the reader noticed or not.
func TestScriptIntegrity(t *testing.T) {
	for name, get := range map[string]func(context.Context, contentref.Ref) ([]byte, error){
		"tampered bytes": func(context.Context, contentref.Ref) ([]byte, error) { return []byte(testScript + ";evil()"), nil },
		"store reports it": func(context.Context, contentref.Ref) ([]byte, error) {
			return nil, contentref.ErrIntegrity
		},
	} {
		t.Run(name, func(t *testing.T) {
			reader := newReader()
			reader.get = get
			b := returning(spi.OK([]byte("1")), nil)
			e := mustNew(t, reader, b, effect.Options{})
			_, err := evaluate(context.Background(), e, validInput())
			assertUntyped(t, err, contentref.ErrIntegrity, false)
			if !errors.Is(err, effect.ErrScriptFetch) || b.evalCalls.Load() != 0 {
				t.Errorf("err %v, backend calls %d", err, b.evalCalls.Load())
			}
		})
	}
}

func TestScriptStoreFailures(t *testing.T) {
	for _, tc := range []struct {
		err       error
		retryable bool
	}{
		{contentref.ErrUnavailable, true},
		{context.DeadlineExceeded, true}, // the store's own deadline, not the caller's
		{contentref.ErrPermission, false},
		{contentref.ErrTooLarge, false},
	} {
		reader := newReader()
		reader.get = func(context.Context, contentref.Ref) ([]byte, error) { return nil, tc.err }
		e := mustNew(t, reader, returning(spi.OK([]byte("1")), nil), effect.Options{})
		_, err := evaluate(context.Background(), e, validInput())
		assertUntyped(t, err, effect.ErrScriptFetch, tc.retryable)
	}
}

// TestOutputBound proves canonical JSON text over MaxOutputBytes is
// limitExceeded{output}, and that whitespace the backend added does not
// count.
func TestOutputBound(t *testing.T) {
	for _, tc := range []struct {
		value string
		over  bool
	}{
		{`[1,2,3,4,5]`, false},              // 11 bytes: at the bound
		{`[ 1, 2, 3, 4, 5 ]`, false},        // canonical text is 11 bytes
		{`[1,2,3,4,56]`, true},              // 12 bytes
		{`["\u0041\u0042\u0043AB"]`, false}, // escapes decode to 9 bytes
		{`[1e5,1]`, false},                  // 100000 is longer than 1e5 but within
		{`[1e9,1e9]`, true},                 // canonical 1000000000 is what counts
	} {
		out, err := evalWith(t, returning(spi.OK([]byte(tc.value)), nil), effect.Options{MaxOutputBytes: 11})
		if tc.over {
			if f := asFailure(t, err); f.Channel != spi.ChannelLimitExceeded || f.Kind != spi.LimitOutput {
				t.Errorf("%s: got %+v", tc.value, f)
			}
		} else if err != nil {
			t.Errorf("%s: %v (out %s)", tc.value, err, out)
		}
	}
}

func TestShapeCheck(t *testing.T) {
	value := `{"items":[{"id":1,"tags":["a"]},{"id":2,"tags":[]}],"total":2,"next":null}`
	const want = "sha256:4d71a86f82e68a50d1bf0112c4db8cd72484a7595ce7df8c54ea39f65564b4ec"
	run := func(expected string) (string, error) {
		e := mustNew(t, newReader(testScript), returning(spi.OK([]byte(value)), nil), effect.Options{})
		in := validInput()
		in.ExpectedOutputShapeHash = expected
		out, err := evaluate(context.Background(), e, in)
		return string(out), err
	}
	if out, err := run(want); err != nil || out != value {
		t.Errorf("matching shape: %s, %v", out, err)
	}
	other := "sha256:60c16c8f12cea8d002ab014292d7676112a471b84c356b7c3b499283282130b4"
	_, err := run(other)
	if f := asFailure(t, err); f.Channel != spi.ChannelShapeMismatch || f.Expected != other || f.Observed != want {
		t.Errorf("got %+v", f)
	}
}

// TestOutputBoundBeforeShape proves the output is bounded before its shape is
// checked (docs/spi.md, "The effect", steps 7 and 8).
func TestOutputBoundBeforeShape(t *testing.T) {
	e := mustNew(t, newReader(testScript), returning(spi.OK([]byte(`[1,2,3]`)), nil), effect.Options{MaxOutputBytes: 3})
	in := validInput()
	in.ExpectedOutputShapeHash = "sha256:" + strings.Repeat("0", 64)
	_, err := evaluate(context.Background(), e, in)
	if f := asFailure(t, err); f.Channel != spi.ChannelLimitExceeded || f.Kind != spi.LimitOutput {
		t.Errorf("got %+v", f)
	}
}

// TestSaturatingDeadline proves a huge wall clock does not overflow the
// deadline arithmetic into the past.
func TestSaturatingDeadline(t *testing.T) {
	e := mustNew(t, newReader(testScript), returning(spi.OK([]byte("1")), nil), effect.Options{})
	in := validInput()
	in.Limits.WallClock = math.MaxInt64
	if out, err := evaluate(context.Background(), e, in); err != nil || string(out) != "1" {
		t.Errorf("%s, %v", out, err)
	}
}

type warmCloser struct {
	fakeBackend
	warmed, closed bool
}

func (w *warmCloser) Warm(context.Context) error  { w.warmed = true; return nil }
func (w *warmCloser) Close(context.Context) error { w.closed = true; return nil }

func TestWarmAndClosePassThrough(t *testing.T) {
	b := &warmCloser{}
	e := mustNew(t, newReader(), b, effect.Options{})
	if e.Warm(context.Background()) != nil || e.Close(context.Background()) != nil || !b.warmed || !b.closed {
		t.Errorf("warmed %v closed %v", b.warmed, b.closed)
	}
	plain := mustNew(t, newReader(), &fakeBackend{}, effect.Options{})
	if plain.Warm(context.Background()) != nil || plain.Close(context.Background()) != nil {
		t.Error("a backend without Warm or Close failed them")
	}
}

func TestRetryableOnOtherErrors(t *testing.T) {
	for _, err := range []error{nil, errors.New("x"), context.Canceled, &spi.Failure{Channel: spi.ChannelScriptError, Message: "m"}} {
		if effect.Retryable(err) {
			t.Errorf("Retryable(%v) = true", err)
		}
	}
}
