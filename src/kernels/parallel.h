// parallel.h: a fixed partition of work over the threads of the threaded build.
//
// aw_parallel_for(count, fn, ctx) runs fn(ctx, item) once for every item in [0, count), on the
// calling thread and on the pool's worker threads, and returns when all are done. Callers cut the
// work into items by sizes alone (never by the thread count) and give every item its own output,
// so the result is bit-identical whatever the number of threads: 1, 2 or 8 threads only change
// who computes an item. Inside an item, aw_parallel_for runs serially (no nested parallelism).
//
// The pool (threaded build only, -DAW_THREADS): each worker is a second instance of the same
// module on the same shared memory, started by the JS loader (wasm/threads.js), which gives it a
// stack and its thread-local block and then calls aw_thread_loop(), where it waits for work with
// memory.atomic.wait32. The calling (main) thread never waits that way (a browser's main thread may
// not): it runs items itself and spins on the completion count. Without -DAW_THREADS every call
// runs serially and aw_threads() is 1.
#ifndef AW_PARALLEL_H
#define AW_PARALLEL_H

#include <stddef.h>

typedef void (*aw_item_fn)(void *ctx, size_t item);

void aw_parallel_for(size_t count, aw_item_fn fn, void *ctx);

// Records status st (when it is not AW_OK) in *status unless a failure is already there: items that
// fail report through their job's status, and the first failure counts, whichever thread met it.
static inline void aw_first_failure(int *status, int st) {
    if (st) __atomic_compare_exchange_n(status, &(int){0}, st, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

// The same items, but run in turn on the calling thread when the whole job is below
// AW_PAR_MIN_MACS multiply-adds (a generation step's few rows): waking the pool costs more than
// such a job. The bound is on sizes, so it changes only who runs an item, never what it computes.
enum { AW_PAR_MIN_MACS = 1 << 16 };
void aw_parallel_for_work(size_t count, aw_item_fn fn, void *ctx, double macs);

// aw_parallel_ranges(n, grain, fn, ctx): fn(ctx, begin, end) over [0, n) cut into pieces of
// `grain` (the last may be shorter), one item each: the cut depends on n and grain alone. For ops
// whose every element (or row, or column) is computed the same way wherever the cut falls.
typedef void (*aw_range_fn)(void *ctx, size_t begin, size_t end);
void aw_parallel_ranges(size_t n, size_t grain, aw_range_fn fn, void *ctx);
// A grain of rows of `cols` floats each: about AW_GRAIN floats per item (at least one row).
enum { AW_GRAIN = 8192 };
static inline size_t aw_rows_grain(size_t cols) { return cols >= AW_GRAIN ? 1 : AW_GRAIN / (cols ? cols : 1); }
// A reduction's cut: [0, n) in at most AW_PIECES pieces of at least `least` elements, fixed by n
// and least alone, so partial results combined in piece order give the same bits at any thread
// count. Returns how many pieces (0 for n = 0) and their length in *piece (the last may be shorter).
enum { AW_PIECES = 64 };
static inline size_t aw_pieces(size_t n, size_t least, size_t *piece) {
    size_t p = n / AW_PIECES + (n % AW_PIECES != 0);
    if (p < least) p = least;
    if (p == 0) p = 1;
    *piece = p;
    return n / p + (n % p != 0);
}
// Threads that run items right now: the caller plus the workers it may use (1 when serial).
size_t aw_threads(void);
// Use n threads from now on (1 = serial; at most the workers started + 1); returns how many run.
int aw_threads_set(int n);
// A worker's life (the JS loader calls it in each worker): wait for a job, take items until none
// are left, wait again; never returns. Returns at once in the serial build.
void aw_threads_loop(int index);
// Items the workers (not the calling thread) have run since the start: shows they take part.
size_t aw_threads_worker_items(void);
// 1 in the threaded build.
int aw_threads_built(void);

#endif
