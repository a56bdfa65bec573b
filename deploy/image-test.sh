#!/usr/bin/env bash
# image-test.sh: builds the Dockerfile itself with podman, and runs the image
# the way Cloud Run runs it.
#
#   sudo bash deploy/image-test.sh        build, run, check (root: podman
#                                         runs rootful, debootstrap needs it)
#   sudo bash deploy/image-test.sh base   only make the base image (.ci/run
#                                         does it beside its other stages)
#   sudo bash deploy/image-test.sh clean  remove what the runs keep (the base
#                                         image, the image, their layers, the
#                                         Go build cache): the next run pays
#                                         what a fresh machine pays
#
# The build. The Dockerfile's stages start FROM golang:${GO_VERSION}-RELEASE,
# which no registry serves here, so the script makes a local image of that
# name first, from what these machines can reach: Debian RELEASE by
# debootstrap from Debian's mirror, and the Go toolchain of GO_VERSION (both
# read from the Dockerfile) from the Go module proxy as golang.org/toolchain.
# It looks like the official image as far as the Dockerfile relies on it: Go
# in /usr/local/go on PATH, GOPATH /go, sh, curl, ca-certificates, find and
# setpriv (image-smoke.sh), apt-get and Debian's sources (the engine rebuild).
# That image is kept between runs and rebuilt only when its key changes: the
# Go version, the Debian release and this script's recipe for it. Then
# `podman build --pull=never` builds the Dockerfile as written: every other
# line runs, `go mod download` through the module proxy, the build of the
# binary, the baked compilation cache and the image smoke test. Its RUN
# steps see two bind mounts, which no layer keeps (build_image says why):
# the host's CA bundle where it trusts more than Debian's, and a Go build
# cache kept on the host.
#
# The run, as Cloud Run runs a container: read-only root filesystem, the
# image's user (65532), no added capabilities, PORT set in the environment
# (9090, not the image's 8080), a memory limit of 512 MiB, and the
# runtime's own seccomp profile. Two containers:
#
#   none    the image's own configuration, STORE_URL=none (the
#           credential-free deployment): the process's user, capabilities,
#           memory limit and the workers' lock-down, seen from the host;
#           /readyz; /v1/capabilities; an evaluation by value; a wall-clock
#           kill inside a native builtin (a stuck run the interrupt handler
#           never sees: the hard kill answers it) with the same process
#           serving the next run; an allocation bomb typed limit: memory;
#           the compilation cache a hit; cold start to the first answer,
#           measured; and SIGTERM (podman stop) while a run is in flight:
#           the run answered, exit status 0, within Cloud Run's 10 s.
#   store   examples/store mounted read-only, STORE_URL=/store: /readyz, an
#           evaluation of a stored script on /v1/evaluations and a
#           scriptMissing, then podman stop, exit status 0.
#
# Every check prints "image-test: ok NAME: ..." or "image-test: FAIL NAME:
# ..."; a failed check does not stop the others, and the script exits 1 if
# any failed. IMAGE_TEST_WRONG=NAME[,NAME...] (or all) gives the checks named
# a deliberately wrong expectation, to show that each can fail
# (deploy/image-test-selftest.sh does that for all of them).
#
# Environment:
#   IMAGE_TEST_BUILD=0         no base, no build: run the image as it is
#                              (the self-test, after a run that built it)
#   IMAGE_TEST_RUN_ARGS="..."  more podman run arguments (the self-test's
#                              weakened runs)
#   IMAGE_TEST_IMAGE           the image built (localhost/sandbox-cloudrun:image-test)
#   IMAGE_TEST_DEBIAN_MIRROR   a Debian mirror (debootstrap's default)
#   IMAGE_TEST_GOCACHE         the host's directory for the build's Go build
#                              cache (/var/cache/sandbox-cloudrun-image-test/go-build)
set -euo pipefail
cd "$(dirname "$0")/.."
t_start=$SECONDS
verb=${1:-test}
case $verb in
  test | base | clean) ;;
  *)
    echo "usage: deploy/image-test.sh [base | clean]" >&2
    exit 2
    ;;
esac

image=${IMAGE_TEST_IMAGE:-localhost/sandbox-cloudrun:image-test}
mirror=${IMAGE_TEST_DEBIAN_MIRROR:-} # none: debootstrap's own default
wrong=,${IMAGE_TEST_WRONG:-},
build=${IMAGE_TEST_BUILD:-1}
read -ra run_args <<<"${IMAGE_TEST_RUN_ARGS:-}"
# crun fails on these machines' hybrid cgroups; runc with cgroupfs does not.
podman=(podman --runtime runc --cgroup-manager=cgroupfs)
# podman's default limits are above what the host allows a container here.
ulimits=(--ulimit nofile=10000:10000 --ulimit nproc=4096:4096)
mapfile -t packages < <(grep -v -e '^#' -e '^[[:space:]]*$' deploy/image-test-packages.txt)
label=sandbox-cloudrun.image-test.base

say() { echo "image-test: $*"; }
die() {
  echo "image-test: $*" >&2
  exit 1
}
ms() { echo $(($(date +%s%N) / 1000000)); }

# --- what the script needs ----------------------------------------------------
[ "$(id -u)" = 0 ] || die "run it as root: podman builds and runs rootful here, and debootstrap needs root"
need=()
for pkg in "${packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
    die "could not install ${need[*]}: apt-get update && apt-get install -y --no-install-recommends ${packages[*]}"
fi
command -v go >/dev/null || die "needs go on PATH, to fetch the Go toolchain from the module proxy"

# --- what the Dockerfile names ----------------------------------------------
go_version=$(sed -n 's/^ARG GO_VERSION=\([0-9][0-9a-z.]*\)$/\1/p' Dockerfile)
if [ -z "$go_version" ] || [ "$(printf '%s\n' "$go_version" | wc -l)" != 1 ]; then
  die "the Dockerfile has no single 'ARG GO_VERSION=X.Y.Z' line"
fi
mapfile -t froms < <(sed -n 's/^FROM[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' Dockerfile | grep -vx scratch | sort -u)
# shellcheck disable=SC2016 # the Dockerfile's own text, not expanded here
prefix='golang:${GO_VERSION}-'
if [ ${#froms[@]} != 1 ] || [ "${froms[0]#"$prefix"}" = "${froms[0]}" ]; then
  die "the Dockerfile's build stages start from ${froms[*]:-nothing}, want one image, ${prefix}RELEASE"
fi
release=${froms[0]#"$prefix"}
[[ $release =~ ^[a-z]+$ ]] || die "the Dockerfile's Debian release is \"$release\", want a codename such as bookworm"
# The name the FROM lines use: podman keeps the local image as
# localhost/golang:..., and --pull=never resolves the short name to it.
base=golang:$go_version-$release
arch=$(go env GOHOSTARCH)

work=$(mktemp -d)
containers=()
cleanup() {
  local c
  for c in "${containers[@]}"; do
    "${podman[@]}" rm -f -t 0 "$c" >/dev/null 2>&1 || true
  done
  # debootstrap, stopped halfway, may leave the host's /proc, /sys or /dev
  # mounted in its target: unmount them, and never cross into one.
  umount -R "$work"/base/{proc,sys,dev} 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- the base image -----------------------------------------------------------
# build_base makes $base: Debian by debootstrap, Go from the module proxy.
build_base() {
  local root=$work/base mod dir got uri
  say "base: debootstrap --variant=minbase $release${mirror:+ from $mirror}"
  # shellcheck disable=SC2086 # no mirror: no argument
  if ! debootstrap --variant=minbase --include=ca-certificates,curl "$release" "$root" $mirror \
    >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" >&2
    die "base: debootstrap of Debian $release failed (log above)"
  fi
  # APT's sources as the official Debian images have them, for a RUN
  # apt-get (the Dockerfile's engine rebuild), on the mirror debootstrap
  # used: the one line it wrote, "deb URI RELEASE main".
  uri=$(awk '$1 == "deb" { print $2; exit }' "$root/etc/apt/sources.list")
  [ -n "$uri" ] || die "base: debootstrap wrote no APT source"
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $uri
Suites: $release $release-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${uri%/debian}/debian-security
Suites: $release-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb

  mod=golang.org/toolchain@v0.0.1-go$go_version.linux-$arch
  say "base: Go $go_version from the module proxy ($mod)"
  mkdir "$work/gomod" # no go.mod here: the download changes no module
  dir=$(cd "$work/gomod" && go mod download -json "$mod" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p') ||
    die "base: go mod download $mod failed"
  [ -d "$dir/bin" ] || die "base: go mod download $mod gave no directory"
  cp -R "$dir" "$root/usr/local/go"
  # The module cache holds the files read-only and not executable.
  chmod -R u+w "$root/usr/local/go"
  chmod 0755 "$root"/usr/local/go/bin/* "$root"/usr/local/go/pkg/tool/*/*
  got=$(cd "$work/gomod" && env -u GOROOT GOTOOLCHAIN=local "$root/usr/local/go/bin/go" version)
  [ "$got" = "go version go$go_version linux/$arch" ] || die "base: the Go of the image says \"$got\""
  mkdir -p "$root/go/src" "$root/go/bin"
  chmod -R 1777 "$root/go"

  tar -C "$root" -c . | "${podman[@]}" import -q \
    --change "ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV GOLANG_VERSION=$go_version" \
    --change "ENV GOTOOLCHAIN=local" \
    --change "ENV GOPATH=/go" \
    --change "WORKDIR /go" \
    --change 'CMD ["bash"]' \
    --change "LABEL $label=$key" \
    - "$base" >/dev/null
  rm -rf "$root"
}

# The key: the Dockerfile's versions and the recipe above.
key="go$go_version-$release-$(declare -f build_base | sha256sum | cut -c1-16)"

# ensure_base makes $base unless it is cached under the current key.
ensure_base() {
  local t0=$SECONDS have
  have=$("${podman[@]}" image inspect --format "{{index .Labels \"$label\"}}" "$base" 2>/dev/null || true)
  if [ "$have" = "$key" ]; then
    say "base: $base is cached ($key)"
  else
    say "base: building $base ($key${have:+, replacing $have})"
    build_base
    say "base: built in $((SECONDS - t0))s"
  fi
  t_base=$((SECONDS - t0))
}

# --- the build --------------------------------------------------------------
# build_image builds the Dockerfile as $image, and removes what earlier
# builds left that this one does not use.
build_image() {
  local t0=$SECONDS old new version bundle used pruned before id
  local args=(--pull=never "${ulimits[@]}")
  old=$("${podman[@]}" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
  version=$(git rev-parse HEAD 2>/dev/null || echo dev)
  # Where the host trusts a certificate authority that Debian's bundle lacks
  # (these machines reach the module proxy through a TLS-intercepting
  # proxy), the build's RUN steps see the host's bundle in its place: a bind
  # mount, which no layer keeps, so the final image copies Debian's bundle
  # as it would anywhere else.
  bundle=/etc/ssl/certs/ca-certificates.crt
  if [ -f "$bundle" ] && ! "${podman[@]}" run --rm "${ulimits[@]}" "$base" cat "$bundle" | cmp -s - "$bundle"; then
    args+=(-v "$bundle:$bundle:ro")
    say "build: the RUN steps see the host's $bundle (it trusts more than Debian's)"
  fi
  # Go's build cache, kept on the host between builds and seen by the RUN
  # steps where the Dockerfile's go build puts it: a change to the source
  # recompiles what it changed, not every dependency (minutes on two
  # cores). Like the bundle, no layer keeps it; the binary is the same
  # either way.
  mkdir -p "$gocache"
  args+=(-v "$gocache:/root/.cache/go-build")
  say "build: podman build --pull=never --build-arg VERSION=$version -t $image ."
  if ! "${podman[@]}" build "${args[@]}" --build-arg VERSION="$version" -t "$image" -f Dockerfile . \
    >"$work/build.log" 2>&1; then
    tail -n 60 "$work/build.log" >&2
    die "build: podman build of the Dockerfile failed (the end of its output above)"
  fi
  grep -E '^(wasm:|image-smoke:|sandbox-cloudrun )' "$work/build.log" | sed 's/^/image-test: build: | /' || true
  t_build=$((SECONDS - t0))
  say "build: $image built in ${t_build}s"

  # The image this one replaced goes, with its own layers (podman rmi
  # removes an image's untagged parents with it, and refuses images in
  # use); so do the build stages' layers that no longer lead to it: they
  # carry the base's label, which FROM passes on.
  new=$("${podman[@]}" image inspect --format '{{.Id}}' "$image")
  if [ -n "$old" ] && [ "$old" != "$new" ]; then
    "${podman[@]}" rmi "$old" >/dev/null 2>&1 || true
  fi
  used=" $(grep -oE '^--> (Using cache )?[0-9a-f]{11,}' "$work/build.log" | awk '{print substr($NF, 1, 11)}' | tr '\n' ' ') "
  pruned=0
  for _ in 1 2 3; do # a replaced base is dangling only once its layers are gone
    before=$pruned
    for id in $("${podman[@]}" images -a -q --no-trunc --filter dangling=true --filter "label=$label"); do
      id=${id#sha256:}
      [[ $used == *" ${id:0:11} "* ]] && continue
      "${podman[@]}" rmi "$id" >/dev/null 2>&1 && pruned=$((pruned + 1))
    done
    [ "$pruned" != "$before" ] || break
  done
  [ "$pruned" = 0 ] || say "build: removed $pruned layer chains of earlier builds"
}

# One run at a time on a machine (the base, the build and its tag, the
# containers): a second run waits here for the first to end.
state_dir=/var/cache/sandbox-cloudrun-image-test
mkdir -p "$state_dir"
exec {lock}>"$state_dir/lock"
flock "$lock"
gocache=${IMAGE_TEST_GOCACHE:-$state_dir/go-build}
t_base=0 t_build=0
if [ "$verb" = clean ]; then
  "${podman[@]}" rmi "$image" >/dev/null 2>&1 || true
  for _ in 1 2 3 4 5; do # the base goes once no layer is left on it
    ids=$("${podman[@]}" images -a -q --filter "label=$label" | sort -u)
    [ -n "$ids" ] || break
    # shellcheck disable=SC2086 # one ID a word
    "${podman[@]}" rmi $ids >/dev/null 2>&1 || true
  done
  [ -z "$("${podman[@]}" images -a -q --filter "label=$label")" ] ||
    die "clean: images made from $base are left (a container uses them?)"
  rm -rf --one-file-system "$gocache"
  say "clean: removed $base, $image, their layers and $gocache"
  exit 0
elif [ "$build" = 0 ]; then
  "${podman[@]}" image exists "$image" || die "IMAGE_TEST_BUILD=0, but there is no image $image: run deploy/image-test.sh first"
  say "build: none (IMAGE_TEST_BUILD=0): the image $image as it is"
else
  ensure_base
  [ "$verb" != base ] || exit 0
  build_image
fi

# --- checks -------------------------------------------------------------------
checks=0 failures=0
is_wrong() { [ "$wrong" = ",all," ] || [[ $wrong == *",$1,"* ]]; }
pass() {
  checks=$((checks + 1))
  say "ok $1: $2"
}
failed() {
  checks=$((checks + 1)) failures=$((failures + 1))
  echo "image-test: FAIL $1: $2" >&2
}
# want_eq NAME GOT WANT: GOT is WANT.
want_eq() {
  local want=$3
  is_wrong "$1" && want="$want (a deliberately wrong expectation)"
  if [ "$2" = "$want" ]; then pass "$1" "$2"; else failed "$1" "got $2, want $want"; fi
}
# want_has NAME TEXT NEEDLE [WHAT]: TEXT contains NEEDLE.
want_has() {
  local needle=$3
  is_wrong "$1" && needle="$needle (a deliberately wrong expectation)"
  if [[ $2 == *"$needle"* ]]; then pass "$1" "${4:-has $needle}"; else failed "$1" "want ${4:-$needle} in: ${2: -2000}"; fi
}
# want_lacks NAME TEXT NEEDLE WHAT: TEXT does not contain NEEDLE.
want_lacks() {
  local text=$2
  is_wrong "$1" && text="$text $3"
  if [[ $text != *"$3"* ]]; then pass "$1" "$4"; else failed "$1" "want no $3, found: $(grep -F -m 3 -- "$3" <<<"$text")"; fi
}
# want_le NAME GOT MAX UNIT / want_ge NAME GOT MIN UNIT: numbers.
want_le() {
  local max=$3
  is_wrong "$1" && max=$(($2 - 1))
  if [ "$2" -le "$max" ]; then pass "$1" "$2$4, at most $max$4"; else failed "$1" "$2$4, want at most $max$4"; fi
}
want_ge() {
  local min=$3
  is_wrong "$1" && min=$(($2 + 1))
  if [ "$2" -ge "$min" ]; then pass "$1" "$2$4, at least $min$4"; else failed "$1" "$2$4, want at least $min$4"; fi
}

# The image's own configuration.
want_eq image-user "$("${podman[@]}" image inspect --format '{{.Config.User}}' "$image")" 65532:65532
want_has image-cache-env "$("${podman[@]}" image inspect --format '{{join .Config.Env " "}}' "$image")" \
  COMPILATION_CACHE_DIR=/var/cache/sandbox-cloudrun/wazero

port=9090 # not the image's 8080: Cloud Run sets PORT, the service must listen there
# start NAME ARGS... starts a container as Cloud Run would, and sets url.
start() {
  local name=sandbox-cloudrun-image-test-$1-$$
  shift
  containers+=("$name")
  "${podman[@]}" run -d --name "$name" --read-only "${ulimits[@]}" --memory 512m \
    -e PORT=$port -p "127.0.0.1::$port" "$@" "${run_args[@]}" "$image" >/dev/null
  url=http://$("${podman[@]}" port "$name" "$port/tcp")
  cname=$name
}
logs() { "${podman[@]}" logs "$cname" 2>&1; }
state() { "${podman[@]}" inspect --format "$1" "$cname"; }
# wait_ready: polls /readyz for 60 s (Cloud Run's startup probe).
wait_ready() {
  for _ in $(seq 600); do
    if curl -fsS -o /dev/null --max-time 2 "$url/readyz" 2>/dev/null; then
      return 0
    fi
    [ "$(state '{{.State.Running}}')" = true ] || break
    sleep 0.1
  done
  logs | tail -n 30 >&2
  die "$cname: /readyz did not turn ready within 60s (its log above)"
}
# post PATH BODY prints the answer's body without its usage member (what
# the run used varies from run to run); took then prints how long it took
# (ms).
post() {
  local t0 out
  t0=$(ms)
  out=$(curl -sS --max-time 60 -H 'Content-Type: application/json' --data "$2" "$url$1") || out="(no-answer)"
  echo " $(($(ms) - t0))" >"$work/took"
  without_usage "$out"
}
# without_usage BODY prints an evaluation's answer without its usage member,
# which every answer of the two routes carries: one without it is marked,
# so that no expectation matches it.
without_usage() {
  local re='^(\{"ok":.*),"usage":\{"phasesMs":\{[^{}]*\}[^{}]*\}\}$'
  if [[ $1 =~ $re ]]; then
    printf '%s}\n' "${BASH_REMATCH[1]}"
  elif [[ $1 == '{"ok":'* ]]; then
    printf '(no usage member) %s\n' "$1"
  else
    printf '%s\n' "$1"
  fi
}
took() { tr -d ' \n' <"$work/took"; }
# status_field PID FIELD: a field of /proc/PID/status, tabs as spaces.
status_field() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | tr '\t' ' '; }

# --- the container with no store ------------------------------------------
t_runs=$SECONDS
say "run: none: podman run --read-only --memory 512m -e PORT=$port $image (STORE_URL=none, the image's)"
t0=$(ms)
start none
wait_ready
t_ready=$(($(ms) - t0))
first=$(post /v1/sandbox/evaluate '{"script":"input.a + 1","inputJson":"{\"a\":41}"}')
t_first=$(($(ms) - t0))
want_eq evaluate-by-value "$first" '{"ok":true,"value":42}'
say "cold start: /readyz ready ${t_ready} ms after podman run, the first answer at ${t_first} ms"
warm_log=$(logs | grep '"engine warm"' | head -n 1)
say "cold start: the service's log: $warm_log"
want_has readyz "$(curl -sS -w ' %{http_code}' "$url/readyz")" " 200" "200"
want_lacks compile-cache-hit "$(logs)" "compiling through the cache failed" \
  "no compilation at start-up: the baked cache served the engine"
serving=$(logs | grep '"serving"' || true)
want_has store-none "$serving" '"store":"none"'
want_has port-from-environment "$serving" "\"addr\":\"[::]:$port\""

pid=$(state '{{.State.Pid}}')
want_eq read-only-rootfs "$(state '{{.HostConfig.ReadonlyRootfs}}')" true
want_eq server-uid "$(status_field "$pid" Uid)" "65532 65532 65532 65532"
want_eq server-gid "$(status_field "$pid" Gid)" "65532 65532 65532 65532"
want_eq server-capabilities "$(status_field "$pid" CapEff) $(status_field "$pid" CapPrm) $(status_field "$pid" CapAmb)" \
  "0000000000000000 0000000000000000 0000000000000000"
want_eq server-seccomp "$(status_field "$pid" Seccomp)" 2
# The memory limit, as the kernel holds it (cgroup v1 or v2).
cg=$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' "/proc/$pid/cgroup")
if [ -n "$cg" ]; then
  limit=$(cat "/sys/fs/cgroup/memory$cg/memory.limit_in_bytes")
else
  limit=$(cat "/sys/fs/cgroup$(sed -n 's/^0::\(.*\)$/\1/p' "/proc/$pid/cgroup")/memory.max")
fi
want_eq memory-limit "$limit" $((512 << 20))
# The workers: the server's children, locked down by themselves on top of
# the runtime's seccomp profile.
# The pool starts them one at a time: wait for the spare too.
children() { cat /proc/"$pid"/task/*/children 2>/dev/null || true; }
for _ in $(seq 100); do
  [ "$(children | wc -w)" -ge 2 ] && break
  sleep 0.1
done
workers=$(children)
want_ge workers "$(echo "$workers" | wc -w)" 2 " worker processes"
for w in $workers; do
  want_eq "worker-lockdown" "$(status_field "$w" Uid | cut -d' ' -f1) $(status_field "$w" NoNewPrivs) $(status_field "$w" Seccomp) $(status_field "$w" CapEff)" \
    "65532 1 2 0000000000000000"
  if [ -n "$(status_field "$w" Seccomp_filters)" ]; then
    want_eq worker-seccomp-filters "$(status_field "$w" Seccomp_filters)" $(($(status_field "$pid" Seccomp_filters) + 1))
  fi
done
caps=$(curl -sS "$url/v1/capabilities")
want_has capabilities-isolation "$caps" \
  '"isolation":{"process":true,"emptyEnvironment":true,"noNewPrivs":true,"resourceLimits":true,"seccomp":true}'

# A run stuck inside one native builtin: join of an array-like of length
# 2^53 never returns to the interrupt handler (security/stuck_test.go),
# so the wall clock cannot stop it from inside; the hard kill ends its
# worker at deadline + HARD_KILL_GRACE (500 ms) and answers.
kills=$(logs | grep -c '"event":"hardKill"' || true)
stuck=$(post /v1/sandbox/evaluate '{"script":"[].join.call({length:2**53},'')","inputJson":"null","limits":{"wallClockMs":300,"memoryBytes":1048576}}')
stuck_ms=$(took)
want_eq stuck-native-wallclock "$stuck" '{"ok":false,"kind":"limit","limit":"wallClock"}'
want_ge stuck-native-answered-after-grace "$stuck_ms" 800 " ms"
want_le stuck-native-answered-promptly "$stuck_ms" 5000 " ms"
for _ in $(seq 50); do # the log line may trail the answer
  [ "$(logs | grep -c '"event":"hardKill"' || true)" -gt "$kills" ] && break
  sleep 0.1
done
want_eq stuck-native-hard-kill "$(($(logs | grep -c '"event":"hardKill"' || true) - kills))" 1
want_eq stuck-native-next-run "$(post /v1/sandbox/evaluate '{"script":"[1,2,3].map(x => x * 2)","inputJson":"null"}')" \
  '{"ok":true,"value":[2,4,6]}'
want_eq stuck-native-same-process "$(state '{{.State.Pid}}') $(state '{{.State.Running}}')" "$pid true"

# An allocation bomb at the largest memory a request may ask (256 MiB):
# the engine's limit, not the container's 512 MiB, ends it.
bomb=$(post /v1/sandbox/evaluate '{"script":"const a = []; for (;;) a.push(new Array(1e5).fill(a.length))","inputJson":"null","limits":{"wallClockMs":20000,"memoryBytes":268435456}}')
want_eq allocation-bomb "$bomb" '{"ok":false,"kind":"limit","limit":"memory"}'
say "allocation bomb answered in $(took) ms"
want_eq allocation-bomb-no-oom-kill "$(state '{{.State.OOMKilled}}') $(state '{{.State.Pid}}')" "false $pid"
want_eq allocation-bomb-next-run "$(post /v1/sandbox/evaluate '{"script":"\"still serving\"","inputJson":"null"}')" \
  '{"ok":true,"value":"still serving"}'

# SIGTERM with a run in flight (Cloud Run's podman stop): the run is
# answered, the process exits 0, all within Cloud Run's 10 s before SIGKILL.
(
  post /v1/sandbox/evaluate '{"script":"const t = Date.now(); while (Date.now() - t < 2000) {} \"drained\"","inputJson":"null","limits":{"wallClockMs":5000}}' >"$work/inflight"
  ms >"$work/answered"
) &
inflight=$!
sleep 0.5
t0=$(ms)
"${podman[@]}" stop -t 10 "$cname" >/dev/null
stop_ms=$(($(ms) - t0))
wait "$inflight" || true
answered=$(cat "$work/answered")
want_eq sigterm-in-flight-run "$(cat "$work/inflight")" '{"ok":true,"value":"drained"}'
want_ge sigterm-run-answered-after-sigterm "$((answered - t0))" 1 " ms"
want_eq sigterm-exit-status "$(state '{{.State.ExitCode}}')" 0
want_le sigterm-within-10s "$stop_ms" 9000 " ms"
want_has sigterm-drained "$(logs)" '"shutting down: draining"'
say "stop: podman stop took $stop_ms ms, the run in flight answered $((answered - t0)) ms after SIGTERM"

# --- the container with a mounted store ----------------------------------
say "run: store: the same, with examples/store mounted read-only, STORE_URL=/store"
start store -v "$PWD/examples/store:/store:ro" -e STORE_URL=/store
wait_ready
# README.md's example, and its answer.
want_eq evaluations-stored-script "$(post /v1/evaluations "{\"scriptRef\":\"sha256:329c060d328c2742e47fc10a7f3e2ded2deaf868e9094ce1897eb0a81828b1cf\",\"input\":$(cat examples/inputs/issues.json),\"captureLogs\":true}")" \
  '{"ok":true,"value":[{"id":15,"title":"Support shape hashes","state":"open","labels":[],"author":"sam","updated":"2026-11-29T16:45:00Z"},{"id":12,"title":"Crash on empty input","state":"open","labels":["bug","p1"],"author":"ada","updated":"2026-11-28T10:00:00Z"},{"id":9,"title":"Docs: explain limits","state":"closed","labels":["docs"],"author":"lin","updated":"2026-11-29T08:30:00Z"}],"logs":""}'
want_eq evaluations-script-missing "$(post /v1/evaluations '{"scriptRef":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}')" \
  '{"ok":false,"failure":{"channel":"scriptMissing","scriptRef":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}}'
t0=$(ms)
"${podman[@]}" stop -t 10 "$cname" >/dev/null
want_eq store-sigterm-exit-status "$(state '{{.State.ExitCode}}')" 0
say "store: stopped in $(($(ms) - t0)) ms"

say "times: base ${t_base}s, build ${t_build}s, runs $((SECONDS - t_runs))s, total $((SECONDS - t_start))s"
if [ "$failures" -gt 0 ]; then
  echo "image-test: FAIL, $failures of $checks checks failed" >&2
  exit 1
fi
say "PASS, $checks checks"
