#!/usr/bin/env bash
# Runs the same workloads (bench/workloads/*.js) through three engines side by
# side, a fresh runtime and context per evaluation in each:
#
#   engine / engine-pool0  this service's engine (quickjs/: QuickJS in wasm on
#                          wazero) as the service configures it (watchdog plus
#                          the kernel kill timer), with its pool of fresh
#                          instances warm between runs, and with WithPoolSize(0)
#                          (the instance built on the request path);
#   native                 QuickJS built natively from the same tarball;
#   quickjs-emscripten     quickjs-emscripten 0.32 on Node, loom's reference;
#   engine-on-v8           this engine's own quickjs/sandbox.wasm on Node's
#                          WebAssembly (V8): the same wasm on another runtime,
#                          which splits the gap to quickjs-emscripten into the
#                          runtime's share and the build's.
#
# Then, unless SERVICE=0, the service itself over HTTP on loopback
# (bench/cmd/load: the binary's `serve` against a temporary store; throughput
# and latency one and two evaluations at a time, where a request's time goes,
# cold start with and without the baked compilation cache, resident memory
# over 10,000 evaluations), and the plot of reshape latency against input
# size (bench/cmd/plot, bench/out/reshape-latency.png; docs/img/ holds the
# copy docs/benchmarks.md shows). Then, unless BATCH=0, single requests
# against batches of 10, 100 and 1,000 inputs (bench/cmd/batch, interleaved,
# BATCH_REPS repetitions; bench/out/batch/batch.json and table.md) and their
# price per million evaluations (bench/cmd/cost -batch,
# bench/out/batch/cost.md); alone, with run.sh's build done:
#
#   bench/out/bin/batch -reps 5 && bench/out/bin/cost -batch bench/out/batch/batch.json
#
# Then, unless SCRIPTSIZE=0, a run's cost against its script's size
# (bench/cmd/scriptsize: the transformers of 100 B to 100 KB over the 16 KiB
# document, a script's first run and its later runs, single and batched,
# beside the baseline's service when BASELINE is set and quickjs-emscripten
# in process; SCRIPTSIZE_REPS repetitions, default 3;
# bench/out/scriptsize/, and its plot bench/out/script-size.png).
#
# For each workload it runs ROUNDS rounds; a round runs one batch per engine,
# in an order that rotates from round to round, so that slow phases of a noisy
# machine fall on every engine. Results: bench/out/results.jsonl (one line per
# timed run); the Markdown table: bench/out/report.md, also printed.
#
#   bench/run.sh                  # the full run (about 10 minutes on 2 cores)
#   ROUNDS=1 SCALE=0.1 HARDKILL=0 LOAD_ROUNDS=1 LOAD_SCALE=0.1 BATCH=0 bench/run.sh   # a smoke run
#
# With BASELINE=REV, a fifth engine runs beside them: engine-baseline, the
# engine of git revision REV (built in a temporary worktree) with its pool
# warm, for the engine of two builds side by side in the same table, e.g.
# the engine before and after an upgrade of QuickJS:
#
#   BASELINE=HEAD~1 bench/run.sh
#
# To measure the service of two builds side by side (a git revision against
# the working tree) in one run: bench/compare.sh REV.
#
# Environment: ROUNDS (default 6), SCALE (multiplies the runs per batch,
# default 1), WARMUP (untimed runs per batch, default 3), HARDKILL=0 skips the
# in-process hard-kill benchmark (go test -bench), SERVICE=0 skips the service
# over HTTP, LOAD_ROUNDS (default 3), LOAD_SCALE (multiplies its requests and
# evaluations, default 1) and COLD (process starts with and without the
# cache, each, default 7) shape it; BATCH=0 skips the batches, BATCH_REPS
# (default 5, about 2 minutes) sets their repetitions; SCRIPTSIZE=0 skips
# the script sizes, SCRIPTSIZE_REPS (default 3) sets theirs; QUICKJS_TARBALL
# and CC as for bench/native/build.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"

ROUNDS=${ROUNDS:-6}
SCALE=${SCALE:-1}
WARMUP=${WARMUP:-3}
HARDKILL=${HARDKILL:-1}
SERVICE=${SERVICE:-1}
LOAD_ROUNDS=${LOAD_ROUNDS:-3}
LOAD_SCALE=${LOAD_SCALE:-1}
COLD=${COLD:-7}
BATCH=${BATCH:-1}
BATCH_REPS=${BATCH_REPS:-5}
SCRIPTSIZE=${SCRIPTSIZE:-1}
SCRIPTSIZE_REPS=${SCRIPTSIZE_REPS:-3}
BASELINE=${BASELINE:-}
out=bench/out
bin=$out/bin
start=$SECONDS
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

for tool in go node npm; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool not found" >&2; exit 1; }
done

echo "== building" >&2
mkdir -p "$bin"
go build -o "$bin/" . ./bench/cmd/enginebench ./bench/cmd/report ./bench/cmd/gendocs ./bench/cmd/load ./bench/cmd/batch ./bench/cmd/cost ./bench/cmd/scriptsize
# the plot is a module of its own (gonum/plot is a tool's dependency only)
(dest=$(pwd)/$bin; cd bench/cmd/plot && go build -o "$dest/" .)
bench/native/build.sh
(cd bench && npm ci --no-audit --no-fund --loglevel=error >&2)
"$bin/gendocs" -out "$out/inputs"
baseline_rev=""
if [ -n "$BASELINE" ]; then
  baseline_rev=$(git rev-parse --short "$BASELINE^{commit}")
  echo "== building the engine of $BASELINE ($baseline_rev) in a temporary worktree" >&2
  wt=$(mktemp -d "${TMPDIR:-/tmp}/sandbox-baseline-XXXXXX")
  git worktree add --detach --quiet "$wt" "$baseline_rev"
  (cd "$wt" && go build -o "$repo/$bin/enginebench-baseline" ./bench/cmd/enginebench &&
    go build -o "$repo/$bin/sandbox-cloudrun-baseline" . &&
    echo "$(cut -c1-12 quickjs/sandbox.wasm.sha256), QuickJS $(sed -n 's/^\tEngineVersion *= "\(.*\)"$/\1/p' quickjs/embed.go)" > "$repo/$out/baseline-engine")
  git worktree remove --force "$wt"
fi

results=$out/results.jsonl
log=$out/runners.log
: > "$results"
: > "$log"

# name | script | input | memory limit | timed runs per batch
workloads=(
  "echo|echo.js|echo.json|67108864|400"
  "fib25|fib.js|fib25.json|67108864|40"
  "reshape-1KiB|reshape.js|mcp-1KiB.json|67108864|300"
  "reshape-16KiB|reshape.js|mcp-16KiB.json|67108864|120"
  "reshape-256KiB|reshape.js|mcp-256KiB.json|67108864|30"
  "reshape-4MiB|reshape.js|mcp-4MiB.json|67108864|8"
  "strings|strings.js|null.json|67108864|60"
  "regexp|regexp.js|null.json|67108864|40"
  "loop|loop.js|null.json|67108864|8"
  "objects|objects.js|null.json|67108864|10"
  "json|json.js|null.json|67108864|10"
  "sort|sort.js|null.json|67108864|10"
  "alloc-bomb-16MiB|alloc-bomb.js|null.json|16777216|12"
)
engines=(engine engine-pool0 native quickjs-emscripten engine-on-v8)
[ -z "$baseline_rev" ] || engines+=(engine-baseline)

batch() { # engine workload script input mem runs round
  local engine=$1 args=(-workload "$2" -script "bench/workloads/$3" -input "$out/inputs/$4"
    -mem "$5" -warmup "$WARMUP" -runs "$6" -round "$7")
  case $engine in
    # -process-kill: the service's default (PROCESS_KILL=true, docs/hard-kill.md)
    engine) "$bin/enginebench" -cache "$out/wazero-cache" -process-kill "${args[@]}" ;;
    engine-pool0) "$bin/enginebench" -cache "$out/wazero-cache" -process-kill -pool 0 "${args[@]}" ;;
    engine-baseline) "$bin/enginebench-baseline" -engine engine-baseline -cache "$out/wazero-cache-baseline" -process-kill "${args[@]}" ;;
    native) "$out/native/runner" -engine native "${args[@]}" ;;
    quickjs-emscripten) node bench/node/runner.mjs -engine quickjs-emscripten "${args[@]}" ;;
    engine-on-v8) node bench/node/sandbox-wasm.mjs -engine engine-on-v8 "${args[@]}" ;;
  esac >> "$results" 2>> "$log"
}

for spec in "${workloads[@]}"; do
  IFS='|' read -r name script input mem runs <<< "$spec"
  runs=$(awk -v r="$runs" -v s="$SCALE" 'BEGIN { n = int(r * s + 0.5); print (n < 1 ? 1 : n) }')
  echo "== $name: $ROUNDS rounds x $runs runs per engine" >&2
  for ((round = 1; round <= ROUNDS; round++)); do
    for ((k = 0; k < ${#engines[@]}; k++)); do
      engine=${engines[$(((round - 1 + k) % ${#engines[@]}))]}
      batch "$engine" "$name" "$script" "$input" "$mem" "$runs" "$round"
    done
  done
done

hardkill=()
if [ "$HARDKILL" != 0 ]; then
  echo "== in-process hard kill: go test -bench (watchdog vs WithCloseOnContextDone)" >&2
  # -bench splits its pattern at '/' into one pattern per level: written as
  # 'Fib25|Reshape/256KiB|Reshape256KiBContextDone' it silently skips
  # BenchmarkReshape256KiBContextDone, so name the sub-benchmark last.
  go test ./quickjs/ -run '^$' -bench 'Fib25|Reshape256KiBContextDone|Reshape$/256KiB' \
    -benchtime 20x -count 5 | tee "$out/hardkill.txt" >&2
  hardkill=(-hardkill "$out/hardkill.txt")
fi

service=()
if [ "$SERVICE" != 0 ]; then
  echo "== the service over HTTP on loopback: bench/cmd/load" >&2
  rm -rf "$out/service"
  "$bin/load" -bin "$bin/sandbox-cloudrun" -out "$out/service" -rounds "$LOAD_ROUNDS" -scale "$LOAD_SCALE" -cold "$COLD"
  service=(-service "$out/service/service.json")
fi

batch=()
if [ "$BATCH" != 0 ]; then
  echo "== single requests against batches over HTTP on loopback: bench/cmd/batch" >&2
  rm -rf "$out/batch" && mkdir -p "$out/batch"
  "$bin/batch" -bin "$bin/sandbox-cloudrun" -out "$out/batch" -reps "$BATCH_REPS" > "$out/batch/table.md"
  "$bin/cost" -batch "$out/batch/batch.json" > "$out/batch/cost.md"
  batch=("$out/batch/table.md" "$out/batch/cost.md")
fi

scriptsize=()
if [ "$SCRIPTSIZE" != 0 ]; then
  echo "== a run's cost against its script's size over HTTP on loopback: bench/cmd/scriptsize" >&2
  rm -rf "$out/scriptsize" && mkdir -p "$out/scriptsize"
  base_bin=()
  [ -z "$baseline_rev" ] || base_bin=(-baseline-bin "$bin/sandbox-cloudrun-baseline")
  "$bin/scriptsize" -bin "$bin/sandbox-cloudrun" "${base_bin[@]}" -out "$out/scriptsize" -reps "$SCRIPTSIZE_REPS" > "$out/scriptsize/table.md"
  "$bin/plot" -scriptsize "$out/scriptsize/scriptsize.json" -out "$out/script-size.png"
  scriptsize=("$out/scriptsize/table.md")
fi

"$bin/plot" -results "$results" -inputs "$out/inputs" -out "$out/reshape-latency.png"

qe_dir=bench/node_modules/@jitl/quickjs-wasmfile-release-sync
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "machine: $(nproc) cores ($(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(uname -sr)"
  echo "this engine: $(go version | cut -d' ' -f3-), wazero $(go list -m -f '{{.Version}}' github.com/tetratelabs/wazero), sandbox.wasm $(cut -c1-12 quickjs/sandbox.wasm.sha256)"
  echo "native QuickJS: $(cat "$out/native/version"), built at -O2 with $(cat "$out/native/compiler")"
  [ -z "$baseline_rev" ] || echo "baseline engine: $BASELINE ($baseline_rev): sandbox.wasm $(cat "$out/baseline-engine")"
  echo "quickjs-emscripten: $(node -p "require('./bench/node_modules/quickjs-emscripten/package.json').version") (QuickJS $(grep -m1 -o 'Version \[[^]]*\]' "$qe_dir/README.md" | sed 's/Version \[\(.*\)\]/\1/'), release-sync variant), Node $(node --version)"
  echo "rounds: $ROUNDS, runs scale: $SCALE, warm-up runs per batch: $WARMUP; service: $([ "$SERVICE" != 0 ] && echo "$LOAD_ROUNDS rounds, scale $LOAD_SCALE, $COLD cold starts each way" || echo skipped)"
  echo "load average (1, 5, 15 min) at start: $load_start; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/meta.txt"

"$bin/report" -results "$results" -meta "$out/meta.txt" "${hardkill[@]}" "${service[@]}" > "$out/report.md" || status=$?
cat "$out/report.md"
for f in "${batch[@]}" "${scriptsize[@]}"; do printf '\n'; cat "$f"; done
echo "== done in $((SECONDS - start)) s; results in $results, table in $out/report.md, plot in $out/reshape-latency.png, runner stderr in $log" >&2
exit "${status:-0}"
