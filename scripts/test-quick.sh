#!/usr/bin/env bash
# test-quick.sh (npm run test:quick): the inner loop, about a minute on 2 cores. Every tests/node file
# except those listed in SLOW below: the unit, conformance and safety suites of the library, on the
# wasm as built (rebuilt first when src/ or build.sh changed since: bash build.sh wasm). No browser,
# no PyTorch, no native build, no tarball. A new test file runs here unless it is added to SLOW;
# npm test runs every file. Extra arguments go to node --test (e.g. --test-name-pattern=softmax).
set -euo pipefail
cd "$(dirname "$0")/.."

# The files npm test runs and this does not, each with what makes it slow or what it needs.
SLOW=(
  docs.test.js      # installs the tarball, runs every docs snippet, builds the trainer, starts npm start
  install.test.js   # installs from a checkout and a git URL, bundles with esbuild and Vite
  pack.test.js      # npm pack, installs the tarball, loads it in Chromium
  torch.test.js     # PyTorch (Debian's python3-torch): the round trip of checkpoints and logits
  huggingface.test.js # PyTorch (Debian's python3-torch): Hugging Face checkpoints against a float64 reference
  hf-reference-selftest.test.js # PyTorch: the float64 reference's own checks (scripts/hf_reference.py selftest)
  llama2c.test.js   # PyTorch's llama against ours
  hooks-torch.test.js # PyTorch's forward hooks against the named points
  sae-torch.test.js # PyTorch (Debian's python3-torch): the TopK SAE's twin (scripts/sae_torch.py)
  native.test.js    # the native C suites under sanitizers (bash build.sh native native32)
  trainer.test.js   # builds the native trainer and trains with it
  generate-native.test.js # builds the native generation yardstick (tools/generate.c)
  fuzz.test.js      # Debian's clang: replays the corpora and fuzzes 20 s per target
  fortunes.test.js  # Debian's fortunes: held-out figures over real text
  sink-claims.test.js # builds the native trainer; Debian's fortunes: the sink claims' script and shipped models
  hostile-tokenizer.test.js # encodes 1 and 2 MB of adversarial text with every tokenizer file (linear work)
  fuzz-js.test.js   # the JavaScript readers' fuzzer: replays and 9,800 seeded inputs, each in a child process
)

if [ "$(cat wasm/sources.sha256 2>/dev/null)" != "$(bash build.sh hash)" ]; then
  echo "test-quick.sh: src/ or build.sh changed since the wasm was built: bash build.sh wasm" >&2
  bash build.sh wasm
fi

files=()
for f in tests/node/*.test.js; do
  case " ${SLOW[*]} " in *" $(basename "$f") "*) ;; *) files+=("$f") ;; esac
done
echo "test-quick.sh: ${#files[@]} files of tests/node (npm test runs these, ${SLOW[*]} and tests/browser/)" >&2
# tests that compare with a native build skip when it was never built (npm test always builds it)
export AW_TEST_QUICK=1
exec node --test --test-concurrency=2 "$@" "${files[@]}"
