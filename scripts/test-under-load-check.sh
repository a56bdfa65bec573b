#!/usr/bin/env bash
# Checks scripts/test-under-load.sh on one small package, by hand (it keeps
# every core busy for a few seconds per case):
#
#   scripts/test-under-load-check.sh
#
# It passes through the test command's status, 0 and not 0 (a package whose
# test always fails, scripts/testdata/failing); its hogs run while the
# command does and are gone when it ends, however it ends. Prints PASS or
# FAIL per check and exits 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."

failed=0
check() { # check WHAT WANT GOT
  if [ "$2" = "$3" ]; then
    echo "PASS: $1"
  else
    echo "FAIL: $1: want $2, got $3"
    failed=1
  fi
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
hog_pids() { sed -n 's/^test-under-load: .* CPU hogs running, pids //p' "$log"; }
alive() { # how many of the hogs still run (a zombie, exited but not yet reaped, does not)
  local n=0 p
  for p in $(hog_pids); do
    case $(ps -o stat= -p "$p" 2>/dev/null) in "" | Z*) ;; *) n=$((n + 1)) ;; esac
  done
  echo "$n"
}
# run ARGS...: runs the script in the background; once its
# hogs are up, records how many are busy (in state R) in $busy
run() {
  : >"$log"
  scripts/test-under-load.sh "$@" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do [ -n "$(hog_pids)" ] && break; sleep 0.05; done
  sleep 0.2
  busy=0
  for p in $(hog_pids); do
    case $(ps -o stat= -p "$p" 2>/dev/null) in R*) busy=$((busy + 1)) ;; esac
  done
}
cores=$(nproc)

run -run '^$' ./contentref/
wait "$pid"; status=$?
check "a passing command exits 0" 0 "$status"
check "one busy hog per core while it runs" "$cores" "$busy"
check "no hog left after it" 0 "$(alive)"

run ./scripts/testdata/failing/
wait "$pid"; status=$?
check "a failing test's status comes through" 1 "$status"
check "the failing test's output is shown" 1 "$(grep -c -- '--- FAIL: TestAlwaysFails' "$log")"
check "no hog left after a failure" 0 "$(alive)"

run ./no-such-package/
wait "$pid"; status=$?
check "a command that cannot run fails" 1 "$status"
check "no hog left after it" 0 "$(alive)"

run -run '^$' ./contentref/
kill -TERM "$pid"
wait "$pid"; status=$?
check "SIGTERM ends it with 143" 143 "$status"
check "no hog left after SIGTERM" 0 "$(alive)"

run -run '^$' ./contentref/
kill -KILL "$pid"
wait "$pid" 2>/dev/null
sleep 1
check "no hog left after SIGKILL (each notices the script is gone)" 0 "$(alive)"

[ "$failed" = 0 ] && echo "test-under-load-check: PASS" || echo "test-under-load-check: FAIL"
exit "$failed"
