#!/usr/bin/env bash
# setup.sh: makes sure what `npm start` / `npm test` need is here, installing it when it can.
#   emcc (Debian's emscripten)            always
#   chromium (for the browser tests)      unless --no-browser
#   python3-torch (the PyTorch round trip) unless --no-browser (that is, for npm test)
#   clang (libFuzzer, the fuzz replay)     unless --no-browser
#   fortunes (real text for a test)       unless --no-browser
#   node_modules (npm ci)                 when missing
# As root with apt it installs; otherwise it says in one line what to run.
set -euo pipefail
cd "$(dirname "$0")/.."
browser=1
[ "${1:-}" = "--no-browser" ] && browser=0

missing=()
command -v emcc >/dev/null 2>&1 || missing+=(emscripten)
[ "$browser" = 0 ] || [ -x /usr/bin/chromium ] || missing+=(chromium)
# the PyTorch round trip (tests/node/torch.test.js, scripts/torch_model.py): Debian's python3-torch
[ "$browser" = 0 ] || /usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || missing+=(python3-torch)
# the fuzz targets' replay in npm test: Debian's clang (libFuzzer); the 32-bit build installs its
# own multilib packages (build.sh native32)
[ "$browser" = 0 ] || command -v clang >/dev/null 2>&1 || missing+=(clang)
# real English text for the streaming test and the fortunes model's held-out figures: Debian's
# fortunes (BSD; read where it installs, never committed: data/README.md)
[ "$browser" = 0 ] || [ -e /usr/share/games/fortunes/fortunes ] || missing+=(fortunes)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup.sh: installing ${missing[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    for p in "${missing[@]}"; do
      if [ "$p" = chromium ] || [ "$p" = fortunes ]; then apt-get install -y -qq --no-install-recommends "$p" >/dev/null
      else apt-get install -y -qq "$p" >/dev/null; fi
    done
  else
    echo "setup.sh: missing ${missing[*]}; install with: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi
if [ ! -d node_modules/playwright-core ]; then
  echo "setup.sh: installing dev dependencies (npm ci)" >&2
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >/dev/null
fi
