package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/client"
	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance/conformancetest"
	"github.com/loom-plugins/sandbox-cloudrun/internal/ndjson"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/worker"
)

func mustBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds and starts the binary")
	}
	return servicetest.Binary(t)
}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == worker.Verb {
		// this test binary as the worker of an eval verb run in process
		// (TestEvalEngineFault), its engine broken for the scripts that
		// begin with evalFaultMarker
		os.Exit(worker.Main(quickjs.WithTrapForTests(func(script string) bool { return strings.HasPrefix(script, evalFaultMarker) })))
	}
	code := m.Run()
	servicetest.Cleanup()
	os.Exit(code)
}

// startService runs the binary's `serve` with env on a free port.
// postEvaluation sends body to the service's POST /v1/evaluations and
// returns its answer whole, which must be a 200.
func postEvaluation(t *testing.T, url, body string) []byte {
	t.Helper()
	code, answer := postRaw(t, url+"/v1/evaluations", body)
	if code != http.StatusOK {
		t.Fatalf("the server answered %d %s", code, answer)
	}
	return answer
}

func startService(t *testing.T, env ...string) *servicetest.Process {
	t.Helper()
	mustBinary(t)
	return servicetest.Start(t, servicetest.Options{Env: env, StartTimeout: 20 * time.Second})
}

// post sends body and returns the status and the answer, without the usage
// member of an evaluation's 200 answer: what a run used varies from run to
// run, and the tests compare what the script answered.
func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	code, b := postRaw(t, url, body)
	if code == http.StatusOK {
		return code, withoutUsage(t, url, b)
	}
	return code, strings.TrimSpace(string(b))
}

// postRaw sends body as JSON and returns the status and the answer as sent.
func postRaw(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// withoutUsage is an evaluation route's 200 answer without its usage member
// (what the run used varies from run to run), once the answer's decoder
// accepted it whole.
func withoutUsage(t *testing.T, route string, body []byte) string {
	t.Helper()
	rest, _, err := servicetest.SplitUsage(route, body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(rest))
}

// The README's flow: put a script with the binary, evaluate it over HTTP by
// reference, then run the conformance kit through the client against the
// live service, and through the `conformance` subcommand.
func TestEndToEnd(t *testing.T) {
	bin := mustBinary(t)
	store := t.TempDir()
	script := filepath.Join(t.TempDir(), "double.js")
	if err := os.WriteFile(script, []byte("input.n * 2"), 0o644); err != nil {
		t.Fatal(err)
	}
	put := exec.Command(bin, "put", script)
	put.Env = append(os.Environ(), "STORE_URL="+store)
	out, err := put.CombinedOutput()
	if err != nil {
		t.Fatalf("put: %v\n%s", err, out)
	}
	ref := strings.Fields(string(out))[0]
	if !strings.HasPrefix(ref, "sha256:") || !strings.Contains(string(out), "  "+script) {
		t.Fatalf("put printed %q", out)
	}

	s := startService(t, "STORE_URL="+store)
	code, body := post(t, s.URL+"/v1/evaluations", `{"scriptRef":"`+ref+`","input":{"n":21}}`)
	if code != 200 || body != `{"ok":true,"value":42}` {
		t.Fatalf("evaluation: %d %s", code, body)
	}
	code, body = post(t, s.URL+"/v1/evaluations", `{"scriptRef":"sha256:`+strings.Repeat("0", 64)+`"}`)
	if code != 200 || !strings.Contains(body, `"channel":"scriptMissing"`) {
		t.Fatalf("missing script: %d %s", code, body)
	}
	// One line per evaluation, without the input or the value; it is
	// written once the answer has been, so it is waited for.
	logged := s.Logs.Await(30*time.Second, func(l map[string]any) bool {
		return l["message"] == "evaluation" && l["script"] == ref
	})
	if !logged || strings.Contains(s.Logs.String(), `"n":21`) {
		t.Errorf("log line: %s", s.Logs.String())
	}
	// A header block over MAX_HEADER_BYTES is a problem document too, though
	// net/http refuses it before any handler runs.
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/healthz", nil)
	req.Header.Set("X-Padding", strings.Repeat("p", 40<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if p, err := api.DecodeProblem(b); err != nil || resp.StatusCode != 431 || resp.Header.Get("Content-Type") != "application/problem+json" ||
		p.Type != api.ProblemHeaderTooLarge.URI() || p.Limit != "maxHeaderBytes" || p.LimitValue != 32<<10 {
		t.Errorf("40 KiB of headers: %d %q %s (%v)", resp.StatusCode, resp.Header.Get("Content-Type"), b, err)
	}

	t.Run("conformance through the client", func(t *testing.T) {
		c, err := client.Dial(context.Background(), s.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		if c.Capabilities().WallClock != spi.WallClockHard {
			t.Fatalf("the service declares %+v", c.Capabilities())
		}
		conformancetest.Run(t, func(*testing.T) spi.Backend { return c }, conformance.Options{MaxWallClock: c.Limits().MaxWallClock, BackendGrace: time.Minute})
	})
	t.Run("conformance subcommand", func(t *testing.T) {
		// the grace of a loaded machine: composition carries 29 MB of JSON
		cmd := exec.Command(bin, "conformance", "--url", s.URL, "--backend-grace", "1m")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("conformance --url: %v\n%s%s", err, stdout.String(), stderr.String())
		}
		t.Logf("conformance --url:\n%s", stdout.String())
		// every case ran and passed: the service claims every capability
		r := parseVerb(t, stdout.String())
		for _, c := range conformance.Cases() {
			if r.status[c.Name()] != "PASS" {
				t.Errorf("%s: %s %s", c.Name(), r.status[c.Name()], r.reason[c.Name()])
			}
		}
		if want := fmt.Sprintf("conformance: PASS (%d passed, 0 failed, 0 skipped)", len(conformance.Cases())); r.summary != want {
			t.Errorf("summary %q, want %q", r.summary, want)
		}
	})
}

// Credential-free mode: no store, and the SPI route still serves scripts by
// value.
func TestNoStore(t *testing.T) {
	s := startService(t, "STORE_URL=none")
	code, body := post(t, s.URL+"/v1/sandbox/evaluate", `{"script":"input.a + 1","inputJson":"{\"a\":1}"}`)
	if code != 200 || body != `{"ok":true,"value":2}` {
		t.Fatalf("sandbox/evaluate: %d %s", code, body)
	}
	code, body = post(t, s.URL+"/v1/evaluations", `{"scriptRef":"sha256:`+strings.Repeat("a", 64)+`"}`)
	if code != 503 || !strings.Contains(body, "store") {
		t.Fatalf("evaluations without a store: %d %s", code, body)
	}
}

// SIGTERM: the running evaluation finishes (here: hits its wall clock), new
// connections are refused, and the process exits 0 within SHUTDOWN_TIMEOUT.
func TestSIGTERMDrains(t *testing.T) {
	s := startService(t, "STORE_URL=none")
	type result struct {
		code int
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		// A probe below may hold the one slot when the runaway arrives;
		// the runaway is then refused as busy and sent again.
		for {
			resp, err := http.Post(s.URL+"/v1/sandbox/evaluate", "application/json",
				strings.NewReader(`{"script":"while (true) {}","inputJson":"null","limits":{"wallClockMs":1500}}`))
			if err != nil {
				got <- result{err: err}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				time.Sleep(time.Millisecond)
				continue
			}
			rest, _, err := servicetest.SplitUsage("/v1/sandbox/evaluate", b)
			got <- result{code: resp.StatusCode, body: strings.TrimSpace(string(rest)), err: err}
			return
		}
	}()
	// The run is in progress once the one evaluation slot is taken: a
	// second evaluation is then refused at once as busy. One that runs
	// came before the runaway took the slot.
	for deadline := time.Now().Add(time.Minute); ; {
		select {
		case r := <-got:
			t.Fatalf("the runaway was answered before a probe found the slot taken: %+v", r)
		default:
		}
		resp, err := http.Post(s.URL+"/v1/sandbox/evaluate", "application/json", strings.NewReader(`{"script":"1","inputJson":"null"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runaway never took the evaluation slot: the probe still answers %d", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	if err := s.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.code != 200 || r.body != `{"ok":false,"kind":"limit","limit":"wallClock"}` {
		t.Fatalf("in-flight evaluation during drain: %+v", r)
	}
	select {
	case <-s.Exited():
		if err := s.Err(); err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not exit within 10 s of SIGTERM")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("drain took %v", took)
	}
	if _, err := http.Get(s.URL + "/healthz"); err == nil {
		t.Fatal("still accepting after shutdown")
	}
	// an orderly stop, which every scale-down makes, warns of nothing
	lines := s.Logs.Lines("")
	for i, l := range lines {
		if l["message"] != "shutting down: draining" {
			continue
		}
		for _, l := range lines[i:] {
			if l["severity"] != "INFO" && l["severity"] != "DEBUG" {
				t.Errorf("the drain logs %v: %v", l["severity"], l)
			}
		}
		if stopped := s.Logs.Lines("sandbox workers stopped"); len(stopped) != 1 || stopped[0]["severity"] != "INFO" {
			t.Errorf("the workers' stop: %v", stopped)
		}
		return
	}
	t.Errorf("no drain in the log:\n%s", s.Logs)
}

// A run stuck inside one native builtin (never reaching QuickJS's interrupt
// handler) is answered at deadline + grace with the wall-clock outcome; its
// worker is killed, the server process lives on, and the next request on the
// same keep-alive connection is served.
func TestStuckRunKeepsTheInstance(t *testing.T) {
	const grace = 500 * time.Millisecond
	s := startService(t, "STORE_URL=none", "HARD_KILL_GRACE="+grace.String())
	var conns atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conns.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	send := func(body string) (*http.Response, string) {
		t.Helper()
		resp, err := client.Post(s.URL+"/v1/sandbox/evaluate", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return resp, withoutUsage(t, "/v1/sandbox/evaluate", b)
		}
		return resp, strings.TrimSpace(string(b))
	}
	start := time.Now()
	resp, b := send(`{"script":"'a'.repeat(4e6).indexOf('a'.repeat(4e4) + 'b')","inputJson":"null","limits":{"wallClockMs":100,"memoryBytes":16777216}}`)
	took := time.Since(start)
	if b != `{"ok":false,"kind":"limit","limit":"wallClock"}` {
		t.Fatalf("stuck run answered %d %s", resp.StatusCode, b)
	}
	if took < 100*time.Millisecond+grace {
		t.Errorf("answered after %v, before deadline + grace: not the hard kill", took)
	}
	if resp.Close {
		t.Error("the answer closes its connection")
	}
	if _, b := send(`{"script":"1 + 1","inputJson":"null","limits":{"wallClockMs":20000}}`); b != `{"ok":true,"value":2}` {
		t.Fatalf("the next request: %s", b)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for two requests: the stuck run's answer cost its keep-alive connection", n)
	}
	if _, exited := s.Wait(time.Second); exited {
		t.Fatal("the server process ended after a stuck run")
	}
	if !strings.Contains(s.Logs.String(), `"event":"hardKill"`) {
		t.Errorf("no hardKill log line for the stuck run:\n%s", s.Logs.String())
	}
}

// No value after the deadline, as the service is deployed (docs/spi.md,
// "Timing"): with its guests in worker processes, a run that overruns its
// wall clock inside one builtin and ends on its own within the hard kill's
// grace answers the wall-clock limit on both routes and through the eval
// verb, and with a wall clock it fits keeps its value on all three. The
// builtin takes a tenth of a second: the kit's wall clock for it is far
// below that on a fast machine, and a grace of a minute far above it on a
// busy one.
func TestNoValueAfterTheDeadline(t *testing.T) {
	bin := mustBinary(t)
	store := t.TempDir()
	overrun := conformance.JavaScriptFixtures().NativeOverrun
	file := filepath.Join(t.TempDir(), "overrun.js")
	if err := os.WriteFile(file, []byte(overrun), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"STORE_URL=" + store, "HARD_KILL_GRACE=1m", "REQUEST_TIMEOUT=3m"}
	put := exec.Command(bin, "put", file)
	put.Env = append(os.Environ(), env...)
	out, err := put.CombinedOutput()
	if err != nil {
		t.Fatalf("put: %v\n%s", err, out)
	}
	ref := strings.Fields(string(out))[0]
	script, _ := json.Marshal(overrun)
	s := startService(t, env...)

	for _, tc := range []struct {
		wallClock           time.Duration
		evaluation, outcome string
		exit                int
	}{
		{conformance.OverrunWallClock, `{"ok":false,"failure":{"channel":"limitExceeded","kind":"wallClock"}}`, `{"ok":false,"kind":"limit","limit":"wallClock"}`, 3},
		{30 * time.Second, `{"ok":true,"value":-1}`, `{"ok":true,"value":-1}`, 0},
	} {
		limits := fmt.Sprintf(`{"wallClockMs":%d}`, tc.wallClock.Milliseconds())
		if code, body := post(t, s.URL+"/v1/evaluations", `{"scriptRef":"`+ref+`","limits":`+limits+`}`); code != 200 || body != tc.evaluation {
			t.Errorf("/v1/evaluations, wall clock %v: %d %s, want %s", tc.wallClock, code, body, tc.evaluation)
		}
		if code, body := post(t, s.URL+"/v1/sandbox/evaluate", `{"script":`+string(script)+`,"inputJson":"null","limits":`+limits+`}`); code != 200 || body != tc.outcome {
			t.Errorf("/v1/sandbox/evaluate, wall clock %v: %d %s, want %s", tc.wallClock, code, body, tc.outcome)
		}
		cmd := exec.Command(bin, "eval", "-wall-clock", tc.wallClock.String(), file)
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != tc.exit || withoutUsage(t, "/v1/evaluations", stdout.Bytes()) != tc.evaluation {
			t.Errorf("eval -wall-clock %v: exit status %d (%v), printed %s%s; want %d and %s", tc.wallClock, code, err, stdout.String(), stderr.String(), tc.exit, tc.evaluation)
		}
	}
	if strings.Contains(s.Logs.String(), `"event":"hardKill"`) {
		t.Fatalf("a worker was killed: the overrun did not end on its own, and the test proves nothing of it:\n%s", s.Logs.String())
	}
}

func TestEvalCommand(t *testing.T) {
	bin := mustBinary(t)
	script := filepath.Join(t.TempDir(), "s.js")
	_ = os.WriteFile(script, []byte(`console.log("hi"); input.map(x => x * x)`), 0o644)
	cmd := exec.Command(bin, "eval", "-input", "[1,2,3]", "-logs", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("eval: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var out struct {
		OK    bool
		Value []int
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || !out.OK || fmt.Sprint(out.Value) != "[1 4 9]" {
		t.Fatalf("eval printed %s (%v)", stdout.String(), err)
	}
	if stderr.String() != "hi\n" {
		t.Fatalf("logs %q", stderr.String())
	}
	// Flags may come after the script too.
	cmd = exec.Command(bin, "eval", script, "-input", "[4]", "-logs")
	stdout.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || withoutUsage(t, "/v1/evaluations", stdout.Bytes()) != `{"ok":true,"value":[16]}` || stderr.String() != "hi\n" {
		t.Fatalf("flags after the script: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	_ = os.WriteFile(script, []byte(`throw new TypeError("bad")`), 0o644)
	cmd = exec.Command(bin, "eval", script)
	b, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(b), `"channel":"scriptError"`) {
		t.Fatalf("typed failure: %v %s", err, b)
	}
	// The input is held to the service's JSON policy: a key twice is refused
	// before anything runs, two lone surrogates are two keys.
	cmd = exec.Command(bin, "eval", "-input", `{"a":1,"a":2}`, script)
	b, err = cmd.CombinedOutput()
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(b), `has the key "a" twice`) {
		t.Fatalf("duplicate key: %v %s", err, b)
	}
	_ = os.WriteFile(script, []byte(`Object.keys(input).length`), 0o644)
	if b, err := exec.Command(bin, "eval", "-input", `{"\ud800":1,"\ud801":2}`, script).Output(); err != nil || !strings.Contains(string(b), `"value":2`) {
		t.Fatalf("lone surrogate keys: %v %s", err, b)
	}
	// The service's bounds hold: a script file over MAX_SCRIPT_BYTES is the
	// typed RangeError the service answers, and nothing runs.
	_ = os.WriteFile(script, []byte("1;"+strings.Repeat(" ", 63)), 0o644)
	cmd = exec.Command(bin, "eval", script)
	cmd.Env = append(os.Environ(), "MAX_SCRIPT_BYTES=64")
	b, err = cmd.Output()
	if !errors.As(err, &exit) || exit.ExitCode() != 3 ||
		!strings.Contains(string(b), `{"channel":"scriptError","name":"RangeError","message":"the script is 65 bytes, over the service's maxScriptBytes of 64"}`) {
		t.Fatalf("a script over MAX_SCRIPT_BYTES: %v %s", err, b)
	}
}

// evalFaultMarker begins the scripts whose runs break the engine of this
// test binary's workers.
const evalFaultMarker = "/* engine fault */"

// The eval verb says when its run was an engine fault, as the service's
// ERROR line does: "engine fault", the script's hash and the trap's text,
// on standard error, before the infrastructure failure it answers with exit
// status 1. Run in process, with real workers whose engine traps.
func TestEvalEngineFault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	src := evalFaultMarker + " input.n + 1"
	script := filepath.Join(t.TempDir(), "fault.js")
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"eval", "-input", `{"n":1}`, script}, nil, &stdout, &stderr)
	want := `eval: engine fault: the script ` + contentref.RefOf([]byte(src)).String() +
		` broke the engine from inside: wasm error: unreachable (docs/security.md, "Engine faults")` + "\n"
	if exitCode(err) != 1 || stdout.Len() != 0 || stderr.String() != want ||
		!strings.Contains(err.Error(), "quickjs: engine failed: wasm error: unreachable") {
		t.Fatalf("exit status %d (%v)\nstdout %q\nstderr %q, want %q", exitCode(err), err, stdout.String(), stderr.String(), want)
	}
	// a run of another script through the same workers says nothing of it
	if err := os.WriteFile(script, []byte("input.n + 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	err = run(context.Background(), []string{"eval", "-input", `{"n":1}`, script}, nil, &stdout, &stderr)
	if err != nil || stderr.Len() != 0 || withoutUsage(t, "/v1/evaluations", stdout.Bytes()) != `{"ok":true,"value":2}` {
		t.Fatalf("an ordinary run: %v\nstdout %q\nstderr %q", err, stdout.String(), stderr.String())
	}
}

// The eval verb answers with the bytes POST /v1/evaluations sends for the
// same script and input, the newline included: the value as its JSON
// round-trip, lone surrogates and characters JSON need not escape as the
// server writes them, and each typed failure with its members; a script by
// file or by reference alike.
func TestEvalAnswersAsTheServer(t *testing.T) {
	bin := mustBinary(t)
	store := t.TempDir()
	dir := t.TempDir()
	cases := []struct{ name, script, input, memory string }{
		{"value", `({b: input.x, a: [1.0, "<&>\u2028", 1e400, "\ud800"], c: -0})`, `{"x":"é😀"}`, "1048576"},
		{"scriptError", `throw new TypeError("bad <thing>")`, `null`, "1048576"},
		{"non-Error-throw", `throw "\ud83d"`, `null`, "1048576"},
		{"limitExceeded-memory", `"x".repeat(2 << 20)`, `null`, "1048576"},
		{"limitExceeded-output", `"x".repeat(1100000)`, `null`, "16777216"},
		{"inputTooLarge", `1`, `"` + strings.Repeat("ab", 600<<10) + `"`, "1048576"},
	}
	files := make([]string, len(cases))
	for i, c := range cases {
		files[i] = filepath.Join(dir, c.name+".js")
		if err := os.WriteFile(files[i], []byte(c.script), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put := exec.Command(bin, append([]string{"put"}, files...)...)
	put.Env = append(os.Environ(), "STORE_URL="+store)
	out, err := put.CombinedOutput()
	if err != nil {
		t.Fatalf("put: %v\n%s", err, out)
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		refs[f[1]] = f[0]
	}
	s := startService(t, "STORE_URL="+store)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			server := postEvaluation(t, s.URL, `{"scriptRef":"`+refs[files[i]]+`","input":`+c.input+`,"limits":{"memoryBytes":`+c.memory+`}}`)
			for _, script := range []string{files[i], refs[files[i]]} {
				cmd := exec.Command(bin, "eval", "-memory", c.memory, "-input-file", "-", script)
				cmd.Env = append(os.Environ(), "STORE_URL="+store)
				cmd.Stdin = strings.NewReader(c.input)
				eval, err := cmd.Output()
				var exit *exec.ExitError
				if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) {
					t.Fatalf("eval %s: %v", script, err)
				}
				// the same answer, but for what each run used
				if withoutUsage(t, "/v1/evaluations", eval) != withoutUsage(t, "/v1/evaluations", server) {
					t.Errorf("eval %s printed\n%q\nthe server answered\n%q", filepath.Base(script), eval, server)
				}
			}
		})
	}
}

// The eval verb's limits are the request's, answered as the service
// configured by the same environment answers them: left out, the
// configuration's defaults; above its maxima, run at them (and said on
// standard error); a memory limit below the engine's least, the memory
// limit. A -wall-clock of 100h with MAX_WALL_CLOCK=1s ends in a second, as
// the route's does, and a -memory over the engine's own maximum runs at
// MAX_MEMORY_BYTES rather than fail the configuration.
func TestEvalLimitsAsTheServer(t *testing.T) {
	bin := mustBinary(t)
	env := []string{"STORE_URL=" + t.TempDir(), "DEFAULT_WALL_CLOCK=500ms", "MAX_WALL_CLOCK=1s",
		"DEFAULT_MEMORY_BYTES=1048576", "MAX_MEMORY_BYTES=2097152"}
	const (
		loop  = `for (;;) {}`
		alloc = `"x".repeat(3 << 20).length` // over 2 MiB
		small = `"x".repeat(1 << 20).length` // over 1 MiB, within 2
	)
	cases := []struct {
		name, script, limits string
		flags                []string
		stderr               string
	}{
		{"wall clock above the maximum", loop, `{"wallClockMs":360000000}`, []string{"-wall-clock", "100h"},
			"eval: -wall-clock 100h0m0s is above MAX_WALL_CLOCK: the run gets 1s, as the service's would\n"},
		{"memory above the engine's maximum", alloc, `{"memoryBytes":3000000000}`, []string{"-memory", "3000000000"},
			"eval: -memory 3000000000 is above MAX_MEMORY_BYTES: the run gets 2097152, as the service's would\n"},
		{"memory at the maximum", small, `{"memoryBytes":2097152}`, []string{"-memory", "2097152"}, ""},
		{"memory below the engine's least", `1`, `{"memoryBytes":4096}`, []string{"-memory", "4096"}, ""},
		{"the default memory", small, `{}`, nil, ""},
		{"the default wall clock", loop, `{}`, nil, ""},
	}
	// each script by file, for eval, and by reference, for the route
	refs := map[string]string{}
	files := map[string]string{}
	for i, script := range []string{loop, alloc, small, `1`} {
		files[script] = filepath.Join(t.TempDir(), fmt.Sprintf("s%d.js", i))
		if err := os.WriteFile(files[script], []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		put := exec.Command(bin, "put", files[script])
		put.Env = append(os.Environ(), env...)
		out, err := put.CombinedOutput()
		if err != nil {
			t.Fatalf("put: %v\n%s", err, out)
		}
		refs[script] = strings.Fields(string(out))[0]
	}
	s := startService(t, env...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			server := postEvaluation(t, s.URL, `{"scriptRef":"`+refs[tc.script]+`","input":null,"limits":`+tc.limits+`}`)
			file := files[tc.script]
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append(append([]string{"eval"}, tc.flags...), file)...)
			cmd.Env = append(os.Environ(), env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if ctx.Err() != nil || err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) {
				t.Fatalf("eval %q: %v (%v)\n%s%s", tc.flags, err, ctx.Err(), stdout.String(), stderr.String())
			}
			evalRest, evalUsage, err := servicetest.SplitUsage("/v1/evaluations", stdout.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			serverRest, serverUsage, err := servicetest.SplitUsage("/v1/evaluations", server)
			if err != nil {
				t.Fatal(err)
			}
			if string(evalRest) != string(serverRest) || evalUsage.MemoryLimitBytes != serverUsage.MemoryLimitBytes {
				t.Errorf("eval %q printed\n%s\nthe server answered\n%s", tc.flags, stdout.Bytes(), server)
			}
			if stderr.String() != tc.stderr {
				t.Errorf("eval %q said %q on standard error, want %q", tc.flags, stderr.String(), tc.stderr)
			}
		})
	}
}

// The eval verb's replayable run takes its default seed from the input's
// value, as the routes do: the spellings of one input draw one sequence,
// another input another.
func TestEvalDefaultSeedIsTheInputsValue(t *testing.T) {
	bin := mustBinary(t)
	script := filepath.Join(t.TempDir(), "random.js")
	if err := os.WriteFile(script, []byte("[Math.random(), Math.random()]"), 0o644); err != nil {
		t.Fatal(err)
	}
	draw := func(input string) string {
		t.Helper()
		out, err := exec.Command(bin, "eval", "-deterministic", "-input", input, script).Output()
		if err != nil {
			t.Fatalf("eval -input %s: %v", input, err)
		}
		return withoutUsage(t, "/v1/evaluations", out)
	}
	want := draw(`{"a":1}`)
	for _, in := range []string{`{ "a": 1 }`, `{"a":1.0}`, `{"a":10e-1}`} {
		if got := draw(in); got != want {
			t.Errorf("eval -input %s drew %s, {\"a\":1} drew %s", in, got, want)
		}
	}
	if got := draw(`{"a":2}`); got == want {
		t.Errorf(`eval -input {"a":2} drew what {"a":1} drew: %s`, got)
	}
}

// A verb's flags may come before, between and after its positional
// arguments; "--" ends them.
func TestVerbFlags(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		positional string
		input      string
		logs       bool
	}{
		{[]string{"s.js"}, "s.js", "null", false},
		{[]string{"-input", "[1]", "s.js"}, "s.js", "[1]", false},
		{[]string{"s.js", "-input", "[1]", "-logs"}, "s.js", "[1]", true},
		{[]string{"-logs", "s.js", "--input=2"}, "s.js", "2", true},
		{[]string{"a.js", "-logs", "b.js"}, "a.js b.js", "null", true},
		{[]string{"-input", "3", "--", "-logs", "s.js"}, "-logs s.js", "3", false},
		{[]string{"-", "-input", "4"}, "-", "4", false},
	} {
		fs := newFlagSet("eval", evalUsage)
		input := fs.String("input", "null", "")
		logs := fs.Bool("logs", false, "")
		var stdout, stderr bytes.Buffer
		got, err := fs.parse(tc.args, &stdout, &stderr)
		if err != nil || strings.Join(got, " ") != tc.positional || *input != tc.input || *logs != tc.logs {
			t.Errorf("%q: positional %q, -input %q, -logs %v, err %v; want %q, %q, %v",
				tc.args, got, *input, *logs, err, tc.positional, tc.input, tc.logs)
		}
		if stdout.Len()+stderr.Len() > 0 {
			t.Errorf("%q printed %q %q", tc.args, stdout.String(), stderr.String())
		}
	}
}

// Every verb answers -h, -help and --help with its usage, with its exit
// statuses, on standard output, and succeeds, doing nothing else (serve does
// not serve, put opens no file, compile-cache creates no directory); a wrong
// flag, anywhere, is a usage error (status 2) that says which flag, after
// the synopsis on standard error.
func TestVerbHelpAndUsageErrors(t *testing.T) {
	withFlags := map[string]bool{"eval": true, "conformance": true, "bulk": true, "bulk-check": true}
	for _, verb := range []string{"eval", "bulk", "bulk-check", "conformance", "serve", "put", "compile-cache", "version"} {
		for _, help := range [][]string{{"-h"}, {"-help"}, {"--help"}, {"x.js", "--help"}} {
			var stdout, stderr bytes.Buffer
			args := append([]string{verb}, help...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := run(ctx, args, nil, &stdout, &stderr)
			cancel()
			if err != nil || exitCode(err) != 0 || stderr.Len() != 0 {
				t.Errorf("%q: %v (exit %d), stderr %q", args, err, exitCode(err), stderr.String())
			}
			want := []string{"usage: sandbox-cloudrun ", "\nexit status:\n  0  ", "\n  2  a usage error"}
			if withFlags[verb] {
				want = append(want, "\nflags:\n")
			}
			for _, w := range want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("%q: the usage lacks %q:\n%s", args, w, stdout.String())
				}
			}
			for _, made := range help {
				if _, err := os.Stat(made); err == nil {
					os.RemoveAll(made)
					t.Errorf("%q created %s", args, made)
				}
			}
		}
		bad := [][]string{{verb, "-bogus"}, {verb, "x.js", "--bogus=1"}}
		if withFlags[verb] {
			bad = append(bad, []string{verb, "-timeout"})
		}
		for _, args := range bad {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, nil, &stdout, &stderr)
			if exitCode(err) != 2 || stdout.Len() != 0 || !strings.Contains(err.Error(), "flag") ||
				!strings.HasPrefix(stderr.String(), "usage: sandbox-cloudrun "+verb) {
				t.Errorf("%q: %v (exit %d), stdout %q, stderr %q", args, err, exitCode(err), stdout.String(), stderr.String())
			}
			// the pointer to -h promises flags only of a verb that has them
			pointer := "-h prints the usage and the exit statuses)"
			if withFlags[verb] {
				pointer = "-h prints the flags and the exit statuses)"
			}
			if !strings.Contains(stderr.String(), "(sandbox-cloudrun "+verb+" "+pointer) {
				t.Errorf("%q: stderr %q does not say %q", args, stderr.String(), pointer)
			}
		}
	}
	// eval's limits out of the request's range: named, with the range
	for _, tc := range []struct{ args, want []string }{
		{[]string{"x.js", "-memory", "0"}, []string{"-memory must be a positive whole number of bytes", "got 0"}},
		{[]string{"-memory", "-1", "x.js"}, []string{"-memory must be a positive whole number of bytes", "got -1"}},
		{[]string{"-wall-clock", "0s", "x.js"}, []string{"-wall-clock must be a positive whole number of milliseconds", "got 0s"}},
		{[]string{"-wall-clock", "1500us", "x.js"}, []string{"-wall-clock must be a positive whole number of milliseconds", "got 1.5ms"}},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"eval"}, tc.args...), nil, &stdout, &stderr)
		if exitCode(err) != 2 || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), "usage: sandbox-cloudrun eval") {
			t.Errorf("eval %q: %v (exit %d), stdout %q, stderr %q", tc.args, err, exitCode(err), stdout.String(), stderr.String())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("eval %q: %v does not say %q", tc.args, err, w)
			}
		}
	}
	// a duration without its unit says so, as the configuration does
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"eval", "-wall-clock", "5000", "x.js"}, nil, &stdout, &stderr)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "a number alone has no unit") {
		t.Errorf("eval -wall-clock 5000: %v (exit %d)", err, exitCode(err))
	}
	// a service URL without its scheme is the caller's mistake
	err = run(context.Background(), []string{"conformance", "--url", "localhost:8080"}, nil, &stdout, &stderr)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "http:// or https://") {
		t.Errorf("conformance --url localhost:8080: %v (exit %d)", err, exitCode(err))
	}
	// the exit statuses of eval are documented where an operator looks
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(readme)), " ")
	for _, line := range []string{"`0` the value", "`3` a typed failure", "`2` a usage error", "`1` no answer"} {
		if !strings.Contains(text, line) {
			t.Errorf("README.md does not document eval's exit status %s", line)
		}
	}
}

func TestVersionAndUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"version"}, nil, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "engine quickjs "+quickjs.EngineVersion+"\n") {
		t.Fatalf("version: %s", out.String())
	}
	err := run(context.Background(), []string{"frobnicate"}, nil, &out, &errOut)
	var ec exitCoder
	if !errors.As(err, &ec) || ec.ExitCode() != 2 {
		t.Fatalf("unknown command: %v", err)
	}
}

// With AUTH_AUDIENCE set, /v1/ routes need a verified Google ID token; the
// probes stay open for the platform.
func TestAuthRequired(t *testing.T) {
	s := startService(t, "STORE_URL=none", "AUTH_AUDIENCE=https://sandbox.example", "AUTH_ALLOWED_CALLERS=loom@example.iam.gserviceaccount.com")
	code, body := post(t, s.URL+"/v1/sandbox/evaluate", `{"script":"1","inputJson":"null"}`)
	if code != 401 || !strings.Contains(body, "application/problem+json") && !strings.Contains(body, `"status":401`) {
		t.Fatalf("no token: %d %s", code, body)
	}
	req, _ := http.NewRequest("POST", s.URL+"/v1/sandbox/evaluate", strings.NewReader(`{"script":"1","inputJson":"null"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Basic dXNlcjpwYXNz")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("basic auth: %d", resp.StatusCode)
	}
	if resp, err := http.Get(s.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz behind auth: %v %v", resp, err)
	}
}

// The workers lock themselves down whatever the memory maximum: their
// address-space limit leaves room for the Go runtime's reservations, which
// do not shrink with the maximum, and for every linear memory the engine can
// hold. A worker that cannot lock down refuses to start, and the service is
// never ready.
func TestWorkersLockDownAtAnyMemoryMaximum(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the lock-down is Linux's")
	}
	for max, run := range map[string]string{"1048576": "1048576", "2147483648": "16777216"} {
		t.Run(max, func(t *testing.T) {
			s := startService(t, "STORE_URL=none", "MAX_MEMORY_BYTES="+max, "DEFAULT_MEMORY_BYTES=1048576")
			resp, err := http.Get(s.URL + "/v1/capabilities")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), `"isolation":{"process":true,"emptyEnvironment":true,"noNewPrivs":true,"resourceLimits":true,"seccomp":true}`) {
				t.Fatalf("capabilities: %s", b)
			}
			_, body := post(t, s.URL+"/v1/sandbox/evaluate", `{"script":"let a = []; for (;;) a.push(new Array(1e5).fill(1))","inputJson":"null","limits":{"wallClockMs":20000,"memoryBytes":`+run+`}}`)
			if !strings.Contains(body, `{"ok":false,"kind":"limit","limit":"memory"}`) {
				t.Fatalf("an allocation bomb: %s", body)
			}
		})
	}
}

// Dependencies point inward: the SPI that backend authors import (spi) is a
// leaf that knows nothing of this module but its JSON policy; the effect,
// the Go client, the wire format, the content reference and the JSON policy
// link no store, no GCS, no gRPC and no engine, so that a program using the
// client stays small; the stores but GCS's (contentstore: directory, memory,
// cache) link no GCS and no gRPC either, which only contentstore/gcsstore
// does; and the engine, the worker, the client and the benchmarks speak the
// SPI, never the effect that decides what an outcome means.
func TestDependenciesPointInward(t *testing.T) {
	const mod = "github.com/loom-plugins/sandbox-cloudrun/"
	gcs := []string{"cloud.google.com/", "google.golang.org/grpc", "google.golang.org/api", mod + "contentstore/gcsstore", mod + "objects/gcsobjects"}
	engine := []string{"github.com/tetratelabs/wazero", mod + "handler", mod + "quickjs", mod + "worker"}
	spi := append(append([]string{mod + "contentstore"}, gcs...), engine...)
	// a client links the wire format and the SPI, never the package that
	// owns the guarantees, the HTTP layer, the engine, the stores or the
	// composition root that wires them
	wire := append([]string{mod + "effect", mod + "service"}, spi...)
	for pkg, forbidden := range map[string][]string{
		"./spi":               append([]string{mod + "api", mod + "client", mod + "telemetry"}, wire...),
		"./effect":            spi,
		"./client":            wire,
		"./contentref":        spi,
		"./internal/jsontext": spi,
		"./api":               wire,
		"./contentstore":      append(gcs, engine...),
		"./objects":           append(gcs, engine...),
		// the HTTP layer knows the effect and the wire format, not the store
		// or the engine the effect runs (telemetry's exporter links gRPC)
		"./handler": {mod + "contentstore", "github.com/tetratelabs/wazero", mod + "quickjs", mod + "worker"},
		// the answer to one input, which the handler, eval -inputs and
		// bulk stand on, stands on none of them
		"./answer": append([]string{mod + "service", mod + "bulk"}, spi...),
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
	// only the composition root imports the HTTP layer: the verbs and bulk
	// answer their inputs with package answer, below it
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if f[0] != mod+"service" && slices.Contains(f[1:], mod+"handler") {
			t.Errorf("%s imports %s: only the composition root, %s, does", f[0], mod+"handler", mod+"service")
		}
	}
	// internal/ holds leaves: a package every other may use imports nothing
	// of this module outside internal/ (the composition root, which
	// imports everything, is service/)
	out, err = exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}`, "./internal/...").Output()
	if err != nil {
		t.Fatalf("go list -deps ./internal/...: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if rest, ours := strings.CutPrefix(dep, mod); ours && !strings.HasPrefix(rest, "internal/") {
			t.Errorf("./internal/... depends on %s: internal/ holds leaves, which import nothing of this module outside it", dep)
		}
	}
	for _, pkg := range []string{"./quickjs/...", "./worker/...", "./client/...", "./bench/..."} {
		out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			for _, imp := range f[1:] {
				if imp == mod+"effect" {
					t.Errorf("%s imports %s: an engine, a client or a benchmark speaks the SPI (%s)", f[0], imp, mod+"spi")
				}
			}
		}
	}
}

// The server's Go code gets one processor per evaluation at once unless
// GOMAXPROCS says otherwise, and its start-up log says which and why.
func TestServerProcessors(t *testing.T) {
	cases := []struct {
		name   string
		env    []string
		want   func(n int) bool
		source string
	}{
		{"one evaluation at a time", []string{"GOMAXPROCS=", "MAX_CONCURRENT_EVALUATIONS=1"},
			func(n int) bool { return n == 1 }, ""},
		{"the operator's GOMAXPROCS wins", []string{"GOMAXPROCS=2", "MAX_CONCURRENT_EVALUATIONS=1"},
			func(n int) bool { return n == 2 }, "GOMAXPROCS"},
		{"as many evaluations as cores", []string{"GOMAXPROCS=", fmt.Sprintf("MAX_CONCURRENT_EVALUATIONS=%d", runtime.NumCPU())},
			func(n int) bool { return n >= 1 && n <= runtime.NumCPU() }, "the Go runtime"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := startService(t, c.env...)
			var line struct {
				Msg        string `json:"message"`
				GOMAXPROCS int    `json:"GOMAXPROCS"`
				Source     string `json:"source"`
			}
			found := false
			for _, l := range strings.Split(s.Logs.String(), "\n") {
				if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "processors" {
					found = true
					break
				}
			}
			if !found {
				t.Fatalf("no processors line in the start-up log:\n%s", s.Logs.String())
			}
			if !c.want(line.GOMAXPROCS) || (c.source != "" && line.Source != c.source) {
				t.Errorf("processors: GOMAXPROCS %d from %q", line.GOMAXPROCS, line.Source)
			}
			if c.source == "" && runtime.NumCPU() > 1 && line.Source != "MAX_CONCURRENT_EVALUATIONS" {
				t.Errorf("processors on %d CPUs: source %q, want MAX_CONCURRENT_EVALUATIONS", runtime.NumCPU(), line.Source)
			}
		})
	}
}

// eval -inputs prints the lines POST /v1/evaluations:batch answers for the
// same inputs, but for what each run used, and its status is the worst of
// the lines'; an inputs file it cannot read is a usage error naming the
// line, and nothing runs.
func TestEvalInputsAnswersAsTheBatchRoute(t *testing.T) {
	bin := mustBinary(t)
	store := t.TempDir()
	file := filepath.Join(t.TempDir(), "s.js")
	if err := os.WriteFile(file, []byte(`if (input.fail) throw new RangeError("no"); globalThis.n = (globalThis.n || 0) + 1; ({n: globalThis.n, x: input.x})`), 0o644); err != nil {
		t.Fatal(err)
	}
	put := exec.Command(bin, "put", file)
	put.Env = append(os.Environ(), "STORE_URL="+store)
	out, err := put.CombinedOutput()
	if err != nil {
		t.Fatalf("put: %v\n%s", err, out)
	}
	ref := strings.Fields(string(out))[0]
	s := startService(t, "STORE_URL="+store)
	// a line is one input, whatever its spacing
	inputs := []string{`{"x": 1}`, `{"x":"\u00e9"}`, `{"fail":true}`, `[ ]`}
	code, route := postRaw(t, s.URL+"/v1/evaluations:batch", `{"scriptRef":"`+ref+`","inputs":[`+strings.Join(inputs, ",")+`],"captureLogs":true}`)
	if code != http.StatusOK {
		t.Fatalf("the route answered %d %s", code, route)
	}
	lines := func(b []byte) []string {
		var out []string
		for l := range strings.Lines(string(b)) {
			if strings.HasPrefix(l, `{"summary":`) {
				out = append(out, "summary") // its usage is what the runs used
				continue
			}
			out = append(out, withoutUsage(t, "/v1/evaluations", []byte(l)))
		}
		return out
	}
	run := func(stdin string, args ...string) ([]byte, int) {
		cmd := exec.Command(bin, append([]string{"eval"}, args...)...)
		cmd.Env = append(os.Environ(), "STORE_URL="+store)
		cmd.Stdin = strings.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("eval %v: %v", args, err)
		}
		if exit != nil && exit.ExitCode() == 2 {
			return stderr.Bytes(), 2
		}
		return out, cmd.ProcessState.ExitCode()
	}
	for _, script := range []string{ref, file} {
		got, code := run(strings.Join(inputs, "\n")+"\n", "-logs", "-inputs", "-", script)
		if code != 3 || fmt.Sprint(lines(got)) != fmt.Sprint(lines(route)) {
			t.Errorf("eval -inputs %s: status %d, printed\n%s\nthe route answered\n%s", filepath.Base(script), code, got, route)
		}
	}
	if got, code := run("1\n2", "-inputs", "-", ref); code != 0 || len(lines(got)) != 3 {
		t.Errorf("two inputs without a final newline: status %d\n%s", code, got)
	}
	for stdin, want := range map[string]string{
		"1\n\n2\n": "-:2 (input 1): the line is blank",
		"1\n{\n":   "-:2 (input 1): the line is not one JSON value",
		// a file that is one JSON array, the likeliest mistake
		"[\n  {\"x\": 1},\n  {\"x\": 2}\n]\n": "-:1 (input 0): the line is not one JSON value: it ends early; expected a value at byte 1; the inputs are one JSON value a line (NDJSON), and this looks like a part of one JSON array: if the file is one array of inputs, jq -c '.[]' file.json > file.ndjson writes its elements one a line",
	} {
		if got, code := run(stdin, "-inputs", "-", ref); code != 2 || !strings.Contains(string(got), want) {
			t.Errorf("inputs %q: status %d, %s", stdin, code, got)
		}
	}
	// an array on one line is one input, as NDJSON has it, with a note
	cmd := exec.Command(bin, "eval", "-inputs", "-", ref)
	cmd.Env = append(os.Environ(), "STORE_URL="+store)
	cmd.Stdin = strings.NewReader(`[{"x":1},{"x":2}]`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil || len(lines(out)) != 2 || !strings.Contains(stderr.String(), "standard input is one line, one JSON array, so it is one input; if its elements are the inputs, jq -c '.[]'") {
		t.Errorf("a one-line array: %v, printed\n%s%s", err, out, &stderr)
	}
	if got, code := run("1\n", "-inputs", "-", "-input", "2", ref); code != 2 || !strings.Contains(string(got), "without -input") {
		t.Errorf("-inputs with -input: status %d, %s", code, got)
	}

	// each input is an evaluation line on standard error, as on the
	// route, with its index and the file and line it was read from
	inputsFile := filepath.Join(t.TempDir(), "in.ndjson")
	if err := os.WriteFile(inputsFile, []byte(strings.Join(inputs, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{inputsFile, "-"} {
		cmd := exec.Command(bin, "eval", "-inputs", name, ref)
		cmd.Env = append(os.Environ(), "STORE_URL="+store)
		cmd.Stdin = strings.NewReader(strings.Join(inputs, "\n"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, _ := cmd.Output()
		if n := len(lines(stdout)); n != len(inputs)+1 {
			t.Errorf("eval -inputs %s printed %d lines:\n%s", name, n, stdout)
		}
		logged := evaluationLines(t, stderr.String())
		if len(logged) != len(inputs) {
			t.Fatalf("eval -inputs %s logged %d evaluation lines for %d inputs:\n%s", name, len(logged), len(inputs), stderr.String())
		}
		for i, l := range logged {
			outcome := "ok"
			if i == 2 {
				outcome = "scriptError"
			}
			if l["index"] != float64(i) || l["source"] != fmt.Sprintf("%s:%d", name, i+1) || l["route"] != "eval" || l["script"] != ref || l["outcome"] != outcome {
				t.Errorf("eval -inputs %s: input %d's evaluation line: %v", name, i, l)
			}
		}
	}
}

// More inputs than one batch holds are refused before anything runs, as
// a usage error that says the ways on: MAX_BATCH_ITEMS, or bulk.
func TestEvalInputsOverMaxBatchItems(t *testing.T) {
	bin := mustBinary(t)
	file := filepath.Join(t.TempDir(), "s.js")
	if err := os.WriteFile(file, []byte("input"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "eval", "-inputs", "-", file)
	cmd.Env = append(os.Environ(), "MAX_BATCH_ITEMS=2", "LOG_LEVEL=info")
	cmd.Stdin = strings.NewReader("1\n2\n3\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	for _, want := range []string{"-inputs has 3 inputs, more than MAX_BATCH_ITEMS=2", "raise MAX_BATCH_ITEMS", "the bulk verb"} {
		if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(stderr.String(), want) {
			t.Errorf("3 inputs over MAX_BATCH_ITEMS=2: status %d, %s; want 2 saying %q", cmd.ProcessState.ExitCode(), stderr.String(), want)
		}
	}
	if len(out) != 0 || strings.Contains(stderr.String(), "engine warm") {
		t.Errorf("something ran: %s\n%s", out, stderr.String())
	}
}

// eval -inputs reads no more than its bound: the byte past it is an error
// saying so, naming the line it was in, and nothing before it is kept.
func TestEvalInputsBound(t *testing.T) {
	over := errors.New("over the bound")
	for _, tc := range []struct {
		data string
		n    int64
		want int // inputs read, or -1 for the error
	}{
		{"1\n2\n3\n", 6, 3},
		{"1\n2\n3", 5, 3},
		{"1\n2\n3\n", 5, -1},
		{"1\n22\n3\n", 3, -1},
	} {
		got, err := ndjson.ReadAll(&cappedReader{r: iotest.OneByteReader(strings.NewReader(tc.data)), n: tc.n, over: over}, "f", ndjson.Limit{})
		switch {
		case tc.want < 0 && (!errors.Is(err, over) || !strings.Contains(err.Error(), "reading f:")):
			t.Errorf("%q within %d bytes: %v, want the bound's error naming the line", tc.data, tc.n, err)
		case tc.want >= 0 && (err != nil || len(got) != tc.want):
			t.Errorf("%q within %d bytes: %d inputs, %v", tc.data, tc.n, len(got), err)
		}
	}
}
