package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/effect"
	"github.com/loom-plugins/sandbox-cloudrun/internal/jsontext"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

var _ spi.Reporter = (*client.Client)(nil)

// usageJSON and wantUsage are one usage member and what it decodes to.
const usageJSON = `{"phasesMs":{"fetch":0,"verify":0,"setup":0.25,"run":1.5,"serialise":0.125},"cpuMs":1.75,` +
	`"cpuBudgetUsed":3,"cpuBudget":1000,"peakMemoryBytes":153432,"memoryLimitBytes":16777216}`

var wantUsage = spi.Usage{Setup: 250 * time.Microsecond, Run: 1500 * time.Microsecond, Serialise: 125 * time.Microsecond,
	CPU: 1750 * time.Microsecond, CPUBudgetUsed: 3, CPUBudget: 1000, PeakMemoryBytes: 153432, MemoryLimitBytes: 16 << 20}

// Run asks for the console when the request does, and reports the outcome,
// the console, the usage and the service's request id from the answer; the
// console only when it was asked for.
func TestRunReportsTheWholeAnswer(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "svc-7")
		writeJSON(w, 200, `{"ok":true,"value":2,"logs":"hello 1\n","usage":`+usageJSON+`}`)
	})
	c := dial(t, f.URL)
	ctx := context.Background()
	req := spi.Request{Script: "console.log('hello', input.a); input.a + 1", InputJSON: `{"a":1}`}
	want := spi.Report{Outcome: spi.OK([]byte("2")), Logs: "hello 1\n", Usage: wantUsage, RequestID: "svc-7"}
	rep, err := c.Run(ctx, spi.RunRequest{Request: req, CaptureLogs: true})
	if err != nil || !reflect.DeepEqual(rep, want) {
		t.Errorf("Run = %+v, %v; want %+v", rep, err, want)
	}
	rep, err = c.RunRef(ctx, client.RefRequest{ScriptRef: ref, InputJSON: `{"a":1}`, CaptureLogs: true})
	if err != nil || !reflect.DeepEqual(rep, want) {
		t.Errorf("RunRef = %+v, %v; want %+v", rep, err, want)
	}
	// not asked for: not sent, and not reported if a service sends it anyway
	want.Logs = ""
	rep, err = c.Run(ctx, spi.RunRequest{Request: req})
	if err != nil || !reflect.DeepEqual(rep, want) {
		t.Errorf("Run without the console = %+v, %v; want %+v", rep, err, want)
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		var body map[string]any
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if got, asked := body["captureLogs"], i < 2; asked && got != true || !asked && got != nil {
			t.Errorf("request %d sent captureLogs %v: %s", i, got, r.Body)
		}
	}
}

// Evaluations reports the usage and the request id too.
func TestEvaluationsReportsUsageAndRequestID(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "svc-8")
		writeJSON(w, 200, `{"ok":true,"value":2,"logs":"","usage":`+usageJSON+`}`)
	})
	r, err := dial(t, f.URL).Evaluations(context.Background(), client.EvaluationRequest{ScriptRef: ref, CaptureLogs: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.RequestID != "svc-8" || r.Usage == nil || *r.Usage != wantUsage || r.Logs == nil || *r.Logs != "" {
		t.Errorf("answer %+v (usage %+v)", r, r.Usage)
	}
}

// The caller's own id is sent on every route, and on every busy retry; an
// id the service would not take is not sent at all, so that the service
// makes one, and the answer's id is the one reported. An answer's id that
// is not well formed is not reported.
func TestRequestIDs(t *testing.T) {
	var busy atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		switch {
		case id == "":
			id = "made-by-the-service"
		case id == "step-busy" && busy.Add(1) == 1:
			w.Header().Set("X-Request-Id", id)
			writeProblem(w, http.StatusTooManyRequests, "busy", `"retryable":true`)
			return
		case id == "step-forged":
			id = "forged id\t"
		}
		w.Header().Set("X-Request-Id", id)
		writeJSON(w, 200, `{"ok":true,"value":1}`)
	})
	c := dial(t, f.URL)
	for _, tc := range []struct{ id, sent, reported string }{
		{"step-42", "step-42", "step-42"},
		{"step-busy", "step-busy", "step-busy"},
		{"not an id", "", "made-by-the-service"},
		{strings.Repeat("x", 129), "", "made-by-the-service"},
		{"a\r\nX-Evil: 1", "", "made-by-the-service"},
		{"step-forged", "step-forged", ""},
	} {
		ctx := client.ContextWithRequestID(context.Background(), tc.id)
		before := len(f.requests())
		rep, err := c.Run(ctx, spi.RunRequest{Request: spi.Request{Script: "1", InputJSON: "null"}})
		if err != nil || !rep.Outcome.OK || rep.RequestID != tc.reported {
			t.Errorf("%q: Run = %+v, %v; want the request id %q", tc.id, rep, err, tc.reported)
		}
		rep, err = c.RunRef(ctx, client.RefRequest{ScriptRef: ref, InputJSON: "null"})
		if err != nil || rep.RequestID != tc.reported {
			t.Errorf("%q: RunRef = %+v, %v; want the request id %q", tc.id, rep, err, tc.reported)
		}
		r, err := c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: ref})
		if err != nil || r.RequestID != tc.reported {
			t.Errorf("%q: Evaluations = %+v, %v; want the request id %q", tc.id, r, err, tc.reported)
		}
		for _, r := range f.requests()[before:] {
			if got := r.Header.Get("X-Request-Id"); got != tc.sent || len(r.Header.Values("X-Evil")) != 0 {
				t.Errorf("%q: %s sent X-Request-Id %q, want %q", tc.id, r.Path, got, tc.sent)
			}
		}
	}
	if n := busy.Load(); n < 2 {
		t.Errorf("the busy request was tried %d times", n)
	}
}

// A refusal carries the service's request id: in the infrastructure
// outcome's report, and in Evaluations' *Error.
func TestRefusalsCarryTheRequestID(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
		writeProblem(w, http.StatusNotFound, "no script is stored under "+ref, `"retryable":false,"instance":"`+r.Header.Get("X-Request-Id")+`"`)
	})
	c := dial(t, f.URL)
	ctx := client.ContextWithRequestID(context.Background(), "step-404")
	rep, err := c.RunRef(ctx, client.RefRequest{ScriptRef: ref, InputJSON: "null"})
	if err != nil || rep.RequestID != "step-404" {
		t.Errorf("RunRef = %+v, %v; want the request id", rep, err)
	}
	wantInfra(t, rep.Outcome, "HTTP 404", "no script is stored")
	_, err = c.Evaluations(ctx, client.EvaluationRequest{ScriptRef: ref})
	var e *client.Error
	if !errors.As(err, &e) || e.RequestID != "step-404" || e.Problem == nil || e.Problem.Instance != "step-404" {
		t.Errorf("Evaluations error %#v, want the request id", err)
	}
}

// Against the real service: the console, the usage measured there and the
// request id reach the caller, from Run, RunRef and Evaluations, and
// through an effect that uses the client as its backend.
func TestRunOnTheService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the service")
	}
	store := t.TempDir()
	logger := putScript(t, store, "console.log('hello', input.a); input.a + 1")
	// the same script under another reference, which no run has read yet:
	// its fetch is a read of the store, not of the service's script cache,
	// which can answer within the microsecond the usage counts in
	unread := putScript(t, store, "console.log('hello', input.a); input.a + 1 // not yet read")
	s := servicetest.Start(t, servicetest.Options{Env: []string{"STORE_URL=" + store}})
	c := dial(t, s.URL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	limits := spi.Limits{WallClock: 5 * time.Second, MemoryBytes: 16 << 20}
	checkUsage := func(what string, u spi.Usage) {
		t.Helper()
		if u.MemoryLimitBytes != limits.MemoryBytes || u.PeakMemoryBytes <= 0 || u.PeakMemoryBytes > u.MemoryLimitBytes || u.CPUBudget == 0 || u.Run <= 0 {
			t.Errorf("%s: usage %+v, want the run's own under a memory limit of %d", what, u, limits.MemoryBytes)
		}
	}

	run := spi.RunRequest{Request: spi.Request{Script: "console.log('hello', input.a); input.a + 1", InputJSON: `{"a":1}`, Limits: limits}, CaptureLogs: true}
	rep, err := c.Run(client.ContextWithRequestID(ctx, "loom-step-1"), run)
	if err != nil || !reflect.DeepEqual(rep.Outcome, spi.OK([]byte("2"))) || rep.Logs != "hello 1\n" || rep.RequestID != "loom-step-1" {
		t.Errorf("Run = %+v, %v", rep, err)
	}
	checkUsage("Run", rep.Usage)

	rep, err = c.RunRef(ctx, client.RefRequest{ScriptRef: logger, InputJSON: `{"a":1}`, Limits: limits, CaptureLogs: true})
	if err != nil || !rep.Outcome.OK || rep.Logs != "hello 1\n" || !client.ValidRequestID(rep.RequestID) {
		t.Errorf("RunRef = %+v, %v; want the logs and the service's own request id", rep, err)
	}
	checkUsage("RunRef", rep.Usage)

	r, err := c.Evaluations(client.ContextWithRequestID(ctx, "loom-step-2"),
		client.EvaluationRequest{ScriptRef: unread, Input: json.RawMessage(`{"a":1}`), Limits: &limits, CaptureLogs: true})
	if err != nil || !r.OK || string(r.Value) != "2" || r.Logs == nil || *r.Logs != "hello 1\n" || r.RequestID != "loom-step-2" || r.Usage == nil {
		t.Fatalf("Evaluations = %+v, %v", r, err)
	}
	checkUsage("Evaluations", *r.Usage)
	if r.Usage.Fetch <= 0 {
		t.Errorf("Evaluations by reference, the script's first read: no fetch in %+v", r.Usage)
	}

	// a refusal names the caller's request id too
	missing := "sha256:" + strings.Repeat("0", 64)
	rep, err = c.RunRef(client.ContextWithRequestID(ctx, "loom-step-3"), client.RefRequest{ScriptRef: missing, InputJSON: "null"})
	if err != nil || rep.RequestID != "loom-step-3" {
		t.Errorf("RunRef of a missing script = %+v, %v", rep, err)
	}
	wantInfra(t, rep.Outcome, "HTTP 404")

	// the effect asks a Reporter with Run: the console and the usage are
	// the service's
	e, err := effect.New(effect.NoStore, c, effect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(ctx, spi.Evaluation{Script: run.Script, Input: jsontext.Text(run.InputJSON), Limits: limits, CaptureLogs: true})
	if err != nil || string(res.Value) != "2" || res.Logs != "hello 1\n" {
		t.Errorf("through the effect: %+v, %v", res, err)
	}
	checkUsage("through the effect", res.Usage)
}
