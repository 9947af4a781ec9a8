// size.h: the one way to compute a size. Every product or sum that sizes memory goes through
// these helpers, so an impossible size is refused before anything is allocated or written,
// also in wasm32 where size_t has 32 bits (3 * 2^20 * 4096 floats do not fit).
//
// A plan adds up the floats of several buffers; once any step overflows, the plan stays
// invalid and aw_plan_ok says so. Allocation helpers return NULL for an overflowing size.
#ifndef AW_SIZE_H
#define AW_SIZE_H

#include <stddef.h>
#include <stdlib.h>

// The longest chunk a chunked form takes (its scratch grows with chunk^2 per head): the range
// [1, AW_CHUNK_MAX] of the forms' chunk option and of the gated functions' chunk argument.
enum { AW_CHUNK_MAX = 4096 };

// *r = a * b; returns 1 when it does not fit (then *r = SIZE_MAX).
static inline int aw_mul_overflows(size_t *r, size_t a, size_t b) {
    if (__builtin_mul_overflow(a, b, r)) {
        *r = (size_t)-1;
        return 1;
    }
    return 0;
}

// a * b, or SIZE_MAX when it overflows (SIZE_MAX then fails every later check and malloc).
static inline size_t aw_size_mul(size_t a, size_t b) {
    size_t r;
    aw_mul_overflows(&r, a, b);
    return r;
}

static inline size_t aw_size_mul3(size_t a, size_t b, size_t c) { return aw_size_mul(aw_size_mul(a, b), c); }

// a + b, or SIZE_MAX when it overflows (SIZE_MAX stays SIZE_MAX).
static inline size_t aw_size_add(size_t a, size_t b) {
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? (size_t)-1 : r;
}

// The largest element count whose bytes still fit: a size at or above it is refused.
#define AW_SIZE_INVALID ((size_t)-1)

typedef struct {
    size_t total; // elements so far; AW_SIZE_INVALID once a step overflowed
} aw_plan;

// Adds a * b elements to the plan and returns the offset where they start.
static inline size_t aw_plan_take(aw_plan *p, size_t a, size_t b) {
    const size_t at = p->total;
    p->total = aw_size_add(p->total, aw_size_mul(a, b));
    return at;
}

// 1 when the plan's total times elem bytes fits in size_t.
static inline int aw_plan_ok(const aw_plan *p, size_t elem) {
    size_t bytes;
    return p->total != AW_SIZE_INVALID && !aw_mul_overflows(&bytes, p->total, elem);
}

// malloc / calloc of count elements of elem bytes, NULL when count * elem overflows.
static inline void *aw_alloc(size_t count, size_t elem) {
    size_t bytes;
    if (aw_mul_overflows(&bytes, count, elem) || bytes == (size_t)-1) return NULL;
    return malloc(bytes ? bytes : 1);
}

static inline void *aw_alloc_zero(size_t count, size_t elem) {
    size_t bytes;
    if (aw_mul_overflows(&bytes, count, elem)) return NULL;
    return calloc(bytes ? bytes : 1, 1);
}

#define aw_alloc_floats(n) ((float *)aw_alloc((n), sizeof(float)))
#define aw_alloc_doubles(n) ((double *)aw_alloc((n), sizeof(double)))

#endif
