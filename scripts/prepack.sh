#!/usr/bin/env bash
# prepack.sh: before npm pack / npm publish. The tarball ships wasm/*.wasm: rebuilt from src/ when
# wasm/sources.sha256 says they were built from other sources and Emscripten is here, else the
# committed files (which npm test checks against a rebuild).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(cat wasm/sources.sha256 2>/dev/null)" != "$(bash build.sh hash)" ] && command -v emcc >/dev/null 2>&1; then
  echo "prepack.sh: src/ has changed since wasm/ was built: rebuilding (about a minute)" >&2
  bash build.sh wasm >&2 # stdout is npm pack --json's
fi
for f in wasm/attention.wasm wasm/attention-scalar.wasm wasm/attention-threads.wasm; do
  [ -s "$f" ] || { echo "prepack.sh: $f is missing: bash build.sh wasm (needs emcc)" >&2; exit 1; }
done
