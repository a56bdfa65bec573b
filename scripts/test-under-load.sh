#!/usr/bin/env bash
# Runs the test command (README.md's, as `.ci/run --test-command` prints it)
# while a CPU hog keeps every core busy, and exits with the test command's
# status: a test must hold on a busy machine, where users and CI often run
# it. The hogs are shell loops, one per core, that this script starts and
# always stops (on exit, failure or interruption alike). The test command
# runs in the foreground: Ctrl-C stops it and the hogs at once; a SIGTERM
# sent to this script alone takes effect when the command ends.
#
#   scripts/test-under-load.sh                      the full test command
#   scripts/test-under-load.sh ./worker/            its flags on other packages
#   scripts/test-under-load.sh -run TestX ./quickjs/
#   HOGS=4 scripts/test-under-load.sh ...           4 hogs, not one per core
#
# Arguments replace the command's `./...`: they are go test's flags and
# packages. scripts/test-under-load-check.sh checks this script.
set -uo pipefail
cd "$(dirname "$0")/.."

cmd=$(bash .ci/run --test-command) || exit 2
prefix=${cmd% ./...}
if [ "$prefix" = "$cmd" ]; then
  echo "test-under-load: the test command does not end in ./...: $cmd" >&2
  exit 2
fi
hogs=${HOGS:-$(nproc)}

pids=()
stop_hogs() {
  [ ${#pids[@]} -gt 0 ] || return 0
  kill "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
  pids=()
}
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Each hog also stops by itself once this script is gone, even killed with
# SIGKILL: it checks every few thousand turns that the script still runs.
script=$$
for _ in $(seq "$hogs"); do
  ( trap - EXIT INT TERM
    while kill -0 "$script" 2>/dev/null; do
      for ((i = 0; i < 20000; i++)); do :; done
    done ) &
  pids+=($!)
done
echo "test-under-load: $hogs CPU hogs running, pids ${pids[*]}"

if [ $# -gt 0 ]; then
  echo "test-under-load: $prefix $*"
  bash -c "$prefix \"\$@\"" test-under-load "$@"
else
  echo "test-under-load: $cmd"
  bash -c "$cmd"
fi
status=$?
echo "test-under-load: exit status $status after ${SECONDS}s with $hogs CPU hogs"
exit "$status"
