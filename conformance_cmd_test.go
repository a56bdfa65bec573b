package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
)

// fakeRun is one POST /v1/sandbox/evaluate as a fake service received it.
type fakeRun struct {
	ctx       context.Context // ends when the client goes away
	seq       int             // the evaluation's number on this service, from 1
	script    string
	inputJSON string
	wallClock time.Duration
}

// act is how a fake answers one run: the body of a 200 response (an outcome
// as docs/spi.md, "Outcomes" spells it), or "" to send no answer at all.
type act func(run fakeRun) string

// fakeService is a sandbox service on loopback that speaks the service's wire
// format: GET /v1/capabilities and POST /v1/sandbox/evaluate with a script by
// value. It runs no JavaScript. It recognises each of the kit's fixture
// scripts by its text and answers as a conforming QuickJS backend does,
// except where a lie replaces an answer: so the lie, and only the lie, is
// what the kit must catch.
type fakeService struct {
	acts map[string]act // by fixture script
	all  act            // when set, answers every evaluation
	// status, when set, answers every evaluation with this status and a
	// problem document
	status int
	seq    atomic.Int32
}

// fakeCapabilities is the declaration every fake makes: the real service's.
const fakeCapabilities = `{"spiVersion":"1.0.0",` +
	`"capabilities":{"language":"javascript","network":"none","wallClock":"hard","memory":true,"cpu":true,"freshPerRun":true},` +
	`"idempotent":true,"scriptStore":false,` +
	`"limits":{"defaultWallClockMs":5000,"maxWallClockMs":30000,"defaultMemoryBytes":67108864,"maxMemoryBytes":268435456,` +
	`"maxInputBytes":1048576,"maxOutputBytes":1048576,"maxScriptBytes":1048576},` +
	`"engine":{"name":"fake","version":"1","wasmSha256":"0000000000000000000000000000000000000000000000000000000000000000"}}`

// honestFake answers every fixture as the real engine does.
func honestFake() *fakeService {
	fx := conformance.JavaScriptFixtures()
	constant := func(body string) act { return func(fakeRun) string { return body } }
	threw := func(name, message string) act {
		n, _ := json.Marshal(name)
		m, _ := json.Marshal(message)
		return constant(`{"ok":false,"kind":"threw","name":` + string(n) + `,"message":` + string(m) + `}`)
	}
	// the engine bounds what a script throws; the effect bounds it again
	oversized := `{"ok":false,"kind":"threw","name":"Name\u0000\ud800` + strings.Repeat("n", 300) + `","message":"` +
		strings.Repeat(`a\ud800b\u0000c\udc00d\ud83d\ude00`, 1000) + `"}`
	return &fakeService{acts: map[string]act{
		fx.Echo:        func(r fakeRun) string { return `{"ok":true,"value":` + r.inputJSON + `}` },
		fx.Throw:       threw("Error", conformance.ThrowMessage),
		fx.SyntaxError: threw("SyntaxError", "unexpected token in expression: '}'"),
		fx.RunawayLoop: func(r fakeRun) string {
			select {
			case <-time.After(r.wallClock):
				return `{"ok":false,"kind":"limit","limit":"wallClock"}`
			case <-r.ctx.Done(): // the client went away: the run is stopped
				return ""
			}
		},
		fx.NativeOverrun:  constant(`{"ok":false,"kind":"limit","limit":"wallClock"}`),
		fx.AllocationBomb: constant(`{"ok":false,"kind":"limit","limit":"memory"}`),
		fx.RichValue:      constant(`{"ok":true,"value":` + string(fx.RichExpected) + `}`),
		fx.NetworkProbe:   constant(`{"ok":true,"value":{"reachable":[]}}`),
		fx.EscapeProbe:    constant(`{"ok":true,"value":{"reachable":[]}}`),
		fx.ImportProbe:    constant(`{"ok":true,"value":{}}`), // a pending promise serialises as {}
		fx.StatefulProbe: func(r fakeRun) string {
			return fmt.Sprintf(`{"ok":true,"value":{"run":%d,"sawEarlierState":false,"seen":[]}}`, probeRun(r))
		},
		fx.OversizedThrow: constant(oversized),
	}}
}

func probeRun(r fakeRun) int {
	var in struct{ Run int }
	_ = json.Unmarshal([]byte(r.inputJSON), &in)
	return in.Run
}

func (f *fakeService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/capabilities":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(fakeCapabilities))
	case r.Method == http.MethodPost && r.URL.Path == "/v1/sandbox/evaluate":
		var req struct {
			Script    string `json:"script"`
			InputJSON string `json:"inputJson"`
			Limits    struct {
				WallClockMs int64 `json:"wallClockMs"`
				MemoryBytes int64 `json:"memoryBytes"`
			} `json:"limits"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			fakeProblem(w, http.StatusBadRequest, err.Error())
			return
		}
		if f.status != 0 {
			fakeProblem(w, f.status, "fake: the service failed")
			return
		}
		run := fakeRun{ctx: r.Context(), seq: int(f.seq.Add(1)), script: req.Script, inputJSON: req.InputJSON,
			wallClock: time.Duration(req.Limits.WallClockMs) * time.Millisecond}
		answer := f.all
		if answer == nil {
			answer = f.acts[req.Script]
		}
		if answer == nil {
			answer = func(fakeRun) string {
				return `{"ok":false,"kind":"infrastructure","message":"fake: not a fixture script"}`
			}
		}
		body := answer(run)
		if body == "" {
			<-r.Context().Done() // never answers; the connection ends when the client leaves
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	default:
		fakeProblem(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
	}
}

func fakeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"type":"about:blank","title":%q,"status":%d,"detail":%q,"retryable":false}`, http.StatusText(status), status, detail)
}

// The lying fakes: each declares what the real service declares and breaks
// one promise.

// answers42 answers {"ok":true,"value":42} to every POST: the server that the
// verb once passed.
func answers42() *fakeService {
	f := honestFake()
	f.all = func(fakeRun) string { return `{"ok":true,"value":42}` }
	return f
}

// fails500 answers every evaluation with a 500 problem: a service that is
// down.
func fails500() *fakeService {
	f := honestFake()
	f.status = http.StatusInternalServerError
	return f
}

// neverAnswers accepts every evaluation and never answers it.
func neverAnswers() *fakeService {
	f := honestFake()
	f.all = func(fakeRun) string { return "" }
	return f
}

// neverStopsARunaway does not answer a runaway loop until the client gives
// up: it has no CPU budget and its wall clock is not enforced.
func neverStopsARunaway() *fakeService {
	f := honestFake()
	f.acts[conformance.JavaScriptFixtures().RunawayLoop] = func(fakeRun) string { return "" }
	return f
}

// answersAfterItsDeadline answers the script that overruns its wall clock
// inside one builtin with its value, once the builtin returned: what a
// service does that classifies a run by how it ended but not by when.
func answersAfterItsDeadline() *fakeService {
	f := honestFake()
	f.acts[conformance.JavaScriptFixtures().NativeOverrun] = func(r fakeRun) string {
		time.Sleep(10 * r.wallClock)
		return `{"ok":true,"value":-1}`
	}
	return f
}

// leaksStateBetweenRuns serves every evaluation from a pool of two reused
// contexts, in turn, so a script sees what an earlier script left in the
// same context: the stateful probe finds its key from the third probe on.
func leaksStateBetweenRuns() *fakeService {
	f := honestFake()
	var mu sync.Mutex
	var probed [2]bool // whether the probe left its key in each context
	f.acts[conformance.JavaScriptFixtures().StatefulProbe] = func(r fakeRun) string {
		mu.Lock()
		ctx := r.seq % 2
		saw := probed[ctx]
		probed[ctx] = true
		mu.Unlock()
		seen := `[]`
		if saw {
			seen = `["globalThis","Object.prototype","Array.prototype","Math","JSON","console"]`
		}
		return fmt.Sprintf(`{"ok":true,"value":{"run":%d,"sawEarlierState":%v,"seen":%s}}`, probeRun(r), saw, seen)
	}
	return f
}

// exposesFetch declares network "none" but gives scripts a global fetch, as
// an engine embedded with a web-style host would: the network probe sees
// it, and so does every route of the escape probe that reaches the global
// object.
func exposesFetch() *fakeService {
	f := honestFake()
	fx := conformance.JavaScriptFixtures()
	f.acts[fx.NetworkProbe] = func(fakeRun) string { return `{"ok":true,"value":{"reachable":["fetch"]}}` }
	var reached []string
	for _, route := range []string{"this.constructor.constructor", "Function", "indirect eval", "globalThis",
		"({}).constructor.constructor", "Function.prototype.constructor", "console.log.constructor.constructor",
		"input.constructor.constructor", "input.a.constructor.constructor", "scope"} {
		reached = append(reached, route+": fetch")
	}
	list, _ := json.Marshal(reached)
	f.acts[fx.EscapeProbe] = func(fakeRun) string { return `{"ok":true,"value":{"reachable":` + string(list) + `}}` }
	return f
}

var (
	declaresRE = regexp.MustCompile(`^conformance: http://127\.0\.0\.1:\d+ \(spi 1\.0\.0, .+\) declares ` +
		`language=javascript network=none wallClock=hard memory=true cpu=true freshPerRun=true$`)
	caseRE    = regexp.MustCompile(`^(PASS|FAIL|SKIP) ([a-z_]+)(?: \([^)]*\))?(?:: (.*))?$`)
	summaryRE = regexp.MustCompile(`^conformance: (PASS|FAIL)\b.*\((\d+) passed, (\d+) failed, (\d+) skipped\)$`)
)

// verbReport is the verb's output, read back: each case's status and
// reason, in order, and the summary.
type verbReport struct {
	order   []string
	status  map[string]string
	reason  map[string]string
	summary string
}

// parseVerb checks the shape of the verb's output: the declaration line, one
// line per case of the kit in the kit's order, and the summary line, which
// agrees with the cases' lines.
func parseVerb(t *testing.T, out string) verbReport {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	r := verbReport{status: map[string]string{}, reason: map[string]string{}}
	cases := conformance.Cases()
	if len(lines) != len(cases)+2 {
		t.Fatalf("%d lines, want the declaration, %d cases and the summary:\n%s", len(lines), len(cases), out)
	}
	if !declaresRE.MatchString(lines[0]) {
		t.Errorf("first line %q does not say what the service declares, as the wire names it", lines[0])
	}
	counts := map[string]int{}
	for i, c := range cases {
		m := caseRE.FindStringSubmatch(lines[i+1])
		if m == nil || m[2] != c.Name() {
			t.Fatalf("line %d is %q, want the line of case %s:\n%s", i+2, lines[i+1], c.Name(), out)
		}
		r.order = append(r.order, m[2])
		r.status[m[2]], r.reason[m[2]] = m[1], m[3]
		counts[m[1]]++
		if m[1] != "PASS" && m[3] == "" {
			t.Errorf("%s without a reason: %q", m[1], lines[i+1])
		}
	}
	r.summary = lines[len(lines)-1]
	m := summaryRE.FindStringSubmatch(r.summary)
	if m == nil {
		t.Fatalf("last line %q is not the summary", r.summary)
	}
	if got := fmt.Sprintf("%s %s %s", m[2], m[3], m[4]); got != fmt.Sprintf("%d %d %d", counts["PASS"], counts["FAIL"], counts["SKIP"]) {
		t.Errorf("summary %q disagrees with the case lines %v", r.summary, counts)
	}
	if want := map[bool]string{true: "PASS", false: "FAIL"}[counts["FAIL"] == 0 && counts["PASS"] > 0]; m[1] != want {
		t.Errorf("summary %q, want %s", r.summary, want)
	}
	return r
}

func (r verbReport) failed() []string {
	var out []string
	for _, name := range r.order {
		if r.status[name] == "FAIL" {
			out = append(out, name)
		}
	}
	return out
}

// runVerb runs the conformance verb in-process against url and returns its
// exit status and output.
func runVerb(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := conformanceCmd(t.Context(), args, &stdout, &stderr)
	return exitCode(err), stdout.String(), stderr.String()
}

// TestConformanceVerbFailsLyingServices: against a service that keeps every
// promise the verb passes, listing every case; against each lying fake it
// exits 1 and fails exactly the case written for the lie, saying why.
func TestConformanceVerbFailsLyingServices(t *testing.T) {
	everyCaseBut := func(names ...string) []string {
		var out []string
		for _, c := range conformance.Cases() {
			if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+c.Name()+" ") {
				out = append(out, c.Name())
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		fake   func() *fakeService
		failed []string          // the cases that must fail, in order
		says   map[string]string // what the failed cases' lines must say
	}{
		{"keeps every promise", honestFake, nil, nil},
		{"answers 42 to everything", answers42, everyCaseBut("abort_before_call"), map[string]string{
			"echo":          "echo result differs",
			"throw":         "got success, want a scriptError failure",
			"runaway_loop":  "got success, want a limitExceeded failure",
			"fresh_per_run": "lacks run or sawEarlierState",
		}},
		{"never stops a runaway", neverStopsARunaway, []string{"runaway_loop"}, map[string]string{
			"runaway_loop": "did not settle",
		}},
		{"answers a value after its deadline", answersAfterItsDeadline, []string{"no_value_after_deadline"}, map[string]string{
			"no_value_after_deadline": "overran its wall clock of 5ms and answered its value -1",
		}},
		{"leaks state between runs", leaksStateBetweenRuns, []string{"fresh_per_run"}, map[string]string{
			"fresh_per_run": "sequential run 3 saw state left by an earlier run (globalThis",
		}},
		{`declares network "none" but exposes fetch`, exposesFetch, []string{"no_network_no_escape"}, map[string]string{
			"no_network_no_escape": `network probe: the script reached fetch (the backend declares network: "none")`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.fake())
			t.Cleanup(srv.Close)
			code, out, errOut := runVerb(t, "--url", srv.URL, "--backend-grace", "1s")
			t.Logf("conformance --url (%s):\n%s", tc.name, out)
			r := parseVerb(t, out)
			if want := map[bool]int{true: 0, false: 1}[tc.failed == nil]; code != want {
				t.Errorf("exit status %d, want %d; stderr %q", code, want, errOut)
			}
			if got := r.failed(); strings.Join(got, " ") != strings.Join(tc.failed, " ") {
				t.Errorf("failed %v, want %v", got, tc.failed)
			}
			if tc.failed == nil && r.summary != fmt.Sprintf("conformance: PASS (%d passed, 0 failed, 0 skipped)", len(conformance.Cases())) {
				t.Errorf("summary %q", r.summary)
			}
			for name, says := range tc.says {
				if !strings.Contains(r.reason[name], says) {
					t.Errorf("%s: %q does not say %q", name, r.reason[name], says)
				}
			}
		})
	}
}

// TestConformanceVerbSaysWhatTheServiceDid: against a service that answers
// 500 to everything, abort_mid_run says the backend failed, not that the
// runaway ended on its own; against one that never answers, each case fails
// once its own bound has passed, and every case is reported.
func TestConformanceVerbSaysWhatTheServiceDid(t *testing.T) {
	t.Run("answers 500", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(fails500())
		t.Cleanup(srv.Close)
		code, out, _ := runVerb(t, "--url", srv.URL, "--backend-grace", "1s")
		r := parseVerb(t, out)
		if code != 1 {
			t.Errorf("exit status %d, want 1", code)
		}
		if why := r.reason["abort_mid_run"]; r.status["abort_mid_run"] != "FAIL" ||
			!strings.Contains(why, "before it could be aborted: the backend failed: it reported infrastructure") ||
			!strings.Contains(why, "HTTP 500") || strings.Contains(why, "on its own") {
			t.Errorf("abort_mid_run: %s %q", r.status["abort_mid_run"], why)
		}
	})
	t.Run("never answers", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(neverAnswers())
		t.Cleanup(srv.Close)
		start := time.Now()
		code, out, _ := runVerb(t, "--url", srv.URL, "--backend-grace", "1m", "--case-timeout", "1s")
		t.Logf("conformance --case-timeout 1s (never answers), %v:\n%s", time.Since(start).Round(time.Millisecond), out)
		r := parseVerb(t, out)
		if code != 1 {
			t.Errorf("exit status %d, want 1", code)
		}
		for _, name := range []string{"echo", "throw", "rich_value", "fresh_per_run", "composition"} {
			if !strings.HasPrefix(r.reason[name], "the case did not finish within its bound of 1s") {
				t.Errorf("%s: %s %q", name, r.status[name], r.reason[name])
			}
		}
		// a client that honours its context is all these two ask
		for _, name := range []string{"abort_before_call", "abort_mid_run"} {
			if r.status[name] != "PASS" {
				t.Errorf("%s: %s %q", name, r.status[name], r.reason[name])
			}
		}
		if d := time.Since(start); d > time.Minute {
			t.Errorf("the run took %v with a bound of 1s a case", d)
		}
	})
}

// TestConformanceVerbBinaryFails42: the built binary, run as an operator
// runs it, exits non-zero against the server that answers 42 to every POST.
func TestConformanceVerbBinaryFails42(t *testing.T) {
	bin := mustBinary(t)
	srv := httptest.NewServer(answers42())
	t.Cleanup(srv.Close)
	cmd := exec.Command(bin, "conformance", "--url", srv.URL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 {
		t.Fatalf("exit %d (%v), want 1:\n%s%s", code, err, stdout.String(), stderr.String())
	}
	r := parseVerb(t, stdout.String())
	if r.status["echo"] != "FAIL" || !strings.HasPrefix(r.summary, "conformance: FAIL: 11 of 12 cases failed") {
		t.Errorf("output:\n%s", stdout.String())
	}
}

// TestConformanceVerbUsage: without a URL the verb runs nothing and exits 2.
func TestConformanceVerbUsage(t *testing.T) {
	if code, out, _ := runVerb(t); code != 2 || out != "" {
		t.Errorf("no --url: exit %d, output %q", code, out)
	}
	if code, _, _ := runVerb(t, "--url", "http://127.0.0.1:1", "--backend-grace", "0s"); code != 2 {
		t.Errorf("--backend-grace 0: exit %d", code)
	}
	if code, _, _ := runVerb(t, "--url", "http://127.0.0.1:1", "--case-timeout", "0s"); code != 2 {
		t.Errorf("--case-timeout 0: exit %d", code)
	}
}

// TestSummaryLine: a run in which no case ran is a failure, said so.
func TestSummaryLine(t *testing.T) {
	for s, want := range map[conformance.Summary]string{
		{Passed: 11}:                       "conformance: PASS (11 passed, 0 failed, 0 skipped)",
		{Passed: 7, Skipped: 4}:            "conformance: PASS (7 passed, 0 failed, 4 skipped)",
		{Passed: 9, Failed: 1, Skipped: 1}: "conformance: FAIL: 1 of 11 cases failed (9 passed, 1 failed, 1 skipped)",
		{}:                                 "conformance: FAIL: no case ran (0 passed, 0 failed, 0 skipped)",
		{Skipped: 11}:                      "conformance: FAIL: no case ran (0 passed, 0 failed, 11 skipped)",
	} {
		if got := summaryLine(s); got != want {
			t.Errorf("%+v: %q, want %q", s, got, want)
		}
	}
}
