// source: https://github.com/bellard/quickjs/issues/17
// bug: yield* over an iterator whose next() returns a non-object, with the
//   generator re-entered through its own iterator, recursed in
//   JS_IteratorNext2 until the native stack overflowed.
// expect: ok "TypeError: cannot invoke a running generator"
const bad = {
  [Symbol.iterator]() {
    return { next() { return 8; } };
  },
};
let caught;
let delegate = bad;
function* g() {
  try {
    yield* delegate;
  } catch (e) {
    caught = e;
  }
}
const it = g();
delegate = g();
it.next();
String(caught);
