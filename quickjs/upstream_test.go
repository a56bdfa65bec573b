package quickjs_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/loom-plugins/sandbox-cloudrun/quickjs"
	"github.com/loom-plugins/sandbox-cloudrun/spi"
)

// QuickJS's own test programs, the ones upstream's `make test` runs with
// qjs that need neither std nor os beyond what a prelude can honestly give,
// run through the engine: the engine's authors' checks, on our build (our
// patches, our flags, the shim's limits, no SharedArrayBuffer), at every
// upgrade. testdata/upstream holds them unchanged from the pinned tarball's
// tests/, with upstream's LICENSE; TestUpstreamTestsAreTheTarballs checks
// the copy against the tarball.
const upstreamDir = "testdata/upstream"

// upstreamTests are the programs that run, each as one script, as qjs runs
// it (global code). stdOS marks the one that upstream runs with
// `qjs --std`, which gets stdOSPrelude in front.
var upstreamTests = []struct {
	file  string
	stdOS bool
}{
	{"test_closure.js", false},
	{"test_language.js", false},
	{"test_loop.js", false},
	{"test_bigint.js", false},
	// Every function runs: test_weak_map, test_weak_map_cycles, test_weak_ref
	// and test_finalization_registry through the prelude's std.gc and
	// os.setTimeout.
	{"test_builtin.js", true},
}

// upstreamNotRun are the tarball's other files in tests/, and why they do
// not run here. A file the tarball gains fails TestUpstreamTestsAreTheTarballs
// until it is put in one list or the other.
var upstreamNotRun = map[string]string{
	"test_std.js":              "a module that imports std and os: files, processes, the environment, timers; none exists here",
	"test_worker.js":           "a module that imports os to start os.Worker threads; there are no threads here",
	"test_worker_module.js":    "the module test_worker.js starts as a worker",
	"test_bjson.js":            "imports the bjson native module (binary serialisation and bytecode); bytecode is never loaded here",
	"test_cyclic_import.js":    "a module test: imports other files; there is no module loader here",
	"fixture_cyclic_import.js": "the module test_cyclic_import.js imports",
	"assert.js":                "the assertions module test_cyclic_import.js imports",
	"microbench.js":            "a benchmark, not a test; it times itself with os.now and writes results with std.open",
}

// stdOSPrelude gives test_builtin.js the std and os it uses (upstream runs it
// with `qjs --std`), no more, each with the behaviour its assertions rely on.
// A file that starts with a "use strict" directive gets it before the
// prelude too, which would otherwise push it out of the directive prologue
// and run the file as sloppy code.
//
// std.gc(): qjs's std.gc calls JS_RunGC, which frees garbage cycles, clears
// the WeakRefs and WeakMap entries of what died and queues the
// FinalizationRegistry callbacks (this QuickJS queues them only there). No
// script can call JS_RunGC, but QuickJS calls it itself when a new object
// takes its heap past a threshold (1.5 times the heap after the last
// collection). So std.gc() keeps allocating objects until a WeakRef to a
// fresh garbage cycle is cleared: QuickJS's collector has then run, after
// everything the caller had dropped was dropped, as with qjs's std.gc(). It
// throws rather than loop without end should that ever stop holding.
//
// os.setTimeout(f, 0): qjs runs f from its event loop once no job is
// pending. Here each callback runs in a job of its own, in order, the first
// queued once the file's global code has ended, so after every job the
// global code queued (the FinalizationRegistry callbacks std.gc() queued
// included); unlike qjs, a job queued by one of those jobs may come after
// it, which test_builtin.js does not depend on. A callback that throws
// rejects the run's result, so the test fails. Only delay 0 is supported.
//
// os.platform is left undefined: test_builtin.js compares it with "win32"
// and "cygwin" only, to skip two Date.UTC assertions there; they run here.
const stdOSPrelude = `var __upstreamTimers = [];
var std = {
  gc() {
    let cycle = {};
    cycle.self = cycle;
    const probe = new WeakRef(cycle);
    cycle = null;
    const keep = [];
    while (probe.deref() !== undefined) {
      if (keep.length === 1 << 21)
        throw new Error("std.gc: QuickJS's collector did not run after " + keep.length + " new objects");
      keep.push({});
    }
  },
};
var os = {
  setTimeout(f, delay) {
    if (delay !== 0)
      throw new Error("os.setTimeout: only a delay of 0 is supported here");
    __upstreamTimers.push(f);
  },
};
`

// epilogue ends a program: its completion value says that the global code
// ran to its end and, with timers, that every timer callback ran too.
func epilogue(file string, stdOS bool) string {
	done, _ := json.Marshal(file + " ran to its end")
	if !stdOS {
		return "\n;\n" + string(done) + "\n"
	}
	return fmt.Sprintf(`
;
Promise.resolve().then(function __upstreamRunTimers() {
  if (__upstreamTimers.length === 0)
    return %s;
  __upstreamTimers.shift()();
  return Promise.resolve().then(__upstreamRunTimers);
})
`, done)
}

// withPrelude puts stdOSPrelude in front of src when stdOS is set, after
// the "use strict" directive src starts with, if it does.
func withPrelude(src string, stdOS bool) string {
	if !stdOS {
		return src
	}
	const strict = `"use strict";`
	if strings.HasPrefix(src, strict) {
		return strict + "\n" + stdOSPrelude + src
	}
	return stdOSPrelude + src
}

// upstreamLimits: the programs run as a request with the service's defaults
// runs (64 MiB of memory, where test_builtin.js needs 8; the engine's default
// CPU budget of 1,000,000 polls, of which test_builtin.js uses 2,283), but
// for a wall clock generous enough for a loaded 2-core machine (each takes
// under a second there).
var upstreamLimits = spi.Limits{WallClock: 2 * time.Minute, MemoryBytes: 64 << 20}

// runUpstream runs one program (src, the file's text) and returns why it
// failed, or "" when every assertion held: the result must be the
// epilogue's, and nothing may be written to the console (an unhandled
// rejection is written there).
func runUpstream(t *testing.T, e *quickjs.Engine, file, src string, stdOS bool) string {
	t.Helper()
	script := withPrelude(src, stdOS) + epilogue(file, stdOS)
	rep, err := e.Run(context.Background(), spi.RunRequest{Request: spi.Request{Script: script, InputJSON: "null", Limits: upstreamLimits}, CaptureLogs: true})
	out, logs := rep.Outcome, rep.Logs
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	want, _ := json.Marshal(file + " ran to its end")
	var why []string
	if !out.OK || string(out.Value) != string(want) {
		why = append(why, "the run ended "+describe(out))
		if out.Kind == spi.KindThrew {
			why = append(why, "where (a second run through indirect eval): "+whereItThrew(t, e, src, stdOS))
		}
	}
	if logs != "" {
		why = append(why, "the console has "+fmt.Sprintf("%q", logs))
	}
	return strings.Join(why, "\n")
}

// whereItThrew runs the program again, through an indirect eval of its text
// inside a try, then its timer callbacks as the real run does, each in a
// try, and returns the stack of the first exception: a threw outcome
// carries only the message. The line numbers are the file's own (<input>).
func whereItThrew(t *testing.T, e *quickjs.Engine, src string, stdOS bool) string {
	t.Helper()
	script := `(() => {
  const none = "nothing threw on the second run";
  const where = (e) => String((e && e.stack) || e);
  try {
    (0, eval)(input);
  } catch (e) {
    return where(e);
  }
  if (typeof __upstreamTimers === "undefined") return none;
  return Promise.resolve().then(function run() {
    if (__upstreamTimers.length === 0) return none;
    try {
      __upstreamTimers.shift()();
    } catch (e) {
      return where(e);
    }
    return Promise.resolve().then(run);
  });
})()`
	script = withPrelude(script, stdOS)
	in, _ := json.Marshal(src)
	out := eval(t, e, script, string(in), upstreamLimits)
	var stack string
	if !out.OK || json.Unmarshal(out.Value, &stack) != nil {
		return describe(out)
	}
	return stack
}

func readUpstream(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(upstreamDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUpstreamTests(t *testing.T) {
	e := shared()
	for _, u := range upstreamTests {
		t.Run(u.file, func(t *testing.T) {
			src := readUpstream(t, u.file)
			start := time.Now()
			if why := runUpstream(t, e, u.file, src, u.stdOS); why != "" {
				t.Fatalf("%s failed:\n%s", u.file, why)
			}
			t.Logf("%s passed in %v", u.file, time.Since(start).Round(time.Millisecond))
		})
	}
}

// The harness fails when an assertion fails, wherever it does: in the
// global code, in a timer callback, or in a job (an unhandled rejection).
// Each program's own assert, called at its end with values that differ.
func TestUpstreamTestsCanFail(t *testing.T) {
	e := shared()
	for _, u := range upstreamTests {
		injections := map[string]string{
			"in the global code": `assert(1, 2, "injected failure");`,
			"in a promise job":   `Promise.resolve().then(() => assert(1, 2, "injected failure"));`,
		}
		if u.stdOS {
			injections["in a timer callback"] = `os.setTimeout(() => assert(1, 2, "injected failure"), 0);`
			injections["a delay other than 0"] = `os.setTimeout(() => {}, 10);`
		}
		for name, inject := range injections {
			t.Run(u.file+"/"+name, func(t *testing.T) {
				src := readUpstream(t, u.file) + "\n;\n" + inject + "\n"
				why := runUpstream(t, e, u.file, src, u.stdOS)
				if why == "" {
					t.Fatalf("%s with %q appended passed", u.file, inject)
				}
				t.Logf("failed as it must:\n%s", why)
			})
		}
	}
}

// pinned is the value quickjs.pin gives the variable name (the file
// build.sh sources), unquoted.
func pinned(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("quickjs.pin")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + `=(.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("quickjs.pin sets no %s", name)
	}
	return strings.Trim(string(m[1]), `"`)
}

// pinnedTarball returns the path of the pinned QuickJS tarball, checked
// against its pinned hash, and its bytes. Needs the tarball (where build.sh
// finds it, or QUICKJS_TARBALL) and xz; without them the test is skipped,
// except under SANDBOX_REBUILD_WASM=1 (the rebuild stage of .ci/run), where
// the rebuild needs them anyway.
func pinnedTarball(t *testing.T) (string, []byte) {
	t.Helper()
	required := os.Getenv("SANDBOX_REBUILD_WASM") != ""
	skip := func(format string, args ...any) {
		t.Helper()
		if required {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (SANDBOX_REBUILD_WASM=1 makes this a failure)", args...)
	}
	tarball := os.Getenv("QUICKJS_TARBALL")
	if tarball == "" {
		here, err := filepath.Abs(".")
		if err != nil {
			t.Fatal(err)
		}
		tarball = filepath.Join(here, "..", "..", "shared", "quickjs", pinned(t, "QUICKJS_TARBALL_NAME"))
	}
	b, err := os.ReadFile(tarball)
	if err != nil {
		skip("no QuickJS tarball: %v", err)
	}
	wantSum := os.Getenv("QUICKJS_SHA256")
	if wantSum == "" {
		wantSum = pinned(t, "QUICKJS_PINNED_SHA256")
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != wantSum {
		t.Fatalf("%s has sha256 %x, quickjs.pin pins %s", tarball, sum, wantSum)
	}
	for _, tool := range []string{"tar", "xz"} {
		if _, err := exec.LookPath(tool); err != nil {
			skip("no %s to read %s (Debian package xz-utils)", tool, tarball)
		}
	}
	return tarball, b
}

// unpackedTarball unpacks the pinned QuickJS tarball into a temporary
// directory and returns it (pinnedTarball says when it is skipped).
func unpackedTarball(t *testing.T) string {
	t.Helper()
	tarball, _ := pinnedTarball(t)
	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xJf", tarball, "-C", dir, "--strip-components=1").CombinedOutput(); err != nil {
		t.Fatalf("tar -xJf %s: %v\n%s", tarball, err, out)
	}
	return dir
}

// The recipe of quickjs.pin makes the pinned tarball: its tar, compressed
// by QUICKJS_COMPRESS, is the pinned bytes, so that anyone with upstream's
// repository can make the tarball the engine is built from. (The tar is
// what git archive writes; this checks the step that fixes the rest.)
func TestTarballRecipeCompresses(t *testing.T) {
	tarball, want := pinnedTarball(t)
	tarBytes, err := exec.Command("xz", "-dc", tarball).Output()
	if err != nil {
		t.Fatalf("xz -dc %s: %v", tarball, err)
	}
	compress := strings.Fields(pinned(t, "QUICKJS_COMPRESS"))
	if len(compress) == 0 || compress[0] != "xz" {
		t.Fatalf("QUICKJS_COMPRESS = %q, want an xz command", compress)
	}
	cmd := exec.Command(compress[0], compress[1:]...)
	cmd.Stdin = bytes.NewReader(tarBytes)
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(compress, " "), err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the tarball's tar through %q gives %d bytes of sha256 %x, not the pinned tarball (%d bytes): quickjs.pin's recipe does not make it",
			strings.Join(compress, " "), len(got), sha256.Sum256(got), len(want))
	}
}

// The copy in testdata/upstream is the pinned tarball's, byte for byte, and
// every test program of the tarball is either run or listed, with the
// reason, as not run (unpackedTarball says when it is skipped).
func TestUpstreamTestsAreTheTarballs(t *testing.T) {
	dir := unpackedTarball(t)

	want := map[string]string{"LICENSE": "LICENSE"} // testdata/upstream name -> path in the tarball
	run := map[string]bool{}
	for _, u := range upstreamTests {
		want[u.file] = "tests/" + u.file
		run[u.file] = true
	}
	for file, path := range want {
		got, err := os.ReadFile(filepath.Join(upstreamDir, file))
		if err != nil {
			t.Error(err)
			continue
		}
		up, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Errorf("the tarball has no %s: %v", path, err)
			continue
		}
		if !bytes.Equal(got, up) {
			t.Errorf("%s/%s differs from the tarball's %s; copy it unchanged from the pinned tarball (quickjs.pin) with:\n  tar -xOJf %s --wildcards '*/%s' > quickjs/%s/%s",
				upstreamDir, file, path, "$QUICKJS_TARBALL", path, upstreamDir, file)
		}
	}
	entries, err := os.ReadDir(upstreamDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range entries {
		if _, ok := want[ent.Name()]; !ok && ent.Name() != "README.md" {
			t.Errorf("%s/%s is neither a program TestUpstreamTests runs nor upstream's LICENSE", upstreamDir, ent.Name())
		}
	}

	tests, err := filepath.Glob(filepath.Join(dir, "tests", "*.js"))
	if err != nil {
		t.Fatal(err)
	}
	inTarball := map[string]bool{}
	for _, p := range tests {
		f := filepath.Base(p)
		inTarball[f] = true
		if !run[f] && upstreamNotRun[f] == "" {
			t.Errorf("the tarball's tests/%s is new: run it in TestUpstreamTests or say in upstreamNotRun why not", f)
		}
		if run[f] && upstreamNotRun[f] != "" {
			t.Errorf("tests/%s is both run and not run", f)
		}
	}
	var stale []string
	for f := range upstreamNotRun {
		if !inTarball[f] {
			stale = append(stale, f)
		}
	}
	sort.Strings(stale)
	for _, f := range stale {
		t.Errorf("upstreamNotRun names tests/%s, which the tarball no longer has", f)
	}
}
