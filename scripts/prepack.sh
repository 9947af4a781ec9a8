#!/usr/bin/env bash
# prepack.sh: before npm pack / npm publish. The tarball ships wasm/*.wasm: rebuilt from src/
# when Emscripten is here, else the committed files (which npm test checks against a rebuild).
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v emcc >/dev/null 2>&1; then bash build.sh wasm >&2; fi # stdout is npm pack --json's
for f in wasm/attention.wasm wasm/attention-scalar.wasm; do
  [ -s "$f" ] || { echo "prepack.sh: $f is missing: bash build.sh wasm (needs emcc)" >&2; exit 1; }
done
