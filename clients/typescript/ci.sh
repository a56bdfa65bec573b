#!/usr/bin/env bash
# Builds @loom-plugins/sandbox-cloudrun and runs its tests: the type tests
# (tsc --noEmit) and node's test runner, whose set-up builds this repository's
# service with `go build` and runs it on free ports; then the README's
# install and example as printed (test/readme-install.ts): in a scratch copy
# of this package, `npm ci` and `npm pack`, a new project that installs the
# tarball, and the example compiled and run against the service, whose output
# (each outcome, and what the onRun hook got: the script's console and a fact
# of its usage that does not change from run to run) must be the README's.
# Then checks, on loom's reference backend itself (quickjs-emscripten as
# bench/package.json pins it), the claim of the service's README that a
# script can rely on a superset of that backend's builtins:
# bench/node/builtins.mjs. Needs Node >= 20, npm and Go. The output ends with
# builtins.mjs's verdict.
set -euo pipefail
cd "$(dirname "$0")"
export NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
npm ci
npm run build
npm test
npm run test:readme
(cd ../../bench && npm ci --loglevel=error && node node/builtins.mjs)
