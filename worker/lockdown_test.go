//go:build linux

package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/lockdown"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
)

// testWorkerMain is the test binary's worker verb: with probeArg, a worker
// that probes itself once locked down.
func testWorkerMain() int {
	if len(os.Args) > 2 && os.Args[2] == probeArg {
		// without the lock-down, PTRACE_TRACEME would succeed and stop
		// the worker at its runtime's next signal, for a tracer that never
		// comes: that probe is for the locked-down worker only
		skipPtrace := len(os.Args) > 3 && os.Args[3] == "no-ptrace"
		return mainWith(func(log *slog.Logger) { probeRefused(log, skipPtrace) })
	}
	return Main()
}

// probeArg makes the test binary, started as a worker, try each call a
// locked-down worker must be refused once it is ready, and log the results.
const probeArg = "probe-after-lockdown"

// refusedCalls are tried from Go inside the worker after its lock-down.
var refusedCalls = map[string]func() error{
	"socket": func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err == nil {
			syscall.Close(fd)
		}
		return err
	},
	"connect": func() error {
		c, err := net.DialTimeout("tcp", "127.0.0.1:9", time.Second)
		if err == nil {
			c.Close()
		}
		return err
	},
	"open": func() error {
		f, err := os.Open("/etc/hostname")
		if err == nil {
			f.Close()
		}
		return err
	},
	"create": func() error {
		f, err := os.Create(os.TempDir() + "/worker-probe")
		if err == nil {
			f.Close()
			os.Remove(f.Name())
		}
		return err
	},
	"execve": func() error { return exec.Command("/bin/true").Run() },
	"fork": func() error {
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, nil)
		if err == nil {
			syscall.Wait4(pid, nil, 0, nil)
		}
		return err
	},
	"ptrace": func() error {
		_, _, e := syscall.RawSyscall(syscall.SYS_PTRACE, syscall.PTRACE_TRACEME, 0, 0)
		if e != 0 {
			return e
		}
		return nil
	},
	"setrlimit": func() error {
		return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 1 << 20, Max: 1 << 20})
	},
}

func probeRefused(log *slog.Logger, skipPtrace bool) {
	for name, call := range refusedCalls {
		if name == "ptrace" && skipPtrace {
			log.Info("probe", "call", name, "result", "not tried", "eperm", false)
			continue
		}
		err := call()
		msg := "allowed"
		if err != nil {
			msg = err.Error()
		}
		log.Info("probe", "call", name, "result", msg, "eperm", errors.Is(err, syscall.EPERM))
	}
}

// A real worker, once locked down, is refused each call that would reach
// outside its process (from Go, as a guest that escaped wasm would try);
// and it still serves runs correctly. Without the lock-down the same probes
// succeed, so the check is not vacuous.
func TestLockedDownWorkerIsRefused(t *testing.T) {
	if !lockdown.Supported() {
		t.Skip("no lock-down on this system")
	}
	for _, mode := range []Lockdown{LockdownRequired, LockdownOff} {
		t.Run(string(mode), func(t *testing.T) {
			logs := &servicetest.Logs{}
			p := newPool(t, func(o *Options) {
				o.Args = []string{Verb, probeArg}
				if mode == LockdownOff {
					o.Args = append(o.Args, "no-ptrace")
				}
				o.Lockdown = mode
				o.Spares = 0
				o.Logger = slog.New(slog.NewJSONHandler(logs, nil))
			})
			if got := describe(run(t, p, `[1, 2].map(x => x * 2)`, `null`, generous)); got != "ok [2,4]" {
				t.Fatalf("a run in the probed worker: %s", got)
			}
			if want := mode == LockdownRequired; p.Protections().Seccomp != want || p.Protections().NoNewPrivs != want {
				t.Fatalf("protections %s with lockdown %s", p.Protections(), mode)
			}
			results := map[string]string{}
			eperm := map[string]bool{}
			deadline := time.Now().Add(time.Minute)
			for len(results) < len(refusedCalls) && time.Now().Before(deadline) {
				for _, line := range strings.Split(logs.String(), "\n") {
					var rec struct {
						Msg, Call, Result string
						EPERM             bool `json:"eperm"`
					}
					if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "worker: probe" {
						results[rec.Call], eperm[rec.Call] = rec.Result, rec.EPERM
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			for name := range refusedCalls {
				res, ok := results[name]
				switch {
				case !ok:
					t.Errorf("%s: no probe result", name)
				case mode == LockdownRequired && !eperm[name]:
					t.Errorf("%s inside a locked-down worker: %s, want EPERM", name, res)
				case mode == LockdownOff && eperm[name] && name != "ptrace" && name != "setrlimit":
					// ptrace and raising a limit may be refused by the
					// kernel for reasons of its own; the others must work
					t.Errorf("%s without the lock-down: %s, want it to work", name, res)
				}
			}
		})
	}
}

// A step of the lock-down that fails (here a stand-in for a seccomp call the
// system refuses): with WORKER_LOCKDOWN=required the worker refuses to start
// and says which step; with best-effort it runs with the rest, and says at
// WARNING which step failed and what is off; with off nothing is applied.
func TestLockDownFailureSaysWhichStep(t *testing.T) {
	if !lockdown.Supported() {
		t.Skip("no lock-down on this system")
	}
	refused := errors.New("lockdown: installing the seccomp filter: operation not permitted")
	applied := 0
	applyLockdown = func(lockdown.Options) (lockdown.Status, error) {
		applied++
		return lockdown.Status{ResourceLimits: true, Undumpable: true, NoNewPrivs: true}, refused
	}
	defer func() { applyLockdown = lockdown.Apply }()

	for _, mode := range []Lockdown{LockdownRequired, LockdownBestEffort, LockdownOff} {
		t.Run(string(mode), func(t *testing.T) {
			logs := &servicetest.Logs{}
			before := applied
			p, err := lockDown(hello{Lockdown: mode}, slog.New(slog.NewJSONHandler(logs, nil)))
			warnings := 0
			for _, l := range logs.Lines("") {
				if l["level"] == "WARN" && strings.Contains(fmt.Sprint(l["msg"]), "lock-down incomplete (WORKER_LOCKDOWN=best-effort)") &&
					strings.Contains(fmt.Sprint(l["err"]), "installing the seccomp filter") && l["seccomp"] == false && l["noNewPrivs"] == true {
					warnings++
				}
			}
			switch mode {
			case LockdownRequired:
				if err == nil || !strings.Contains(err.Error(), "lock-down failed (WORKER_LOCKDOWN=required): lockdown: installing the seccomp filter") {
					t.Errorf("required: err %v, want the failed step named", err)
				}
				if warnings != 0 {
					t.Errorf("required: %d warnings; the error says it", warnings)
				}
			case LockdownBestEffort:
				if err != nil || p.Seccomp || !p.NoNewPrivs || !p.ResourceLimits {
					t.Errorf("best-effort: %v, %s; want no error, and seccomp alone off", err, p)
				}
				if warnings != 1 {
					t.Errorf("best-effort: %d warnings naming the failed step and what is off, want 1; log:\n%s", warnings, logs)
				}
			case LockdownOff:
				if err != nil || applied != before || warnings != 0 {
					t.Errorf("off: err %v, lock-down applied %d times, %d warnings", err, applied-before, warnings)
				}
			}
		})
	}
}
