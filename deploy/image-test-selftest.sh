#!/usr/bin/env bash
# The test of deploy/image-test.sh: a test that reports PASS must be able to
# report FAIL. Two runs of it against the image it built (IMAGE_TEST_BUILD=0:
# CI runs image-test.sh just before this; run it first by hand too):
#
#   wrong     IMAGE_TEST_WRONG=all: every check gets a deliberately wrong
#             expectation. Each must report FAIL (no "ok" line), the summary
#             must count them all, and the exit status must be 1.
#   weakened  the image run as it must not be, the service untouched:
#               --user 0:0                 -> server-uid, server-gid,
#                                             server-capabilities, worker-lockdown
#               --memory 1g                -> memory-limit
#               -e WORKER_LOCKDOWN=off     -> worker-lockdown,
#                                             worker-seccomp-filters,
#                                             capabilities-isolation
#               the baked compilation cache replaced by a copy emptied of its
#               compiled engine, read-only -> compile-cache-hit
#             Exactly those checks must fail, with exit status 1: each
#             weakening is caught by a check that no other one trips, and
#             nothing else in the run changes.
#
#   sudo bash deploy/image-test-selftest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
image=${IMAGE_TEST_IMAGE:-localhost/sandbox-cloudrun:image-test}
podman=(podman --runtime runc --cgroup-manager=cgroupfs)
if ! "${podman[@]}" image exists "$image" 2>/dev/null; then
  echo "image-test-selftest: no image $image: run deploy/image-test.sh first" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

failed=0
bad() {
  echo "image-test-selftest: $*" >&2
  failed=1
}
# run NAME [VAR=VALUE...] runs image-test.sh with the environment given, its
# output in $work/NAME.log, and sets status.
run() {
  local name=$1 t0=$SECONDS
  shift
  status=0
  env -u IMAGE_TEST_FRESH -u IMAGE_TEST_WRONG -u IMAGE_TEST_RUN_ARGS IMAGE_TEST_BUILD=0 "$@" bash deploy/image-test.sh >"$work/$name.log" 2>&1 || status=$?
  echo "image-test-selftest: $name: exit status $status in $((SECONDS - t0))s"
}
show() { sed 's/^/  | /' "$work/$1.log" >&2; }
# failures NAME: the names of the checks that failed, sorted, one each.
failures() { sed -n 's/^image-test: FAIL \([a-z0-9-]*\): .*/\1/p' "$work/$1.log" | sort -u; }

# --- wrong: every expectation wrong -----------------------------------------
run wrong IMAGE_TEST_WRONG=all
oks=$(grep -c '^image-test: ok ' "$work/wrong.log" || true)
fails=$(grep -cE '^image-test: FAIL [a-z0-9-]+: ' "$work/wrong.log" || true)
summary=$(sed -n 's/^image-test: FAIL, \([0-9]*\) of \([0-9]*\) checks failed$/\1 \2/p' "$work/wrong.log")
if [ "$status" != 1 ] || [ "$oks" != 0 ] || [ "$fails" = 0 ] || [ "$summary" != "$fails $fails" ]; then
  show wrong
  bad "wrong: exit status $status, $oks checks ok and $fails failed (summary: ${summary:-none}); want exit status 1 and every check failed"
else
  echo "image-test-selftest: wrong: all $fails checks failed, as expected"
fi

# --- weakened: the image run as it must not be ------------------------------
cache=$work/emptied-cache
c=$("${podman[@]}" create "$image")
"${podman[@]}" cp "$c:/var/cache/sandbox-cloudrun/wazero" "$cache"
"${podman[@]}" rm "$c" >/dev/null
entries=$(find "$cache" -type f | wc -l)
[ "$entries" -gt 0 ] || bad "the image's compilation cache at /var/cache/sandbox-cloudrun/wazero holds no file"
find "$cache" -type f -delete

want="capabilities-isolation compile-cache-hit memory-limit server-capabilities server-gid server-uid worker-lockdown worker-seccomp-filters"
run weakened IMAGE_TEST_RUN_ARGS="--user 0:0 --memory 1g -e WORKER_LOCKDOWN=off -v $cache:/var/cache/sandbox-cloudrun/wazero:ro"
got=$(failures weakened | tr '\n' ' ')
got=${got% }
if [ "$status" != 1 ] || [ "$got" != "$want" ]; then
  show weakened
  bad "weakened: exit status $status, failed: ${got:-none}; want exit status 1 and failed: $want"
else
  echo "image-test-selftest: weakened: failed $got, as expected"
fi

if [ "$failed" != 0 ]; then
  echo "image-test-selftest: FAILED in $((SECONDS - start))s: image-test.sh does not report what it should" >&2
  exit 1
fi
echo "image-test-selftest: ok, 2 runs in $((SECONDS - start))s"
