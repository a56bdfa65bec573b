package conformance

import (
	"encoding/json"
	"time"
)

// ThrowMessage is the message the Throw fixture must throw.
const ThrowMessage = "conformance: thrown on purpose"

// OverrunWallClock is the wall clock the NativeOverrun fixture runs under:
// far below the tenth of a second its builtin takes on the machines the
// tests run on, and far above what a run takes to reach its script.
const OverrunWallClock = 5 * time.Millisecond

// Fixtures are the scripts the kit runs, one per case, in the backend's
// language. Each field's comment is the contract the kit asserts; a backend
// for a language other than JavaScript supplies its own scripts that keep it.
//
// The kit runs every script through the effect with the limits its case
// names: WallClock 10 s and MemoryBytes 64 MiB unless stated otherwise.
type Fixtures struct {
	// Language must equal the backend's declared language.
	Language string

	// Echo returns its input unchanged.
	Echo string
	// Throw throws an error whose message is ThrowMessage.
	Throw string
	// ThrowName, when set, is the name the backend must report for Throw.
	ThrowName *string
	// SyntaxError does not compile; it must be a scriptError.
	SyntaxError string
	// RunawayLoop never ends. It must end as limitExceeded cpu or wallClock,
	// under a wall clock of 1 s.
	RunawayLoop string
	// NativeOverrun spends far longer than OverrunWallClock (a tenth of a
	// second, say) inside one call into the language's runtime that the
	// backend's check of its wall clock cannot interrupt, and then returns
	// a value. Under a wall clock of OverrunWallClock it must end as
	// limitExceeded wallClock: no value comes after the deadline, whether
	// the run ended on its own within the backend's grace or was stopped at
	// its hard kill.
	NativeOverrun string
	// AllocationBomb allocates without end. It must end as limitExceeded
	// memory, under 32 MiB and a wall clock of 20 s.
	AllocationBomb string
	// RichValue runs on RichInput and must return RichExpected: the same JSON
	// value, compared in RFC 8785 form, from the backend directly and through
	// the effect. The value should exercise what a careless bridge loses:
	// non-ASCII text, escapes, lone surrogates, integers past 2^31 and 2^53,
	// -0 and nesting.
	RichValue    string
	RichInput    json.RawMessage
	RichExpected json.RawMessage
	// NetworkProbe and EscapeProbe return {"reachable": [...]} naming every
	// network API and every host object (process, require, fetch,
	// XMLHttpRequest, WebSocket, Deno, Bun, …) the script could reach, by
	// any route, including through the objects the backend hands the script
	// (its input, which is {"a": [1], "s": "x"}, and console); the kit
	// requires an empty list.
	NetworkProbe string
	EscapeProbe  string
	// ImportProbe tries to load host modules dynamically. It must not return
	// the string "escaped"; any other value, or a scriptError, passes.
	ImportProbe string
	// StatefulProbe receives {"run": n}, leaves state behind wherever a later
	// run could see it, and returns {"run": n, "sawEarlierState": bool}
	// saying whether it found state from an earlier run.
	StatefulProbe string
	// OversizedThrow throws a message of at least 5 MiB UTF-16 units holding
	// lone surrogates and NUL (and a name that is oversized, where the
	// language has names). It runs with 128 MiB.
	OversizedThrow string
}

// missing lists the fields a fixture set leaves empty.
func (f *Fixtures) missing() []string {
	var m []string
	for name, v := range map[string]string{
		"Language": f.Language, "Echo": f.Echo, "Throw": f.Throw, "SyntaxError": f.SyntaxError,
		"RunawayLoop": f.RunawayLoop, "NativeOverrun": f.NativeOverrun, "AllocationBomb": f.AllocationBomb, "RichValue": f.RichValue,
		"RichInput": string(f.RichInput), "RichExpected": string(f.RichExpected),
		"NetworkProbe": f.NetworkProbe, "EscapeProbe": f.EscapeProbe, "ImportProbe": f.ImportProbe,
		"StatefulProbe": f.StatefulProbe, "OversizedThrow": f.OversizedThrow,
	} {
		if v == "" {
			m = append(m, name)
		}
	}
	return m
}

// scripts returns every script in the set.
func (f *Fixtures) scripts() []string {
	return []string{f.Echo, f.Throw, f.SyntaxError, f.RunawayLoop, f.NativeOverrun, f.AllocationBomb, f.RichValue,
		f.NetworkProbe, f.EscapeProbe, f.ImportProbe, f.StatefulProbe, f.OversizedThrow}
}

// JavaScriptFixtures returns the default fixtures, written to the script
// contract of docs/spi.md, "The backend": a global `input` holds the parsed
// input, the script's completion value (the value of its last expression
// statement, as in eval) is its result, and console.log exists. It returns a
// new value each time, so a caller may change its copy.
func JavaScriptFixtures() *Fixtures {
	return &Fixtures{
		Language:       "javascript",
		Echo:           "input",
		Throw:          `throw new Error(` + jsString(ThrowMessage) + `);`,
		ThrowName:      ptr("Error"),
		SyntaxError:    `} this is not JavaScript {`,
		RunawayLoop:    `for (;;) {}`,
		NativeOverrun:  jsNativeOverrun,
		AllocationBomb: jsAllocationBomb,
		RichValue:      jsRichValue,
		RichInput:      json.RawMessage(richInput),
		RichExpected:   json.RawMessage(`{"echo":` + richInput + `,"probe":` + richProbe + `,"made":` + richMade + `}`),
		NetworkProbe:   jsNetworkProbe,
		EscapeProbe:    jsEscapeProbe,
		ImportProbe:    jsImportProbe,
		StatefulProbe:  jsStatefulProbe,
		OversizedThrow: jsOversizedThrow,
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func ptr[T any](v T) *T { return &v }

// jsNativeOverrun is a naive search of a long string: a tenth of a second
// on a 2-core machine inside one builtin that QuickJS's interrupt handler
// never reaches (docs/hard-kill.md, "What the interrupt handler cannot
// see"), ending with -1.
const jsNativeOverrun = `'a'.repeat(5e4).indexOf('a'.repeat(1e3) + 'b')`

const jsAllocationBomb = `console.log("allocating until the memory limit");
const keep = [];
for (let i = 0; ; i++) keep.push({ i, pad: "x".repeat(1024) + i });
`

// richInput is JSON text written to catch lossy bridges: every field is a way
// an engine binding has been seen to corrupt a value.
const richInput = `{"unicode":"héllo wörld ✓ 日本語 😀 \u2028\u2029",` +
	`"escapes":"q\" b\\ s/ \b\f\n\r\t \u0001\u001f\u007f",` +
	`"lone":["\ud800","\udfff","a\udc00b","\ud83d"],` +
	`"pair":"\ud83d\ude00",` +
	`"int31":2147483648,"int32":4294967296,"int53":9007199254740992,"int53plus":9007199254740994,` +
	`"negInt53plus":-9007199254740994,"int54":18014398509481984,` +
	`"negZero":-0,"fraction":0.1,"big":1e21,"tiny":1e-7,` +
	`"nested":{"a":[[[{"b":[null,true,false,{"c":{}}]}]]],"empty":[]},` +
	`"deep":[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]}`

// richProbe is what the script observes about its input: evidence from
// inside the engine that the input arrived exactly.
const richProbe = `{"negZero":true,"loneHigh":true,"loneLow":true,"loneInside":true,"pair":true,` +
	`"int53plus":true,"int31":true,"unicodeUnits":23,"escapesUnits":18,"depth":24}`

// richMade is what the script builds itself: evidence that the way out is
// exact too.
const richMade = `{"negZero":0,"lone":"\ud800x\udc00","pair":"\ud83d\ude00","int53plus":9007199254740994,` +
	`"negInt":-2147483649,"big":18446744073709552000,"escapes":"tab\tnl\nnul\u0000quote\"bs\\",` +
	`"nested":[[[[[[{"x":[1,[2,[3]]]}]]]]]]}`

const jsRichValue = `const depth = (v) => (Array.isArray(v) ? 1 + depth(v[0]) : 0);
({
  echo: input,
  probe: {
    negZero: Object.is(input.negZero, -0),
    loneHigh: input.lone[0].length === 1 && input.lone[0].charCodeAt(0) === 0xd800,
    loneLow: input.lone[1].length === 1 && input.lone[1].charCodeAt(0) === 0xdfff,
    loneInside: input.lone[2].length === 3 && input.lone[2].charCodeAt(1) === 0xdc00,
    pair: input.pair.length === 2 && input.pair.codePointAt(0) === 0x1f600,
    int53plus: input.int53plus === 2 ** 53 + 2,
    int31: input.int31 === 2 ** 31,
    unicodeUnits: input.unicode.length,
    escapesUnits: input.escapes.length,
    depth: depth(input.deep),
  },
  made: {
    negZero: -0,
    lone: "\ud800" + "x" + "\udc00",
    pair: "\ud83d\ude00",
    int53plus: 2 ** 53 + 2,
    negInt: -(2 ** 31) - 1,
    big: 2 ** 64,
    escapes: "tab\tnl\nnul\u0000quote\"bs\\",
    nested: [[[[[[{ x: [1, [2, [3]]] }]]]]]],
  },
});
`

const jsNetworkProbe = `(() => {
  const probes = {
    fetch: () => typeof fetch !== "undefined",
    XMLHttpRequest: () => typeof XMLHttpRequest !== "undefined",
    WebSocket: () => typeof WebSocket !== "undefined",
    EventSource: () => typeof EventSource !== "undefined",
    WebTransport: () => typeof WebTransport !== "undefined",
    RTCPeerConnection: () => typeof RTCPeerConnection !== "undefined",
    "navigator.sendBeacon": () => typeof navigator !== "undefined" && typeof navigator.sendBeacon !== "undefined",
    "require(net)": () => typeof require === "function" && !!require("net"),
    "process.binding": () => typeof process !== "undefined" && typeof process.binding !== "undefined",
    "Deno.connect": () => typeof Deno !== "undefined",
    "Bun.connect": () => typeof Bun !== "undefined",
    "std.urlGet": () => typeof std !== "undefined" && typeof std.urlGet !== "undefined",
    "os.exec": () => typeof os !== "undefined" && typeof os.exec !== "undefined",
  };
  const reachable = [];
  for (const [name, probe] of Object.entries(probes)) {
    let hit = false;
    try { hit = probe(); } catch (e) { hit = false; }
    if (hit) reachable.push(name);
  }
  return { reachable };
})()
`

const jsEscapeProbe = `(() => {
  const names = ["process", "require", "fetch", "XMLHttpRequest", "WebSocket", "Deno", "Bun", "std", "os", "module"];
  const routes = [
    ["this.constructor.constructor", () => this.constructor.constructor("return this")()],
    ["Function", () => Function("return this")()],
    ["indirect eval", () => (0, eval)("this")],
    ["globalThis", () => globalThis],
    ["({}).constructor.constructor", () => ({}).constructor.constructor("return this")()],
    ["Function.prototype.constructor", () => (() => {}).constructor("return this")()],
    ["console.log.constructor.constructor", () => console.log.constructor.constructor("return this")()],
    ["input.constructor.constructor", () => input.constructor.constructor("return this")()],
    ["input.a.constructor.constructor", () => input.a.constructor.constructor("return this")()],
  ];
  const reachable = [];
  for (const [route, get] of routes) {
    let target;
    try { target = get(); } catch (e) { continue; }
    if (target === null || (typeof target !== "object" && typeof target !== "function")) continue;
    for (const name of names) {
      let present;
      try { present = typeof target[name] !== "undefined"; } catch (e) { present = true; }
      if (present) reachable.push(route + ": " + name);
    }
  }
  for (const name of names) {
    let present = false;
    try { present = eval("typeof " + name) !== "undefined"; } catch (e) { present = false; }
    if (present) reachable.push("scope: " + name);
  }
  return { reachable };
})()
`

// jsImportProbe's completion value is a promise. A backend that awaits it
// returns "blocked" or "escaped"; one that does not serialises the pending
// promise as {} (JSON.stringify of a Promise). A synchronous result cannot
// observe the settlement, so only "escaped" fails.
const jsImportProbe = `(() => {
  const specifiers = ["node:process", "node:fs", "fs", "std", "os"];
  const attempts = [];
  for (const s of specifiers) {
    try { attempts.push(Promise.resolve(Function("s", "return import(s)")(s))); } catch (e) { /* no import() at all */ }
  }
  if (attempts.length === 0) return "blocked";
  return Promise.all(attempts.map((p) => p.then(() => "escaped", () => "blocked")))
    .then((results) => (results.includes("escaped") ? "escaped" : "blocked"));
})()
`

const jsStatefulProbe = `(() => {
  const key = "__conformanceProbe";
  const places = { globalThis, "Object.prototype": Object.prototype, "Array.prototype": Array.prototype, Math, JSON };
  if (typeof console === "object" && console !== null) places.console = console;
  const seen = [];
  for (const [name, place] of Object.entries(places)) {
    if (Object.prototype.hasOwnProperty.call(place, key)) seen.push(name);
  }
  for (const place of Object.values(places)) {
    try {
      Object.defineProperty(place, key, { value: input.run, writable: true, configurable: true, enumerable: false });
    } catch (e) { /* a frozen place cannot carry state either */ }
  }
  return { run: input.run, sawEarlierState: seen.length > 0, seen };
})()
`

const jsOversizedThrow = `const unit = "a\ud800b\u0000c\udc00d\ud83d\ude00";
const err = new Error(unit.repeat(Math.ceil((5 * 1024 * 1024) / unit.length)));
err.name = "Name\u0000\ud800" + "n".repeat(300);
throw err;
`
