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

// The last word of an exported call: a failure that reached here without a message (a bare
// status from deep inside a kernel) gets the general one for its status, so no failure is silent.
static inline int api_done(int st) {
    if (st == AW_OK || aw_error_message()[0]) return st;
    switch (st) {
    case AW_ERR_ARG: return aw_fail(st, "an argument is out of range");
    case AW_ERR_NOMEM: return aw_fail(st, "out of memory: the wasm heap could not grow to hold this call");
    case AW_ERR_STATE: return aw_fail(st, "the object is not in a state that allows this call");
    case AW_ERR_FORMAT: return aw_fail(st, "the bytes are not in the expected format");
    case AW_ERR_NONFINITE: return aw_fail(st, "a NaN or Infinity appeared (an overflow of float32)");
    default: return aw_fail(st, "unknown status %d", st);
    }
}

#endif
