#!/usr/bin/env bash
# test-suites.sh (the last step of npm test): every suite, the node suites two files at a time (node's
# default on 2 cores is one), then the browser suites one at a time, so a page's responsiveness
# checks (a frame-gap baseline taken idle, then the same measure while it trains) see the same load
# in both windows rather than another file's work starting between them. Both parts run; the exit
# status is 1 when either failed. Extra arguments go to both (e.g. --test-name-pattern=sinks).
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
node --test --test-concurrency=2 "$@" tests/node/ || status=1
node --test --test-concurrency=1 "$@" tests/browser/ || status=1
exit "$status"
