#!/usr/bin/env bash
# fuzz.sh: the libFuzzer targets of tests/fuzz/ (clang's -fsanitize=fuzzer,address,undefined over
# the C sources), built into build/fuzz/, and the JavaScript file readers' fuzzer (tests/fuzz-js/).
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]   fuzz each target for SECONDS (default 600), starting
#                                                 from its committed corpus (tests/fuzz/corpus/<target>);
#                                                 with no TARGET: the C targets, then js
#   bash scripts/fuzz.sh --replay [SECONDS] [TARGET...]
#                                                 replay every corpus file and every reproducer in
#                                                 tests/fuzz/regressions/<target>/, then fuzz each
#                                                 target SECONDS (default 20); with no TARGET the C
#                                                 targets only: what npm test runs (the JS fuzzer's
#                                                 seeded run is tests/node/fuzz-js.test.js)
# Prints each target's executed runs; exits non-zero on any finding, whose input is saved as
# build/fuzz/findings/<target>-crash-* (turn it into a regression: copy it under regressions/).
# Targets: checkpoint (the safetensors reader), attention (the attention entry points), model
# (config, train, forward, generate, save/load, gradient check sequences); js (every target of
# tests/fuzz-js/fuzz.mjs: tokenizer, huggingface, llama2c, sae, each SECONDS; findings under
# build/fuzz-js/findings/) or js:<one of them>.
set -euo pipefail
cd "$(dirname "$0")/.."

replay=0
if [ "${1:-}" = "--replay" ]; then replay=1; shift; fi
seconds=${1:-$([ "$replay" = 1 ] && echo 20 || echo 600)}
[ $# -gt 0 ] && shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(checkpoint attention model)
  [ "$replay" = 1 ] || targets+=(js)
fi

# the JavaScript readers' fuzzer: Node only, no clang
fuzz_js() {
  local name=$1 args=(--seconds "$seconds")
  [ "$name" = js ] || args+=("${name#js:}")
  if [ "$replay" = 1 ]; then
    node tests/fuzz-js/fuzz.mjs --replay "${args[@]:2}" || return 1
  fi
  node tests/fuzz-js/fuzz.mjs "${args[@]}"
}

out=build/fuzz
status=0
c_targets=0
for t in "${targets[@]}"; do case $t in js | js:*) ;; *) c_targets=1 ;; esac; done
if [ "$c_targets" = 1 ]; then
  . scripts/need.sh
  command -v clang >/dev/null 2>&1 || need_apt fuzz.sh "libFuzzer (clang)" clang
  mkdir -p "$out/findings"
  sources=$(find src -name '*.c' | sort)
fi
for t in "${targets[@]}"; do
  case $t in js | js:*) fuzz_js "$t" || status=1; continue ;; esac
  bin="$out/fuzz_$t"
  clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Wall -Wextra -Werror \
    $sources "tests/fuzz/fuzz_$t.c" -o "$bin" -lm
  # -timeout: a hang, not a slow input (a whole model sequence under ASan and coverage takes seconds)
  opts=(-rss_limit_mb=2048 -timeout=60 -print_final_stats=1 "-artifact_prefix=$out/findings/$t-")
  if [ "$replay" = 1 ]; then
    # every committed input once (libFuzzer runs files given as arguments and exits)
    inputs=(tests/fuzz/corpus/"$t"/*)
    [ -d "tests/fuzz/regressions/$t" ] && inputs+=($(find "tests/fuzz/regressions/$t" -type f | sort))
    if ! "$bin" "${opts[@]}" "${inputs[@]}" > "$out/$t-replay.log" 2>&1; then
      echo "fuzz.sh: $t: a committed input fails:" >&2
      grep -E 'ERROR|SUMMARY|invariant|Running' "$out/$t-replay.log" | tail -5 >&2
      status=1
      continue
    fi
    echo "fuzz.sh: $t: replayed ${#inputs[@]} committed inputs"
  fi
  work="$out/corpus-$t"
  mkdir -p "$work"
  if "$bin" "${opts[@]}" -max_total_time="$seconds" "$work" "tests/fuzz/corpus/$t" > "$out/$t.log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/$t.log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz.sh: $t: ${seconds} s, ${runs} runs, no finding"
  else
    echo "fuzz.sh: $t: FINDING (input saved under $out/findings/):" >&2
    grep -E 'ERROR|SUMMARY|invariant|runtime error' "$out/$t.log" | head -5 >&2
    status=1
  fi
done
exit $status
