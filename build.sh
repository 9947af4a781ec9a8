#!/usr/bin/env bash
# build.sh: builds everything from src/.
#   wasm/attention.wasm         -O3 -msimd128 (the default build)
#   wasm/attention-scalar.wasm  -O3, no SIMD (the fallback, and the baseline for speed-ups)
#   wasm/attention-threads.wasm the SIMD build with threads (a shared memory and workers)
#   wasm/attention-relaxed.wasm, wasm/attention-threads-relaxed.wasm
#                               the same two with relaxed SIMD (fused multiply-add), by clang-19 +
#                               wasm-ld-19: the loader picks them where the engine validates relaxed SIMD
#   build/native/*              native test binaries under -fsanitize=address,undefined,
#                               twice: SSE2 vector path and forced scalar path
#   build/native32/*            the same tests as 32-bit x86 binaries (size_t of 32 bits, as in wasm32)
#   wasm/sources.sha256         the hash of what the wasm is built from (src/, build.sh): npm start
#                               rebuilds only when it no longer matches (bash build.sh hash prints it)
# Usage: bash build.sh [wasm|simd|relaxed|native|native32|trainer|generate|hash]   (default: wasm, native and native32;
#   simd: wasm/attention.wasm alone, for the inner loop)
#   (TRAINER_OUT=path bash build.sh trainer: the trainer at another path, for a test of its own;
#   generate: build/generate, the native generation yardstick of bench/generate.bench.js)
set -euo pipefail
cd "$(dirname "$0")"
what="${1:-all}"

. scripts/need.sh

ensure_emcc() {
  command -v emcc >/dev/null 2>&1 || need_apt build.sh "the wasm build (emcc not found)" emscripten
}
ensure_clang19() {
  command -v clang-19 >/dev/null 2>&1 && command -v wasm-ld-19 >/dev/null 2>&1 ||
    need_apt build.sh "the relaxed-SIMD build (clang-19 and wasm-ld-19 not found)" --no-install-recommends clang-19 lld-19
}

sources=$(find src -name '*.c' | sort)
# Every `AW_API <type> aw_name(` in src/api becomes an export; malloc/free for the wrapper.
exports=$(grep -rhoE '^AW_API [^(]*\baw_[a-z0-9_]+\(' src/api | sed -E 's/.*\b(aw_[a-z0-9_]+)\($/_\1/' | sort -u | paste -sd, -)
exports="_malloc,_free,${exports}"

# One hash over every input of the wasm build: the sources and headers, and this script.
sources_hash() {
  { find src -type f \( -name '*.c' -o -name '*.h' \) | sort; echo build.sh; } | xargs sha256sum | sha256sum | cut -d' ' -f1
}

# The flags of every emcc build.
wasm_common=(-std=c11 -O3 -Wall -Wextra -Werror -sSTANDALONE_WASM --no-entry -sALLOW_MEMORY_GROWTH=1
  -sMAXIMUM_MEMORY=2GB -sINITIAL_MEMORY=4MB -sTOTAL_STACK=512KB -sABORTING_MALLOC=0
  -sEXPORTED_FUNCTIONS="$exports" -lm)

build_wasm() {
  ensure_emcc
  export NODE_PATH=/usr/share/nodejs
  local common=("${wasm_common[@]}")
  mkdir -p wasm
  emcc "${common[@]}" -msimd128 $sources -o wasm/attention.wasm
  emcc "${common[@]}" $sources -o wasm/attention-scalar.wasm
  # The threaded build: SIMD plus atomics on a shared memory the loader creates and hands to every
  # worker's instance (--import-memory); each worker gets its own stack (stackRestore) and
  # thread-local block (__wasm_init_tls). Emscripten 3.1.6 refuses -pthread with STANDALONE_WASM, so
  # the objects are compiled with -matomics -mbulk-memory and linked with --shared-memory; its libc
  # is the single-threaded one (--no-check-features): the library's allocations go through a lock
  # (src/kernels/thread_alloc.h, included first), and the workers call only libc's reentrant parts
  # (math, memcpy and memset, and vsnprintf when an item fails: src/kernels/status.c).
  emcc "${common[@]}" -msimd128 -matomics -mbulk-memory -DAW_THREADS -include src/kernels/thread_alloc.h $sources \
    -Wl,--shared-memory -Wl,--import-memory -Wl,--no-check-features -Wl,--export=__wasm_init_tls \
    -Wl,--export=__tls_size -Wl,--export=__tls_align -o wasm/attention-threads.wasm
  build_relaxed
  sources_hash > wasm/sources.sha256
  echo "build.sh: wasm/attention.wasm ($(wc -c < wasm/attention.wasm) B), wasm/attention-scalar.wasm ($(wc -c < wasm/attention-scalar.wasm) B), wasm/attention-threads.wasm ($(wc -c < wasm/attention-threads.wasm) B)"
}

# The relaxed-SIMD builds. Emscripten 3.1.6 cannot make them: its clang 14 knows only a prototype
# encoding of relaxed SIMD, and its link step runs a binaryen that cannot parse the final one. So
# Debian's clang-19 compiles each source with Emscripten's own target, headers and flags, and
# wasm-ld-19 links them against Emscripten's libc archives with the arguments emcc gives
# wasm-ld-14 for the two builds above (EMCC_DEBUG=1 prints them); emcc's post-link passes
# (wasm-emscripten-finalize, wasm-opt) are left out: they change nothing the loader relies on.
build_relaxed() {
  ensure_clang19
  local sysroot=/usr/share/emscripten/cache/sysroot lib=/usr/share/emscripten/cache/sysroot/lib/wasm32-emscripten
  local cflags=(-target wasm32-unknown-emscripten -DEMSCRIPTEN -D__EMSCRIPTEN_major__=3 -D__EMSCRIPTEN_minor__=1
    -D__EMSCRIPTEN_tiny__=6 -fvisibility=default -Dunix -D__unix -D__unix__ --sysroot=$sysroot
    -Xclang -iwithsysroot/include/compat -std=c11 -O3 -Wall -Wextra -Werror -msimd128 -mrelaxed-simd)
  local ldflags=(-L$lib $lib/crt1_reactor.o -lstubs -lnoexit -lc -ldlmalloc -lcompiler_rt --import-undefined
    --strip-debug --export-if-defined=malloc --export-if-defined=free --export=stackSave --export=stackRestore
    --export=stackAlloc --export=__errno_location --export-table -z stack-size=524288 --initial-memory=4194304
    --entry=_initialize --max-memory=2147483648 --global-base=1024)
  local e
  for e in ${exports//,/ }; do ldflags+=(--export-if-defined="${e#_}"); done
  local tmp; tmp=$(mktemp -d)
  compile_relaxed() { # dir extra-flags...
    local dir=$1 src pids=()
    shift
    mkdir -p "$dir"
    for src in $sources; do
      clang-19 "${cflags[@]}" "$@" -c "$src" -o "$dir/$(echo "${src#src/}" | tr / _ | sed 's/\.c$/.o/')" &
      pids+=($!)
      if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
    done
    for src in "${pids[@]}"; do wait "$src"; done
  }
  compile_relaxed "$tmp/one"
  wasm-ld-19 -o wasm/attention-relaxed.wasm "$tmp"/one/*.o -lstandalonewasm-memgrow "${ldflags[@]}"
  compile_relaxed "$tmp/threads" -matomics -mbulk-memory -DAW_THREADS -include src/kernels/thread_alloc.h
  wasm-ld-19 -o wasm/attention-threads-relaxed.wasm "$tmp"/threads/*.o -lstandalonewasm-memgrow "${ldflags[@]}" \
    --shared-memory --import-memory --no-check-features --export=__wasm_init_tls --export=__tls_size --export=__tls_align
  rm -rf "$tmp"
}

# Native test binaries under ASan + UBSan. build_native OUT [flags...]: every compile and link
# also gets the flags (build_native32 passes -m32, so wasm32's 32-bit size_t overflows show up
# natively). The library is compiled once per variant (SSE2 vector path, forced scalar path;
# VARIANTS=vector for one), two compilers at a time, and linked into every test binary.
build_native() {
  local cc="${CC:-gcc}" out=${1:-build/native}
  shift || true
  local arch=("$@")
  mkdir -p "$out"
  # One tolerance table for every suite: tests/tolerances.json, turned into a header here.
  node -e '
    const t = require("./tests/tolerances.json");
    let h = "// generated by build.sh from tests/tolerances.json; do not edit\n";
    for (const [k, v] of Object.entries(t)) if (typeof v === "number") h += `#define TOL_${k.toUpperCase()} ${v}\n`;
    require("fs").writeFileSync(process.argv[1], h);' "$out/tolerances.h"
  local flags=(-std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all
    -fno-omit-frame-pointer -I"$out" "${arch[@]}")
  compile_objects() { # dir extra-flags...
    local dir=$1 src pids=()
    shift
    rm -rf "$dir" && mkdir -p "$dir"
    for src in $sources; do
      "$cc" "${flags[@]}" "$@" -c "$src" -o "$dir/$(echo "${src#src/}" | tr / _ | sed 's/\.c$/.o/')" &
      pids+=($!)
      if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
    done
    for src in "${pids[@]}"; do wait "$src"; done
  }
  compile_objects "$out/obj-vector"
  [ "${VARIANTS:-both}" = vector ] || compile_objects "$out/obj-scalar" -DAW_FORCE_SCALAR
  for t in tests/native/test_*.c; do
    local name; name=$(basename "$t" .c)
    "$cc" "${flags[@]}" "$t" "$out"/obj-vector/*.o -o "$out/$name" -lm
    [ "${VARIANTS:-both}" = vector ] || "$cc" "${flags[@]}" -DAW_FORCE_SCALAR "$t" "$out"/obj-scalar/*.o -o "$out/${name}_scalar" -lm
  done
  echo "build.sh: native tests in $out/"
}

# The same tests built for 32-bit x86 (gcc -m32, Debian's gcc-multilib with 32-bit ASan and
# UBSan), SSE2 floats so the numbers match the 64-bit build's; installed when missing (as root).
build_native32() {
  echo 'int main(void){return 0;}' | "${CC:-gcc}" -m32 -fsanitize=address,undefined -x c - -o /dev/null 2>/dev/null ||
    need_apt build.sh "the 32-bit build" gcc-multilib lib32asan8 lib32ubsan1
  VARIANTS=vector build_native build/native32 -m32 -msse2 -mfpmath=sse
}

case "$what" in
  wasm) build_wasm ;;
  simd) ensure_emcc; NODE_PATH=/usr/share/nodejs emcc "${wasm_common[@]}" -msimd128 $sources -o wasm/attention.wasm && echo "build.sh: wasm/attention.wasm only (the inner loop; sources.sha256 not written)" ;;
  relaxed) sources=$sources; build_relaxed ;;
  native) build_native ;;
  native32) build_native32 ;;
  trainer) mkdir -p build && "${CC:-gcc}" -std=c11 -O2 -D_DEFAULT_SOURCE -DAW_THREADS -pthread -Wall -Wextra -Werror $sources tools/train.c -o "${TRAINER_OUT:-build/trainer}" -lm && echo "build.sh: ${TRAINER_OUT:-build/trainer} (threads: --threads N, default every core)" ;;
  generate) mkdir -p build && "${CC:-gcc}" -std=c11 -O3 -march=native -D_DEFAULT_SOURCE -DAW_THREADS -pthread -Wall -Wextra -Werror -Wno-format-truncation $sources tools/generate.c -o "${GENERATE_OUT:-build/generate}" -lm && echo "build.sh: ${GENERATE_OUT:-build/generate} (the native generation yardstick: --threads N)" ;;
  hash) sources_hash ;;
  all) build_wasm; build_native; build_native32 ;;
  *) echo "usage: bash build.sh [wasm|simd|relaxed|native|native32|trainer|generate|hash]" >&2; exit 2 ;;
esac
