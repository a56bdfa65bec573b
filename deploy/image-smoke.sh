#!/bin/sh
# image-smoke BINARY CACHE_DIR
#
# Run by the Dockerfile's build stage (as root) before the final image is
# assembled. It starts BINARY serve the way the final image will run it (as uid
# 65532, STORE_URL=none, COMPILATION_CACHE_DIR pointing at a copy of CACHE_DIR)
# and fails the build unless:
#   - /readyz turns 200 within 30 s, with no store configured;
#   - POST /v1/sandbox/evaluate with a script by value answers ok (the route
#     the credential-free deployment serves);
#   - the compilation cache was a hit: serve added no entry to the copy, which
#     the runtime user may write only so that a miss is seen here rather than
#     as a start-up failure on a read-only cache in production.
# Needs sh, setpriv (util-linux), curl and find, which the golang image has.
set -eu

bin=$1
cache=$2
port=${SMOKE_PORT:-18080}

work=$(mktemp -d)
chmod 755 "$work" # mktemp -d makes it 0700: the runtime user must reach the cache
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

fail() {
  echo "image-smoke: $*" >&2
  if [ -f "$work/log" ]; then
    echo "image-smoke: the service's output:" >&2
    tail -n 40 "$work/log" >&2
  fi
  exit 1
}

cp -R "$cache" "$work/cache"
chown -R 65532:65532 "$work/cache"
before=$(cd "$work/cache" && find . | sort)

setpriv --reuid=65532 --regid=65532 --clear-groups \
  env -i PATH=/usr/bin:/bin STORE_URL=none COMPILATION_CACHE_DIR="$work/cache" PORT="$port" \
  "$bin" serve >"$work/log" 2>&1 &
pid=$!

ready=""
i=0
while [ $i -lt 150 ]; do
  if curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null; then
    ready=1
    break
  fi
  kill -0 "$pid" 2>/dev/null || fail "serve exited before /readyz turned ready"
  sleep 0.2
  i=$((i + 1))
done
[ -n "$ready" ] || fail "/readyz did not turn ready within 30s (STORE_URL=none, cache $cache)"

out=$(curl -fsS -H 'Content-Type: application/json' \
  --data '{"script":"input.a + 1","inputJson":"{\"a\":41}"}' \
  "http://127.0.0.1:$port/v1/sandbox/evaluate") || fail "POST /v1/sandbox/evaluate failed"
compact=$(printf '%s' "$out" | tr -d ' \n')
# every answer says what the run used, which varies: compare the rest
case $compact in
*',"usage":{"phasesMs":{'*) ;;
*) fail "POST /v1/sandbox/evaluate answered $out, without its usage member" ;;
esac
compact=$(printf '%s' "$compact" | sed 's/,"usage":{"phasesMs":{[^{}]*}[^{}]*}}$/}/')
[ "$compact" = '{"ok":true,"value":42}' ] || fail "POST /v1/sandbox/evaluate answered $out, want {\"ok\":true,\"value\":42} and its usage"

after=$(cd "$work/cache" && find . | sort)
if [ "$before" != "$after" ]; then
  fail "the compilation cache missed: serve wrote a new entry, so compile-cache and serve compile the engine differently and the baked cache would not be used"
fi

echo "image-smoke: ready with STORE_URL=none, evaluate by value ok, compilation cache hit"
