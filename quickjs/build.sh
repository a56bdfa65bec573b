#!/usr/bin/env bash
# Builds quickjs/sandbox.wasm from the pinned QuickJS 2025-04-26 tarball and our
# shim (c/sandbox.c), with Debian's clang 14, lld, wasi-libc and
# libclang-rt-14-dev-wasm32. Same inputs give the same bytes.
#
#   QUICKJS_TARBALL=/path/to/quickjs-2025-04-26.tar.xz quickjs/build.sh
#
# QUICKJS_TARBALL defaults to ../shared/quickjs/quickjs_2025.04.26.orig.tar.xz
# beside the checkout. Its sha256 must be QUICKJS_SHA256 (Debian's orig tarball
# of the release); pass QUICKJS_SHA256 for the upstream tarball of the same
# release. The output is written to $OUT (default: sandbox.wasm beside this
# script) and its hash to sandbox.wasm.sha256.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)

QUICKJS_TARBALL=${QUICKJS_TARBALL:-$here/../../shared/quickjs/quickjs_2025.04.26.orig.tar.xz}
QUICKJS_SHA256=${QUICKJS_SHA256:-ec81da5b3249ed648dbc7df4a1654988910e66a118d9b71cb63534216efcfbbe}
QUICKJS_VERSION=2025-04-26
OUT=${OUT:-$here/sandbox.wasm}
CC=${CC:-clang-14}
WASI_SYSROOT=${WASI_SYSROOT:-/usr}

# Debian's lld-14 installs wasm-ld under LLVM's own bin directory.
export PATH="/usr/lib/llvm-14/bin:$PATH"
for tool in "$CC" wasm-ld sha256sum tar; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool not found (apt-get install clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32)" >&2; exit 1; }
done
[ -f "$QUICKJS_TARBALL" ] || { echo "build.sh: QUICKJS_TARBALL=$QUICKJS_TARBALL does not exist" >&2; exit 1; }
got=$(sha256sum "$QUICKJS_TARBALL" | cut -d' ' -f1)
if [ "$got" != "$QUICKJS_SHA256" ]; then
  echo "build.sh: $QUICKJS_TARBALL has sha256 $got, want $QUICKJS_SHA256" >&2
  exit 1
fi

build=$here/build
rm -rf "$build"
mkdir -p "$build/src" "$build/include" "$build/obj"
tar -xf "$QUICKJS_TARBALL" -C "$build/src" --strip-components=1
version=$(cat "$build/src/VERSION")
[ "$version" = "$QUICKJS_VERSION" ] || { echo "build.sh: tarball holds QuickJS $version, want $QUICKJS_VERSION" >&2; exit 1; }

# Poll the interrupt handler every 1,000 ticks (calls and backward jumps)
# rather than QuickJS's 10,000: a tick can hide a lot of native work (a
# builtin looping over a large array), and the deadline is only seen at a
# poll. The edit is checked: the build stops if the line is not found.
grep -q '^#define JS_INTERRUPT_COUNTER_INIT 10000$' "$build/src/quickjs.c" ||
  { echo "build.sh: JS_INTERRUPT_COUNTER_INIT not found in quickjs.c" >&2; exit 1; }
sed -i 's/^#define JS_INTERRUPT_COUNTER_INIT 10000$/#define JS_INTERRUPT_COUNTER_INIT 1000/' "$build/src/quickjs.c"
# Building an Error's backtrace walks every frame of the stack in one tick;
# charge a tick per frame walked, so that a script constructing errors deep
# in the stack (or retrying after caught stack overflows) still polls soon.
frames='    for(sf = ctx->rt->current_stack_frame; sf != NULL; sf = sf->prev_frame) {'
[ "$(grep -cxF "$frames" "$build/src/quickjs.c")" = 1 ] ||
  { echo "build.sh: build_backtrace's frame loop not found in quickjs.c" >&2; exit 1; }
sed -i "s/^    for(sf = ctx->rt->current_stack_frame; sf != NULL; sf = sf->prev_frame) {\$/&\n        ctx->interrupt_counter--;/" "$build/src/quickjs.c"

# The host builds each instance from a memory image taken after sb_init
# (engine.go), so every instance would start Math.random from the image's
# time-based seed; an added function lets the shim reseed it per instance
# with a seed from the host. Checked: the field and the seeding function it
# stands beside must be as expected.
grep -q '^static void js_random_init(JSContext \*ctx)$' "$build/src/quickjs.c" &&
  grep -q '^    uint64_t random_state;$' "$build/src/quickjs.c" ||
  { echo "build.sh: js_random_init or JSContext.random_state not found in quickjs.c" >&2; exit 1; }
cat >> "$build/src/quickjs.c" <<'C'

/* sandbox-cloudrun (build.sh): reseed Math.random of a context restored from
 * a memory image; the state must be non-zero, as js_random_init ensures. */
void JS_SandboxSeedRandom(JSContext *ctx, uint64_t seed)
{
    ctx->random_state = seed ? seed : 1;
}
C

# The shim reports the promises rejected with no handler once the job queue
# is empty (c/sandbox.c, report_unhandled); QuickJS's rejection tracker says
# when one is rejected unhandled, and an added function tells whether one has
# had a handler attached since. Checked: the flag must be as expected.
grep -q '^    BOOL is_handled; /\* Note: only useful to debug \*/$' "$build/src/quickjs.c" ||
  { echo "build.sh: JSPromiseData.is_handled not found in quickjs.c" >&2; exit 1; }
cat >> "$build/src/quickjs.c" <<'C'

/* sandbox-cloudrun (build.sh): whether a handler was ever attached to a
 * promise; true for anything that is not a promise. */
int JS_SandboxPromiseIsHandled(JSValueConst promise)
{
    JSPromiseData *s = JS_GetOpaque(promise, JS_CLASS_PROMISE);
    return !s || s->is_handled;
}
C

# dtoa.c includes <setjmp.h> and uses none of it; wasi-libc has none.
printf '/* stub: dtoa.c includes setjmp.h but uses none of it */\n' > "$build/include/setjmp.h"

clang_inc=$("$CC" -print-resource-dir)/include
cflags=(
  --target=wasm32-wasi -O2 -nostdinc
  -isystem "$build/include" -isystem "$clang_inc" -isystem "$WASI_SYSROOT/include/wasm32-wasi"
  -D_GNU_SOURCE -DCONFIG_VERSION="\"$version\""
  # EMSCRIPTEN turns off atomics and threads; it also turns off the stack check,
  # which we turn back on: without it deep recursion corrupts memory.
  -DEMSCRIPTEN -DCONFIG_STACK_CHECK
  -fwrapv -fno-ident -ffile-prefix-map="$build"=. -ffile-prefix-map="$here"=.
  -Wall -Wno-unused-function -Wno-unused-variable -Wno-unused-but-set-variable
  -Wno-sign-compare -Wno-missing-braces
)
for src in quickjs libregexp libunicode cutils dtoa; do
  "$CC" "${cflags[@]}" -c "$build/src/$src.c" -o "$build/obj/$src.o"
done
"$CC" "${cflags[@]}" -Werror -I "$build/src" -c c/sandbox.c -o "$build/obj/sandbox.o"

# --stack-first puts the 1 MiB shadow stack below the data, so an overflow
# traps instead of overwriting the heap; QuickJS's own check stops first.
"$CC" --target=wasm32-wasi -O2 -nostdlib -mexec-model=reactor \
  -Wl,--stack-first -Wl,-z,stack-size=1048576 \
  -Wl,--strip-all -Wl,--no-entry \
  -Wl,--export=_initialize \
  "$build/obj/"*.o \
  "$WASI_SYSROOT/lib/wasm32-wasi/crt1-reactor.o" \
  -L"$WASI_SYSROOT/lib/wasm32-wasi" -lc -lm \
  "$("$CC" -print-resource-dir)/lib/wasi/libclang_rt.builtins-wasm32.a" \
  -o "$build/sandbox.wasm"

if command -v wasm-opt >/dev/null && [ "${WASM_OPT:-1}" = 1 ]; then
  wasm-opt -O2 --strip-producers --strip-debug "$build/sandbox.wasm" -o "$build/sandbox.opt.wasm"
  mv "$build/sandbox.opt.wasm" "$build/sandbox.wasm"
fi

cp "$build/sandbox.wasm" "$OUT"
(cd "$(dirname "$OUT")" && sha256sum "$(basename "$OUT")") > "$OUT.sha256"
echo "built $OUT: $(cut -d' ' -f1 "$OUT.sha256") ($(stat -c %s "$OUT") bytes)"
