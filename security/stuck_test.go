package security

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentstore"
	"github.com/loom-plugins/sandbox-cloudrun/internal/servicetest"
)

const childGrace = 500 * time.Millisecond // HARD_KILL_GRACE of the children, the service's default

// stuckWall is the wall clock of a stuck case: long enough for the script's
// own set-up (interruptible, and slow on a loaded machine) to reach the
// native call that never polls, far shorter than that call.
const stuckWall = 500 * time.Millisecond

// startChild starts the real binary on a loopback port: one per case that
// ends its process, never shared. GOMAXPROCS=1 is what the Go runtime picks
// on a 1-CPU Cloud Run instance, the Terraform module's default: a stuck
// guest holds its processor, and the service must keep another for its
// watchdog.
func startChild(t *testing.T, storeDir string) *servicetest.Process {
	t.Helper()
	store := "none"
	if storeDir != "" {
		store = storeDir
	}
	return servicetest.Start(t, servicetest.Options{Env: []string{"GOMAXPROCS=1", "STORE_URL=" + store,
		"HARD_KILL_GRACE=" + childGrace.String(), "POOL_SIZE=1"}})
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
			r := post(t, c.URL, rt, q, ref)
			ws := requireStuckEnding(t, c, q, r)
			t.Logf("%s: %s after %v; process %v", rt, r.class, r.took.Round(time.Millisecond), ws)
		})
	}
}

// requireStuckEnding checks how a stuck run ended: answered with the
// wall-clock limit at deadline + grace, then the process's own exit 70 with
// its log line, before the kernel's SIGKILL.
func requireStuckEnding(t *testing.T, c *servicetest.Process, q req, r result) syscall.WaitStatus {
	t.Helper()
	ws, exited := c.Wait(5 * time.Second)
	if !exited {
		t.Fatalf("the process still runs 5 s after a stuck run (answer: %v; %s)", r, c.State())
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
	if !strings.Contains(c.Logs.String(), "ending the process") {
		t.Errorf("exit 70 without the stuck-run log line")
	}
	return ws
}
