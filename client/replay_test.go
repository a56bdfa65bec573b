package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// A replayable run is sent as the encoders write it: the bodies are
// api/testdata's golden requests, which the service's decoders and the
// TypeScript client's tests read too.
func TestReplayIsSentAsTheGoldenRequests(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/evaluations" {
			writeJSON(w, 200, `{"ok":true,"value":1}`)
			return
		}
		writeJSON(w, 200, `{"ok":true,"value":[0.5,1796195777500]}`)
	})
	c := dial(t, f.URL)
	if !c.Replayable() {
		t.Fatal("the golden capabilities document says determinism: true")
	}
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 8, 16, 17, 5e8, time.FixedZone("", 3600))
	rep, err := c.Run(ctx, spi.RunRequest{Request: spi.Request{Script: "[Math.random(), Date.now()]", InputJSON: "null",
		Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 16 << 20}}, Replay: &spi.Replay{Seed: "flow-42/step-3", Now: now}})
	if err != nil || !rep.Outcome.OK {
		t.Fatalf("Run = %+v, %v", rep, err)
	}
	const ref = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
	if _, err := c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: ref, Input: json.RawMessage(`{ "a": 1 }`), Replay: &spi.Replay{}}); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, golden := range []string{"sandbox/determinism.json", "evaluation/determinism.json"} {
		want, err := os.ReadFile("../api/testdata/request/" + golden)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(reqs[i].Body) + "\n"; got != string(want) {
			t.Errorf("%s %s: sent %s, want %s", reqs[i].Method, reqs[i].Path, got, want)
		}
	}
}

// A replay that no service takes is the caller's error, returned before
// anything is sent, on every call that takes one; the error says which
// member and why (a *spi.ReplayError).
func TestReplayIsCheckedBeforeSending(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
	c := dial(t, f.URL)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		replay spi.Replay
		field  string
		says   string
	}{
		{"seed too long", spi.Replay{Seed: strings.Repeat("s", spi.MaxReplaySeedBytes+1)}, "seed", "129 bytes"},
		{"seed too long in bytes", spi.Replay{Seed: strings.Repeat("é", 65)}, "seed", "130 bytes"},
		{"seed with a control character", spi.Replay{Seed: "step\n3"}, "seed", "control character U+000A"},
		{"seed not UTF-8", spi.Replay{Seed: "\xff"}, "seed", "not valid UTF-8"},
		{"now before 1970", spi.Replay{Now: time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC)}, "now", "outside 1970-01-01T00:00:00Z"},
		{"now after 2262", spi.Replay{Now: time.Date(2262, 4, 11, 23, 47, 17, 0, time.UTC)}, "now", "to 2262-04-11T23:47:16Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(call string, err error) {
				t.Helper()
				var re *spi.ReplayError
				if !errors.As(err, &re) || re.Field != tc.field || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("%s: error %v, want a ReplayError of %s saying %q", call, err, tc.field, tc.says)
				}
			}
			r := tc.replay
			rep, err := c.Run(ctx, spi.RunRequest{Request: spi.Request{Script: "1", InputJSON: "null"}, Replay: &r})
			check("Run", err)
			if !reflect.DeepEqual(rep, spi.Report{}) {
				t.Errorf("Run reported %+v beside its error", rep)
			}
			_, err = c.RunRef(ctx, client.RefRequest{ScriptRef: "sha256:" + strings.Repeat("0", 64), InputJSON: "null", Replay: &r})
			check("RunRef", err)
			_, err = c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: "sha256:" + strings.Repeat("0", 64), Replay: &r})
			check("Evaluations", err)
		})
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

// A service whose capabilities say determinism false (or say nothing, as
// one from before the member) is never asked for a replayable run: the
// caller gets ErrNotReplayable and nothing is sent, since a run meant to be
// replayed must not run otherwise. A run without Replay goes as before.
func TestReplayOfAServiceThatCannot(t *testing.T) {
	for name, caps := range map[string]string{
		"determinism false": strings.Replace(capsDoc, `"determinism":true`, `"determinism":false`, 1),
		"no determinism":    strings.Replace(capsDoc, `"determinism":true,`, "", 1),
	} {
		t.Run(name, func(t *testing.T) {
			if caps == capsDoc {
				t.Fatal("the golden capabilities document has no determinism member to change")
			}
			f := newFakeWithCaps(t, caps, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
			c := dial(t, f.URL)
			if c.Replayable() {
				t.Fatal("Replayable() is true")
			}
			ctx := context.Background()
			_, err := c.Run(ctx, spi.RunRequest{Request: spi.Request{Script: "Math.random()", InputJSON: "null"}, Replay: &spi.Replay{Seed: "s"}})
			if !errors.Is(err, client.ErrNotReplayable) {
				t.Errorf("Run: %v, want ErrNotReplayable", err)
			}
			_, err = c.RunRef(ctx, client.RefRequest{ScriptRef: "sha256:" + strings.Repeat("0", 64), InputJSON: "null", Replay: &spi.Replay{}})
			if !errors.Is(err, client.ErrNotReplayable) {
				t.Errorf("RunRef: %v, want ErrNotReplayable", err)
			}
			_, err = c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: "sha256:" + strings.Repeat("0", 64), Replay: &spi.Replay{}})
			if !errors.Is(err, client.ErrNotReplayable) {
				t.Errorf("Evaluations: %v, want ErrNotReplayable", err)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
			if o := evalT(t, c); !o.OK {
				t.Errorf("a run without Replay: %+v", o)
			}
		})
	}
}

// Against the real service: a replayable run answers the same value every
// time, on both routes (the seed derived from the same script and input is
// the same seed, however the input is spelt), its clocks read the instant asked for, and a seed of its
// own draws other numbers; without Replay, two runs differ.
func TestReplayOnTheService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the service")
	}
	const script = "[Math.random(), Math.random(), Date.now(), new Date().toISOString()]"
	store := t.TempDir()
	ref := putScript(t, store, script)
	s := servicetest.Start(t, servicetest.Options{Env: []string{"STORE_URL=" + store}})
	c := dial(t, s.URL)
	if !c.Replayable() {
		t.Fatal("the service does not say determinism: true")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(r *spi.Replay) string {
		t.Helper()
		rep, err := c.Run(ctx, spi.RunRequest{Request: spi.Request{Script: script, InputJSON: `{"a":1}`}, Replay: r})
		if err != nil || !rep.Outcome.OK {
			t.Fatalf("Run = %+v, %v", rep, err)
		}
		return string(rep.Outcome.Value)
	}

	defaults := run(&spi.Replay{})
	for i := range 3 {
		if again := run(&spi.Replay{}); again != defaults {
			t.Fatalf("run %d of the same replayable run answered %s, the first %s", i+2, again, defaults)
		}
	}
	if !strings.HasSuffix(defaults, `,946684800000,"2000-01-01T00:00:00.000Z"]`) {
		t.Errorf("the clocks of a replayable run do not read %s: %s", spi.DefaultReplayNow, defaults)
	}
	// the default seed is the input's value: each spelling of {"a":1} draws
	// what it drew, through the client's every call, and another value not
	for in, same := range map[string]bool{`{"a":1}`: true, `{ "a": 1 }`: true, `{"a":1.0}`: true, `{"a":10e-1}`: true, `{"a":2}`: false} {
		r, err := c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: ref, Input: json.RawMessage(in), Replay: &spi.Replay{}})
		if err != nil || !r.OK || (string(r.Value) == defaults) != same {
			t.Errorf("input %s through the effect: %+v, %v; {\"a\":1} on the SPI route drew %s (the same: want %v)", in, r, err, defaults, same)
		}
		rep, err := c.Run(ctx, spi.RunRequest{Request: spi.Request{Script: script, InputJSON: in}, Replay: &spi.Replay{}})
		if err != nil || !rep.Outcome.OK || (string(rep.Outcome.Value) == defaults) != same {
			t.Errorf("input %s on the SPI route: %+v, %v; {\"a\":1} drew %s (the same: want %v)", in, rep, err, defaults, same)
		}
		rep, err = c.RunRef(ctx, client.RefRequest{ScriptRef: ref, InputJSON: in, Replay: &spi.Replay{}})
		if err != nil || !rep.Outcome.OK || (string(rep.Outcome.Value) == defaults) != same {
			t.Errorf("input %s by reference on the SPI route: %+v, %v; {\"a\":1} drew %s (the same: want %v)", in, rep, err, defaults, same)
		}
	}

	now := time.Date(2026, 12, 2, 7, 16, 17, 5e8, time.UTC)
	seeded := &spi.Replay{Seed: "flow-42/step-3", Now: now}
	first := run(seeded)
	if again := run(seeded); again != first {
		t.Errorf("a seeded run answered %s, then %s", first, again)
	}
	clocks := fmt.Sprintf(`,%d,"2026-12-02T07:16:17.500Z"]`, now.UnixMilli())
	if !strings.HasSuffix(first, clocks) {
		t.Errorf("the clocks do not read %s: %s", now.Format(time.RFC3339Nano), first)
	}
	other := run(&spi.Replay{Seed: "flow-42/step-4", Now: now})
	if !strings.HasSuffix(other, clocks) || strings.TrimSuffix(other, clocks) == strings.TrimSuffix(first, clocks) {
		t.Errorf("two seeds drew the same numbers: %s and %s", first, other)
	}

	if a, b := run(nil), run(nil); a == b {
		t.Errorf("without Replay two runs answered the same %s", a)
	}
}
