// source: https://github.com/bellard/quickjs/issues/273
// bug: Array.from over a generator whose return value is an odd Date leaked
//   an object, an assertion when the runtime was freed. This service never
//   frees a runtime: the instance is dropped whole.
// expect: ok 0
function* gen() {
  return new Date(16, Math);
}
Array.from(gen()).length;
