#!/usr/bin/env bash
# The test of deploy/tofu-check.sh: a check that reports PASS must be able to
# report FAIL, so this runs it on broken copies of the module and wants each
# to fail with the line of the step that catches the break:
#
#   validate  service.tf gains an attribute the provider's schema does not
#             have (no_such_attribute)        -> "tofu validate failed"
#   fmt       one line of outputs.tf is misindented -> "tofu fmt -check found files"
#   test      one assert of tests/network.tftest.hcl expects the wrong value
#                                             -> "tofu test failed"
#
# each with exit status 1, and on an intact copy made the same way, with exit
# status 0 and "tofu-check: ok": that run shows the copy passes as taken, so
# each failure comes from its break and nothing else.
#
# To keep it cheap, a copy holds only the root module's .tf files (the
# checkout's, as tofu-check.sh takes them) and tests/network.tftest.hcl, and
# tofu-check.sh checks only terraform/ (TOFU_CHECK_SRC, TOFU_CHECK_DIRS):
# four runs of a few seconds each, about 15 s in all, where one full run of
# tofu-check.sh on the checkout takes 40 s or more. The full module, tests and
# examples are tofu-check.sh's own run on the checkout, which CI makes just
# before this one.
#
#   bash deploy/tofu-check-selftest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# copy NAME puts at $work/NAME/terraform the root module's .tf files and
# tests/network.tftest.hcl, from the files git tracks or would track.
copy() {
  local dst=$work/$1/terraform f
  mkdir -p "$dst/tests"
  git ls-files -z --cached --others --exclude-standard -- terraform |
    while IFS= read -r -d '' f; do
      case $f in
        terraform/tests/network.tftest.hcl) ;;
        terraform/*/*) continue ;;
        terraform/*.tf) ;;
        *) continue ;;
      esac
      [ -f "$f" ] || continue # deleted but not yet staged
      cp "$f" "$dst/${f#terraform/}"
    done
}

# edit NAME FILE COMMAND... filters the copy's FILE through COMMAND, and stops
# if that changes nothing: an edit that no longer matches would test nothing.
edit() {
  local f=$work/$1/terraform/$2
  "${@:3}" <"$f" >"$f.new"
  if cmp -s "$f" "$f.new"; then
    echo "tofu-check-selftest: $1: the edit of $2 changes nothing: it no longer matches the file" >&2
    exit 1
  fi
  mv "$f.new" "$f"
}

# expect NAME STATUS LINE runs tofu-check.sh on the copy NAME and wants the
# exit status STATUS and a line of its output containing LINE.
failed=0
expect() {
  local name=$1 want=$2 line=$3 status=0 t0=$SECONDS
  TOFU_CHECK_SRC=$work/$name TOFU_CHECK_DIRS=terraform \
    bash deploy/tofu-check.sh >"$work/$name.log" 2>&1 || status=$?
  if [ "$status" = "$want" ] && grep -qF -- "$line" "$work/$name.log"; then
    echo "tofu-check-selftest: $name: exit status $status and \"$line\", as expected ($((SECONDS - t0))s)"
  else
    sed 's/^/  | /' "$work/$name.log"
    echo "tofu-check-selftest: $name: exit status $status, want $want and a line \"$line\"" >&2
    failed=1
  fi
}

copy intact
copy validate
edit validate service.tf \
  awk '{ print } NR == 1 { print "  no_such_attribute = true"; print "" }'
copy fmt
edit fmt outputs.tf \
  sed 's/^\(  value *= google_cloud_run_v2_service\.sandbox\.uri\)$/ \1/'
copy test
edit test tests/network.tftest.hcl \
  sed 's/auto_create_subnetworks == false/auto_create_subnetworks == true/'

expect intact 0 "tofu-check: ok"
expect validate 1 "tofu-check: terraform: tofu validate failed"
expect fmt 1 "tofu-check: terraform: tofu fmt -check found files"
expect test 1 "tofu-check: terraform: tofu test failed"

if [ "$failed" != 0 ]; then
  echo "tofu-check-selftest: FAILED in $((SECONDS - start))s: tofu-check.sh does not report what it should" >&2
  exit 1
fi
echo "tofu-check-selftest: ok, 4 runs in $((SECONDS - start))s"
