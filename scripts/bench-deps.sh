#!/usr/bin/env bash
# bench-deps.sh: installs the peers npm run bench compares against (onnxruntime-web, tfjs) into
# bench/node_modules from bench/package-lock.json, once. They are not the package's dependencies
# and npm start / npm test never need them.
set -euo pipefail
cd "$(dirname "$0")/../bench"
. ../scripts/need.sh
# The native yardstick (bench/torch.bench.js): Debian's PyTorch, with OpenBLAS behind it (without
# it, Debian's torch multiplies through the reference BLAS, 30x slower: no yardstick at all).
if [ ! -e /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 ] || ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  need_apt bench-deps.sh "the native PyTorch yardstick" python3-torch libopenblas0-pthread
fi
[ -d node_modules/onnxruntime-web ] && [ -d node_modules/@tensorflow/tfjs-backend-wasm ] && exit 0
echo "bench-deps.sh: installing the benchmark's peers into bench/node_modules (npm ci)" >&2
npm ci --no-audit --no-fund >/dev/null
