#!/usr/bin/env bash
# start.sh: npm start. Serves the playground (web/) with the package's own wasm/. With Debian's
# Emscripten (emcc) present it rebuilds the wasm from src/ first, so the page runs what the sources
# say; without it the committed wasm/*.wasm serve as they are (they match src/: npm test checks
# that a rebuild gives the same bytes). Nothing is installed: the server is plain Node.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v emcc >/dev/null 2>&1; then
  bash build.sh wasm
elif [ ! -f wasm/attention.wasm ] || [ ! -f wasm/attention-scalar.wasm ]; then
  echo "start.sh: wasm/*.wasm are missing and emcc is not installed: sudo apt-get install -y emscripten" >&2
  exit 1
fi
exec node scripts/serve.js
