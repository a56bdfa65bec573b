package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/contentref"
	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance"
	"github.com/loom-plugins/sandbox-cloudrun/effect/conformance/conformancetest"
	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// The test binary is its own worker: started with Verb, it serves the
// protocol instead of running tests.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Verb {
		if len(os.Args) > 2 && os.Args[2] == trapArg {
			os.Exit(Main(quickjs.WithTrapForTests(func(script string) bool { return strings.HasPrefix(script, trapMarker) })))
		}
		os.Exit(testWorkerMain())
	}
	dir, err := os.MkdirTemp("", "worker-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCache = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// testCache is the compilation cache every pool of the package's tests
// shares, so that the engine is compiled once per test process.
var testCache string

const testGrace = 500 * time.Millisecond

// stuckScript stays inside one native builtin for tens of seconds: a naive
// string search that never reaches QuickJS's interrupt handler.
const stuckScript = `'a'.repeat(4e6).indexOf('a'.repeat(4e4) + 'b')`

func testOptions(mod func(*Options)) Options {
	o := Options{
		Engine: EngineOptions{
			MaxMemoryBytes:      256 << 20,
			CPUBudget:           1_000_000,
			PoolSize:            1,
			HardKillGrace:       testGrace,
			ProcessKill:         runtime.GOOS == "linux",
			CompilationCacheDir: testCache,
			CompiledScriptBytes: 16 << 20,
		},
		Concurrent: 1,
		Spares:     1,
		Lockdown:   LockdownRequired,
	}
	if mod != nil {
		mod(&o)
	}
	return o
}

func newPool(t testing.TB, mod func(*Options)) *Pool {
	t.Helper()
	p, err := New(testOptions(mod))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	// generous: the first worker of a test process compiles the engine,
	// slowly under the race detector on a busy machine
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := p.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

// generous is the wall clock of a run whose outcome must not be a timeout.
var generous = spi.Limits{WallClock: 20 * time.Second, MemoryBytes: 32 << 20}

func run(t testing.TB, p *Pool, script, input string, l spi.Limits) spi.Outcome {
	t.Helper()
	out, err := p.Evaluate(context.Background(), spi.Request{Script: script, InputJSON: input, Limits: l})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return out
}

func describe(o spi.Outcome) string {
	if o.OK {
		return "ok " + string(o.Value)
	}
	s := string(o.Kind)
	if o.Limit != "" {
		s += " " + string(o.Limit)
	}
	if o.Name != nil {
		s += " " + *o.Name
	}
	if o.Message != "" {
		s += ": " + o.Message
	}
	return s
}

// Every outcome kind crosses the channel as the engine made it, with the
// script's and input's bytes exactly as sent and the logs when asked.
func TestOutcomesCrossTheChannel(t *testing.T) {
	p := newPool(t, nil)
	cases := []struct {
		script, input string
		limits        spi.Limits
		want          string
	}{
		{`input.a + 1`, `{"a":41}`, generous, `ok 42`},
		{`({s: input})`, `"\ud800 é"`, generous, `ok {"s":"\ud800 é"}`},
		{`'\ud800'.charCodeAt(0)`, `null`, generous, `ok 55296`},
		{`throw new TypeError('no')`, `null`, generous, `threw TypeError: no`},
		{`throw 7`, `null`, generous, `threw: 7`},
		{`for (;;) {}`, `null`, spi.Limits{WallClock: 200 * time.Millisecond, MemoryBytes: 32 << 20}, `limit wallClock`},
		{`let a = []; for (;;) a.push(new Array(1e5).fill(1))`, `null`, spi.Limits{WallClock: 20 * time.Second, MemoryBytes: 4 << 20}, `limit memory`},
		{`undefined`, `null`, generous, `ok null`},
	}
	for _, c := range cases {
		if got := describe(run(t, p, c.script, c.input, c.limits)); got != c.want {
			t.Errorf("%s on %s: got %s, want %s", c.script, c.input, got, c.want)
		}
	}
	rep, err := p.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: `console.log('hi', 1); 2`, InputJSON: `null`, Limits: generous}, CaptureLogs: true})
	out, logs := rep.Outcome, rep.Logs
	if err != nil || describe(out) != "ok 2" || logs != "hi 1\n" {
		t.Fatalf("with logs: %s, %q, %v", describe(out), logs, err)
	}
	if p.Kills() != 0 {
		t.Fatalf("%d workers killed by runs that all stopped", p.Kills())
	}
}

// A run stuck in native code is answered with the wall-clock limit one grace
// after its deadline; its worker is killed, a spare that was ready before
// the answer takes the next run, and a successor is started.
func TestHardKillKeepsThePool(t *testing.T) {
	p := newPool(t, nil)
	waitIdle(t, p, 2)
	for i := range 3 {
		before := pids(p)
		start := time.Now()
		out := run(t, p, stuckScript, `null`, spi.Limits{WallClock: 50 * time.Millisecond, MemoryBytes: 32 << 20})
		took := time.Since(start)
		if out.Kind != spi.KindLimit || out.Limit != spi.LimitWallClock {
			t.Fatalf("stuck run %d: got %s", i, describe(out))
		}
		// the answer is the kill's, not the guest's return (which takes
		// tens of seconds)
		if got := p.Kills(); got != int64(i+1) {
			t.Fatalf("after stuck run %d: %d kills", i, got)
		}
		if took < 50*time.Millisecond+testGrace {
			t.Fatalf("answered after %v, before deadline + grace", took)
		}
		// a spare, started before the answer, is ready at once
		w := p.idle.take()
		if _, ok := before[w.pid]; !ok || !w.alive() {
			t.Fatalf("the next run's worker %d was not a spare started before the answer (%v)", w.pid, before)
		}
		p.idle.put(w)
		if got := describe(run(t, p, `1 + 1`, `null`, generous)); got != "ok 2" {
			t.Fatalf("the run after stuck run %d: %s", i, got)
		}
		waitIdle(t, p, 2) // the successor is warm
	}
}

// A caller who cancels gets its context's error; a run that stops at its
// next poll keeps its worker, a stuck one ends it.
func TestCancellation(t *testing.T) {
	p := newPool(t, nil)
	for _, c := range []struct {
		script string
		kills  int64
	}{{`for (;;) {}`, 0}, {stuckScript, 1}} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		_, err := p.Evaluate(ctx, spi.Request{Script: c.script, InputJSON: `null`, Limits: generous})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: got %v, want context.Canceled", c.script, err)
		}
		// the next run does not wait for the cancelled one to stop: a
		// spare serves it
		if got := describe(run(t, p, `1 + 1`, `null`, generous)); got != "ok 2" {
			t.Fatalf("after cancelling %s: %s", c.script, got)
		}
		// the cancelled run stops at its next poll, or its worker is killed
		// a grace later (the bound leaves room for a busy machine)
		for deadline := time.Now().Add(30 * time.Second); p.Kills() != c.kills && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if got := p.Kills(); got != c.kills {
			t.Fatalf("%s: %d kills, want %d", c.script, got, c.kills)
		}
	}
}

// A worker that dies on its own during a run (a crash, the kernel's
// out-of-memory kill, a signal from outside) gives that run a retryable
// infrastructure outcome that says so; the next run is served.
func TestWorkerDeathDuringARun(t *testing.T) {
	// what the answer says: the wait status, or the Go runtime's crash
	// report's headline
	for sig, says := range map[syscall.Signal]string{
		syscall.SIGKILL: "signal: killed",
		syscall.SIGSEGV: "SIGSEGV: segmentation violation",
		syscall.SIGABRT: "SIGABRT: abort",
	} {
		t.Run(sig.String(), func(t *testing.T) {
			p := newPool(t, nil)
			busy := make(chan int, 1)
			p.dispatched = func(w *proc) { busy <- w.pid }
			res := make(chan spi.Outcome, 1)
			go func() {
				out, err := p.Evaluate(context.Background(), spi.Request{Script: `for (;;) {}`, InputJSON: `null`, Limits: generous})
				if err != nil {
					out = spi.Infrastructure("error: " + err.Error())
				}
				res <- out
			}()
			pid := <-busy
			p.dispatched = nil
			time.Sleep(100 * time.Millisecond) // inside the guest
			if err := syscall.Kill(pid, sig); err != nil {
				t.Fatal(err)
			}
			out := <-res
			if out.Kind != spi.KindInfrastructure || !strings.Contains(out.Message, "died during the run") ||
				!strings.Contains(out.Message, says) {
				t.Fatalf("got %s", describe(out))
			}
			if p.Kills() != 0 {
				t.Fatalf("counted as a hard kill")
			}
			if got := describe(run(t, p, `1 + 1`, `null`, generous)); got != "ok 2" {
				t.Fatalf("the next run: %s", got)
			}
		})
	}
}

// A worker that cannot start makes Warm fail with what it said, and runs
// get an infrastructure outcome at once rather than waiting.
func TestStartFailure(t *testing.T) {
	p, err := New(testOptions(func(o *Options) { o.Executable, o.Args = "/bin/sh", []string{"-c", "echo no engine here >&2; exit 3"} }))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = p.Warm(ctx)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "no engine here") {
		t.Fatalf("Warm: %v", err)
	}
	out := run(t, p, `1`, `null`, generous)
	if out.Kind != spi.KindInfrastructure || !strings.Contains(out.Message, "no sandbox worker is ready") {
		t.Fatalf("got %s", describe(out))
	}
	if p.Healthy() == nil {
		t.Fatal("Healthy with no worker able to start")
	}
}

// A worker holds nothing of the server: no environment, and no open files
// but its standard streams (0 and 1 on /dev/null, 2 its log pipe), its
// channel and the Go runtime's own poller descriptors.
func TestWorkerHoldsNothingOfTheServer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "/secret/key.json")
	t.Setenv("SANDBOX_TEST_SECRET", "s3cret")
	extra, err := os.Open(os.Args[0]) // an fd the server holds open
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	p := newPool(t, nil)
	waitIdle(t, p, 2)
	if !p.Protections().EmptyEnvironment {
		t.Error("the worker reports a non-empty environment")
	}
	for pid := range pids(p) {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatal(err)
		}
		if len(env) != 0 {
			t.Errorf("worker %d has an environment: %q", pid, env)
		}
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			target, _ := os.Readlink(filepath.Join(dir, e.Name()))
			ok := false
			switch e.Name() {
			case "0", "1":
				ok = target == "/dev/null"
			case "2":
				ok = strings.HasPrefix(target, "pipe:")
			case "3":
				ok = strings.HasPrefix(target, "socket:")
			default:
				// the Go runtime's: its poller, and the cgroup CPU quota
				// it reads to size GOMAXPROCS
				ok = strings.HasPrefix(target, "anon_inode:") || strings.HasPrefix(target, "/sys/fs/cgroup/")
			}
			if !ok {
				t.Errorf("worker %d holds fd %s -> %s", pid, e.Name(), target)
			}
		}
	}
}

// No run sees what an earlier one left, on the same worker or another.
func TestFreshAcrossWorkers(t *testing.T) {
	p := newPool(t, nil)
	for i := range 6 {
		got := describe(run(t, p, `const seen = typeof globalThis.mark; globalThis.mark = 1; seen`, `null`, generous))
		if got != `ok "undefined"` {
			t.Fatalf("run %d saw an earlier run's global: %s", i, got)
		}
		if i == 2 {
			run(t, p, stuckScript, `null`, spi.Limits{WallClock: 10 * time.Millisecond, MemoryBytes: 32 << 20})
		}
	}
}

// The conformance kit over the pool: its wall clock is hard, so abort-mid-run
// runs and must pass.
func TestConformance(t *testing.T) {
	p := newPool(t, nil)
	if p.Capabilities().WallClock != spi.WallClockHard {
		t.Fatalf("the pool declares %s", p.Capabilities().WallClock)
	}
	conformancetest.Run(t, func(t *testing.T) spi.Backend { return p }, conformance.Options{})
}

// pids are the pool's live workers.
func pids(p *Pool) map[int]struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[int]struct{}{}
	for w := range p.all {
		m[w.pid] = struct{}{}
	}
	return m
}

// waitIdle waits until n workers are ready.
func waitIdle(t testing.TB, p *Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for p.idle.len() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers ready, want %d", p.idle.len(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Closing the pool is an orderly stop, which every scale-down makes: one
// INFO line, with how long it took in a unit, and no warning; a worker that
// dies while idle, which no one asked for, is still a warning.
func TestOrderlyCloseIsInfo(t *testing.T) {
	logs := &servicetest.Logs{}
	p := newPool(t, func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	waitIdle(t, p, 2)
	if got := describe(run(t, p, `1 + 1`, `null`, generous)); got != "ok 2" {
		t.Fatalf("run: %s", got)
	}
	waitIdle(t, p, 2)
	victim := 0
	for pid := range pids(p) {
		victim = pid
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); len(logs.Lines("a sandbox worker exited")) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning for a worker killed from outside:\n%s", logs)
		}
	}
	if l := logs.Lines("a sandbox worker exited"); len(l) != 1 || l[0]["level"] != "WARN" || !strings.Contains(l[0]["err"].(string), "signal: killed") {
		t.Fatalf("a worker killed from outside: %v", l)
	}
	// its successor started and ready (p.all holds ready workers)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		live := pids(p)
		if _, ok := live[victim]; !ok && len(live) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no successor: %v", live)
		}
	}
	before := len(logs.Lines(""))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closing := logs.Lines("")[before:]
	var stopped []map[string]any
	for _, l := range closing {
		if l["level"] != "DEBUG" && l["level"] != "INFO" {
			t.Errorf("an orderly stop logs %v: %v", l["level"], l)
		}
		if l["msg"] == "sandbox workers stopped" {
			stopped = append(stopped, l)
		}
	}
	if len(stopped) != 1 || stopped[0]["level"] != "INFO" || stopped[0]["workers"] != float64(2) {
		t.Fatalf("the stop's lines: %v", closing)
	}
	if took, ok := stopped[0]["took"].(string); !ok {
		t.Errorf("took %v: want a duration with its unit", stopped[0]["took"])
	} else if _, err := time.ParseDuration(took); err != nil {
		t.Errorf("took %q: %v", took, err)
	}
}

// A run through a worker reports what it used: the worker's phases, its
// set-up counting the hand-off to the worker and back, so that the phases
// add up to the run's time; its CPU time, budget and peak heap.
func TestPoolReportsUsage(t *testing.T) {
	p := newPool(t, nil)
	start := time.Now()
	rep, err := p.Run(context.Background(), spi.RunRequest{Request: spi.Request{
		Script: "const a = []; for (let i = 0; i < 1e5; i++) a.push(i); a.length", InputJSON: "null", Limits: generous}})
	took := time.Since(start)
	u := rep.Usage
	if err != nil || describe(rep.Outcome) != "ok 100000" {
		t.Fatalf("%s, %v", describe(rep.Outcome), err)
	}
	sum := u.Setup + u.Compile + u.Run + u.Serialise
	if u.Setup <= 0 || u.Compile <= 0 || u.Run <= 0 || u.Serialise <= 0 || sum > took || sum < took/2 {
		t.Errorf("phases %v + %v + %v + %v = %v of the %v the run took", u.Setup, u.Compile, u.Run, u.Serialise, sum, took)
	}
	if u.CPU <= 0 || u.CPUBudgetUsed == 0 || u.CPUBudget != p.opts.Engine.CPUBudget ||
		u.PeakMemoryBytes <= 800<<10 || u.PeakMemoryBytes > generous.MemoryBytes || u.MemoryLimitBytes != generous.MemoryBytes {
		t.Errorf("usage %+v", u)
	}
}

// The workers keep what a script's compile left, and the pool counts what
// they did with it: one worker, one script, three runs are one compile
// (the first run's usage says so) and two runs that start from it; a
// second script is a second compile, and so is a third whose run ended at
// its wall clock.
func TestPoolCountsCompiledScripts(t *testing.T) {
	p := newPool(t, func(o *Options) { o.Spares = 0 })
	runs := func(script string, n int) {
		t.Helper()
		for i := range n {
			rep, err := p.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: script, InputJSON: "1", Limits: generous}})
			if err != nil || !rep.Outcome.OK {
				t.Fatalf("%s, run %d: %s %v", script, i, describe(rep.Outcome), err)
			}
			if compiled := rep.Usage.Compile > 0; compiled != (i == 0) {
				t.Fatalf("%s, run %d: compiled %v (%+v)", script, i, compiled, rep.Usage)
			}
		}
	}
	runs("input + 1", 3)
	runs("input + 2", 2)
	if got, want := p.CompiledScripts(), (quickjs.CompiledScriptStats{Hits: 3, Misses: 2}); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	// a run stopped at its wall clock compiled too, and its script's next
	// run starts from that compile
	for i := range 2 {
		rep, err := p.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: "for (;;) {}", InputJSON: "null",
			Limits: spi.Limits{WallClock: 100 * time.Millisecond, MemoryBytes: 32 << 20}}})
		if err != nil || rep.Outcome.Kind != spi.KindLimit || (rep.Usage.Compile > 0) != (i == 0) {
			t.Fatalf("a runaway, run %d: %s %+v %v", i, describe(rep.Outcome), rep.Usage, err)
		}
	}
	if got, want := p.CompiledScripts(), (quickjs.CompiledScriptStats{Hits: 4, Misses: 3}); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
}

// The hard kill's ERROR line ties itself to its evaluation: the request's
// id and trace, carried by the run's context, and the script's hash.
func TestHardKillLineNamesItsEvaluation(t *testing.T) {
	var logs servicetest.Logs
	p := newPool(t, func(o *Options) { o.Logger = telemetry.NewLogger(&logs, slog.LevelInfo, "") })
	ctx := telemetry.WithRequestID(context.Background(), "loom-step-7")
	ctx = telemetry.WithTrace(ctx, telemetry.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"})
	out, err := p.Evaluate(ctx, spi.Request{Script: stuckScript, InputJSON: "null", Limits: spi.Limits{WallClock: 50 * time.Millisecond, MemoryBytes: 32 << 20}})
	if err != nil || out.Limit != spi.LimitWallClock {
		t.Fatalf("%s, %v", describe(out), err)
	}
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"event":"hardKill"`) {
			line = l
		}
	}
	for _, want := range []string{`"requestId":"loom-step-7"`, `"logging.googleapis.com/trace":"4bf92f3577b34da6a3ce929d0e0e4736"`,
		`"scriptSha256":"` + contentref.RefOf([]byte(stuckScript)).String() + `"`, `"pid":`} {
		if !strings.Contains(line, want) {
			t.Errorf("the hard-kill line lacks %s: %q", want, line)
		}
	}
}

// trapArg makes the test binary, started as a worker, break its engine:
// every run whose script begins with trapMarker traps in the guest.
const (
	trapArg    = "trap"
	trapMarker = "/* trap */"
)

// An engine fault crosses the channel: the server's report of the run is
// the worker's, infrastructure with the trap's text as its engine fault,
// and the fault costs that run alone: its worker lives on and serves the
// next run, with no fault and nothing killed.
func TestEngineFaultCrossesTheChannel(t *testing.T) {
	p := newPool(t, func(o *Options) { o.Args = []string{Verb, trapArg}; o.Spares = 0 })
	before := pids(p)
	rep, err := p.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: trapMarker + " 1 + 1", InputJSON: "null", Limits: generous}})
	if err != nil || rep.Outcome.Kind != spi.KindInfrastructure || rep.EngineFault != "wasm error: unreachable" ||
		!strings.Contains(rep.Outcome.Message, rep.EngineFault) {
		t.Fatalf("%s, engine fault %q, %v; want infrastructure and the trap", describe(rep.Outcome), rep.EngineFault, err)
	}
	rep, err = p.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: "1 + 1", InputJSON: "null", Limits: generous}})
	if err != nil || describe(rep.Outcome) != "ok 2" || rep.EngineFault != "" {
		t.Fatalf("the next run: %s, engine fault %q, %v", describe(rep.Outcome), rep.EngineFault, err)
	}
	if after := pids(p); len(after) != 1 || len(before) != 1 || p.Kills() != 0 {
		t.Fatalf("workers %v before the fault, %v after, %d killed: the fault cost a worker", before, after, p.Kills())
	} else {
		for pid := range before {
			if _, ok := after[pid]; !ok {
				t.Fatalf("workers %v before the fault, %v after: the fault cost a worker", before, after)
			}
		}
	}
}

// The pool agrees with the engine on the deadline (docs/spi.md, "Timing"):
// a run that overruns its wall clock inside one builtin and ends on its
// own, long before the hard kill, answers the wall-clock limit, not its
// value; and the deadline is the worker's, counted from when its engine
// began the run, so that a run that waited for a worker longer than its
// wall clock and then ran within it keeps its value. A grace of a minute
// leaves the overrun, a tenth of a second of native work, far inside it on
// a busy machine; the wait is a runaway of three seconds ahead of a run
// with a wall clock of one, which its trivial script fits on any machine.
func TestNoValueAfterTheDeadline(t *testing.T) {
	// No CPU budget: the runaway below must end on its wall clock, which a
	// quiet machine's 3 s of spinning would otherwise outrun in polls.
	p := newPool(t, func(o *Options) {
		o.Engine.HardKillGrace, o.Engine.CPUBudget, o.Concurrent, o.Spares = time.Minute, 0, 1, 0
	})
	overrun := conformance.JavaScriptFixtures().NativeOverrun
	if out := run(t, p, overrun, `null`, spi.Limits{WallClock: conformance.OverrunWallClock, MemoryBytes: 32 << 20}); describe(out) != "limit wallClock" {
		t.Errorf("a run past its wall clock: got %s, want limit wallClock", describe(out))
	}
	if p.Kills() != 0 {
		t.Fatalf("%d workers killed: the overrun did not end on its own, and the test proves nothing of it", p.Kills())
	}

	busy := make(chan struct{}, 1)
	p.dispatched = func(*proc) { busy <- struct{}{} }
	first := make(chan spi.Outcome, 1)
	go func() {
		out, err := p.Evaluate(context.Background(), spi.Request{Script: `for (;;) {}`, InputJSON: `null`, Limits: spi.Limits{WallClock: 3 * time.Second, MemoryBytes: 32 << 20}})
		if err != nil {
			out = spi.Infrastructure("error: " + err.Error())
		}
		first <- out
	}()
	<-busy // the runaway has the only worker
	start := time.Now()
	limits := spi.Limits{WallClock: time.Second, MemoryBytes: 32 << 20}
	out := run(t, p, `input.n + 1`, `{"n":41}`, limits)
	waited := time.Since(start)
	if got := describe(out); got != "ok 42" {
		t.Errorf("a run that waited %v for the only worker and then ran within its wall clock of %v: got %s, want its value 42", waited, limits.WallClock, got)
	}
	if waited <= limits.WallClock {
		t.Errorf("the run was answered after %v: it did not wait longer than its wall clock of %v, so the test proves nothing", waited, limits.WallClock)
	}
	if got := describe(<-first); got != "limit wallClock" {
		t.Errorf("the runaway ahead of it: %s", got)
	}
}

// A run of the script its worker ran last does not carry the script
// through the channel again, and still runs that very script: runs that
// repeat a script and runs that change it, through one worker, each answer
// as their own script says, whether the frame carried it or named it; and
// the worker that starts after a kill, which has no last script, is sent
// the script whole.
func TestRunsOfTheLastScriptNameIt(t *testing.T) {
	p := newPool(t, func(o *Options) { o.Spares = 0 })
	var carried []bool
	p.dispatched = func(w *proc) { carried = append(carried, bytes.Contains(w.wbuf, []byte("/*mark*/"))) }
	for i, tc := range []struct{ script, want string }{
		{"/*mark*/ input + 1", "ok 2"},
		{"/*mark*/ input + 1", "ok 2"},
		{"/*mark*/ input + 2", "ok 3"},
		{"/*mark*/ input + 1", "ok 2"},
		{"/*mark*/ input + 1", "ok 2"},
	} {
		if got := describe(run(t, p, tc.script, "1", generous)); got != tc.want {
			t.Fatalf("run %d of %q: %s, want %s", i, tc.script, got, tc.want)
		}
	}
	if got := fmt.Sprint(carried); got != "[true false true true false]" {
		t.Errorf("frames carried the script: %s, want [true false true true false]", got)
	}
	// a kill: the next worker gets the script whole
	if o := run(t, p, stuckScript, "null", spi.Limits{WallClock: 100 * time.Millisecond, MemoryBytes: 64 << 20}); o.Limit != spi.LimitWallClock {
		t.Fatalf("the stuck run: %s", describe(o))
	}
	carried = nil
	for range 2 {
		if got := describe(run(t, p, "/*mark*/ input + 1", "1", generous)); got != "ok 2" {
			t.Fatalf("after the kill: %s", got)
		}
	}
	if got := fmt.Sprint(carried); got != "[true false]" {
		t.Errorf("after the kill, frames carried the script: %s, want [true false]", got)
	}
}
