#!/usr/bin/env bash
# start.sh: npm start. Serves the playground (web/) with the package's own wasm/. The committed
# wasm/*.wasm match src/ (npm test checks that a rebuild gives the same bytes) and
# wasm/sources.sha256 records what they were built from: when src/ or build.sh has changed since,
# and Debian's Emscripten (emcc) is here, the wasm is rebuilt first (about a minute on 2 cores), and
# this says so before it starts. Nothing is installed: the server is plain Node.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f wasm/attention.wasm ] || [ ! -f wasm/attention-scalar.wasm ] || [ ! -f wasm/attention-threads.wasm ]; then
  command -v emcc >/dev/null 2>&1 || {
    echo "start.sh: wasm/*.wasm are missing and emcc is not installed: sudo apt-get install -y emscripten" >&2
    exit 1
  }
  echo "start.sh: wasm/*.wasm are missing: building them from src/ with Emscripten (about a minute)..." >&2
  bash build.sh wasm >&2
elif [ "$(cat wasm/sources.sha256 2>/dev/null)" != "$(bash build.sh hash)" ]; then
  if command -v emcc >/dev/null 2>&1; then
    echo "start.sh: src/ has changed since wasm/ was built: rebuilding with Emscripten (about a minute)..." >&2
    bash build.sh wasm >&2
  else
    echo "start.sh: src/ has changed since wasm/ was built, but emcc is not installed: serving the committed wasm (sudo apt-get install -y emscripten to rebuild)" >&2
  fi
fi
echo "start.sh: starting the server..." >&2
exec node scripts/serve.js
