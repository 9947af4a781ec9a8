// api.h: the exported C ABI. Every function the wasm module exports is declared with AW_API
// at the start of a line in src/api/*.c; build.sh collects those names into the export list,
// so the list cannot drift from the code. All exports take 32-bit sizes and pointers (wasm32)
// and return an aw_status (src/kernels/status.h) unless they are plain queries.
#ifndef AW_API_H
#define AW_API_H

#include "../kernels/status.h"

#include <stddef.h>
#include <stdint.h>

#define AW_API __attribute__((used, visibility("default")))

#endif
