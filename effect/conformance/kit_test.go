package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// There is no JavaScript engine in this package, so these tests stand in
// fakes that recognise each fixture script and act it out. A well-behaved fake
// must pass the whole kit; each badly-behaved one must fail the case written
// to catch it.

// behaviour is how a fake acts out one fixture.
type behaviour func(ctx context.Context, req spi.Request) (spi.Outcome, error)

type fake struct {
	caps spi.Capabilities
	acts map[string]behaviour
	// answersCancelled: a call whose context is already cancelled is acted
	// out anyway, instead of returning the cancellation at once
	answersCancelled bool
}

func (f *fake) Capabilities() spi.Capabilities { return f.caps }

func (f *fake) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if err := ctx.Err(); err != nil && !f.answersCancelled {
		return spi.Outcome{}, err
	}
	if act, ok := f.acts[req.Script]; ok {
		return act(ctx, req)
	}
	return spi.Infrastructure("fake: unknown script"), nil
}

var bestCaps = spi.Capabilities{
	Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard,
	Memory: true, CPU: true, FreshPerRun: true,
}

// worstCaps is the most conservative declaration a backend can honestly make
// (docs/spi.md, "Capabilities"): it claims to enforce nothing.
var worstCaps = spi.Capabilities{
	Language: "javascript", Network: spi.NetworkOpen, WallClock: spi.WallClockSoft,
}

func value(v string) behaviour {
	return func(context.Context, spi.Request) (spi.Outcome, error) { return spi.OK([]byte(v)), nil }
}

func threw(name *string, message string) behaviour {
	return func(context.Context, spi.Request) (spi.Outcome, error) { return spi.Threw(name, message), nil }
}

// runaway stands in for an engine with a hard wall clock and a CPU budget of
// a tenth of it: it stops when its context ends.
func runaway(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	timer := time.NewTimer(req.Limits.WallClock / 10)
	defer timer.Stop()
	select {
	case <-timer.C:
		return spi.LimitHit(spi.LimitCPU), nil
	case <-ctx.Done():
		return spi.Outcome{}, ctx.Err()
	}
}

// goodFake acts out every fixture as a conforming JavaScript engine would.
func goodFake(caps spi.Capabilities) *fake {
	fx := JavaScriptFixtures()
	richOut := new(bytes.Buffer)
	_ = json.Indent(richOut, fx.RichExpected, "", "  ") // same value, other text
	oversized := strings.Repeat("a\xed\xa0\x80b\x00c\xed\xb0\x80d😀", 5<<20/9+1)
	return &fake{caps: caps, acts: map[string]behaviour{
		fx.Echo: func(_ context.Context, req spi.Request) (spi.Outcome, error) {
			return spi.OK([]byte(req.InputJSON)), nil
		},
		fx.Throw:       threw(ptr("Error"), ThrowMessage),
		fx.SyntaxError: threw(ptr("SyntaxError"), "unexpected token: '}'"),
		fx.RunawayLoop: runaway,
		fx.NativeOverrun: func(context.Context, spi.Request) (spi.Outcome, error) {
			return spi.LimitHit(spi.LimitWallClock), nil
		},
		fx.AllocationBomb: func(context.Context, spi.Request) (spi.Outcome, error) {
			return spi.LimitHit(spi.LimitMemory), nil
		},
		fx.RichValue:    value(richOut.String()),
		fx.NetworkProbe: value(`{"reachable":[]}`),
		fx.EscapeProbe:  value(`{"reachable":[]}`),
		fx.ImportProbe:  value(`{}`),
		fx.StatefulProbe: func(_ context.Context, req spi.Request) (spi.Outcome, error) {
			var in struct{ Run int }
			_ = json.Unmarshal([]byte(req.InputJSON), &in)
			return spi.OK(fmt.Appendf(nil, `{"run":%d,"sawEarlierState":false,"seen":[]}`, in.Run)), nil
		},
		fx.OversizedThrow: threw(ptr("Name\x00\xed\xa0\x80"+strings.Repeat("n", 300)), oversized),
	}}
}

func fastOptions() Options {
	return Options{BackendGrace: 300 * time.Millisecond, Timeout: 10 * time.Second, StopWithin: time.Second}
}

// record runs one case as Check does, on a goroutine of its own, so that the
// kit's tests see a case fail through the same reporter as the binary.
func record(t *testing.T, name string, backend spi.Backend, opts Options) Result {
	t.Helper()
	for _, c := range cases {
		if c.name == name {
			return checkCase(t.Context(), c, func(T) spi.Backend { return backend }, opts)
		}
	}
	t.Fatalf("no case %q", name)
	return Result{}
}

// text is everything a result says.
func text(r Result) string {
	return strings.Join(append([]string{r.Reason}, r.Logs...), "\n")
}

// TestKitPassesAWellBehavedBackend runs Check over a fake that keeps every
// contract; every case must pass, none may be skipped.
func TestKitPassesAWellBehavedBackend(t *testing.T) {
	results := Check(t.Context(), func(T) spi.Backend { return goodFake(bestCaps) }, fastOptions(), nil)
	if len(results) != len(cases) {
		t.Fatalf("%d results for %d cases", len(results), len(cases))
	}
	for i, r := range results {
		if r.Case != cases[i].name || r.Status != Pass {
			t.Errorf("%s: %s: %s", r.Case, r.Status, text(r))
		}
	}
	if s := Summarize(results); !s.OK() || s.Passed != len(cases) {
		t.Errorf("summary %+v", s)
	}
}

// TestKitSkipsVisiblyWhatIsNotClaimed: with the worst-case declaration the
// gated cases are skipped, saying why, and the others still pass — which also
// shows the kit passed AllowNetwork and AllowReusedEnvironment to the effect.
func TestKitSkipsVisiblyWhatIsNotClaimed(t *testing.T) {
	gated := map[string]string{
		"allocation_bomb":      "memory: false",
		"no_network_no_escape": `network: "open"`,
		"fresh_per_run":        "freshPerRun: false",
		"abort_mid_run":        `wallClock: "soft"`,
	}
	for _, c := range cases {
		r := record(t, c.name, goodFake(worstCaps), fastOptions())
		if r.Status == Fail {
			t.Errorf("%s failed:\n%s", c.name, text(r))
		}
		if why, ok := gated[c.name]; ok != (r.Status == Skip) || (ok && !strings.Contains(r.Reason, why)) {
			t.Errorf("%s: %s (%q), want skipped %v with %q", c.name, r.Status, text(r), ok, why)
		}
	}
}

func TestEffectOptionsFollowTheDeclaration(t *testing.T) {
	if o := effectOptions(bestCaps, Options{}); o.AllowNetwork || o.AllowReusedEnvironment {
		t.Errorf("best declaration got opt-ins: %+v", o)
	}
	if o := effectOptions(worstCaps, Options{}); !o.AllowNetwork || !o.AllowReusedEnvironment {
		t.Errorf("worst declaration lacks opt-ins: %+v", o)
	}
	allowlist := bestCaps
	allowlist.Network = spi.NetworkAllowlist
	if o := effectOptions(allowlist, Options{}); !o.AllowNetwork || o.AllowReusedEnvironment {
		t.Errorf("allowlist: %+v", o)
	}
}

// TestKitFailsBadBackends: each fake breaks one promise, and the case written
// for that promise must fail, saying so.
func TestKitFailsBadBackends(t *testing.T) {
	fx := JavaScriptFixtures()
	for _, tc := range []struct {
		name     string
		caseName string
		breakIt  func(f *fake)
		mentions string
	}{
		{"reuses state between runs", "fresh_per_run", func(f *fake) {
			var runs atomic.Int32
			f.acts[fx.StatefulProbe] = func(_ context.Context, req spi.Request) (spi.Outcome, error) {
				var in struct{ Run int }
				_ = json.Unmarshal([]byte(req.InputJSON), &in)
				saw := runs.Add(1) > 2 // a pool of two contexts, reused from the third run
				return spi.OK(fmt.Appendf(nil, `{"run":%d,"sawEarlierState":%v,"seen":["globalThis"]}`, in.Run, saw)), nil
			}
		}, "saw state left by an earlier run"},
		{"reuses state only under concurrency", "fresh_per_run", func(f *fake) {
			f.acts[fx.StatefulProbe] = func(_ context.Context, req spi.Request) (spi.Outcome, error) {
				var in struct{ Run int }
				_ = json.Unmarshal([]byte(req.InputJSON), &in)
				if in.Run >= 100 {
					in.Run = 100 // answers cross-wired between concurrent runs
				}
				return spi.OK(fmt.Appendf(nil, `{"run":%d,"sawEarlierState":false}`, in.Run)), nil
			}
		}, "got the result of run"},
		{"ignores cancellation", "abort_mid_run", func(f *fake) {
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			f.acts[fx.RunawayLoop] = func(_ context.Context, req spi.Request) (spi.Outcome, error) {
				select {
				case <-time.After(req.Limits.WallClock):
					return spi.LimitHit(spi.LimitWallClock), nil
				case <-release: // only so that the test leaves nothing behind
					return spi.Outcome{}, context.Canceled
				}
			}
		}, "backend's own call did not return"},
		{"answers the runaway at once with infrastructure", "abort_mid_run", func(f *fake) {
			f.acts[fx.RunawayLoop] = func(context.Context, spi.Request) (spi.Outcome, error) {
				return spi.Infrastructure("HTTP 500: the service failed"), nil
			}
		}, `before it could be aborted: the backend failed: it reported infrastructure, message "HTTP 500: the service failed"`},
		{"fails the runaway at once with an error", "abort_mid_run", func(f *fake) {
			f.acts[fx.RunawayLoop] = func(context.Context, spi.Request) (spi.Outcome, error) {
				return spi.Outcome{}, errors.New("connection refused")
			}
		}, "the backend failed: it returned the error connection refused"},
		{"stops the runaway on its own at once", "abort_mid_run", func(f *fake) {
			f.acts[fx.RunawayLoop] = func(context.Context, spi.Request) (spi.Outcome, error) {
				return spi.LimitHit(spi.LimitCPU), nil
			}
		}, `the runaway ended on its own: the backend reported limit "cpu"`},
		{"answers a call whose context is already cancelled", "abort_before_call", func(f *fake) {
			f.answersCancelled = true
		}, `called with a context already cancelled, answered an outcome (ok, value "x")`},
		{"ignores a context that is already cancelled", "abort_before_call", func(f *fake) {
			f.answersCancelled = true
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			f.acts[fx.Echo] = func(_ context.Context, req spi.Request) (spi.Outcome, error) {
				select {
				case <-time.After(req.Limits.WallClock):
				case <-release: // only so that the test leaves nothing behind
				}
				return spi.OK([]byte(req.InputJSON)), nil
			}
		}, "did not return within 1s: it ignores its context"},
		{"returns another error for a context already cancelled", "abort_before_call", func(f *fake) {
			f.answersCancelled = true
			f.acts[fx.Echo] = func(context.Context, spi.Request) (spi.Outcome, error) {
				return spi.Outcome{}, errors.New("no connection")
			}
		}, "returned no connection, want the cancellation"},
		{"panics on a context already cancelled", "abort_before_call", func(f *fake) {
			f.answersCancelled = true
			f.acts[fx.Echo] = func(ctx context.Context, req spi.Request) (spi.Outcome, error) {
				if ctx.Err() != nil {
					panic("cancelled?")
				}
				return spi.OK([]byte(req.InputJSON)), nil
			}
		}, "panicked: cancelled?"},
		{"claims memory but lets the bomb run", "allocation_bomb", func(f *fake) {
			f.acts[fx.AllocationBomb] = value("null")
		}, "want a limitExceeded failure"},
		{"reports the bomb as a wall-clock kill", "allocation_bomb", func(f *fake) {
			f.acts[fx.AllocationBomb] = func(context.Context, spi.Request) (spi.Outcome, error) {
				return spi.LimitHit(spi.LimitWallClock), nil
			}
		}, "want memory"},
		{"never stops a runaway", "runaway_loop", func(f *fake) {
			f.acts[fx.RunawayLoop] = func(ctx context.Context, _ spi.Request) (spi.Outcome, error) {
				<-ctx.Done()
				return spi.Outcome{}, ctx.Err()
			}
		}, "did not settle"},
		{"answers a value after the deadline", "no_value_after_deadline", func(f *fake) {
			f.acts[fx.NativeOverrun] = func(_ context.Context, req spi.Request) (spi.Outcome, error) {
				time.Sleep(10 * req.Limits.WallClock) // one builtin, past the deadline, within the grace
				return spi.OK([]byte("-1")), nil
			}
		}, "answered its value -1"},
		{"reports the overrun as the cpu limit", "no_value_after_deadline", func(f *fake) {
			f.acts[fx.NativeOverrun] = func(context.Context, spi.Request) (spi.Outcome, error) {
				return spi.LimitHit(spi.LimitCPU), nil
			}
		}, "want wallClock"},
		{"echo changes the input", "echo", func(f *fake) { f.acts[fx.Echo] = value(`{"greeting":"hello"}`) }, "echo result differs"},
		{"throw reports another message", "throw", func(f *fake) { f.acts[fx.Throw] = threw(ptr("Error"), "something else") }, "want \"conformance: thrown on purpose\""},
		{"throw loses the name", "throw", func(f *fake) { f.acts[fx.Throw] = threw(nil, ThrowMessage) }, "name absent"},
		{"throw becomes infrastructure", "throw", func(f *fake) {
			f.acts[fx.Throw] = func(context.Context, spi.Request) (spi.Outcome, error) {
				return spi.Infrastructure("Error: " + ThrowMessage), nil
			}
		}, "want a scriptError failure"},
		{"syntax error runs anyway", "syntax_error", func(f *fake) { f.acts[fx.SyntaxError] = value("null") }, "want a scriptError"},
		{"lossy bridge: lone surrogates become U+FFFD", "rich_value", func(f *fake) {
			lossy := strings.NewReplacer(`\ud800`, `\ufffd`, `\udfff`, `\ufffd`, `\udc00`, `\ufffd`).Replace(string(fx.RichExpected))
			f.acts[fx.RichValue] = value(lossy)
		}, "rich value from the backend differs"},
		{"lossy bridge: integers past 2^53 rounded", "rich_value", func(f *fake) {
			f.acts[fx.RichValue] = value(strings.ReplaceAll(string(fx.RichExpected), "9007199254740994", "9007199254740996"))
		}, "differs"},
		{"process is reachable", "no_network_no_escape", func(f *fake) {
			f.acts[fx.EscapeProbe] = value(`{"reachable":["Function: process"]}`)
		}, "reached Function: process"},
		{"fetch is reachable", "no_network_no_escape", func(f *fake) {
			f.acts[fx.NetworkProbe] = value(`{"reachable":["fetch"]}`)
		}, "reached fetch"},
		{"import() loads host modules", "no_network_no_escape", func(f *fake) { f.acts[fx.ImportProbe] = value(`"escaped"`) }, "import probe"},
		{"probe answers nothing useful", "no_network_no_escape", func(f *fake) { f.acts[fx.EscapeProbe] = value(`{}`) }, "does not carry a reachable list"},
		{"oversized throw becomes infrastructure", "composition", func(f *fake) {
			f.acts[fx.OversizedThrow] = func(context.Context, spi.Request) (spi.Outcome, error) {
				return spi.Infrastructure("message too large"), nil
			}
		}, "want a scriptError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := goodFake(bestCaps)
			tc.breakIt(f)
			r := record(t, tc.caseName, f, fastOptions())
			if r.Status != Fail {
				t.Fatalf("case %s did not fail (%s) a backend that %s:\n%s", tc.caseName, r.Status, tc.name, text(r))
			}
			if !strings.Contains(r.Reason, tc.mentions) {
				t.Errorf("case %s failed without saying %q:\n%s", tc.caseName, tc.mentions, text(r))
			}
		})
	}
}

// TestKitRefusesToPassVacuously: a backend of another language without its
// own fixtures, or with fixtures of the wrong language or incomplete ones,
// fails every case, gated ones included.
func TestKitRefusesToPassVacuously(t *testing.T) {
	python := goodFake(bestCaps)
	python.caps.Language = "python"
	incomplete := JavaScriptFixtures()
	incomplete.StatefulProbe = ""
	for _, tc := range []struct {
		name     string
		backend  spi.Backend
		opts     Options
		mentions string
	}{
		{"other language, no fixtures", python, Options{}, `no fixtures for language "python"`},
		{"fixtures of another language", python, Options{Fixtures: JavaScriptFixtures()}, `fixtures are for language "javascript"`},
		{"incomplete fixtures", goodFake(bestCaps), Options{Fixtures: incomplete}, "fixtures lack StatefulProbe"},
		{"nil backend", nil, Options{}, "nil backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range cases {
				r := record(t, c.name, tc.backend, tc.opts)
				if r.Status != Fail || !strings.Contains(r.Reason, tc.mentions) {
					t.Errorf("%s: %s: %s", c.name, r.Status, text(r))
				}
			}
		})
	}
}

// TestKitFailsWhenTheEffectRefusesTheBackend: a declaration the effect
// cannot accept is a failure, not a skip.
func TestKitFailsWhenTheEffectRefusesTheBackend(t *testing.T) {
	bad := goodFake(bestCaps)
	bad.caps.WallClock = "firm"
	if r := record(t, "echo", bad, fastOptions()); r.Status != Fail || !strings.Contains(r.Reason, "the effect refused the backend") {
		t.Errorf("%s: %s", r.Status, text(r))
	}
}

// TestJavaScriptFixturesAreConsistent checks the expected rich value against
// its input, so that a typo in one cannot make the case unpassable, and that
// the oversized throw is what the composition case needs.
func TestJavaScriptFixturesAreConsistent(t *testing.T) {
	fx := JavaScriptFixtures()
	if m := fx.missing(); len(m) > 0 {
		t.Fatalf("missing %v", m)
	}
	var in struct{ Unicode, Escapes string }
	if err := json.Unmarshal(fx.RichInput, &in); err != nil {
		t.Fatal(err)
	}
	var want struct {
		Echo  json.RawMessage
		Probe struct{ UnicodeUnits, EscapesUnits, Depth int }
	}
	if err := json.Unmarshal(fx.RichExpected, &want); err != nil {
		t.Fatal(err)
	}
	if n := len(utf16.Encode([]rune(in.Unicode))); n != want.Probe.UnicodeUnits {
		t.Errorf("unicode is %d units, expected says %d", n, want.Probe.UnicodeUnits)
	}
	if n := len(utf16.Encode([]rune(in.Escapes))); n != want.Probe.EscapesUnits {
		t.Errorf("escapes is %d units, expected says %d", n, want.Probe.EscapesUnits)
	}
	if want.Probe.Depth != 24 || !strings.Contains(string(fx.RichInput), strings.Repeat("[", 24)+"1"+strings.Repeat("]", 24)) {
		t.Error("deep nesting and its expected depth disagree")
	}
	a, _ := jsontext.JCS(want.Echo)
	b, _ := jsontext.JCS(fx.RichInput)
	if !bytes.Equal(a, b) {
		t.Error("expected echo is not the input")
	}
	for _, s := range []string{`\ud800`, `\udfff`, `\udc00`, `-0`, `9007199254740994`, `2147483648`} {
		if !strings.Contains(string(fx.RichInput), s) {
			t.Errorf("rich input lacks %s", s)
		}
	}
	// Every script is distinct, or the reader would serve one for another.
	seen := map[string]bool{}
	for _, s := range fx.scripts() {
		if seen[s] {
			t.Errorf("two fixtures share the script %q", s)
		}
		seen[s] = true
	}
	if JavaScriptFixtures() == fx {
		t.Error("JavaScriptFixtures returns shared state")
	}
}
