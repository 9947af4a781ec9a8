#!/usr/bin/env bash
# test-loaded.sh: npm test on a busy machine, as a user's laptop or a shared CI host is: two
# CPU-bound processes (busy loops, one per core of a 2-core machine) run beside the whole suite,
# and the time of each is printed. The suite must pass here too: it asserts no wall-clock time,
# waits on progress with generous caps, and measures responsiveness against an idle baseline
# taken in the same run. Usage: bash scripts/test-loaded.sh [LOOPS] (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
loops=${1:-2}
pids=()
for _ in $(seq "$loops"); do
  node -e 'for (;;) {}' &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
echo "test-loaded.sh: $loops busy loops running beside npm test ($(nproc) cores)" >&2
start=$(date +%s)
status=0
npm test || status=$?
echo "test-loaded.sh: npm test exited $status after $(( $(date +%s) - start )) s with $loops busy loops" >&2
exit "$status"
