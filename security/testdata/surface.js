// surface.js enumerates everything a script can reach without calling a
// function it did not write: every own property (names and symbols) of the
// global object, of every object reachable from it through property values,
// accessors and prototypes, and of intrinsics reachable only through syntax
// (generator, async and iterator prototypes, arguments objects, error
// instances). It returns one sorted line per property, "<owner>.<key>", where
// <owner> is the first path (breadth first, keys sorted) that reached the
// object. It runs in a closure, so that it adds nothing to the global
// object itself. security/surface_test.go compares the lines with the
// committed allow-list.
(() => {
const seen = new Map(); // object -> canonical path
const queue = [];
const lines = [];
function keyName(k) {
  if (typeof k === "symbol") {
    const d = k.description;
    for (const n of Object.getOwnPropertyNames(Symbol)) {
      if (Symbol[n] === k) return "[Symbol." + n + "]";
    }
    return "[Symbol(" + d + ")]";
  }
  return k;
}
function visit(v, path) {
  if ((typeof v !== "object" && typeof v !== "function") || v === null) return;
  if (seen.has(v)) return;
  seen.set(v, path);
  queue.push(v);
}
const seeds = [
  ["globalThis", globalThis],
  ["%GeneratorFunction%", Object.getPrototypeOf(function* () {}).constructor],
  ["%AsyncFunction%", Object.getPrototypeOf(async function () {}).constructor],
  ["%AsyncGeneratorFunction%", Object.getPrototypeOf(async function* () {}).constructor],
  ["%ArrayIteratorPrototype%", Object.getPrototypeOf([][Symbol.iterator]())],
  ["%StringIteratorPrototype%", Object.getPrototypeOf(""[Symbol.iterator]())],
  ["%MapIteratorPrototype%", Object.getPrototypeOf(new Map()[Symbol.iterator]())],
  ["%SetIteratorPrototype%", Object.getPrototypeOf(new Set()[Symbol.iterator]())],
  ["%RegExpStringIteratorPrototype%", Object.getPrototypeOf(/a/[Symbol.matchAll](""))],
  ["%AsyncIteratorPrototype%", Object.getPrototypeOf(Object.getPrototypeOf(async function* () {}).prototype)],
  ["%TypedArray%", Object.getPrototypeOf(Int8Array)],
  ["%ThrowTypeError%", Object.getOwnPropertyDescriptor(Function.prototype, "caller").get],
  ["sloppyArguments", (function () { return arguments; })(1)],
  ["strictArguments", (function () { "use strict"; return arguments; })(1)],
  ["errorInstance", new Error("e")],
  ["regexpInstance", /a/g],
  ["arrayInstance", []],
  ["stringObject", new String("s")],
  ["functionInstance", function f(a) {}],
  ["arrowInstance", (a) => a],
  ["classInstance", class C {}],
  ["boundFunction", function () {}.bind(null)],
  ["promiseResolvers", Promise.withResolvers()],
  ["proxyRevocable", Proxy.revocable({}, {})],
  ["generatorInstance", (function* () {})()],
  ["asyncGeneratorInstance", (async function* () {})()],
];
// Prototypes are followed after everything reachable through properties,
// so that an object is named by its property path (Function.prototype)
// rather than as some constructor's <proto> when both reach it.
const protos = [];
function drain() {
  for (;;) {
    while (queue.length) {
      const o = queue.shift();
      const owner = seen.get(o);
      const keys = Reflect.ownKeys(o).map((k) => [keyName(k), k]);
      keys.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      for (const [name, k] of keys) {
        const d = Reflect.getOwnPropertyDescriptor(o, k);
        lines.push(owner + "." + name + (d.get || d.set ? " accessor" : " value"));
        if ("value" in d) visit(d.value, owner + "." + name);
        if (d.get) visit(d.get, owner + "." + name + "<get>");
        if (d.set) visit(d.set, owner + "." + name + "<set>");
      }
      protos.push(o);
    }
    if (!protos.length) return;
    while (protos.length) {
      const o = protos.shift();
      const proto = Reflect.getPrototypeOf(o);
      if (proto !== null) visit(proto, seen.get(o) + ".<proto>");
    }
  }
}
// The global object first, so that whatever it reaches is named by its
// global path; then each seed, naming only what the global object did not
// reach.
for (const [p, v] of seeds) {
  visit(v, p);
  drain();
}
lines.sort();
return { objects: seen.size, lines };
})();
