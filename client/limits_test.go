package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// A zero member of the limits is left out of the request, which is how the
// wire asks for the service's default; the other member is sent as given.
func TestZeroLimitsAreLeftToTheService(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits spi.Limits
		want   any // the request's "limits" member; nil: absent
	}{
		{"zero", spi.Limits{}, nil},
		{"zero wall clock", spi.Limits{MemoryBytes: 1 << 20}, map[string]any{"memoryBytes": float64(1 << 20)}},
		{"zero memory", spi.Limits{WallClock: 250 * time.Millisecond}, map[string]any{"wallClockMs": 250.0}},
		{"a nanosecond of wall clock is a millisecond", spi.Limits{WallClock: 1}, map[string]any{"wallClockMs": 1.0}},
		{"both", spi.Limits{WallClock: time.Second, MemoryBytes: 2 << 20}, map[string]any{"wallClockMs": 1000.0, "memoryBytes": float64(2 << 20)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
			c := dial(t, f.URL)
			ctx := context.Background()
			o, err := c.Evaluate(ctx, spi.Request{Script: "1", InputJSON: "null", Limits: tc.limits})
			if err != nil || !o.OK {
				t.Fatalf("Evaluate = %+v, %v", o, err)
			}
			o, err = c.EvaluateRef(ctx, "sha256:"+strings.Repeat("0", 64), "null", tc.limits)
			if err != nil || !o.OK {
				t.Fatalf("EvaluateRef = %+v, %v", o, err)
			}
			reqs := f.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			for _, r := range reqs {
				var body map[string]any
				if err := json.Unmarshal(r.Body, &body); err != nil {
					t.Fatal(err)
				}
				got, present := body["limits"]
				if tc.want == nil && present {
					t.Errorf("sent limits %v, want none: %s", got, r.Body)
				}
				if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
					t.Errorf("sent limits %v, want %v: %s", got, tc.want, r.Body)
				}
			}
		})
	}
}

// Negative limits are the caller's error on every call, and nothing is sent.
func TestNegativeLimitsAreTheCallersError(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
	c := dial(t, f.URL)
	ctx := context.Background()
	for name, l := range map[string]spi.Limits{
		"negative wall clock":              {WallClock: -time.Millisecond, MemoryBytes: 1 << 20},
		"negative memory":                  {WallClock: time.Second, MemoryBytes: -1},
		"both negative":                    {WallClock: -1, MemoryBytes: -1},
		"negative wall clock, zero memory": {WallClock: -time.Second},
		"negative memory, zero wall clock": {MemoryBytes: -(1 << 20)},
	} {
		check := func(call string, err error) {
			t.Helper()
			if !errors.Is(err, client.ErrInvalidLimits) {
				t.Errorf("%s: %s returned %v, want an error wrapping ErrInvalidLimits", name, call, err)
			} else if !strings.Contains(err.Error(), "must not be negative") {
				t.Errorf("%s: %s: %v does not say what is wrong", name, call, err)
			}
		}
		o, err := c.Evaluate(ctx, spi.Request{Script: "1", InputJSON: "null", Limits: l})
		if err == nil {
			t.Errorf("%s: Evaluate returned the outcome %+v", name, o)
		}
		check("Evaluate", err)
		_, err = c.EvaluateRef(ctx, "sha256:"+strings.Repeat("0", 64), "null", l)
		check("EvaluateRef", err)
		_, err = c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: ref, Limits: &l})
		check("Evaluations", err)
		// the caller's error comes first, whatever else is wrong
		_, err = c.Evaluate(ctx, spi.Request{Script: "'\xff'", InputJSON: "null", Limits: l})
		check("Evaluate of a script that is not UTF-8", err)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

// On the real service, a zero member runs under the service's default: the
// service here has a wall clock of 3 s and 16 MiB by default, which a
// runaway and a 32 MiB string meet, while a member the caller gives is the
// run's. The default wall clock is far from the maximum (30 s), so that a
// runaway's stop tells the two apart, and long enough that the 32 MiB
// string is made within it on a busy machine. The service has no CPU
// budget: on a quiet machine a runaway makes its million polls in under
// 3 s and would end on them, before the wall clock this test is about.
func TestZeroLimitsRunUnderTheServicesDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the service")
	}
	s := servicetest.Start(t, servicetest.Options{Env: []string{"STORE_URL=none", "DEFAULT_WALL_CLOCK=3s", "DEFAULT_MEMORY_BYTES=16777216", "CPU_BUDGET=0"}})
	c := dial(t, s.URL)
	if l := c.Limits(); l.DefaultWallClock != 3*time.Second || l.DefaultMemoryBytes != 16<<20 {
		t.Fatalf("the service's defaults are %v and %d bytes", l.DefaultWallClock, l.DefaultMemoryBytes)
	}
	const bigString = `"x".repeat(32 << 20).length`
	for _, tc := range []struct {
		name   string
		script string
		limits spi.Limits
		want   spi.Outcome
	}{
		{"zero: a value", "input.a + 1", spi.Limits{}, spi.OK([]byte("2"))},
		{"zero: the default wall clock stops a runaway", "for (;;) {}", spi.Limits{}, spi.LimitHit(spi.LimitWallClock)},
		{"zero: the default memory refuses 32 MiB", bigString, spi.Limits{}, spi.LimitHit(spi.LimitMemory)},
		{"zero wall clock: the default stops a runaway", "for (;;) {}", spi.Limits{MemoryBytes: 64 << 20}, spi.LimitHit(spi.LimitWallClock)},
		{"zero wall clock: the memory given holds 32 MiB", bigString, spi.Limits{MemoryBytes: 128 << 20}, spi.OK([]byte("33554432"))},
		{"zero memory: the default refuses 32 MiB", bigString, spi.Limits{WallClock: 10 * time.Second}, spi.LimitHit(spi.LimitMemory)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			got, err := c.Evaluate(ctx, spi.Request{Script: tc.script, InputJSON: `{"a":1}`, Limits: tc.limits})
			if err != nil {
				t.Fatalf("Evaluate returned an error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("outcome %+v (value %s), want %+v (value %s)", got, got.Value, tc.want, tc.want.Value)
			}
			if took := time.Since(start); got.Limit == spi.LimitWallClock && took > 20*time.Second {
				t.Errorf("the runaway was stopped after %v, not at the default 3 s", took)
			}
		})
	}
}
