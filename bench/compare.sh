#!/usr/bin/env bash
# Measures the service of two builds side by side in one run: the binary
# built from a git revision (the baseline, "before") and the one built from
# this checkout's working tree ("after").
#
#   bench/compare.sh REV          # e.g. bench/compare.sh HEAD~1
#
# It checks REV out into a temporary worktree (git worktree add --detach),
# builds its binary (go build, the version stamped with REV's short hash)
# and its engine's test binary (go test -c ./quickjs/), removes the
# worktree, builds the same two from the working tree, and then:
#
#   1. unless GOBENCH=0, runs the engine benchmarks of both test binaries
#      alternately (GOBENCH_COUNT rounds; a round runs each once, -count 1,
#      the one that goes first alternating): the engine alone, no service;
#   2. runs bench/cmd/load with -baseline: every HTTP cell for both binaries
#      one right after the other, the cold starts alternating between them,
#      the memory of each server's whole process tree (server and workers).
#
# Output in $OUT (default bench/out/compare): service/service.json (both
# binaries; the baseline under "baseline"), service/latencies.jsonl, the
# servers' logs, gobench-before.txt and gobench-after.txt, meta.txt and the
# Markdown report.md (also printed).
#
# Environment (defaults in brackets):
#   LOAD_ROUNDS [3]   http rounds
#   LOAD_SCALE [1]    multiplies requests per batch and the memory phase's evaluations
#   COLD [7]          cold starts with and without the cache, each, per binary
#   PHASES [http,cold,memory]
#   MATCH ['^one at a time (echo|reshape-16KiB)']   http cells (bench/cmd/load -match; '' for all)
#   MEM_EVALS [10000] memory phase evaluations
#   GOBENCH [1], GOBENCH_COUNT [6], GOBENCH_TIME [400x],
#   GOBENCH_PATTERN ['Echo|Reshape$/16KiB']   (Echo/pool=2, Echo/pool=0,
#                     EchoLatency, Reshape/16KiB: -bench splits a pattern into
#                     alternatives at a top-level '|', each into levels at '/')
#   OUT [bench/out/compare]
#
# The shared 2-core machine: modest sizes are, e.g.,
#   LOAD_ROUNDS=3 bench/compare.sh HEAD~1
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"

[ $# -eq 1 ] || { echo "usage: bench/compare.sh REV" >&2; exit 2; }
rev=$1
LOAD_ROUNDS=${LOAD_ROUNDS:-3}
LOAD_SCALE=${LOAD_SCALE:-1}
COLD=${COLD:-7}
PHASES=${PHASES:-http,cold,memory}
MATCH=${MATCH-'^one at a time (echo|reshape-16KiB)'}
MEM_EVALS=${MEM_EVALS:-10000}
GOBENCH=${GOBENCH:-1}
GOBENCH_COUNT=${GOBENCH_COUNT:-6}
GOBENCH_TIME=${GOBENCH_TIME:-400x}
GOBENCH_PATTERN=${GOBENCH_PATTERN:-'Echo|Reshape$/16KiB'}
out=${OUT:-bench/out/compare}
start=$SECONDS
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

before_rev=$(git rev-parse --short "$rev^{commit}")
after_rev=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- . ':!bench/out' || after_rev="$after_rev+dirty"

rm -rf "$out"
mkdir -p "$out/bin"
out=$(cd "$out" && pwd)
bin=$out/bin
wt=$(mktemp -d "${TMPDIR:-/tmp}/sandbox-compare-XXXXXX")
cleanup() { git worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"; }
trap cleanup EXIT

echo "== building $rev ($before_rev) in a temporary worktree" >&2
git worktree add --detach --quiet "$wt" "$before_rev"
(cd "$wt" && go build -ldflags "-X main.version=$before_rev" -o "$bin/sandbox-cloudrun-before" . &&
  go test -c -o "$bin/quickjs-before.test" ./quickjs/)
# the baseline's test binary reads ../bench/workloads from its package
# directory: keep REV's workloads beside it
mkdir -p "$out/before/quickjs" "$out/before/bench"
cp -r "$wt/bench/workloads" "$out/before/bench/"
cleanup
trap - EXIT

echo "== building the working tree ($after_rev)" >&2
go build -ldflags "-X main.version=$after_rev" -o "$bin/sandbox-cloudrun-after" .
go test -c -o "$bin/quickjs-after.test" ./quickjs/
go build -o "$bin/" ./bench/cmd/load ./bench/cmd/report ./bench/cmd/gendocs
# Write the new binaries back before measuring: a binary's page cache stays
# dirty until written back, and a worker releases the clean pages of its
# executable only (a deployed image's are clean).
sync
"$bin/gendocs" -out "$out/inputs"

gobench=()
if [ "$GOBENCH" != 0 ]; then
  echo "== the engine alone: go test -bench '$GOBENCH_PATTERN' -benchtime $GOBENCH_TIME, $GOBENCH_COUNT rounds, alternating" >&2
  : > "$out/gobench-before.txt"
  : > "$out/gobench-after.txt"
  for ((i = 1; i <= GOBENCH_COUNT; i++)); do
    order=(before after)
    ((i % 2 == 0)) && order=(after before)
    for which in "${order[@]}"; do
      if [ "$which" = before ]; then dir=$out/before/quickjs; else dir=quickjs; fi
      (cd "$dir" && "$bin/quickjs-$which.test" -test.run '^$' -test.bench "$GOBENCH_PATTERN" \
        -test.benchtime "$GOBENCH_TIME" -test.count 1 -test.benchmem) | tee -a "$out/gobench-$which.txt" |
        sed "s/^/[$which] /" | grep '^\[.*Benchmark' >&2
    done
  done
  gobench=(-gobench "before ($before_rev)=$out/gobench-before.txt,after ($after_rev)=$out/gobench-after.txt")
fi

echo "== the service, both binaries: bench/cmd/load -baseline" >&2
load_args=(-bin "$bin/sandbox-cloudrun-after" -label "after ($after_rev)"
  -baseline "$bin/sandbox-cloudrun-before" -baseline-label "before ($before_rev)"
  -out "$out/service" -inputs "$out/inputs" -phases "$PHASES" -rounds "$LOAD_ROUNDS"
  -scale "$LOAD_SCALE" -cold "$COLD" -mem-evals "$MEM_EVALS")
[ -n "$MATCH" ] && load_args+=(-match "$MATCH")
echo "+ $bin/load ${load_args[*]}" >&2
"$bin/load" "${load_args[@]}"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "machine: $(nproc) cores ($(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(uname -sr), $(go version | cut -d' ' -f3-)"
  echo "before: $rev = $before_rev; after: the working tree at $after_rev"
  echo "command: $(printf '%q ' env LOAD_ROUNDS="$LOAD_ROUNDS" LOAD_SCALE="$LOAD_SCALE" COLD="$COLD" PHASES="$PHASES" MATCH="$MATCH" MEM_EVALS="$MEM_EVALS" GOBENCH="$GOBENCH" GOBENCH_COUNT="$GOBENCH_COUNT" GOBENCH_TIME="$GOBENCH_TIME" bench/compare.sh "$rev")"
  echo "load average (1, 5, 15 min) at start: $load_start; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/meta.txt"
"$bin/report" -results '' -meta "$out/meta.txt" "${gobench[@]}" -service "$out/service/service.json" > "$out/report.md"
cat "$out/report.md"
echo "== done in $((SECONDS - start)) s; report in $out/report.md" >&2
