// thread_alloc.c: the lock around the allocator in the threaded build (see thread_alloc.h). A spin
// lock: the main thread of a page may not block, and allocations are short and rare (a few per
// kernel call, never in an inner loop).
#ifdef AW_THREADS
#include "thread_alloc.h"

#include <stdlib.h>

// build.sh includes thread_alloc.h before this file too (so <stdlib.h> declared the aw_mt_ names):
// here the names mean the allocator itself, declared again
#undef malloc
#undef calloc
#undef realloc
#undef free
void *malloc(size_t n);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t n);
void free(void *p);

static int lock;

static void take(void) {
    while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&lock, __ATOMIC_RELAXED)) { }
    }
}
static void give(void) { __atomic_store_n(&lock, 0, __ATOMIC_RELEASE); }

void *aw_mt_malloc(size_t n) {
    take();
    void *p = malloc(n);
    give();
    return p;
}
void *aw_mt_calloc(size_t n, size_t size) {
    take();
    void *p = calloc(n, size);
    give();
    return p;
}
void *aw_mt_realloc(void *q, size_t n) {
    take();
    void *p = realloc(q, n);
    give();
    return p;
}
void aw_mt_free(void *p) {
    take();
    free(p);
    give();
}
#else
typedef int aw_thread_alloc_unused; // ISO C: a translation unit is not empty
#endif
