#!/usr/bin/env bash
# test-suites.sh (the last step of npm test): every suite. The node files two at a time (node's
# default on 2 cores is one); then the browser files that assert nothing about responsiveness, two at
# a time; then the ones that do (RESPONSIVE below: a longtask observer, or a frame-gap baseline taken
# idle and the same measure while the page works), one at a time, so the load those measures see is
# the page's own and not another file's starting between the baseline and the measure. Every part
# runs; the exit status is 1 when any failed. Extra arguments go to every part (e.g.
# --test-name-pattern=sinks).
set -uo pipefail
cd "$(dirname "$0")/.."

# the browser files whose assertions read the page's responsiveness (they run alone)
RESPONSIVE=(longtasks.test.js owntext.test.js features.test.js newcomer-list.test.js sinks.test.js)

status=0
node --test --test-concurrency=2 "$@" tests/node/ || status=1
shared=() alone=()
for f in tests/browser/*.test.js; do
  case " ${RESPONSIVE[*]} " in *" $(basename "$f") "*) alone+=("$f") ;; *) shared+=("$f") ;; esac
done
node --test --test-concurrency=2 "$@" "${shared[@]}" || status=1
node --test --test-concurrency=1 "$@" "${alone[@]}" || status=1
exit "$status"
