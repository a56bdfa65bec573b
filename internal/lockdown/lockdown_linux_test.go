//go:build linux

package lockdown_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/internal/lockdown"
)

// cacheDir is the compilation cache the children share, as the worker
// reads the service's (the first child fills it).
var cacheDir string

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == childArg {
		os.Exit(runChild(os.Args[2]))
	}
	dir, err := os.MkdirTemp("", "lockdown-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testMemories is how many linear memories the test's engine can hold at
// once (pool 2, one run at a time): see lockdown.AddressSpaceFor.
const testMemories = 2 + 1 + 1 + 2

// locked is the lock-down the tests apply: the address space as the worker
// would set it (none in a race build), and a descriptor limit.
func locked(cfg childConfig) childConfig {
	cfg.Apply = true
	cfg.Options = lockdown.Options{OpenFiles: 64}
	cfg.Memories = testMemories
	return cfg
}

type childRun struct {
	report childReport
	stdout string
	stderr string
	state  *os.ProcessState
}

// startChild runs the probe child with cfg, giving it fd 3 (a socket whose
// other end answers "ping" with "pong"), a directory of files and a TCP
// listener to try.
func startChild(t *testing.T, cfg childConfig, env ...string) childRun {
	t.Helper()
	if !lockdown.Supported() {
		t.Skip("no lock-down on this architecture")
	}
	dir := t.TempDir()
	for _, name := range []string{"existing", "victim", "movable"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Dir = dir
	if cfg.CacheDir == "" {
		cfg.CacheDir = cacheDir
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	cfg.DialAddr = ln.Addr().String()

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "worker"), os.NewFile(uintptr(fds[1]), "server")
	defer ours.Close()
	go func() {
		line, err := bufio.NewReader(ours).ReadString('\n')
		if err == nil && line == "ping\n" {
			_, _ = ours.Write([]byte("pong\n"))
		}
	}()

	arg, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := os.Args[0]
	if cfg.binary != "" {
		bin = cfg.binary
	}
	cmd := exec.CommandContext(ctx, bin, childArg, string(arg))
	if cfg.trace != "" {
		cmd = exec.CommandContext(ctx, "strace", "-f", "-qq", "-o", cfg.trace, bin, childArg, string(arg))
	}
	cmd.Env = append(os.Environ(), env...)
	cmd.ExtraFiles = []*os.File{theirs}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	_ = cmd.Wait()
	run := childRun{stdout: stdout.String(), stderr: stderr.String(), state: cmd.ProcessState}
	if ctx.Err() != nil {
		t.Fatalf("child did not finish (a refused call in the runtime can hang it); stderr:\n%s", tail(run.stderr))
	}
	return run
}

// runChild runs the probe child and decodes its report; a child that
// crashed or wrote no report fails the test.
func runChildReport(t *testing.T, cfg childConfig, env ...string) childReport {
	t.Helper()
	run := startChild(t, cfg, env...)
	if !run.state.Success() {
		t.Fatalf("child %v; stderr:\n%s", run.state, tail(run.stderr))
	}
	lines := strings.Split(strings.TrimSpace(run.stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &run.report); err != nil {
		t.Fatalf("child report: %v; stdout %q; stderr:\n%s", err, tail(run.stdout), tail(run.stderr))
	}
	return run.report
}

func tail(s string) string {
	if len(s) > 8000 {
		return "…" + s[len(s)-8000:]
	}
	return s
}

func checkEvals(t *testing.T, evals []evalResult, rounds int) {
	t.Helper()
	if len(evals) != rounds*len(evalCases) {
		t.Errorf("%d evaluations ran, want %d", len(evals), rounds*len(evalCases))
	}
	for _, ev := range evals {
		if !ev.OK {
			t.Errorf("evaluation %q: got %s", ev.Name, ev.Got)
		}
	}
}

// TestLockedDown applies the lock-down in a worker-like child and checks
// that guests still run every kind of evaluation, that each refused call
// fails with EPERM (clone3 with ENOSYS) while the allowed ones work, on
// every thread, and that the limits are as set.
func TestLockedDown(t *testing.T) {
	checkLockedDown(t, runChildReport(t, locked(childConfig{Rounds: 1, Probes: true, Socket: true})))
}

// TestPureGoBuild runs TestLockedDown's child built as the service ships,
// with CGO_ENABLED=0 and without the race detector, when this test binary
// is not: threads are then the Go runtime's own, and RLIMIT_AS is applied
// (a race build cannot have one).
func TestPureGoBuild(t *testing.T) {
	if !cgoEnabled {
		t.Skip("this test binary is a pure-Go build: TestLockedDown covers it")
	}
	if testing.Short() {
		t.Skip("builds this package's tests again, with CGO_ENABLED=0")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build with")
	}
	bin := filepath.Join(t.TempDir(), "lockdown.test")
	build := exec.Command(goTool, "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c with CGO_ENABLED=0: %v\n%s", err, out)
	}
	rep := runChildReport(t, locked(childConfig{Rounds: 1, Probes: true, Socket: true, binary: bin}))
	if rep.Cgo || rep.Race {
		t.Fatalf("the child is not a pure-Go build (cgo %v, race %v)", rep.Cgo, rep.Race)
	}
	checkLockedDown(t, rep)
}

func checkLockedDown(t *testing.T, rep childReport) {
	t.Helper()
	if rep.ApplyErr != "" {
		t.Fatalf("Apply: %s (status %+v)", rep.ApplyErr, rep.Status)
	}
	if !rep.Status.All() {
		t.Errorf("status %+v, want all on", rep.Status)
	}
	if !strings.Contains(rep.SecondApplyErr, lockdown.ErrApplied.Error()) {
		t.Errorf("second Apply: %q, want %q", rep.SecondApplyErr, lockdown.ErrApplied)
	}
	opts := rep.Options
	if !rep.Race && opts.AddressSpaceBytes == 0 {
		t.Errorf("no address-space limit applied")
	}
	t.Logf("cgo %v, race %v: VmPeak %d MiB, VmSize %d MiB, VmHWM %d MiB, at most %d linear memories mapped at once; RLIMIT_AS %d MiB",
		rep.Cgo, rep.Race, rep.VmPeak>>20, rep.VmSize>>20, rep.VmHWM>>20, rep.Memories, opts.AddressSpaceBytes>>20)

	t.Run("evaluations", func(t *testing.T) { checkEvals(t, rep.Evals, 1) })

	t.Run("refused calls", func(t *testing.T) {
		for _, p := range probes(childConfig{}) {
			want := p.locked
			if want == "" {
				want = "EPERM"
			}
			got, ok := rep.Probes[p.name]
			switch {
			case !ok:
				t.Errorf("%s: not run", p.name)
			case got != want:
				t.Errorf("%s: %s, want %s", p.name, got, want)
			}
		}
	})

	t.Run("every thread", func(t *testing.T) {
		if len(rep.Threads) < 2 {
			t.Fatalf("%d threads seen at Apply, want several: %q", len(rep.Threads), rep.Threads)
		}
		for _, th := range rep.Threads {
			if th != "Seccomp:2 NoNewPrivs:1" && !strings.Contains(th, "no such process") {
				t.Errorf("a thread alive at Apply: %s, want Seccomp:2 NoNewPrivs:1", th)
			}
		}
	})

	t.Run("socket", func(t *testing.T) {
		if rep.Socket != "pong" {
			t.Errorf("exchange over fd 3: %q, want pong", rep.Socket)
		}
	})

	t.Run("limits", func(t *testing.T) {
		want := map[string]string{
			"Max core file size": "0 0 bytes",
			"Max file size":      "0 0 bytes",
			"Max open files":     fmt.Sprintf("%d %d files", opts.OpenFiles, opts.OpenFiles),
		}
		if opts.AddressSpaceBytes > 0 {
			want["Max address space"] = fmt.Sprintf("%d %d bytes", opts.AddressSpaceBytes, opts.AddressSpaceBytes)
		}
		got := parseLimits(rep.Limits)
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s: %q, want %q", name, got[name], w)
			}
		}
	})
}

// parseLimits reads /proc/self/limits: name → "soft hard unit".
func parseLimits(text string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n")[1:] {
		if len(line) < 26 {
			continue
		}
		m[strings.TrimSpace(line[:26])] = strings.Join(strings.Fields(line[26:]), " ")
	}
	return m
}

// TestControlWithoutApply is the same child without Apply: the calls the
// lock-down refuses reach the kernel and do not fail with EPERM, so the
// refusals TestLockedDown sees are the filter's doing.
func TestControlWithoutApply(t *testing.T) {
	rep := runChildReport(t, childConfig{Probes: true})
	for _, p := range probes(childConfig{}) {
		if p.control == "skip" || p.control == "any" {
			continue
		}
		locked := p.locked
		if locked == "" {
			locked = "EPERM"
		}
		got, ok := rep.Probes[p.name]
		switch {
		case !ok:
			t.Errorf("%s: not run", p.name)
		case p.locked == "ok" || p.locked == "EINVAL":
			if got != locked {
				t.Errorf("%s: %s without the lock-down, want %s", p.name, got, locked)
			}
		case got == locked:
			t.Errorf("%s: %s without the lock-down too, so the locked-down result proves nothing", p.name, got)
		}
	}
	if t.Failed() {
		t.Logf("probes: %v", rep.Probes)
	}
}

// TestKillTimerFires: the engine's process-kill timer, armed for a run stuck
// in a native builtin, still kills the locked-down worker.
func TestKillTimerFires(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a multi-second native builtin to be killed")
	}
	run := startChild(t, locked(childConfig{KillTimer: true}))
	if !strings.Contains(run.stdout, "armed") {
		t.Fatalf("child never ran the runaway: %v; stdout %q; stderr:\n%s", run.state, run.stdout, tail(run.stderr))
	}
	ws, ok := run.state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended %v, want killed by SIGKILL; stdout %q; stderr:\n%s", run.state, run.stdout, tail(run.stderr))
	}
}

// TestAddressSpaceBelowUse: a limit below what the process has mapped
// already is refused before anything is applied.
func TestAddressSpaceBelowUse(t *testing.T) {
	rep := runChildReport(t, childConfig{Apply: true, Options: lockdown.Options{AddressSpaceBytes: 1 << 20}, Probes: true})
	if !strings.Contains(rep.ApplyErr, "below") {
		t.Fatalf("Apply: %q, want an address-space error", rep.ApplyErr)
	}
	if rep.Status != (lockdown.Status{}) {
		t.Errorf("status %+v after an early failure, want nothing applied", rep.Status)
	}
	if got := rep.Probes["socket inet"]; got != "ok" {
		t.Errorf("socket after the failed Apply: %s, want ok (nothing applied)", got)
	}
	if got := parseLimits(rep.Limits)["Max core file size"]; got == "0 0 bytes" {
		t.Errorf("core limit %q: a limit was set by the failed Apply", got)
	}
}

// TestSyscallsUsed runs the worker-like child without the lock-down under
// strace -f and fails if, from the point where Apply would be, it makes a
// system call the filter does not allow: this is how the allowlist was
// made. It needs strace, and is slow under it: set LOCKDOWN_STRACE=1 (and
// LOCKDOWN_STRESS=<rounds> for more than one round) to run it.
func TestSyscallsUsed(t *testing.T) {
	if os.Getenv("LOCKDOWN_STRACE") == "" {
		t.Skip("set LOCKDOWN_STRACE=1 to run")
	}
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("no strace")
	}
	rounds := 1
	if v := os.Getenv("LOCKDOWN_STRESS"); v != "" {
		fmt.Sscan(v, &rounds)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	rep := runChildReport(t, childConfig{Rounds: rounds, Socket: true, Marker: true, trace: trace}, "GOGC=10")
	checkEvals(t, rep.Evals, rounds)
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	calls, failed := summarize(string(b))
	allowed := map[string]bool{}
	for _, name := range lockdown.Allowed(runtime.GOARCH) {
		allowed[name] = true
	}
	var names []string
	for name := range calls {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Logf("%-20s %7d calls %s", name, calls[name], failed[name])
		// clone3 is refused with ENOSYS on purpose: the C library's
		// pthread_create (cgo, race builds) then falls back to clone.
		if !allowed[name] && name != "clone3" {
			t.Errorf("%s: used after the point of Apply, and not allowed", name)
		}
	}
}

var (
	callLine    = regexp.MustCompile(`^\d+\s+([a-z_0-9]+)\(`)
	resumedLine = regexp.MustCompile(`^\d+\s+<\.\.\. ([a-z_0-9]+) resumed>.*= -1 (E[A-Z0-9]+)`)
	errorResult = regexp.MustCompile(`= -1 (E[A-Z0-9]+)`)
)

// summarize counts the system calls of an strace -f trace after the
// marker, and the errors each returned.
func summarize(trace string) (calls map[string]int, failed map[string]string) {
	calls = map[string]int{}
	errs := map[string]map[string]int{}
	_, after, _ := strings.Cut(trace, straceMarker)
	for _, line := range strings.Split(after, "\n")[1:] {
		name, e := "", ""
		if m := callLine.FindStringSubmatch(line); m != nil {
			name = m[1]
			calls[name]++
			if m := errorResult.FindStringSubmatch(line); m != nil {
				e = m[1]
			}
		} else if m := resumedLine.FindStringSubmatch(line); m != nil {
			name, e = m[1], m[2]
		}
		if e != "" {
			if errs[name] == nil {
				errs[name] = map[string]int{}
			}
			errs[name][e]++
		}
	}
	failed = map[string]string{}
	for name, m := range errs {
		failed[name] = fmt.Sprint(m)
	}
	return calls, failed
}

// TestStress runs the evaluation set many times under the lock-down with
// frequent collections, at GOMAXPROCS 1 and 2, watching for the runtime
// hitting a refused call (a fatal error or a hang). It is long: set
// LOCKDOWN_STRESS to the number of rounds to run it.
func TestStress(t *testing.T) {
	rounds := 0
	if v := os.Getenv("LOCKDOWN_STRESS"); v != "" {
		if _, err := fmt.Sscan(v, &rounds); err != nil {
			t.Fatalf("LOCKDOWN_STRESS=%q: %v", v, err)
		}
	}
	if rounds <= 0 {
		t.Skip("set LOCKDOWN_STRESS=<rounds> to run")
	}
	for _, procs := range []string{"1", "2"} {
		t.Run("GOMAXPROCS="+procs, func(t *testing.T) {
			rep := runChildReport(t, locked(childConfig{Rounds: rounds, Socket: true}), "GOGC=10", "GOMAXPROCS="+procs)
			if rep.ApplyErr != "" {
				t.Fatalf("Apply: %s", rep.ApplyErr)
			}
			checkEvals(t, rep.Evals, rounds)
			if rep.Socket != "pong" {
				t.Errorf("exchange over fd 3: %q, want pong", rep.Socket)
			}
			t.Logf("VmPeak %d MiB, VmHWM %d MiB, at most %d linear memories at once", rep.VmPeak>>20, rep.VmHWM>>20, rep.Memories)
		})
	}
}
