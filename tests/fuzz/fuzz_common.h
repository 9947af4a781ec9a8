// fuzz_common.h: what the libFuzzer targets share: a reader that turns the fuzzer's bytes into
// bounded numbers, and the invariants every target asserts. A documented error status (AW_ERR_*)
// is fine; a sanitizer report, a crash, a leak, a timeout or a broken invariant is a finding.
#ifndef AW_FUZZ_COMMON_H
#define AW_FUZZ_COMMON_H

#include "../../src/kernels/status.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    size_t left;
} bytes_in;

static inline uint32_t take_u32(bytes_in *in) {
    uint32_t v = 0;
    for (int i = 0; i < 4 && in->left; i++, in->left--) v |= (uint32_t)*in->p++ << (8 * i);
    return v;
}

static inline uint8_t take_u8(bytes_in *in) {
    if (!in->left) return 0;
    in->left--;
    return *in->p++;
}

// An integer in [lo, hi], mostly small, sometimes an edge.
static inline size_t take_size(bytes_in *in, size_t lo, size_t hi) {
    const uint8_t b = take_u8(in);
    if (b == 255) return hi;
    if (b == 254) return lo;
    return lo + b % (hi - lo + 1);
}

// A float: ordinary values in [-2, 2], and now and then a huge, tiny or zero one.
static inline float take_float(bytes_in *in) {
    const uint32_t r = take_u32(in);
    switch (r & 15) {
    case 0: return 0.0f;
    case 1: return 3e38f * ((r & 16) ? 1.0f : -1.0f);
    case 2: return 1e20f * ((r & 16) ? 1.0f : -1.0f);
    case 3: return 1e-30f;
    default: return ((float)(r >> 8) / (float)(1u << 24)) * 4.0f - 2.0f;
    }
}

static inline void fill(float *x, size_t n, bytes_in *in) {
    for (size_t i = 0; i < n; i++) x[i] = take_float(in);
}

#define FUZZ_ASSERT(cond, ...)                                                                                   \
    do {                                                                                                         \
        if (!(cond)) {                                                                                           \
            fprintf(stderr, "fuzz invariant broken at %s:%d: ", __FILE__, __LINE__);                           \
            fprintf(stderr, __VA_ARGS__);                                                                        \
            fprintf(stderr, "\n");                                                                               \
            abort();                                                                                             \
        }                                                                                                        \
    } while (0)

// A call that failed must say why: every failure carries a message naming what was wrong.
#define FUZZ_STATUS(st)                                                                                          \
    FUZZ_ASSERT((st) == AW_OK || aw_error_message()[0] != '\0', "status %d without a message", (st))

static inline int all_finite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

#endif
