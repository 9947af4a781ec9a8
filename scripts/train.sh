#!/usr/bin/env bash
# train.sh (npm run train -- FLAGS): the native trainer, built first only when it is missing or older
# than what it is built from (src/, tools/train.c, build.sh), so a run of trainings builds it once.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build/trainer ] || [ -n "$(find src tools/train.c build.sh -newer build/trainer -print -quit)" ]; then
  bash build.sh trainer >&2
fi
exec build/trainer "$@"
