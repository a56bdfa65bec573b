// source: https://github.com/bellard/quickjs/issues/277
// bug: proxies whose handlers are themselves proxies, with a non-callable
//   trap, leaked an object on the error path (an assertion at runtime free).
// expect: threw TypeError not a function
function trap() {
  return {};
}
const o = new Proxy(globalThis, new Proxy(new Proxy(globalThis, new Proxy(globalThis, { get: 0 })), { get: trap }));
String(o);
