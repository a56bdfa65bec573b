// Package servicetest builds the service's binary and runs it on loopback for
// the end-to-end tests of several packages (the module root, security,
// reliability): the real binary, exactly what the Dockerfile ships, started
// with `serve` on a free port, its log kept, killed when the test ends.
package servicetest

import (
	"bufio"
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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// build is the binary of one test process: built on first use, removed by
// Cleanup.
type build struct {
	once sync.Once
	dir  string // holds the binary and the children's compilation cache
	bin  string
	err  error
}

// the test process's one build (tests of a package share it; the go command
// runs each package's tests in a process of its own)
var theBuild build

// Binary builds the module's main package once per test process, pure Go
// (CGO_ENABLED=0) as the image's is, and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	theBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "sandbox-cloudrun-test-")
		if err != nil {
			theBuild.err = err
			return
		}
		bin := filepath.Join(dir, "sandbox-cloudrun")
		// as the Dockerfile builds it: the tests run the binary that ships,
		// and share the build cache of internal/lockdown's pure-Go build
		args := []string{"build", "-o", bin}
		if quickjs.CheckedHeap {
			// a test process of the checked engine runs it in its
			// children too
			args = append(args, "-tags", "checkedengine")
		}
		cmd := exec.Command("go", append(args, "github.com/loom-plugins/sandbox-cloudrun")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			_ = os.RemoveAll(dir)
			theBuild.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		theBuild.dir, theBuild.bin = dir, bin
	})
	if theBuild.err != nil {
		t.Fatal(theBuild.err)
	}
	return theBuild.bin
}

// CacheDir is wazero's compilation cache that Start gives every child of the
// test process, so that only the first one compiles the engine.
func CacheDir(t testing.TB) string {
	t.Helper()
	Binary(t)
	return filepath.Join(theBuild.dir, "wazero-cache")
}

// Cleanup removes the binary and the cache; call it from TestMain once m.Run
// has returned (every test has ended, so no build is in progress).
func Cleanup() {
	if theBuild.dir != "" {
		_ = os.RemoveAll(theBuild.dir)
	}
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// Options shape a child.
type Options struct {
	// Env is added to the test's environment, after PORT, OTEL_EXPORTER=none
	// and COMPILATION_CACHE_DIR (a later entry of the same name wins).
	Env []string
	// Probe is the path polled until it answers 200: "/readyz" by default;
	// "/healthz" for a service that is meant never to be ready.
	Probe string
	// StartTimeout bounds the wait for the probe (default 30 s).
	StartTimeout time.Duration
	// Client sends the probe (default: a client of its own).
	Client *http.Client
}

// Process is the binary running `serve` on a loopback port.
type Process struct {
	URL  string
	Cmd  *exec.Cmd
	Logs *Logs

	exited chan struct{} // closed when the process has been waited for
	err    error         // its exit, valid once exited is closed
}

// Start starts the binary with `serve` and waits until the probe answers 200.
// The process is killed when the test ends; its log is printed if the test
// failed.
func Start(t testing.TB, o Options) *Process {
	t.Helper()
	bin := Binary(t)
	port := FreePort(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "PORT="+port, "OTEL_EXPORTER=none", "COMPILATION_CACHE_DIR="+CacheDir(t))
	cmd.Env = append(cmd.Env, o.Env...)
	p := &Process{URL: "http://127.0.0.1:" + port, Cmd: cmd, Logs: &Logs{}, exited: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			_, _ = p.Logs.Write([]byte(sc.Text() + "\n"))
		}
		// never leave the child blocked on a full pipe (a line over the
		// scanner's limit ends the loop above)
		_, _ = io.Copy(io.Discard, pr)
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
		pw.Close()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("service log (last 8 KiB):\n%s", Tail(p.Logs.String(), 8<<10))
		}
	})
	probe, timeout, client := o.Probe, o.StartTimeout, o.Client
	if probe == "" {
		probe = "/readyz"
	}
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if resp, err := client.Get(p.URL + probe); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("service exited during start-up: %v\n%s", p.err, p.Logs)
		case <-time.After(25 * time.Millisecond):
		}
	}
	t.Fatalf("service not ready in %v\n%s", timeout, p.Logs)
	return nil
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process ended (nil for exit 0); valid once Exited is closed.
func (p *Process) Err() error {
	<-p.exited
	return p.err
}

// Wait waits up to within for the process to end and returns its wait
// status; false if it still runs.
func (p *Process) Wait(within time.Duration) (syscall.WaitStatus, bool) {
	select {
	case <-p.exited:
	case <-time.After(within):
		return 0, false
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok {
			return ws, true
		}
	}
	return 0, true // exit 0
}

// State describes the running process from /proc, for a failure message.
func (p *Process) State() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return "no /proc entry: " + err.Error()
	}
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		for _, f := range []string{"State:", "Threads:", "SigPnd:", "ShdPnd:"} {
			if strings.HasPrefix(l, f) {
				keep = append(keep, l)
			}
		}
	}
	return strings.Join(keep, ", ")
}

// Logs keeps what a service printed; safe for concurrent use, and usable as
// the destination of an in-process logger.
type Logs struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Lines returns the JSON log lines whose message (slog's "msg" or Cloud
// Logging's "message") is msg, or every JSON line for "". Lines that are not
// JSON are skipped.
func (l *Logs) Lines(msg string) []map[string]any {
	var out []map[string]any
	for _, s := range strings.Split(l.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			continue
		}
		if msg == "" || m["message"] == msg || m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Await waits up to within for a JSON log line that satisfies ok, and
// reports whether one came. A line is written when its request's answer
// has been, or after it: a test that reads the log right after an answer
// waits for the line, never for a time it guesses.
func (l *Logs) Await(within time.Duration, ok func(map[string]any) bool) bool {
	for deadline := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		for _, line := range l.Lines("") {
			if ok(line) {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// Tail is the last n bytes of s, marked when cut.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// Response is what a test keeps of an HTTP response.
type Response struct {
	Status int
	Header http.Header
	// Body is the answer, without its usage member for a 200 answer of an
	// evaluation route (what the run used varies from run to run; Usage
	// holds it), so that tests compare what a script answers.
	Body  []byte
	Usage *spi.Usage
	Took  time.Duration // from sending the request to the last byte read
}

// Do sends one request and reads the whole answer. body may be nil, a string,
// []byte, an io.Reader, or any other value, which is sent as its JSON
// encoding; a body is sent as application/json unless header sets
// Content-Type. A header value of "" deletes that header.
func Do(ctx context.Context, client *http.Client, method, url string, body any, header map[string]string) (Response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return Response{}, fmt.Errorf("encoding the request body: %w", err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return Response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	r := Response{Status: resp.StatusCode, Header: resp.Header, Body: b, Took: time.Since(start)}
	if err == nil && resp.StatusCode == http.StatusOK && method == http.MethodPost &&
		(strings.HasSuffix(req.URL.Path, "/v1/evaluations") || strings.HasSuffix(req.URL.Path, "/v1/sandbox/evaluate")) {
		r.Body, r.Usage, err = SplitUsage(req.URL.Path, b)
	}
	return r, err
}

// usageMember is the usage member as the service writes it: last, and
// holding no string and no deeper object than its phases.
var usageMember = regexp.MustCompile(`,"usage":\{"phasesMs":\{[^{}"]*("[a-z]+":[^{}"]*)*\}[^{}]*\}\}(\n?)$`)

// SplitUsage checks that body, a 200 answer of the evaluation route at
// path, is one the route's decoder accepts and carries its usage member,
// and returns it without that member, and the usage.
func SplitUsage(path string, body []byte) ([]byte, *spi.Usage, error) {
	var u *spi.Usage
	if strings.HasSuffix(path, "/v1/evaluations") {
		a, err := api.DecodeEvaluation(bytes.TrimSuffix(body, []byte("\n")))
		if err != nil {
			return body, nil, fmt.Errorf("the answer %.200s: %w", body, err)
		}
		u = a.Usage
	} else {
		a, err := api.DecodeSandboxAnswer(bytes.TrimSuffix(body, []byte("\n")))
		if err != nil {
			return body, nil, fmt.Errorf("the answer %.200s: %w", body, err)
		}
		u = a.Usage
	}
	loc := usageMember.FindSubmatchIndex(body)
	if u == nil || loc == nil {
		return body, nil, fmt.Errorf("the answer %.200s has no usage member", body)
	}
	rest := append(append([]byte{}, body[:loc[0]]...), '}')
	return append(rest, body[loc[4]:loc[5]]...), u, nil
}
