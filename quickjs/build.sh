#!/usr/bin/env bash
# Builds quickjs/sandbox.wasm from the pinned QuickJS tarball (quickjs.pin:
# upstream at one commit) and our shim (c/sandbox.c, which includes the other
# files of c/), with our edits to QuickJS kept as patches (patches/), and
# with Debian's clang 14, lld, wasi-libc, libclang-rt-14-dev-wasm32 and
# binaryen (debian-packages.txt).
# Same inputs give the same bytes.
#
#   QUICKJS_TARBALL=/path/to/quickjs-2026-05-21-d73189dd.tar.xz quickjs/build.sh
#   CHECKED=1 quickjs/build.sh     the checked engine, sandbox-checked.wasm
#
# The checked engine is the same recipe with SANDBOX_CHECKED_HEAP defined:
# every block QuickJS takes has red zones around it that are verified on
# free, every few hundred allocations and at the end of every run (c/redzone.c,
# patches/0005). It is for tests (go test -tags checkedengine), never shipped.
#
# QUICKJS_TARBALL defaults to ../shared/quickjs/$QUICKJS_TARBALL_NAME beside
# the checkout. Its sha256 must be QUICKJS_SHA256, by default the pinned
# one. The output is written to $OUT (default: sandbox.wasm beside this
# script; sandbox-checked.wasm with CHECKED=1) and its hash to $OUT.sha256.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)

. "$here/quickjs.pin"
QUICKJS_TARBALL=${QUICKJS_TARBALL:-$here/../../shared/quickjs/$QUICKJS_TARBALL_NAME}
QUICKJS_SHA256=${QUICKJS_SHA256:-$QUICKJS_PINNED_SHA256}
CHECKED=${CHECKED:-0}
case "$CHECKED" in
  0) OUT=${OUT:-$here/sandbox.wasm} variant=() ;;
  1) OUT=${OUT:-$here/sandbox-checked.wasm} variant=(-DSANDBOX_CHECKED_HEAP) ;;
  *) echo "build.sh: CHECKED must be 0 or 1, got $CHECKED" >&2; exit 1 ;;
esac
CC=${CC:-clang-14}
WASI_SYSROOT=${WASI_SYSROOT:-/usr}

# Every tool the build needs, each with the Debian package that installs it,
# in the order of debian-packages.txt. A missing one stops the build before
# anything is built, with the one line that installs all that is missing:
# without wasm-opt in particular the build would give other bytes.
# Debian's lld-14 and clang-14 install under LLVM's own bin directory.
LLVM_DIR=${LLVM_DIR:-/usr/lib/llvm-14}
export PATH="$LLVM_DIR/bin:$PATH"
missing=()
need() { # need PACKAGE WHAT CHECK...: records PACKAGE when CHECK fails
  local pkg=$1 what=$2; shift 2
  if ! "$@" >/dev/null 2>&1; then
    echo "build.sh: $what not found (Debian package $pkg)" >&2
    missing+=("$pkg")
  fi
}
need clang-14 "$CC" command -v "$CC"
need lld-14 wasm-ld command -v wasm-ld
need wasi-libc "$WASI_SYSROOT/include/wasm32-wasi/stdio.h" test -f "$WASI_SYSROOT/include/wasm32-wasi/stdio.h"
need libclang-rt-14-dev-wasm32 "$LLVM_DIR/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a" \
  compgen -G "$LLVM_DIR/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a"
need binaryen wasm-opt command -v wasm-opt
need patch patch command -v patch
need xz-utils xz command -v xz
if [ ${#missing[@]} -gt 0 ]; then
  echo "build.sh: install what is missing with:" >&2
  echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
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
release=$(cat "$build/src/VERSION")
[ "$release" = "$QUICKJS_RELEASE" ] || { echo "build.sh: tarball holds QuickJS $release, want $QUICKJS_RELEASE" >&2; exit 1; }
version=$QUICKJS_VERSION

# Our edits to QuickJS, one reviewable patch each (patches/NNNN-name.patch,
# each saying why in its header), applied in order. A patch must apply
# exactly (no fuzz, no offset, not already applied), or the build stops there,
# naming the patch and what patch said.
for p in "$here"/patches/[0-9][0-9][0-9][0-9]-*.patch; do
  [ -f "$p" ] || { echo "build.sh: no patches in $here/patches" >&2; exit 1; }
  if ! out=$(patch -d "$build/src" -p1 --forward --batch --fuzz=0 --dry-run < "$p" 2>&1) ||
     grep -q '^Hunk' <<<"$out"; then
    echo "build.sh: patches/$(basename "$p") does not apply cleanly to QuickJS $version:" >&2
    echo "$out" >&2
    exit 1
  fi
  patch -d "$build/src" -p1 --forward --batch --fuzz=0 --quiet < "$p"
done

# dtoa.c includes <setjmp.h> and uses none of it; wasi-libc has none.
printf '/* stub: dtoa.c includes setjmp.h but uses none of it */\n' > "$build/include/setjmp.h"

clang_inc=$("$CC" -print-resource-dir)/include
cflags=(
  --target=wasm32-wasi -O2 -nostdinc
  -isystem "$build/include" -isystem "$clang_inc" -isystem "$WASI_SYSROOT/include/wasm32-wasi"
  -D_GNU_SOURCE -DCONFIG_VERSION="\"$version\"" "${variant[@]}"
  # __EMSCRIPTEN__ turns off atomics and threads; it also turns off the stack
  # check, which we turn back on: without it deep recursion corrupts memory.
  -D__EMSCRIPTEN__ -DCONFIG_STACK_CHECK
  -fwrapv -fno-ident -ffile-prefix-map="$build"=. -ffile-prefix-map="$here"=.
  -Wall -Wno-unused-function -Wno-unused-variable -Wno-unused-but-set-variable
  -Wno-sign-compare -Wno-missing-braces
)
for src in quickjs libregexp libunicode cutils dtoa; do
  "$CC" "${cflags[@]}" -c "$build/src/$src.c" -o "$build/obj/$src.o"
done
# One translation unit: c/sandbox.c includes the shim's other files, so that
# they can share static state.
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

# wasm-opt is part of the recipe, not an extra: the committed bytes are its
# output, and it drops the producers section that names the compiler.
wasm-opt -O2 --strip-producers --strip-debug "$build/sandbox.wasm" -o "$build/sandbox.opt.wasm"
mv "$build/sandbox.opt.wasm" "$build/sandbox.wasm"

cp "$build/sandbox.wasm" "$OUT"
(cd "$(dirname "$OUT")" && sha256sum "$(basename "$OUT")") > "$OUT.sha256"
echo "built $OUT: $(cut -d' ' -f1 "$OUT.sha256") ($(stat -c %s "$OUT") bytes)"
