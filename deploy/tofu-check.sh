#!/usr/bin/env bash
# The checks of terraform/ by the real tool, offline: OpenTofu and the
# hashicorp/google provider from ../shared/tools/terraform (beside the
# checkout), and, for the module and every example under terraform/examples:
#
#   tofu init -backend=false   the provider from a local filesystem mirror
#   tofu validate              every attribute against the provider's schema
#   tofu fmt -check -recursive the canonical format (and terraform.tfvars.example)
#   tofu test                  tests/*.tftest.hcl with mock_provider "google":
#                              plans against the real schema, no credentials
#
# It runs on a copy of terraform/ in a temporary directory (the files git
# tracks, or would track), so the checkout gets no .terraform/ directory or
# lock file, and a local terraform.tfvars or state never leaks into a test.
# The tools unpack under $TOFU_HOME (default: a directory of the system's
# temporary directory, reused while its hashes match); nothing is written
# beside them.
#
# Two variables point the check elsewhere, for deploy/tofu-check-selftest.sh,
# which runs it on broken copies of the module to see it fail:
#
#   TOFU_CHECK_SRC   a directory holding a terraform/ tree, copied whole
#                    instead of the checkout's files (default: the checkout)
#   TOFU_CHECK_DIRS  the directories to check, space-separated, relative to
#                    the copy's root (default: terraform and every example)
#
#   bash deploy/tofu-check.sh
#   TOFU_CHECK_SRC=/tmp/copy TOFU_CHECK_DIRS=terraform bash deploy/tofu-check.sh
set -euo pipefail
src=
if [ -n "${TOFU_CHECK_SRC:-}" ]; then
  src=$(cd "$TOFU_CHECK_SRC" && pwd) || { echo "tofu-check: TOFU_CHECK_SRC=$TOFU_CHECK_SRC is not a directory" >&2; exit 1; }
  if [ ! -d "$src/terraform" ]; then
    echo "tofu-check: TOFU_CHECK_SRC=$TOFU_CHECK_SRC holds no terraform/ directory" >&2
    exit 1
  fi
fi
cd "$(dirname "$0")/.."
start=$SECONDS

setup=../shared/tools/terraform/setup.sh
if [ ! -f "$setup" ]; then
  echo "tofu-check: $setup not found: the shared tools must be checked out beside this repository" >&2
  exit 1
fi
export TOFU_HOME=${TOFU_HOME:-${TMPDIR:-/tmp}/sandbox-tofu-$(id -u)}
mkdir -p "$(dirname "$TOFU_HOME")"
# Two checks starting at once must not unpack into the same directory together.
exec 9>"$TOFU_HOME.lock"
command -v flock >/dev/null && flock 9
eval "$(bash "$setup")"
command -v flock >/dev/null && flock -u 9
export TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
unset TF_DATA_DIR TF_WORKSPACE

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "$src" ]; then
  cp -R "$src/terraform" "$work/terraform"
else
  git ls-files -z --cached --others --exclude-standard -- terraform |
    while IFS= read -r -d '' f; do
      [ -f "$f" ] || continue # deleted but not yet staged
      mkdir -p "$work/$(dirname "$f")"
      cp "$f" "$work/$f"
    done
fi

# Each directory with its own tofu test arguments: an example plans with the
# values of its terraform.tfvars.example, as an operator's first plan would.
if [ -n "${TOFU_CHECK_DIRS:-}" ]; then
  read -r -a dirs <<<"$TOFU_CHECK_DIRS"
  if [ ${#dirs[@]} = 0 ]; then
    echo "tofu-check: TOFU_CHECK_DIRS names no directory" >&2
    exit 1
  fi
  for d in "${dirs[@]}"; do
    if [[ "$d/" != terraform/* || "/$d/" == */../* || ! -d "$work/$d" ]]; then
      echo "tofu-check: TOFU_CHECK_DIRS names $d, not terraform or a directory under it in the copy" >&2
      exit 1
    fi
  done
else
  dirs=(terraform)
  for d in "${src:-.}"/terraform/examples/*/; do
    d=${d#"${src:-.}"/}
    dirs+=("${d%/}")
  done
fi

failed=0
for d in "${dirs[@]}"; do
  t0=$SECONDS
  echo "tofu-check: $d"
  cd "$work/$d"
  log="$work/init.log"
  if ! tofu init -backend=false -input=false -no-color >"$log" 2>&1; then
    cat "$log"; echo "tofu-check: $d: tofu init failed" >&2; failed=1; cd "$work"; continue
  fi
  tofu validate -no-color || { echo "tofu-check: $d: tofu validate failed" >&2; failed=1; }
  tofu fmt -check -recursive -diff -no-color || { echo "tofu-check: $d: tofu fmt -check found files to format (run tofu fmt -recursive)" >&2; failed=1; }
  test_args=()
  if [ -f terraform.tfvars.example ]; then
    tofu fmt -check -no-color - <terraform.tfvars.example >/dev/null ||
      { echo "tofu-check: $d: terraform.tfvars.example is not in canonical format" >&2; failed=1; }
    test_args+=(-var-file=terraform.tfvars.example)
  fi
  tofu test -no-color "${test_args[@]}" || { echo "tofu-check: $d: tofu test failed" >&2; failed=1; }
  echo "tofu-check: $d: $((SECONDS - t0))s"
  cd "$work"
done

echo "tofu-check: $(tofu version | head -n1), ${#dirs[@]} directories in $((SECONDS - start))s"
if [ "$failed" != 0 ]; then
  echo "tofu-check: FAILED" >&2
  exit 1
fi
echo "tofu-check: ok"
