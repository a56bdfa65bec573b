// source: https://github.com/bellard/quickjs/issues/441
// bug: filter on a typed-array subclass whose set() throws leaked the new
//   array (an assertion at runtime free).
// expect: threw ReferenceError 'r' is not defined
class Sub extends Uint8Array {
  set() {
    r;
  }
}
new Sub().filter(() => false);
