package security

import (
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

var updateAllowList = flag.Bool("update-allowlist", false, "rewrite testdata/surface.allow from what the guest reaches (then review the diff: every new line is new attack surface)")

const allowListPath = "testdata/surface.allow"

// allowListHeader heads the generated allow-list; it records the review.
const allowListHeader = `# The guest's reachable surface: every own property (names and symbols) of
# every object a script reaches from the global object through values,
# accessors and prototypes, and from the intrinsics only syntax reaches
# (security/testdata/surface.js), one "<first path>.<key> value|accessor"
# line each. TestReachableSurfaceIsAllowListed fails on any difference.
#
# Reviewed 2026-12-01 against QuickJS 2026-05-21 (d73189dd) (sandbox.wasm f61dbd90...):
# ECMAScript built-ins to ES2025 and the finished proposals QuickJS has
# (Iterator helpers and Iterator.concat, Set methods, Map and WeakMap
# getOrInsert, Promise.try, Error.isError, Math.sumPrecise, Math.f16round,
# Float16Array, resizable ArrayBuffers and transfer, RegExp.escape and the v
# flag, Uint8Array base64 and hex, JSON.rawJSON and isRawJSON), Annex B
# (escape, unescape, __proto__, __defineGetter__ and friends,
# String.prototype.anchor and friends, Date.prototype.getYear/setYear/
# toGMTString, RegExp.prototype.compile), QuickJS's InternalError, our input
# and console (log, info, warn, error: they write to the run's own 64 KiB
# buffer), and two QuickJS extensions, each a pure function of its
# arguments that reaches nothing of the host:
#   Function.prototype.fileName    "<script>", "<input>" or undefined
#   Function.prototype.lineNumber, columnNumber   the function's position
#   Set.groupBy                    Map.groupBy, shared by mistake upstream
# Absent on purpose: SharedArrayBuffer (the shim deletes it), Atomics
# (compiled out), std, os, any module loader, WebAssembly, timers.
#
# Regenerate with
#   go test ./security -run TestReachableSurfaceIsAllowListed -update-allowlist
# and review every added line as new attack surface.
`

// The guest's whole reachable surface, enumerated by a script through the
// service (testdata/surface.js: every own property, names and symbols, of
// the global object and of every object reachable from it through values,
// accessors and prototypes, plus the intrinsics only syntax reaches), must
// be exactly the committed allow-list: ECMAScript built-ins (Annex B
// included), QuickJS's InternalError, and our input and console. A line the
// guest has and the list lacks is new surface to review; a line the list has
// and the guest lacks means the list is stale. Both fail.
func TestReachableSurfaceIsAllowListed(t *testing.T) {
	src, err := os.ReadFile("testdata/surface.js")
	if err != nil {
		t.Fatal(err)
	}
	s := shared(t)
	var got []string
	for _, rt := range []route{spiRoute, evaluations} {
		q := req{script: string(src)}
		r := s.do(t, rt, q)
		check(t, q, r, want{class: "ok"})
		var out struct {
			Objects int      `json:"objects"`
			Lines   []string `json:"lines"`
		}
		if err := json.Unmarshal([]byte(r.value), &out); err != nil {
			t.Fatalf("%s: %v", rt, err)
		}
		if out.Objects < 400 || len(out.Lines) < 1500 {
			t.Fatalf("%s: suspiciously small surface: %d objects, %d properties", rt, out.Objects, len(out.Lines))
		}
		if got != nil && strings.Join(got, "\n") != strings.Join(out.Lines, "\n") {
			t.Fatalf("the two routes see different surfaces")
		}
		got = out.Lines
	}
	if *updateAllowList {
		text := allowListHeader + strings.Join(got, "\n") + "\n"
		if err := os.WriteFile(allowListPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d lines to %s", len(got), allowListPath)
		return
	}
	b, err := os.ReadFile(allowListPath)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			allowed[l] = true
		}
	}
	have := map[string]bool{}
	for _, l := range got {
		have[l] = true
		if !allowed[l] {
			t.Errorf("not in the allow-list (new surface: review it): %s", l)
		}
	}
	for l := range allowed {
		if !have[l] {
			t.Errorf("in the allow-list but not reachable (stale list): %s", l)
		}
	}
}

// Independently of the allow-list, no name of a host capability appears
// anywhere on the surface, whatever object holds it.
func TestNoHostCapabilityNames(t *testing.T) {
	b, err := os.ReadFile(allowListPath)
	if err != nil {
		t.Fatal(err)
	}
	forbidden := regexp.MustCompile(`(?i)\.(process|require|module|exports|import|importScripts|fetch|XMLHttpRequest|WebSocket|Deno|Bun|WebAssembly|SharedArrayBuffer|Atomics|std|os|print|scriptArgs|setTimeout|setInterval|setImmediate|queueMicrotask|performance|navigator|crypto|Worker|postMessage|structuredClone|gc|load|read|readline|quit|evalScript|loadScript|bjson|Realm|ShadowRealm|\$262|__loadScript) `)
	lines := strings.Split(string(b), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if m := forbidden.FindString(l); m != "" {
			t.Errorf("host capability name on the surface: %s", l)
		}
	}
	// The QuickJS extensions the review accepted are exactly these.
	ext := map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(l, "#") {
			continue
		}
		last := f[0][strings.LastIndexByte(f[0], '.')+1:]
		switch {
		case strings.HasPrefix(last, "__") && !regexp.MustCompile(`^__(proto|defineGetter|defineSetter|lookupGetter|lookupSetter)__$`).MatchString(last),
			last == "fileName" || last == "lineNumber" || last == "columnNumber",
			strings.HasSuffix(f[0], "Set.groupBy"):
			ext[f[0]] = true
		}
	}
	wantExt := []string{"globalThis.Function.prototype.fileName", "globalThis.Function.prototype.lineNumber",
		"globalThis.Function.prototype.columnNumber", "globalThis.Set.groupBy"}
	for _, e := range wantExt {
		if !ext[e] {
			t.Errorf("the reviewed QuickJS extension %s is gone: update the allow-list header", e)
		}
		delete(ext, e)
	}
	for e := range ext {
		t.Errorf("an unreviewed engine extension: %s", e)
	}

	// The only non-ECMAScript globals are ours and QuickJS's InternalError.
	var globals []string
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "globalThis."); ok && !strings.Contains(strings.Fields(rest)[0], ".") {
			globals = append(globals, strings.Fields(rest)[0])
		}
	}
	ecma := map[string]bool{}
	for _, n := range strings.Fields(`AggregateError Array ArrayBuffer BigInt BigInt64Array BigUint64Array Boolean DataView Date Error
		EvalError FinalizationRegistry Float16Array Float32Array Float64Array Function Infinity Int16Array Int32Array Int8Array
		Iterator JSON Map Math NaN Number Object Promise Proxy RangeError ReferenceError Reflect RegExp Set String
		Symbol SyntaxError TypeError URIError Uint16Array Uint32Array Uint8Array Uint8ClampedArray WeakMap WeakRef WeakSet
		decodeURI decodeURIComponent encodeURI encodeURIComponent escape eval globalThis isFinite isNaN parseFloat parseInt
		undefined unescape`) {
		ecma[n] = true
	}
	ours := map[string]bool{"InternalError": true, "input": true, "console": true}
	for _, g := range globals {
		if !ecma[g] && !ours[g] {
			t.Errorf("a global that is neither ECMAScript nor ours: %s", g)
		}
	}
	if len(globals) < 50 {
		t.Errorf("only %d globals in the allow-list: %v", len(globals), globals)
	}
}
