package security

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
)

type binaryInfo struct{ dir, path string }

var (
	builtBinary atomic.Pointer[binaryInfo]
	buildOnce   sync.Once
	buildErr    error
	childCache  string // the children's shared wazero compilation cache
)

// serviceBinary builds the real service binary once (the module's main
// package, exactly what the Dockerfile ships).
func serviceBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "security-bin-")
		if err != nil {
			buildErr = err
			return
		}
		bin := filepath.Join(dir, "sandbox-cloudrun")
		cmd := exec.Command("go", "build", "-o", bin, "github.com/loom-plugins/sandbox-cloudrun")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		childCache = filepath.Join(dir, "cache")
		builtBinary.Store(&binaryInfo{dir: dir, path: bin})
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBinary.Load().path
}

// child is the real binary serving on a loopback port: one per case that
// ends its process, never shared.
type child struct {
	url  string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan error
}

const childGrace = 500 * time.Millisecond // HARD_KILL_GRACE of the children, the service's default

// stuckWall is the wall clock of a stuck case: long enough for the script's
// own set-up (interruptible, and slow on a loaded machine) to reach the
// native call that never polls, far shorter than that call.
const stuckWall = 500 * time.Millisecond

func startChild(t *testing.T, storeDir string) *child {
	t.Helper()
	bin := serviceBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	store := "none"
	if storeDir != "" {
		store = storeDir
	}
	cmd := exec.Command(bin, "serve")
	// GOMAXPROCS=1 is what the Go runtime picks on a 1-CPU Cloud Run
	// instance, the Terraform module's default: a stuck guest holds its
	// processor, and the service must keep another for its watchdog.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "PORT="+port, "STORE_URL="+store, "OTEL_EXPORTER=none",
		"HARD_KILL_GRACE="+childGrace.String(), "COMPILATION_CACHE_DIR="+childCache, "POOL_SIZE=1")
	c := &child{url: "http://127.0.0.1:" + port, cmd: cmd, logs: &syncBuffer{}, done: make(chan error, 1)}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			_, _ = c.logs.Write([]byte(sc.Text() + "\n"))
		}
		// never leave the child blocked on a full pipe (a line over the
		// scanner's buffer ends the loop above)
		_, _ = io.Copy(io.Discard, pr)
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		err := <-c.done
		c.done <- err
		if t.Failed() {
			t.Logf("child log:\n%s", c.logs.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(c.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c
			}
		}
		select {
		case err := <-c.done:
			c.done <- err
			t.Fatalf("child exited during start-up: %v\n%s", err, c.logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("child not ready in 30 s\n%s", c.logs.String())
	return nil
}

// stuckCase is a script that never reaches QuickJS's interrupt handler in
// time: one long native builtin, or a loop whose every tick is long native
// work (a poll every 1,000 ticks, docs/hard-kill.md).
type stuckCase struct {
	name   string
	script string
	memory int64
}

var stuckCases = []stuckCase{
	{name: "default-comparator sort of two million numbers", script: `new Array(2e6).fill(1.5).sort().length`, memory: 256 << 20},
	{name: "JSON.stringify of 100000-deep nesting (quadratic)", script: `let a = []; for (let i = 0; i < 1e5; i++) a = [a]; JSON.stringify(a).length`},
	{name: "a result nested 100000 deep (the shim's own stringify)", script: `let a = []; for (let i = 0; i < 1e5; i++) a = [a]; a`},
	{name: "concat of a 2^32-1 sparse array", script: `[].concat(new Array(2 ** 32 - 1), [1]).length`},
	{name: "a loop over indexOf of a million elements", script: `const a = new Array(1e6).fill(1); for (;;) a.indexOf(2)`},
}

// Each stuck case, against its own child process on one processor: the
// request is answered with the wall-clock limit at deadline +
// HARD_KILL_GRACE, and the process then ends with exit 70, before the
// kernel's SIGKILL at deadline + 2 x grace, for the platform to replace it.
// Never a 5xx, never a hang, never a connection dropped without an answer,
// never a process that lives on with a guest still burning its CPU. Two
// things make the answer certain rather than likely: the service keeps a
// processor beside the guest's (a guest cannot be preempted), and it holds
// Go's garbage collector off while a guest runs (a collection's
// stop-the-world would wait for the stuck guest, the watchdog with it).
func TestStuckRunsEndTheirProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child service per case")
	}
	storeDir := t.TempDir()
	st, err := contentstore.NewDirStore(storeDir, contentstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range stuckCases {
		rt := spi
		if i%2 == 1 {
			rt = evaluations // alternate, so both routes meet a stuck run
		}
		t.Run(tc.name, func(t *testing.T) {
			ref := ""
			if rt == evaluations {
				r, err := st.Put(context.Background(), []byte(tc.script))
				if err != nil {
					t.Fatal(err)
				}
				ref = r.String()
			}
			c := startChild(t, storeDir)
			q := req{script: tc.script, wall: stuckWall, memory: tc.memory}
			r := post(t, c.url, rt, q, ref)
			ws := requireStuckEnding(t, c, q, r)
			t.Logf("%s: %s after %v; process %v", rt, r.class, r.took.Round(time.Millisecond), ws)
		})
	}
}

// requireStuckEnding checks how a stuck run ended: answered with the
// wall-clock limit at deadline + grace, then the process's own exit 70 with
// its log line, before the kernel's SIGKILL.
func requireStuckEnding(t *testing.T, c *child, q req, r result) syscall.WaitStatus {
	t.Helper()
	ws, exited := c.waitExit(5 * time.Second)
	if !exited {
		t.Fatalf("the process still runs 5 s after a stuck run (answer: %v; %s)", r, c.procState())
	}
	if r.err != nil {
		t.Fatalf("no answer (the process ended %v): %v", ws, r)
	}
	if r.status != http.StatusOK || r.class != "limit:wallClock" {
		t.Fatalf("want the wall-clock limit, got %v", r)
	}
	if bound := q.wall + childGrace + slack; r.took > bound {
		t.Errorf("answered after %v, over %v", r.took, bound)
	}
	if !ws.Exited() || ws.ExitStatus() != 70 {
		t.Fatalf("the process ended with %v, want exit 70 (its own exit, before the kernel's SIGKILL)", ws)
	}
	if !strings.Contains(c.logs.String(), "ending the process") {
		t.Errorf("exit 70 without the stuck-run log line")
	}
	return ws
}

// procState describes the child's process for a failure message.
func (c *child) procState() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return "no /proc entry: " + err.Error()
	}
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "State:") || strings.HasPrefix(l, "Threads:") || strings.HasPrefix(l, "SigPnd:") || strings.HasPrefix(l, "ShdPnd:") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, ", ")
}

func (c *child) waitExit(within time.Duration) (syscall.WaitStatus, bool) {
	select {
	case err := <-c.done:
		c.done <- err
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.Sys().(syscall.WaitStatus), true
		}
		return 0, true // exit 0: reported as "not 70" by the caller
	case <-time.After(within):
		return 0, false
	}
}
