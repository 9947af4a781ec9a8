#!/usr/bin/env bash
# bench-deps.sh: installs the peers npm run bench compares against (onnxruntime-web, tfjs) into
# bench/node_modules from bench/package-lock.json, once. They are not the package's dependencies
# and npm start / npm test never need them.
set -euo pipefail
cd "$(dirname "$0")/../bench"
[ -d node_modules/onnxruntime-web ] && [ -d node_modules/@tensorflow/tfjs-backend-wasm ] && exit 0
echo "bench-deps.sh: installing the benchmark's peers into bench/node_modules (npm ci)" >&2
npm ci --no-audit --no-fund >/dev/null
