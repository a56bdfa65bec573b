#!/usr/bin/env bash
# Builds bench/out/native/runner: bench/native/runner.c against native QuickJS
# from the same pinned tarball that quickjs/build.sh compiles to wasm
# (quickjs/quickjs.pin), at -O2 with the flags of the tarball's Makefile
# (-fwrapv, -D_GNU_SOURCE, CONFIG_VERSION; no LTO, which the Makefile leaves
# off by default).
#
#   QUICKJS_TARBALL=/path/to/quickjs-2026-05-21-d73189dd.tar.xz CC=gcc bench/native/build.sh
#
# QUICKJS_TARBALL defaults to ../shared/quickjs/$QUICKJS_TARBALL_NAME beside
# the checkout; its sha256 must be QUICKJS_SHA256 (default: the pinned one).
# CC defaults to clang-14 (the compiler of the wasm build) when present, else
# cc.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

. "$repo/quickjs/quickjs.pin"
QUICKJS_TARBALL=${QUICKJS_TARBALL:-$repo/../shared/quickjs/$QUICKJS_TARBALL_NAME}
QUICKJS_SHA256=${QUICKJS_SHA256:-$QUICKJS_PINNED_SHA256}
if [ -z "${CC:-}" ]; then
  if command -v clang-14 >/dev/null; then CC=clang-14; else CC=cc; fi
fi
out=${OUT_DIR:-$repo/bench/out/native}

[ -f "$QUICKJS_TARBALL" ] || { echo "native/build.sh: QUICKJS_TARBALL=$QUICKJS_TARBALL does not exist" >&2; exit 1; }
got=$(sha256sum "$QUICKJS_TARBALL" | cut -d' ' -f1)
if [ "$got" != "$QUICKJS_SHA256" ]; then
  echo "native/build.sh: $QUICKJS_TARBALL has sha256 $got, want $QUICKJS_SHA256" >&2
  exit 1
fi

# Rebuild only when the tarball, the runner, this script or the compiler changed.
stamp="$got $(sha256sum "$here/runner.c" "$here/build.sh" | cut -d' ' -f1 | tr '\n' ' ') $("$CC" --version | head -1)"
if [ -x "$out/runner" ] && [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ]; then
  exit 0
fi

rm -rf "$out"
mkdir -p "$out/src" "$out/obj"
tar -xf "$QUICKJS_TARBALL" -C "$out/src" --strip-components=1
release=$(cat "$out/src/VERSION")
[ "$release" = "$QUICKJS_RELEASE" ] || { echo "native/build.sh: tarball holds QuickJS $release, want $QUICKJS_RELEASE" >&2; exit 1; }
version=$QUICKJS_VERSION
echo "$version" > "$out/version"

cflags=(-O2 -fwrapv -D_GNU_SOURCE -DCONFIG_VERSION="\"$version\"" -w)
for src in quickjs libregexp libunicode cutils dtoa; do
  "$CC" "${cflags[@]}" -c "$out/src/$src.c" -o "$out/obj/$src.o" &
done
wait
"$CC" -O2 -fwrapv -D_GNU_SOURCE -Wall -Werror -I "$out/src" -c "$here/runner.c" -o "$out/obj/runner.o"
"$CC" -O2 -o "$out/runner" "$out/obj/"*.o -lm -lpthread
echo "$stamp" > "$out/stamp"
"$CC" --version | head -1 > "$out/compiler"
echo "built $out/runner with $("$CC" --version | head -1)" >&2
