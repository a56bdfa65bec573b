// boundText: the bound every composed message goes through, as the service's
// spi.BoundText (ADR 0144 D2: 2048 UTF-16 units, storable).
import assert from "node:assert/strict";
import { test } from "node:test";
import { boundText, MAX_MESSAGE_UNITS } from "@loom-plugins/sandbox-cloudrun";

test("short clean text is kept", () => {
  assert.equal(boundText("hello"), "hello");
  assert.equal(MAX_MESSAGE_UNITS, 2048);
});

test("long text is cut at the bound, never inside a surrogate pair", () => {
  assert.equal(boundText("a".repeat(5000)).length, 2048);
  assert.equal(boundText("a" + "😀".repeat(10), 4), "a😀");
  assert.equal(boundText("😀😀", 3), "😀");
});

test("NUL and lone surrogates become U+FFFD", () => {
  assert.equal(boundText("a\0b"), "a\uFFFDb");
  assert.equal(boundText("x\uD800y\uDC00"), "x\uFFFDy\uFFFD");
  assert.ok(boundText("\uDBFF".repeat(3000)).isWellFormed());
});

test("a bound of zero or less is empty", () => {
  assert.equal(boundText("abc", 0), "");
});
