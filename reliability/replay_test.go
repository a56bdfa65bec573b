package reliability

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/service/servicetest"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// replayProbe is a script that reads one source of nondeterminism a script
// can observe (docs/spi.md, "Replayable runs", its table) and puts what it
// read in its answer: the value or the typed failure, and the console text.
type replayProbe struct {
	name   string
	script string
	// memory is the probe's memoryBytes; tight is a smaller one that still
	// fits it (the memory-pressure runs)
	memory, tight int64
	// want is the outcome the SPI route must answer in the mode: "ok",
	// "threw", or "limit " and the limit; has are texts its answer or its
	// console must hold, so that a probe that stopped reading its source
	// (a typo that throws at once is deterministic too) fails
	want string
	has  []string
	// memoryBound: the answer depends on the memory limit, so the tight
	// runs need not answer as the others do
	memoryBound bool
	// varies: without the mode, two runs must differ, so that the battery
	// can fail; every other probe must answer alike without the mode too,
	// since the seed and the clocks are all that varies from run to run
	// (a probe that varied there would name a source the mode leaves open)
	varies bool
}

// The memory limits of the probes. Every probe but the two allocation bombs
// peaks under half a megabyte.
const (
	probeMemory = 8 << 20
	probeTight  = 1 << 20
)

// replayCPUBudget is the services' CPU budget, in interrupt polls: small, so
// that the runaway probe meets it in a fraction of a second, and still far
// above the few dozen polls the heaviest other probe uses.
const replayCPUBudget = 1000

// replayWallClock is every probe's wall clock: long enough that the CPU
// budget, which counts polls, ends the runaway first on however slow or busy
// a machine, since a wall-clock kill is the one outcome no mode reproduces.
const replayWallClock = 20 * time.Second

var replayProbes = []replayProbe{
	{
		name: "Math.random",
		script: `const first = [Math.random(), Math.random(), Math.random()];
let heads = 0;
for (let i = 0; i < 10000; i++) if (Math.random() < 0.5) heads++;
const deck = Array.from({length: 20}, (_, i) => i);
for (let i = deck.length - 1; i > 0; i--) { const j = Math.floor(Math.random() * (i + 1)); [deck[i], deck[j]] = [deck[j], deck[i]]; }
console.log("first draws", first.join(" "));
console.log("after work", Math.random());
({first, heads, deck, last: Math.random()})`,
		memory: probeMemory, tight: probeTight, want: "ok", has: []string{`"first":[0.`}, varies: true,
	},
	{
		name: "clocks, Date, locale and Intl",
		script: `const d = new Date();
const t0 = Date.now();
let spin = 0;
for (let i = 0; i < 100000; i++) spin += i;
const t1 = Date.now();
console.log(Date());
console.log(d.toString(), d.getTimezoneOffset());
({
  now: t0, elapsed: t1 - t0, newDate: d.getTime(), iso: d.toISOString(), string: String(d), dateCall: Date(),
  toString: d.toString(), utc: d.toUTCString(), locale: d.toLocaleString(),
  localeDe: d.toLocaleString("de-DE", {timeZone: "Asia/Tokyo"}), date: d.toLocaleDateString(), time: d.toLocaleTimeString(),
  offset: d.getTimezoneOffset(), hours: d.getHours(), localCtor: new Date(2020, 0, 1).getTime(),
  localParse: Date.parse("2020-01-01T00:00:00"), intl: typeof Intl, temporal: typeof Temporal,
  number: (1234567.891).toLocaleString("de-DE"), collation: ["b", "a", "B", "ä"].sort((x, y) => x.localeCompare(y, "sv")),
})`,
		memory: probeMemory, tight: probeTight, want: "ok", has: []string{`"offset":0`, `"intl":"undefined"`}, varies: true,
	},
	{
		name: "the order of promise jobs",
		script: `const order = [];
const log = (s) => { order.push(s); console.log(s); };
const thenable = (v) => ({ then(res) { log("thenable " + v); res(v); } });
(async () => {
  log("async start");
  await null;
  log("after await null");
  const v = await thenable("t1");
  log("awaited " + v);
  const all = await Promise.all([1, Promise.resolve(2), thenable(3), (async () => { await 0; log("inner"); return 4; })()]);
  log("all " + all.join(","));
})();
Promise.resolve().then(() => log("then 1")).then(() => log("then 2"));
Promise.reject(new Error("x")).catch(() => log("caught")).finally(() => log("finally"));
Promise.resolve(thenable("t2")).then(v => log("resolved " + v));
Promise.race([new Promise(r => r("a")), Promise.resolve("b")]).then(v => log("race " + v));
Promise.allSettled([Promise.reject(1), 2]).then(r => log("settled " + JSON.stringify(r)));
Promise.any([Promise.reject(new Error("no")), thenable("any")]).then(v => log("any " + v));
log("sync end");
Promise.resolve().then(() => order)`,
		memory: probeMemory, tight: probeTight, want: "ok", has: []string{"all 1,2,3,4"},
	},
	{
		name: "unhandled rejections",
		script: `Promise.reject(new Error("first"));
Promise.reject(new TypeError("second", {cause: 1}));
(async () => { await null; throw new RangeError("from an async function"); })();
new Promise((_, reject) => reject("a string"));
const late = Promise.reject(new Error("handled later"));
Promise.resolve().then(() => { late.catch((e) => console.log("late catch:", e.stack)); });
class MyError extends Error { constructor(m) { super(m); this.name = "MyError"; } }
Promise.reject(new MyError("custom"));
Promise.reject({ toString() { return "an object"; } });
Promise.resolve().then(() => { throw new SyntaxError("from a job"); });
console.log("global code done");
"ok"`,
		memory: probeMemory, tight: probeTight, want: "ok",
		// in the order they were rejected: the async function's promise
		// was made before the string's, and rejected in a job
		has: []string{"global code done\nlate catch:", "rejection: a string\n[error] unhandled promise rejection: MyError: custom\n" +
			"[error] unhandled promise rejection: an object\n[error] unhandled promise rejection: RangeError: from an async function\n" +
			"[error] unhandled promise rejection: SyntaxError: from a job\n"},
	},
	{
		// A cycle outlives its last reference until QuickJS's cycle
		// collector runs, which an allocation count triggers: the iteration
		// at which each WeakRef empties and each finalizer runs is where
		// the collector ran.
		name: "WeakRef and FinalizationRegistry",
		script: `const events = [];
const log = (s) => { events.push(s); console.log(s); };
let iter = 0;
const registry = new FinalizationRegistry((held) => log("finalized " + held + " at " + iter));
const refs = [], kept = [];
function make(name, cyclic, keep) {
  const o = { name, pad: new Array(50).fill(name) };
  if (cyclic) o.self = o;
  refs.push({ name, ref: new WeakRef(o) });
  registry.register(o, name);
  if (keep) kept.push(o);
}
make("plain", false, false);
make("kept", true, true);
(async () => {
  for (iter = 0; iter < 120; iter++) {
    if (iter % 10 === 0) make("cycle" + iter, true, false);
    let garbage = [];
    for (let j = 0; j < 150; j++) { const a = { j }; a.b = { a }; garbage.push(a); }
    garbage = null;
    await null;
    for (const r of refs) {
      if (!r.gone && r.ref.deref() === undefined) { r.gone = true; log("emptied " + r.name + " at " + iter); }
    }
  }
  return { events, alive: refs.filter(r => !r.gone).map(r => r.name), kept: kept.length };
})()`,
		memory: probeMemory, tight: probeTight, want: "ok", has: []string{"finalized cycle", "emptied cycle", `"alive":["kept"]`},
	},
	{
		// A script that catches the out-of-memory error and returns
		// normally succeeds (README, "Precedence"): its value says how far
		// the bomb got.
		name: "an allocation bomb caught at the memory limit",
		script: `const chunks = [];
let n = 0, error = null;
try {
  for (;;) { chunks.push(new Array(1000).fill(n)); n++; if (n % 50 === 0) console.log("chunks", n); }
} catch (e) { error = e.name + ": " + e.message; }
chunks.length = 0;
console.log("stopped at", n);
({ n, error })`,
		memory: 2 << 20, tight: 1 << 20, want: "ok", has: []string{`"error":"InternalError: out of memory"`}, memoryBound: true,
	},
	{
		name: "an allocation bomb at the memory limit",
		script: `const a = [];
let n = 0;
for (;;) { a.push({ n, s: "item " + n }); n++; if (n % 500 === 0) console.log("objects", n); }`,
		memory: 1 << 20, tight: 512 << 10, want: "limit memory", has: []string{"objects 500\n"}, memoryBound: true,
	},
	{
		// The console says how far the loop got before the budget, counted
		// in interrupt polls, stopped it.
		name: "a runaway at the CPU limit",
		script: `let n = 0;
for (;;) { for (let k = 0; k < 1000; k++) {} n++; if (n % 20 === 0) console.log("loops", n * 1000); }`,
		memory: probeMemory, tight: probeTight, want: "limit cpu", has: []string{"loops 20000\n"},
	},
	{
		name: "error messages and stack text",
		script: `function inner(x) { return x.y.z; }
function outer() { return inner({}); }
const out = [];
const keep = (e) => out.push([e.name, e.message, e.stack]);
try { outer(); } catch (e) { keep(e); }
try { null.f(); } catch (e) { keep(e); }
try { undefinedVariable; } catch (e) { keep(e); }
try { JSON.parse("{bad"); } catch (e) { keep(e); }
try { new Array(-1); } catch (e) { keep(e); }
try { (function f() { f(); })(); } catch (e) { out.push([e.name, e.message]); }
try { eval("let let = 1"); } catch (e) { keep(e); }
try { [].reduce((a, b) => a); } catch (e) { keep(e); }
try { BigInt(1.5); } catch (e) { keep(e); }
const made = new Error("made", { cause: "a cause" });
out.push([String(made), made.stack, made.cause]);
console.log(made.stack);
console.error(new TypeError("logged"), String(new RangeError("as text")));
out`,
		memory: probeMemory, tight: probeTight, want: "ok", has: []string{"at inner (<script>:1:"},
	},
	{
		name: "a thrown error",
		script: `function deep(n) { if (n === 0) throw new SyntaxError("thrown at depth, after " + new Error("a first").stack.trim()); return deep(n - 1); }
try { deep(2); } catch (e) { console.log(e.stack); }
console.log("throwing again");
deep(5)`,
		memory: probeMemory, tight: probeTight, want: "threw", has: []string{`"name":"SyntaxError"`},
	},
	{
		name: "the order of properties, Map and Set",
		script: `const o = { b: 1, a: 2, 10: "ten", 2: "two", "-1": "neg", "01": "zero-one", [Symbol("s")]: 0, 4294967295: "max", 4294967294: "max index", 1.5: "fraction" };
o.z = 3; o[1] = "one"; delete o.a; o.a = "again"; delete o[2]; o[3] = "three";
const m = new Map([["x", 1], [2, 2], ["1", 3], [NaN, 4], [-0, 5]]);
m.delete("x"); m.set("x", 6); m.set(0, 7); m.set({}, 8);
const s = new Set([3, "3", 1, {}, 2]); s.delete(1); s.add(1);
const arr = [5, 1, 4]; arr[10] = 9; arr.extra = "e";
const out = { keys: Object.keys(o), own: Reflect.ownKeys(o).map(String), forIn: [], json: JSON.stringify(o),
  spread: JSON.stringify({ ...o, 5: 5 }), entries: Object.entries(o).map(String),
  map: [...m.entries()].map(([k, v]) => typeof k === "object" ? "{}," + v : String([k, v])),
  set: [...s].map(x => typeof x === "object" ? "{}" : x), arrayKeys: Object.keys(arr),
  grouped: Object.keys(Object.groupBy([3, 1, 2, 10, "b", "a"], x => x)) };
for (const k in o) out.forIn.push(k);
console.log(out.keys.join(","));
out`,
		memory: probeMemory, tight: probeTight, want: "ok", has: []string{`"keys":["1","3","10","4294967294","b"`},
	},
	{
		name: "Array.prototype.sort with an inconsistent comparator",
		script: `let calls = 0;
const seen = [];
const inconsistent = (a, b) => { calls++; const r = ((a * 31 + b * 17 + calls * 7) % 5) - 2; if (seen.length < 40) seen.push(a + ":" + b + "=" + r); return r; };
const xs = Array.from({ length: 60 }, (_, i) => (i * 37) % 61);
const sorted = xs.slice().sort(inconsistent);
const stable = Array.from({ length: 30 }, (_, i) => ({ k: i % 3, i })).sort((a, b) => a.k - b.k).map(o => o.i);
const typed = Float64Array.from(xs).sort((a, b) => ((a + b + calls++) % 3) - 1);
const toSorted = xs.toSorted(() => (calls++ % 3) - 1);
console.log("comparisons", calls);
({ sorted, calls, seen, stable, typed: Array.from(typed), toSorted })`,
		memory: probeMemory, tight: probeTight, want: "ok", has: []string{`"calls":`},
	},
}

// The runs that change what a worker holds between two runs of the probes:
// a bomb that grows a guest's memory to just under what a worker recycles,
// so that a later guest of that worker gets the mapping back, zeroed; and a
// run stuck in one native call, whose worker the pool kills one hard-kill
// grace after its deadline.
const (
	replayBomb      = `const a = []; for (;;) a.push(new Array(10000).fill(a.length))`
	replayBombBytes = 6 << 20
	replayStuck     = `'a'.repeat(4e6).indexOf('a'.repeat(4e4) + 'b')`
)

// replayKey names answers that must be byte-identical: one probe, one
// route (or the eval verb), one set of limits and one determinism member.
type replayKey struct {
	probe, route, variant string
}

// The variants of a probe's runs.
const (
	variantMode   = "the mode"                           // its own memory limit, with the console
	variantTight  = "the mode, the tight memory limit"   // memory pressure
	variantNoLogs = "the mode, without captureLogs"      // what the eval verb prints
	variantOff    = "without the mode"                   // the variation the mode removes
	routeEval     = "the eval verb"                      // a route of its own
	variantSeed   = "the mode, seed "                    // + the seed
	variantNow    = "the mode, now "                     // + the instant
	variantInput  = "the mode, the default seed, input " // + the input
)

// replayAnswer is one answer, without its usage, and where it came from.
type replayAnswer struct {
	where string
	body  string
	logs  string // the eval verb's standard error: the console
}

// replayBattery holds the answers of every run of the battery.
type replayBattery struct {
	t    *testing.T
	refs map[string]string // a probe's name → its reference in the store
	env  []string          // the services' and the eval verb's settings

	mu      sync.Mutex
	answers map[replayKey][]replayAnswer
}

func (b *replayBattery) record(k replayKey, a replayAnswer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.answers[k] = append(b.answers[k], a)
}

// replayRequest is one probe's run.
type replayRequest struct {
	route       string
	memory      int64
	captureLogs bool
	replay      map[string]string // nil: without the mode
	input       string            // JSON text; "" is null
}

func (b *replayBattery) body(p replayProbe, r replayRequest) map[string]any {
	input := r.input
	if input == "" {
		input = "null"
	}
	m := map[string]any{
		"limits":      map[string]any{"wallClockMs": replayWallClock.Milliseconds(), "memoryBytes": r.memory},
		"captureLogs": r.captureLogs,
	}
	if r.replay != nil {
		m["determinism"] = r.replay
	}
	if r.route == routeSandbox {
		m["script"], m["inputJson"] = p.script, input
	} else {
		m["scriptRef"], m["input"] = b.refs[p.name], jsonRaw(input)
	}
	return m
}

// jsonRaw is JSON text that json.Marshal writes as it is.
type jsonRaw string

func (j jsonRaw) MarshalJSON() ([]byte, error) { return []byte(j), nil }

// send posts one run and returns its answer without usage; a 429 (a gate
// not yet reopened by the run before) is sent again.
func (b *replayBattery) send(c *child, p replayProbe, r replayRequest) (string, error) {
	body := b.body(p, r)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		resp, err := do(context.Background(), c.client, http.MethodPost, c.URL+r.route, body, nil)
		if err != nil {
			return "", err
		}
		if resp.status == http.StatusTooManyRequests && time.Now().Before(deadline) {
			continue
		}
		if resp.status != http.StatusOK {
			return "", fmt.Errorf("%s answered %s", r.route, resp)
		}
		return strings.TrimSuffix(string(resp.body), "\n"), nil
	}
}

// run sends one run and records its answer under variant.
func (b *replayBattery) run(c *child, p replayProbe, r replayRequest, variant, where string) {
	b.t.Helper()
	body, err := b.send(c, p, r)
	if err != nil {
		b.t.Fatalf("%s, %s, %s: %v", p.name, variant, where, err)
	}
	b.record(replayKey{p.name, r.route, variant}, replayAnswer{where: where, body: body})
}

// mode runs p in the mode on route, as variant (its memory limit, or the
// tight one), with the console.
func (b *replayBattery) mode(c *child, p replayProbe, route, variant, where string) {
	b.t.Helper()
	mem := p.memory
	if variant == variantTight {
		mem = p.tight
	}
	b.run(c, p, replayRequest{route: route, memory: mem, captureLogs: true, replay: map[string]string{}}, variant, where)
}

// both runs p in the mode on both routes.
func (b *replayBattery) both(c *child, p replayProbe, variant, where string) {
	b.t.Helper()
	for _, route := range []string{routeSandbox, routeEvaluations} {
		b.mode(c, p, route, variant, where)
	}
}

// eval runs p by reference through the eval verb in the mode, as
// /v1/evaluations without captureLogs answers it, the console on standard
// error; args add flags.
func (b *replayBattery) eval(p replayProbe, variant, where string, args ...string) {
	b.t.Helper()
	args = append([]string{"eval", "-deterministic", "-logs", "-memory", strconv.FormatInt(p.memory, 10),
		"-wall-clock", replayWallClock.String()}, args...)
	cmd := exec.Command(servicetest.Binary(b.t), append(args, b.refs[p.name])...)
	cmd.Env = append(os.Environ(), b.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) {
		b.t.Fatalf("%s: eval %v: %v\n%s%s", p.name, args, err, stdout.String(), stderr.String())
	}
	if (exit != nil) != (p.want != "ok") {
		b.t.Errorf("%s: eval exited %v for an outcome that is %s", p.name, err, p.want)
	}
	body, _, err := servicetest.SplitUsage(routeEvaluations, stdout.Bytes())
	if err != nil {
		b.t.Fatalf("%s: eval printed %v", p.name, err)
	}
	b.record(replayKey{p.name, routeEval, variant}, replayAnswer{where: where, body: strings.TrimSuffix(string(body), "\n"), logs: stderr.String()})
}

// start starts the binary with the battery's settings.
func (b *replayBattery) start() *child {
	return startChild(b.t, startOpts{env: b.env})
}

// The battery: every probe, many times in the mode, across fresh instances,
// worker processes running at once, a guest right after an allocation bomb,
// a tight memory limit, a worker killed in between, a restarted server, on
// both routes and through the eval verb, must give byte-identical answers
// (usage excluded); the SPI's value and console are /v1/evaluations'; and
// without the mode the probes of the seed and the clocks do vary, so that
// the battery can fail, and no other probe does.
func TestReplayBattery(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	scripts := make([]string, len(replayProbes))
	for i, p := range replayProbes {
		scripts[i] = p.script
	}
	refs := putScripts(t, store, 1<<20, scripts...)
	b := &replayBattery{t: t, refs: map[string]string{}, answers: map[replayKey][]replayAnswer{},
		env: []string{"STORE_URL=" + store, "CPU_BUDGET=" + strconv.Itoa(replayCPUBudget),
			"MAX_CONCURRENT_EVALUATIONS=3", "WORKER_SPARES=1", "COMPILATION_CACHE_DIR=" + cacheDir}}
	for i, p := range replayProbes {
		b.refs[p.name] = refs[i]
	}
	start := time.Now()

	c := b.start()
	// Fresh instances: round after round of every probe on both routes,
	// so that a probe's runs are never back to back.
	for round := 1; round <= 3; round++ {
		for _, p := range replayProbes {
			b.both(c, p, variantMode, fmt.Sprintf("fresh instance, round %d", round))
		}
	}
	for _, p := range replayProbes {
		b.run(c, p, replayRequest{route: routeEvaluations, memory: p.memory, replay: map[string]string{}}, variantNoLogs, "the first server")
		b.eval(p, variantMode, "the eval verb, while the first server runs")
	}
	// Worker processes: three copies at once, on a service of three
	// concurrent workers and a spare; copies that overlap run in as many
	// workers (a worker runs one guest at a time).
	for _, p := range replayProbes {
		for _, route := range []string{routeSandbox, routeEvaluations} {
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range 3 {
				wg.Go(func() {
					r := replayRequest{route: route, memory: p.memory, captureLogs: true, replay: map[string]string{}}
					body, err := b.send(c, p, r)
					if errs[i] = err; err == nil {
						b.record(replayKey{p.name, route, variantMode}, replayAnswer{where: fmt.Sprintf("three at once, copy %d", i+1), body: body})
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("%s, three at once on %s: %v", p.name, route, err)
			}
		}
	}
	// A guest right after an allocation bomb in the same worker (the pool
	// hands a run to the worker that answered last), and the tight memory
	// limit.
	bomb := replayProbe{name: "bomb", script: replayBomb}
	for _, p := range replayProbes {
		for _, route := range []string{routeSandbox, routeEvaluations} {
			r := replayRequest{route: routeSandbox, memory: replayBombBytes, replay: map[string]string{}}
			if got, err := b.send(c, bomb, r); err != nil || got != `{"ok":false,"kind":"limit","limit":"memory"}` {
				t.Fatalf("the allocation bomb: %s %v", got, err)
			}
			b.mode(c, p, route, variantMode, "right after an allocation bomb")
		}
		b.both(c, p, variantTight, "the first server")
	}
	// A worker killed in between: the stuck run goes to the worker that ran
	// the runs just before it, so the runs after it are in another process.
	kills := len(hardKills(c.Logs))
	stuck := map[string]any{"script": replayStuck, "inputJson": "null", "limits": map[string]any{"wallClockMs": 100, "memoryBytes": 16 << 20}}
	if resp := c.post(routeSandbox, stuck); resp.status != 200 || strings.TrimSpace(string(resp.body)) != `{"ok":false,"kind":"limit","limit":"wallClock"}` {
		t.Fatalf("the stuck run: %s", resp)
	}
	waitLog(t, c.Logs, func(map[string]any) bool { return len(hardKills(c.Logs)) > kills })
	for _, p := range replayProbes {
		b.both(c, p, variantMode, "after a worker was killed")
		b.both(c, p, variantTight, "after a worker was killed")
	}
	// Without the mode: twice each, a few milliseconds apart so that the
	// host's clock has moved.
	for round := 1; round <= 2; round++ {
		for _, p := range replayProbes {
			time.Sleep(5 * time.Millisecond)
			b.run(c, p, replayRequest{route: routeSandbox, memory: p.memory, captureLogs: true}, variantOff, fmt.Sprintf("run %d", round))
		}
	}
	seedAndNow(b, c)

	// A restarted server.
	if err := c.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, exited := c.Wait(30 * time.Second); !exited {
		t.Fatal("the first server did not exit within 30 s of SIGTERM")
	}
	c = b.start()
	for _, p := range replayProbes {
		b.both(c, p, variantMode, "a restarted server")
		b.both(c, p, variantTight, "a restarted server")
		b.run(c, p, replayRequest{route: routeEvaluations, memory: p.memory, replay: map[string]string{}}, variantNoLogs, "a restarted server")
		b.eval(p, variantMode, "the eval verb, while a restarted server runs")
	}
	t.Logf("%d probes, %d answers in %v", len(replayProbes), b.count(), time.Since(start).Round(time.Millisecond))

	for _, p := range replayProbes {
		t.Run(p.name, func(t *testing.T) { b.check(t, p) })
	}
	t.Run("seed and now", func(t *testing.T) { b.checkSeedAndNow(t) })
}

func (b *replayBattery) count() int {
	n := 0
	for _, as := range b.answers {
		n += len(as)
	}
	return n
}

// The seeds and the instant the random and clock probes are run with.
const (
	replaySeedA = "flow 7, step 3"
	replaySeedB = "flow 7, step 4"
	replayNow   = "2031-05-06T07:08:09.123Z"
)

// seedAndNow runs the random probe with seeds and inputs named, and the
// clock probe with an instant named, on both routes and through eval.
func seedAndNow(b *replayBattery, c *child) {
	b.t.Helper()
	random, clock := replayProbes[0], replayProbes[1]
	for _, seed := range []string{replaySeedA, replaySeedA, replaySeedB} {
		for _, route := range []string{routeSandbox, routeEvaluations} {
			b.run(c, random, replayRequest{route: route, memory: random.memory, captureLogs: true, replay: map[string]string{"seed": seed}}, variantSeed+seed, "the first server")
		}
	}
	b.run(c, random, replayRequest{route: routeEvaluations, memory: random.memory, replay: map[string]string{"seed": replaySeedA}}, variantSeed+replaySeedA+", without captureLogs", "the first server")
	b.eval(random, variantSeed+replaySeedA+", without captureLogs", "the eval verb", "-seed", replaySeedA)
	for range 2 {
		for _, route := range []string{routeSandbox, routeEvaluations} {
			b.run(c, clock, replayRequest{route: route, memory: clock.memory, captureLogs: true, replay: map[string]string{"now": replayNow}}, variantNow+replayNow, "the first server")
		}
	}
	b.run(c, clock, replayRequest{route: routeEvaluations, memory: clock.memory, replay: map[string]string{"now": replayNow}}, variantNow+replayNow+", without captureLogs", "the first server")
	b.eval(clock, variantNow+replayNow+", without captureLogs", "the eval verb", "-now", replayNow)
	for _, input := range []string{"1", "1", "2", "1.0", "10e-1"} {
		b.run(c, random, replayRequest{route: routeSandbox, memory: random.memory, replay: map[string]string{}, input: input}, variantInput+input, "the first server")
	}
}

// same reports, for answers that must be byte-identical, the first that
// differs from the first answer.
func same(as []replayAnswer) error {
	for _, a := range as[1:] {
		if a.body != as[0].body || a.logs != as[0].logs {
			return fmt.Errorf("%s answered\n\t%s%s\nbut %s answered\n\t%s%s",
				as[0].where, as[0].body, logsNote(as[0].logs), a.where, a.body, logsNote(a.logs))
		}
	}
	return nil
}

func logsNote(logs string) string {
	if logs == "" {
		return ""
	}
	return "\n\twith the console " + strconv.Quote(logs)
}

// outcome reads an answer of route as the SPI outcome it carries (a
// /v1/evaluations failure as the outcome it was mapped from) and its console.
func outcome(route, body string) (spi.Outcome, string, error) {
	var logs *string
	var o spi.Outcome
	if route == routeSandbox {
		a, err := api.DecodeSandboxAnswer([]byte(body))
		if err != nil {
			return o, "", err
		}
		o, logs = a.Outcome, a.Logs
	} else {
		a, err := api.DecodeEvaluation([]byte(body))
		if err != nil {
			return o, "", err
		}
		logs = a.Logs
		switch f := a.Failure; {
		case a.OK:
			o = spi.OK(a.Value)
		case f.Channel == spi.ChannelLimitExceeded:
			o = spi.LimitHit(f.Kind)
		case f.Channel == spi.ChannelScriptError:
			o = spi.Threw(f.Name, f.Message)
		default:
			return o, "", fmt.Errorf("the failure %s, which no probe gives", f.Channel)
		}
	}
	if logs == nil {
		return o, "", nil
	}
	return o, *logs, nil
}

// describe is an outcome as the probes' want names it.
func describe(o spi.Outcome) string {
	switch {
	case o.OK:
		return "ok"
	case o.Kind == spi.KindLimit:
		return "limit " + string(o.Limit)
	default:
		return string(o.Kind)
	}
}

func (b *replayBattery) check(t *testing.T, p replayProbe) {
	get := func(route, variant string) []replayAnswer {
		as := b.answers[replayKey{p.name, route, variant}]
		if len(as) < 2 {
			t.Fatalf("%d answers on %s, %s", len(as), route, variant)
		}
		return as
	}
	for _, route := range []string{routeSandbox, routeEvaluations} {
		for _, variant := range []string{variantMode, variantTight} {
			if err := same(get(route, variant)); err != nil {
				t.Errorf("%s, %s: %v", route, variant, err)
			}
		}
	}
	// what the probe read
	spiAnswer := get(routeSandbox, variantMode)[0]
	spiOutcome, spiLogs, err := outcome(routeSandbox, spiAnswer.body)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(spiOutcome); got != p.want {
		t.Errorf("the probe answered %s, want %s:\n\t%s", got, p.want, spiAnswer.body)
	}
	if spiLogs == "" {
		t.Errorf("the probe wrote nothing to the console: %s", spiAnswer.body)
	}
	for _, s := range p.has {
		if !strings.Contains(spiAnswer.body, s) && !strings.Contains(spiLogs, s) {
			t.Errorf("the answer does not hold %q: the probe no longer reads its source:\n\t%s", s, spiAnswer.body)
		}
	}
	// one outcome and one console on both routes
	evAnswer := get(routeEvaluations, variantMode)[0]
	evOutcome, evLogs, err := outcome(routeEvaluations, evAnswer.body)
	if err != nil {
		t.Fatal(err)
	}
	if describe(evOutcome) != describe(spiOutcome) || !bytes.Equal(evOutcome.Value, spiOutcome.Value) ||
		evOutcome.Message != spiOutcome.Message || evLogs != spiLogs {
		t.Errorf("the routes disagree:\n\t%s\n\t%s", spiAnswer.body, evAnswer.body)
	}
	// memory pressure changes nothing a probe reads below its limit
	if !p.memoryBound {
		for _, route := range []string{routeSandbox, routeEvaluations} {
			if err := same(append(get(route, variantMode)[:1:1], get(route, variantTight)[0])); err != nil {
				t.Errorf("%s, the tight memory limit changed the answer: %v", route, err)
			}
		}
	}
	// the eval verb prints /v1/evaluations' answer, and the console
	noLogs, evals := b.answers[replayKey{p.name, routeEvaluations, variantNoLogs}], get(routeEval, variantMode)
	if err := same(noLogs); err != nil {
		t.Errorf("%s, %s: %v", routeEvaluations, variantNoLogs, err)
	}
	for _, e := range evals {
		if e.body != noLogs[0].body || e.logs != evLogs {
			t.Errorf("%s printed\n\t%s%s\n/v1/evaluations answered\n\t%s%s", e.where, e.body, logsNote(e.logs), noLogs[0].body, logsNote(evLogs))
		}
	}
	// without the mode
	off := get(routeSandbox, variantOff)
	switch {
	case p.varies:
		if off[0].body == off[1].body {
			t.Errorf("without the mode, two runs answered alike: the probe does not see what the mode removes\n\t%s", off[0].body)
		}
		for _, a := range off {
			if a.body == spiAnswer.body {
				t.Errorf("without the mode, %s answered as the mode does:\n\t%s", a.where, a.body)
			}
		}
	default:
		if err := same(off); err != nil {
			t.Errorf("without the mode: %v", err)
		}
		if off[0].body != spiAnswer.body {
			t.Errorf("the mode changed what neither the seed nor the clocks decide:\n\t%s\nwithout it\n\t%s", spiAnswer.body, off[0].body)
		}
	}
}

func (b *replayBattery) checkSeedAndNow(t *testing.T) {
	random, clock := replayProbes[0].name, replayProbes[1].name
	key := func(probe, route, variant string) []replayAnswer { return b.answers[replayKey{probe, route, variant}] }
	var keys []replayKey
	for k := range b.answers {
		if strings.HasPrefix(k.variant, variantSeed) || strings.HasPrefix(k.variant, variantNow) || strings.HasPrefix(k.variant, variantInput) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y replayKey) int { return strings.Compare(x.probe+x.route+x.variant, y.probe+y.route+y.variant) })
	for _, k := range keys {
		if err := same(b.answers[k]); err != nil {
			t.Errorf("%s on %s, %s: %v", k.probe, k.route, k.variant, err)
		}
	}
	for _, route := range []string{routeSandbox, routeEvaluations} {
		a, bb := key(random, route, variantSeed+replaySeedA), key(random, route, variantSeed+replaySeedB)
		def := key(random, route, variantMode)
		if a[0].body == bb[0].body {
			t.Errorf("%s: seeds %q and %q drew alike:\n\t%s", route, replaySeedA, replaySeedB, a[0].body)
		}
		if a[0].body == def[0].body {
			t.Errorf("%s: seed %q drew as the default seed does:\n\t%s", route, replaySeedA, a[0].body)
		}
	}
	noLogs, evals := key(random, routeEvaluations, variantSeed+replaySeedA+", without captureLogs"), key(random, routeEval, variantSeed+replaySeedA+", without captureLogs")
	if evals[0].body != noLogs[0].body {
		t.Errorf("eval -seed printed\n\t%s\n/v1/evaluations answered\n\t%s", evals[0].body, noLogs[0].body)
	}
	// the instant named, frozen
	for _, route := range []string{routeSandbox, routeEvaluations} {
		got := key(clock, route, variantNow+replayNow)[0].body
		for _, s := range []string{`"now":1935817689123,"elapsed":0,"newDate":1935817689123,"iso":"2031-05-06T07:08:09.123Z"`, `Tue May 06 2031 07:08:09 GMT+0000`} {
			if !strings.Contains(got, s) {
				t.Errorf("%s: now %s, the answer does not hold %s:\n\t%s", route, replayNow, s, got)
			}
		}
	}
	noLogs, evals = key(clock, routeEvaluations, variantNow+replayNow+", without captureLogs"), key(clock, routeEval, variantNow+replayNow+", without captureLogs")
	if evals[0].body != noLogs[0].body {
		t.Errorf("eval -now printed\n\t%s\n/v1/evaluations answered\n\t%s", evals[0].body, noLogs[0].body)
	}
	// the default instant, exactly: what docs/spi.md says the local-time
	// methods and the locale methods give
	const wantClock = `{"ok":true,"value":{"now":946684800000,"elapsed":0,"newDate":946684800000,"iso":"2000-01-01T00:00:00.000Z",` +
		`"string":"Sat Jan 01 2000 00:00:00 GMT+0000","dateCall":"Sat Jan 01 2000 00:00:00 GMT+0000","toString":"Sat Jan 01 2000 00:00:00 GMT+0000",` +
		`"utc":"Sat, 01 Jan 2000 00:00:00 GMT","locale":"01/01/2000, 12:00:00 AM","localeDe":"01/01/2000, 12:00:00 AM","date":"01/01/2000",` +
		`"time":"12:00:00 AM","offset":0,"hours":0,"localCtor":1577836800000,"localParse":1577836800000,"intl":"undefined",` +
		`"temporal":"undefined","number":"1234567.891","collation":["B","a","b","ä"]},` +
		`"logs":"Sat Jan 01 2000 00:00:00 GMT+0000\nSat Jan 01 2000 00:00:00 GMT+0000 0\n"}`
	if got := key(clock, routeSandbox, variantMode)[0].body; got != wantClock {
		t.Errorf("the default instant:\n\tgot  %s\n\twant %s", got, wantClock)
	}
	// the default seed is the script's and the input's value: 1, 1.0 and
	// 10e-1 are one value, 2 another
	one, two := key(random, routeSandbox, variantInput+"1"), key(random, routeSandbox, variantInput+"2")
	oneDotZero, tenEMinusOne := key(random, routeSandbox, variantInput+"1.0"), key(random, routeSandbox, variantInput+"10e-1")
	if one[0].body == two[0].body || one[0].body != oneDotZero[0].body || one[0].body != tenEMinusOne[0].body {
		t.Errorf("the default seed does not follow the input's value: input 1 drew\n\t%s\ninput 2\n\t%s\ninput 1.0\n\t%s\ninput 10e-1\n\t%s",
			one[0].body, two[0].body, oneDotZero[0].body, tenEMinusOne[0].body)
	}
}
