package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// capsDoc's limits: maxWallClockMs 30000, minMemoryBytes 262144,
// maxMemoryBytes 268435456, maxInputBytes and maxScriptBytes 1048576.
const (
	capsMinMemory = 256 << 10
	capsMaxInput  = 1 << 20
	capsMaxScript = 1 << 20
)

// The client keeps no rule of docs/spi.md, "Answers no retry can change":
// a request over the service's bounds, whose body the service can read, is
// sent as it is, limits and all, on every call, for the service to answer.
func TestRequestsOverTheBoundsAreSentAsTheyAre(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
	c := dial(t, f.URL)
	ctx := context.Background()
	bigScript := "1;" + strings.Repeat(" ", capsMaxScript-1)
	bigInput := `"` + strings.Repeat("i", capsMaxInput-1) + `"`
	for _, tc := range []struct {
		name   string
		req    spi.Request
		limits any // the request's "limits" member
	}{
		{"a script over maxScriptBytes", spi.Request{Script: bigScript, InputJSON: "null"}, nil},
		{"memory below minMemoryBytes", spi.Request{Script: "1", InputJSON: "null", Limits: spi.Limits{MemoryBytes: capsMinMemory - 1}},
			map[string]any{"memoryBytes": float64(capsMinMemory - 1)}},
		{"an input over maxInputBytes", spi.Request{Script: "1", InputJSON: bigInput}, nil},
		{"limits above the maxima", spi.Request{Script: "1", InputJSON: "null", Limits: spi.Limits{WallClock: 100 * time.Hour, MemoryBytes: 1 << 40}},
			map[string]any{"wallClockMs": 360000000.0, "memoryBytes": float64(1 << 40)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.requests())
			if o, err := c.Evaluate(ctx, tc.req); err != nil || !o.OK {
				t.Fatalf("Evaluate = %+v, %v; want the service's answer", o, err)
			}
			if o, err := c.EvaluateRef(ctx, ref, tc.req.InputJSON, tc.req.Limits); err != nil || !o.OK {
				t.Fatalf("EvaluateRef = %+v, %v; want the service's answer", o, err)
			}
			limits := tc.req.Limits
			if r, err := c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: ref, Input: json.RawMessage(tc.req.InputJSON), Limits: &limits}); err != nil || !r.OK {
				t.Fatalf("Evaluations = %+v, %v; want the service's answer", r, err)
			}
			reqs := f.requests()[before:]
			if len(reqs) != 3 {
				t.Fatalf("%d requests sent, want 3", len(reqs))
			}
			for _, r := range reqs {
				var body map[string]any
				if err := json.Unmarshal(r.Body, &body); err != nil {
					t.Fatal(err)
				}
				if got := body["limits"]; !reflect.DeepEqual(got, tc.limits) {
					t.Errorf("%s sent limits %v, want %v", r.Path, got, tc.limits)
				}
			}
			var sent struct{ Script, InputJSON string }
			if err := json.Unmarshal(reqs[0].Body, &sent); err != nil || sent.Script != tc.req.Script || sent.InputJSON != tc.req.InputJSON {
				t.Errorf("sent a script of %d bytes and an input of %d, want the %d and %d given (%v)",
					len(sent.Script), len(sent.InputJSON), len(tc.req.Script), len(tc.req.InputJSON), err)
			}
		})
	}
}

// settledCase is a row of api/testdata/bounds/settled.json, the table of
// the service's rule (spi.Bounds) that the TypeScript client reads too.
type settledCase struct {
	Name                                 string
	Bounds                               spi.Bounds
	ScriptBytes, MemoryBytes, InputBytes int64
	Outcome                              json.RawMessage
}

// A body over the service's maxRequestBytes, which the service cannot
// read, is answered without sending by the service's own rule
// (spi.Bounds): each row of its table, through Run and RunRef for a
// script by value and by reference, and through Evaluations as the channel;
// a row the rule leaves to a run is sent, for the service to answer.
func TestBodiesTheServiceCannotReadAreAnsweredByItsRule(t *testing.T) {
	b, err := os.ReadFile("../api/testdata/bounds/settled.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []settledCase
	if err := json.Unmarshal(b, &cases); err != nil || len(cases) == 0 {
		t.Fatalf("the table: %v", err)
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			limits := `"maxRequestBytes":1` // every body is over it
			for name, v := range map[string]int64{"maxScriptBytes": tc.Bounds.MaxScriptBytes, "minMemoryBytes": tc.Bounds.MinMemoryBytes, "maxInputBytes": tc.Bounds.MaxInputBytes} {
				if v > 0 {
					limits += fmt.Sprintf(`,%q:%d`, name, v)
				}
			}
			caps := strings.Replace(capsDoc, capsDoc[strings.Index(capsDoc, `"limits":{`):strings.Index(capsDoc, `},"engine"`)+1], `"limits":{`+limits+`}`, 1)
			f := newFakeWithCaps(t, caps, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, `{"ok":true,"value":1}`) })
			c := dial(t, f.URL)
			want := spi.OK([]byte("1")) // the fake's answer, for a request sent
			sent := string(tc.Outcome) == "null"
			if !sent {
				if want, err = spi.DecodeOutcome(tc.Outcome); err != nil {
					t.Fatal(err)
				}
			}
			input := `"` + strings.Repeat("i", int(tc.InputBytes)-2) + `"`
			l := spi.Limits{MemoryBytes: tc.MemoryBytes}
			var rep spi.Report
			if tc.ScriptBytes >= 0 {
				rep, err = c.Run(ctx, spi.RunRequest{Request: spi.Request{Script: "1;" + strings.Repeat(" ", int(tc.ScriptBytes)-2), InputJSON: input, Limits: l}})
			} else {
				rep, err = c.RunRef(ctx, client.RefRequest{ScriptRef: ref, InputJSON: input, Limits: l})
			}
			if err != nil || !reflect.DeepEqual(rep.Outcome, want) {
				t.Errorf("outcome %+v, %v; want %+v", rep.Outcome, err, want)
			}
			if n := len(f.requests()); n != 0 != sent {
				t.Errorf("%d requests sent; want one only for a request the rule leaves to a run", n)
			}
			if tc.ScriptBytes >= 0 {
				return
			}
			r, err := c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: ref, Input: json.RawMessage(input), Limits: &l})
			switch {
			case err != nil:
				t.Errorf("Evaluations: %v", err)
			case sent != r.OK:
				t.Errorf("Evaluations = %+v (failure %+v), want the service's answer only for a request the rule leaves to a run", r, r.Failure)
			case want.Kind == spi.KindLimit && !reflect.DeepEqual(r.Failure, &spi.Failure{Channel: spi.ChannelLimitExceeded, Kind: want.Limit}),
				want.Kind == spi.KindInputTooLarge && !reflect.DeepEqual(r.Failure, &spi.Failure{Channel: spi.ChannelInputTooLarge, LimitBytes: int(tc.Bounds.MaxInputBytes)}):
				t.Errorf("Evaluations failed with %+v, want the channel of %+v", r.Failure, want)
			}
		})
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
// service with small limits: the answer is typed, never infrastructure, and
// it is the service's, since the client keeps no rule of its own: the
// service answered (the report has its request id and its usage), and what
// it answered is what it answers the same request sent without the client.
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
	rangeError := spi.Threw(ptr("RangeError"), "the script is 1102 bytes, over the service's maxScriptBytes of 1024")

	for _, tc := range []struct {
		name   string
		req    spi.Request
		want   spi.Outcome
		memory int64 // the memory limit the service answered under
	}{
		{"wall clock above the maximum runs", spi.Request{Script: "input.a + 1", InputJSON: `{"a":1}`, Limits: spi.Limits{WallClock: time.Hour}},
			spi.OK([]byte("2")), 16 << 20},
		{"wall clock above the maximum meets the maximum", spi.Request{Script: "for (;;) {}", InputJSON: "null", Limits: spi.Limits{WallClock: time.Hour}},
			spi.LimitHit(spi.LimitWallClock), 16 << 20},
		{"memory above the maximum runs", spi.Request{Script: "input.a + 1", InputJSON: `{"a":1}`, Limits: generous},
			spi.OK([]byte("2")), maxMemory},
		{"memory above the maximum meets the maximum", spi.Request{Script: `"x".repeat(48 << 20).length`, InputJSON: "null", Limits: generous},
			spi.LimitHit(spi.LimitMemory), maxMemory},
		{"memory below the minimum", spi.Request{Script: "1", InputJSON: "null", Limits: spi.Limits{MemoryBytes: l.MinMemoryBytes - 1}},
			spi.LimitHit(spi.LimitMemory), l.MinMemoryBytes - 1},
		{"input over maxInputBytes", spi.Request{Script: "1", InputJSON: bigInput}, spi.InputTooLarge(), 16 << 20},
		{"script over maxScriptBytes", spi.Request{Script: bigScript, InputJSON: "null"}, rangeError, 16 << 20},
		{"the script first", spi.Request{Script: bigScript, InputJSON: bigInput, Limits: spi.Limits{MemoryBytes: 1}}, rangeError, 1},
		{"then the memory", spi.Request{Script: "1", InputJSON: bigInput, Limits: spi.Limits{MemoryBytes: 1}}, spi.LimitHit(spi.LimitMemory), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := c.Run(ctx, spi.RunRequest{Request: tc.req})
			if err != nil {
				t.Fatalf("Run returned an error: %v", err)
			}
			if !reflect.DeepEqual(rep.Outcome, tc.want) {
				t.Fatalf("outcome %+v (value %s), want %+v (value %s)", rep.Outcome, rep.Outcome.Value, tc.want, tc.want.Value)
			}
			if rep.RequestID == "" || rep.Usage.MemoryLimitBytes != tc.memory {
				t.Errorf("request id %q, usage %+v: want the service's answer, under a memory limit of %d", rep.RequestID, rep.Usage, tc.memory)
			}
			if strings.HasPrefix(tc.req.Script, "for") {
				return // a wall clock's runaway: answered once is enough
			}
			limits := map[string]any{}
			if tc.req.Limits.WallClock > 0 {
				limits["wallClockMs"] = tc.req.Limits.WallClock.Milliseconds()
			}
			if tc.req.Limits.MemoryBytes > 0 {
				limits["memoryBytes"] = tc.req.Limits.MemoryBytes
			}
			resp, err := servicetest.Do(ctx, http.DefaultClient, http.MethodPost, s.URL+"/v1/sandbox/evaluate",
				map[string]any{"script": tc.req.Script, "inputJson": tc.req.InputJSON, "limits": limits}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if raw, err := spi.DecodeOutcome(resp.Body); resp.Status != 200 || err != nil || !reflect.DeepEqual(raw, rep.Outcome) {
				t.Errorf("the service answers the request sent as it is with %d %s, the client %+v", resp.Status, resp.Body, rep.Outcome)
			}
		})
	}

	// /v1/evaluations, by reference
	for _, tc := range []struct {
		name   string
		req    client.EvaluationRequest
		failed *spi.Failure
		value  string
	}{
		{"above the maxima runs", client.EvaluationRequest{ScriptRef: echo, Input: json.RawMessage(`{"a":1}`), Limits: &generous}, nil, `{"a":1}`},
		{"memory below the minimum", client.EvaluationRequest{ScriptRef: echo, Limits: &spi.Limits{MemoryBytes: 1}},
			&spi.Failure{Channel: spi.ChannelLimitExceeded, Kind: spi.LimitMemory}, ""},
		{"input over maxInputBytes", client.EvaluationRequest{ScriptRef: echo, Input: json.RawMessage(bigInput)},
			&spi.Failure{Channel: spi.ChannelInputTooLarge, LimitBytes: 1024}, ""},
	} {
		t.Run("evaluations: "+tc.name, func(t *testing.T) {
			r, err := c.Evaluations(ctx, tc.req)
			if err != nil {
				t.Fatalf("Evaluations returned an error: %v", err)
			}
			if !reflect.DeepEqual(r.Failure, tc.failed) || string(r.Value) != tc.value {
				t.Errorf("answer %+v (failure %+v), want %s %+v", r, r.Failure, tc.value, tc.failed)
			}
			if r.RequestID == "" || r.Usage == nil {
				t.Errorf("request id %q, usage %+v: want the service's answer", r.RequestID, r.Usage)
			}
		})
	}
}

// A script and an input within the service's bounds reach it, however
// much longer their JSON escapes make the body: a script at maxScriptBytes
// of control characters (six bytes each on the wire) and an input at
// maxInputBytes of backslashes (two) are a body of about 8 MiB, which the
// service's maxRequestBytes holds (api.MinRequestBytes).
func TestEscapedRequestsWithinTheBoundsReachTheService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the service")
	}
	s := servicetest.Start(t, servicetest.Options{Env: []string{"STORE_URL=none"}})
	c := dial(t, s.URL)
	l := c.Limits()
	const tail = "'.length + input.length"
	script := "'" + strings.Repeat("\x01", int(l.MaxScriptBytes)-1-len(tail)) + tail
	input := `"` + strings.Repeat(`\\`, int(l.MaxInputBytes-2)/2) + `"`
	if body := api.AppendSandboxRequest(nil, api.Request{Script: &script, Input: []byte(input)}); int64(len(body)) < 6*l.MaxScriptBytes+2*l.MaxInputBytes-(1<<10) {
		t.Fatalf("the body is %d bytes, want the escapes to make it about 8 MiB", len(body))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := c.Run(ctx, spi.RunRequest{Request: spi.Request{Script: script, InputJSON: input, Limits: spi.Limits{MemoryBytes: 64 << 20}}})
	want := strconv.FormatInt(l.MaxScriptBytes-1-int64(len(tail))+(l.MaxInputBytes-2)/2, 10)
	if err != nil || !rep.Outcome.OK || string(rep.Outcome.Value) != want || rep.RequestID == "" {
		t.Errorf("Run = %+v (value %s), %v; want the value %s from the service", rep, rep.Outcome.Value, err, want)
	}
}
