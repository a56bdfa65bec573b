package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// capsDoc's limits: maxWallClockMs 30000, minMemoryBytes 262144,
// maxMemoryBytes 268435456, maxInputBytes and maxScriptBytes 1048576.
const (
	capsMaxWallClock = 30 * time.Second
	capsMinMemory    = 256 << 10
	capsMaxMemory    = 256 << 20
	capsMaxInput     = 1 << 20
	capsMaxScript    = 1 << 20
)

// The rows of docs/spi.md, "Answers no retry can change", that are answered
// without sending: each is typed, never infrastructure, and nothing reaches
// the service; where several apply, the service's own order decides (the
// script, the limits, the input).
func TestSettledAnswersAreNotSent(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
	c := dial(t, f.URL)
	bigScript := "1;" + strings.Repeat(" ", capsMaxScript-1)
	bigInput := `"` + strings.Repeat("i", capsMaxInput-1) + `"`
	tooLittle := spi.Limits{MemoryBytes: capsMinMemory - 1}
	scriptError := spi.Threw(ptr("RangeError"), "the script is 1048577 bytes, over the service's maxScriptBytes of 1048576")
	for _, tc := range []struct {
		name string
		req  spi.Request
		want spi.Outcome
	}{
		{"script over maxScriptBytes", spi.Request{Script: bigScript, InputJSON: "null"}, scriptError},
		{"memory below minMemoryBytes", spi.Request{Script: "1", InputJSON: "null", Limits: tooLittle}, spi.LimitHit(spi.LimitMemory)},
		{"a byte of memory", spi.Request{Script: "1", InputJSON: "null", Limits: spi.Limits{MemoryBytes: 1}}, spi.LimitHit(spi.LimitMemory)},
		{"input over maxInputBytes", spi.Request{Script: "1", InputJSON: bigInput}, spi.InputTooLarge()},
		{"the script first", spi.Request{Script: bigScript, InputJSON: bigInput, Limits: tooLittle}, scriptError},
		{"then the memory", spi.Request{Script: "1", InputJSON: bigInput, Limits: tooLittle}, spi.LimitHit(spi.LimitMemory)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := c.Run(context.Background(), spi.RunRequest{Request: tc.req, CaptureLogs: true})
			if err != nil {
				t.Fatalf("Run returned an error: %v", err)
			}
			if !reflect.DeepEqual(rep, spi.Report{Outcome: tc.want}) {
				t.Errorf("report %+v, want the outcome %+v and nothing else", rep, tc.want)
			}
			o, err := c.Evaluate(context.Background(), tc.req)
			if err != nil || !reflect.DeepEqual(o, tc.want) {
				t.Errorf("Evaluate = %+v, %v; want %+v", o, err, tc.want)
			}
		})
	}
	// by reference, the script's size is the service's to check; the rest
	// is the same
	o, err := c.EvaluateRef(context.Background(), ref, bigInput, spi.Limits{})
	if err != nil || !reflect.DeepEqual(o, spi.InputTooLarge()) {
		t.Errorf("EvaluateRef of an input over maxInputBytes = %+v, %v", o, err)
	}
	o, err = c.EvaluateRef(context.Background(), ref, "null", tooLittle)
	if err != nil || !reflect.DeepEqual(o, spi.LimitHit(spi.LimitMemory)) {
		t.Errorf("EvaluateRef below minMemoryBytes = %+v, %v", o, err)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}

	// at each limit exactly, the request is sent as it is
	atLimits := spi.Limits{WallClock: capsMaxWallClock, MemoryBytes: capsMinMemory}
	if o, err := c.Evaluate(context.Background(), spi.Request{Script: bigScript[:capsMaxScript], InputJSON: bigInput[:capsMaxInput-1] + `"`, Limits: atLimits}); err != nil || !o.OK {
		t.Errorf("a request at the limits: %+v, %v", o, err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests sent for a request at the limits, want 1", n)
	}
}

// Limits above the service's maxima are sent as the maxima, the rest as
// they are; a zero member is still left to the service's default.
func TestLimitsAboveTheMaximaAreSentAsTheMaxima(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits spi.Limits
		want   any // the request's "limits" member; nil: absent
	}{
		{"wall clock", spi.Limits{WallClock: time.Hour, MemoryBytes: 1 << 20},
			map[string]any{"wallClockMs": 30000.0, "memoryBytes": float64(1 << 20)}},
		{"a nanosecond over", spi.Limits{WallClock: capsMaxWallClock + 1},
			map[string]any{"wallClockMs": 30000.0}},
		{"memory", spi.Limits{WallClock: time.Second, MemoryBytes: 1 << 40},
			map[string]any{"wallClockMs": 1000.0, "memoryBytes": float64(capsMaxMemory)}},
		{"both, the memory alone", spi.Limits{MemoryBytes: capsMaxMemory + 1},
			map[string]any{"memoryBytes": float64(capsMaxMemory)}},
		{"zero", spi.Limits{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
			c := dial(t, f.URL)
			ctx := context.Background()
			if o, err := c.Evaluate(ctx, spi.Request{Script: "1", InputJSON: "null", Limits: tc.limits}); err != nil || !o.OK {
				t.Fatalf("Evaluate = %+v, %v", o, err)
			}
			if o, err := c.EvaluateRef(ctx, ref, "null", tc.limits); err != nil || !o.OK {
				t.Fatalf("EvaluateRef = %+v, %v", o, err)
			}
			if r, err := c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: ref, Limits: &tc.limits}); err != nil || !r.OK {
				t.Fatalf("Evaluations = %+v, %v", r, err)
			}
			reqs := f.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			for _, r := range reqs {
				var body map[string]any
				if err := json.Unmarshal(r.Body, &body); err != nil {
					t.Fatal(err)
				}
				got, present := body["limits"]
				if tc.want == nil && present || tc.want != nil && !reflect.DeepEqual(got, tc.want) {
					t.Errorf("%s sent limits %v, want %v", r.Path, got, tc.want)
				}
			}
		})
	}
}

// A service that publishes none of the limits leaves every request to it:
// nothing is answered locally and nothing is clamped.
func TestUnpublishedLimitsLeaveTheRequestToTheService(t *testing.T) {
	doc := `{"spiVersion":"1.0.0","capabilities":{"language":"javascript","network":"none","wallClock":"hard","memory":true,"cpu":true,"freshPerRun":true},` +
		`"limits":{},"engine":{"name":"quickjs","version":"1","wasmSha256":"` + goldenSHA + `"}}`
	f := newFakeWithCaps(t, doc, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
	c := dial(t, f.URL)
	o, err := c.Evaluate(context.Background(), spi.Request{Script: strings.Repeat(" ", 2<<20) + "1", InputJSON: `"` + strings.Repeat("i", 2<<20) + `"`,
		Limits: spi.Limits{WallClock: 100 * time.Hour, MemoryBytes: 1}})
	if err != nil || !o.OK {
		t.Fatalf("Evaluate = %+v, %v", o, err)
	}
	reqs := f.requests()
	if len(reqs) != 1 || !strings.HasSuffix(string(reqs[0].Body), `"limits":{"wallClockMs":360000000,"memoryBytes":1}}`) {
		t.Errorf("sent %d requests, want the one as it was given", len(reqs))
	}
}

// Evaluations follows the same rule: a memory limit below the service's
// minimum is the typed limitExceeded memory, an input over maxInputBytes
// (measured as it is sent, without white space) the typed inputTooLarge of
// maxInputBytes, as the service would answer; neither is sent.
func TestEvaluationsSettledAnswersAreNotSent(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
	c := dial(t, f.URL)
	ctx := context.Background()
	bigInput := json.RawMessage(`"` + strings.Repeat("i", capsMaxInput-1) + `"`)
	for _, tc := range []struct {
		name string
		req  client.EvaluationRequest
		want *effect.Failure
	}{
		{"input over maxInputBytes", client.EvaluationRequest{ScriptRef: ref, Input: bigInput},
			&effect.Failure{Channel: effect.ChannelInputTooLarge, LimitBytes: capsMaxInput}},
		{"memory below minMemoryBytes", client.EvaluationRequest{ScriptRef: ref, Limits: &spi.Limits{MemoryBytes: capsMinMemory - 1}},
			&effect.Failure{Channel: effect.ChannelLimitExceeded, Kind: spi.LimitMemory}},
		{"the memory first", client.EvaluationRequest{ScriptRef: ref, Input: bigInput, Limits: &spi.Limits{MemoryBytes: 1}},
			&effect.Failure{Channel: effect.ChannelLimitExceeded, Kind: spi.LimitMemory}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Evaluations(ctx, tc.req)
			if err != nil {
				t.Fatalf("Evaluations returned an error: %v", err)
			}
			want := client.EvaluationResponse{EvaluationResponse: api.EvaluationResponse{Failure: tc.want, Usage: &spi.Usage{}}}
			if !reflect.DeepEqual(r, want) {
				t.Errorf("answer %+v (failure %+v), want %+v", r, r.Failure, tc.want)
			}
		})
	}
	// white space the client removes before sending does not count
	spaced := json.RawMessage(`[` + strings.Repeat(" 1,", (capsMaxInput-3)/2) + ` 1 ]`)
	if r, err := c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: ref, Input: spaced}); err != nil || !r.OK {
		t.Errorf("an input within maxInputBytes once compacted: %+v, %v", r, err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests sent, want only the one within the limits", n)
	}
}

// putScript stores source in the directory store dir with the service's
// put verb, and returns its reference.
func putScript(t *testing.T, dir, source string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "script.js")
	if err := os.WriteFile(file, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(servicetest.Binary(t), "put", file)
	cmd.Env = append(os.Environ(), "STORE_URL="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("put: %v\n%s", err, out)
	}
	return strings.Fields(string(out))[0]
}

// Each row of docs/spi.md, "Answers no retry can change", against the real
// service with small published limits: the answer is typed, never
// infrastructure, and a request whose limits are above the maxima runs
// under the maxima. The service's own answers, sent without the client,
// show what the rule spares the caller: a 400 for limits it would refuse,
// and the same inputTooLarge for an input it bounds itself.
func TestAnswersNoRetryCanChangeOnTheService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the service")
	}
	store := t.TempDir()
	echo := putScript(t, store, "input")
	const maxMemory = 32 << 20
	s := servicetest.Start(t, servicetest.Options{Env: []string{"STORE_URL=" + store,
		"DEFAULT_WALL_CLOCK=1s", "MAX_WALL_CLOCK=2s", "DEFAULT_MEMORY_BYTES=16777216", "MAX_MEMORY_BYTES=33554432",
		"MAX_INPUT_BYTES=1024", "MAX_SCRIPT_BYTES=1024"}})
	c := dial(t, s.URL)
	l := c.Limits()
	if l.MaxWallClock != 2*time.Second || l.MaxMemoryBytes != maxMemory || l.MaxInputBytes != 1024 || l.MaxScriptBytes != 1024 || l.MinMemoryBytes <= 0 {
		t.Fatalf("the service's limits are %+v", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bigInput := `"` + strings.Repeat("i", 1100) + `"`
	bigScript := "1;" + strings.Repeat(" ", 1100)
	generous := spi.Limits{WallClock: time.Hour, MemoryBytes: 1 << 30}

	for _, tc := range []struct {
		name string
		req  spi.Request
		want spi.Outcome
		// sent: the service ran it, and its usage says under which memory
		sent bool
	}{
		{"wall clock above the maximum runs", spi.Request{Script: "input.a + 1", InputJSON: `{"a":1}`, Limits: spi.Limits{WallClock: time.Hour}},
			spi.OK([]byte("2")), true},
		{"wall clock above the maximum meets the maximum", spi.Request{Script: "for (;;) {}", InputJSON: "null", Limits: spi.Limits{WallClock: time.Hour}},
			spi.LimitHit(spi.LimitWallClock), true},
		{"memory above the maximum runs", spi.Request{Script: "input.a + 1", InputJSON: `{"a":1}`, Limits: generous},
			spi.OK([]byte("2")), true},
		{"memory above the maximum meets the maximum", spi.Request{Script: `"x".repeat(48 << 20).length`, InputJSON: "null", Limits: generous},
			spi.LimitHit(spi.LimitMemory), true},
		{"memory below the minimum", spi.Request{Script: "1", InputJSON: "null", Limits: spi.Limits{MemoryBytes: l.MinMemoryBytes - 1}},
			spi.LimitHit(spi.LimitMemory), false},
		{"input over maxInputBytes", spi.Request{Script: "1", InputJSON: bigInput},
			spi.InputTooLarge(), false},
		{"script over maxScriptBytes", spi.Request{Script: bigScript, InputJSON: "null"},
			spi.Threw(ptr("RangeError"), "the script is 1102 bytes, over the service's maxScriptBytes of 1024"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := c.Run(ctx, spi.RunRequest{Request: tc.req})
			if err != nil {
				t.Fatalf("Run returned an error: %v", err)
			}
			if !reflect.DeepEqual(rep.Outcome, tc.want) {
				t.Fatalf("outcome %+v (value %s), want %+v (value %s)", rep.Outcome, rep.Outcome.Value, tc.want, tc.want.Value)
			}
			if got := rep.RequestID != ""; got != tc.sent {
				t.Errorf("request id %q: sent %v, want %v", rep.RequestID, got, tc.sent)
			}
			if tc.sent && tc.req.Limits.MemoryBytes > maxMemory && rep.Usage.MemoryLimitBytes != maxMemory {
				t.Errorf("ran under a memory limit of %d bytes, want the maximum %d", rep.Usage.MemoryLimitBytes, maxMemory)
			}
		})
	}

	// /v1/evaluations, by reference
	for _, tc := range []struct {
		name   string
		req    client.EvaluationRequest
		failed *effect.Failure
		value  string
	}{
		{"above the maxima runs", client.EvaluationRequest{ScriptRef: echo, Input: json.RawMessage(`{"a":1}`), Limits: &generous}, nil, `{"a":1}`},
		{"memory below the minimum", client.EvaluationRequest{ScriptRef: echo, Limits: &spi.Limits{MemoryBytes: 1}},
			&effect.Failure{Channel: effect.ChannelLimitExceeded, Kind: spi.LimitMemory}, ""},
		{"input over maxInputBytes", client.EvaluationRequest{ScriptRef: echo, Input: json.RawMessage(bigInput)},
			&effect.Failure{Channel: effect.ChannelInputTooLarge, LimitBytes: 1024}, ""},
	} {
		t.Run("evaluations: "+tc.name, func(t *testing.T) {
			r, err := c.Evaluations(ctx, tc.req)
			if err != nil {
				t.Fatalf("Evaluations returned an error: %v", err)
			}
			if !reflect.DeepEqual(r.Failure, tc.failed) || string(r.Value) != tc.value {
				t.Errorf("answer %+v (failure %+v), want %s %+v", r, r.Failure, tc.value, tc.failed)
			}
			if tc.failed == nil && (r.RequestID == "" || r.Usage == nil || r.Usage.MemoryLimitBytes != maxMemory) {
				t.Errorf("ran with request id %q and usage %+v, want the service's id and the maximum memory", r.RequestID, r.Usage)
			}
		})
	}

	// What the service answers the same requests sent as they are.
	for _, tc := range []struct {
		path, body, want string
		status           int
	}{
		{"/v1/sandbox/evaluate", `{"script":"1","inputJson":"null","limits":{"wallClockMs":3600000}}`, `{"ok":true,"value":1}`, 200},
		{"/v1/sandbox/evaluate", `{"script":"1","inputJson":"null","limits":{"memoryBytes":1}}`, `{"ok":false,"kind":"limit","limit":"memory"}`, 200},
		{"/v1/sandbox/evaluate", `{"script":"1","inputJson":"` + strings.ReplaceAll(bigInput, `"`, `\"`) + `"}`, `{"ok":false,"kind":"inputTooLarge"}`, 200},
		{"/v1/evaluations", `{"scriptRef":"` + echo + `","input":` + bigInput + `}`, `{"ok":false,"failure":{"channel":"inputTooLarge","limitBytes":1024}}`, 200},
	} {
		resp, err := servicetest.Do(ctx, http.DefaultClient, http.MethodPost, s.URL+tc.path, tc.body, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != tc.status || !strings.Contains(string(resp.Body), tc.want) {
			t.Errorf("the service answers %s with %d %s, want %d and %s", tc.body[:min(len(tc.body), 80)], resp.Status, resp.Body, tc.status, tc.want)
		}
	}
}
