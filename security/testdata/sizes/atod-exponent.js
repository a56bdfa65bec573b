// source: this project's 32-bit size audit (docs/security.md, "32-bit sizes")
// bug: js_atod took the exponent minus the decimal point's offset in an int,
//   which overflowed: 1e-2147483650 read as Infinity and 1e2147483689 as 0.
//   Values, not memory; the same on every host.
// patch: 0010-atod-exponent-in-64-bits
// native: ["Infinity","0"] (the bug)
// expect: ok ["0","Infinity"]
[Number("0." + "0".repeat(10) + "1e-2147483639"), Number("1" + "0".repeat(50) + "e2147483639")].map(String)
