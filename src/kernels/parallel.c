// parallel.c: the pool behind aw_parallel_for (see parallel.h).
#include "parallel.h"

#include <stdint.h>

typedef struct {
    aw_range_fn fn;
    void *ctx;
    size_t n, grain;
} ranges_job;

static void range_item(void *ctx, size_t i) {
    const ranges_job *j = ctx;
    const size_t begin = i * j->grain, end = j->n - begin < j->grain ? j->n : begin + j->grain;
    j->fn(j->ctx, begin, end);
}

void aw_parallel_for_work(size_t count, aw_item_fn fn, void *ctx, double macs) {
    if (macs >= AW_PAR_MIN_MACS) {
        aw_parallel_for(count, fn, ctx);
        return;
    }
    for (size_t i = 0; i < count; i++) fn(ctx, i);
}

void aw_parallel_ranges(size_t n, size_t grain, aw_range_fn fn, void *ctx) {
    if (grain == 0) grain = 1;
    if (n <= grain) { // one piece: no job to publish
        if (n) fn(ctx, 0, n);
        return;
    }
    ranges_job j = {fn, ctx, n, grain};
    aw_parallel_for(n / grain + (n % grain != 0), range_item, &j);
}

#ifndef AW_THREADS

void aw_parallel_for(size_t count, aw_item_fn fn, void *ctx) {
    for (size_t i = 0; i < count; i++) fn(ctx, i);
}

size_t aw_threads(void) { return 1; }
size_t aw_threads_worker_items(void) { return 0; }
int aw_threads_set(int n) { return (void)n, 1; }
void aw_threads_loop(int index) { (void)index; }
int aw_threads_built(void) { return 0; }

#else

// Waiting and waking: wasm's memory.atomic.wait32 / notify in the browser and Node builds; a Linux
// futex on the same word in the native threaded build (the trainer's, build.sh trainer).
#if defined(__wasm__)
#define POOL_WAIT(addr, val) __builtin_wasm_memory_atomic_wait32((addr), (val), -1)
#define POOL_NOTIFY(addr, n) __builtin_wasm_memory_atomic_notify((addr), (n))
#else
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#define POOL_WAIT(addr, val) syscall(SYS_futex, (addr), FUTEX_WAIT_PRIVATE, (val), NULL, NULL, 0)
#define POOL_NOTIFY(addr, n) syscall(SYS_futex, (addr), FUTEX_WAKE_PRIVATE, (int)(n), NULL, NULL, 0)
#endif

// One job at a time, published by the main thread. It raises `writing`, waits until no worker is
// inside (active == 0), writes the fields, bumps seq and lowers `writing`. A worker raises active
// and only then looks at `writing`; if it is up, the worker steps out and waits for the bump.
// Both sides write their own flag before reading the other's, in sequentially consistent order, so
// a worker can never read a job's fields while the main thread writes them.
static struct {
    int32_t seq;        // bumped once per job; workers wait on it
    int32_t workers;    // workers started (aw_thread_loop entered)
    int32_t use;        // workers allowed to take items (aw_set_threads - 1)
    int32_t active;     // workers inside the current job
    int32_t writing;    // 1 while the main thread writes a job's fields
    aw_item_fn fn;
    void *ctx;
    size_t count, done;
    uint32_t worker_items; // items the workers ran, ever (tests and benchmarks read it)
} pool;

static _Thread_local int depth; // > 0 inside an item: nested calls run serially

// loads of the job counter before a worker sleeps: about 1.3 ms of one core on the Zen 5 host
// (process CPU time after a job), long enough to bridge the JS between two calls, after which a
// sleeping worker costs tens of microseconds to wake. Measured at 2 threads: 2^16 loads gave a
// 256^3 matmul call 421 us in Node, 2^18 367-389 us; in Chromium, whose calls have more JS around
// them, 2^18 still let the worker sleep between calls (attention n = 512: 2 threads 1.45x one) and
// 2^20 keeps it awake (1.68x).
enum { SPIN = 1 << 20 };

// The items are cut into one contiguous run per thread (the caller's first). Each thread claims its
// own run's items in ascending order, so it streams its part of a job's memory forwards (a
// matrix-vector product's rows, where a hardware prefetcher that keeps up matters most); a thread
// whose run is done takes items from the back of the others' runs. Each run is [low 32 bits, high
// 32 bits) of one word, on its own cache line. Returns count when no item is left anywhere.
enum { MAX_RUNS = 64 };
static struct {
    _Alignas(64) uint64_t ends;
} runs[MAX_RUNS];
static int32_t nruns; // runs of the current job

static size_t claim(size_t count, int self) {
    const int n = __atomic_load_n(&nruns, __ATOMIC_ACQUIRE);
    for (int k = 0; k < n; k++) {
        const int t = (self + k) % n;
        uint64_t e = __atomic_load_n(&runs[t].ends, __ATOMIC_ACQUIRE);
        for (;;) {
            const uint32_t lo = (uint32_t)e, hi = (uint32_t)(e >> 32);
            if (lo >= hi) break;
            const uint64_t want = t == self ? e + 1 : e - ((uint64_t)1 << 32);
            if (__atomic_compare_exchange_n(&runs[t].ends, &e, want, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return t == self ? lo : hi - 1;
        }
    }
    return count;
}

static void run_items(aw_item_fn fn, void *ctx, size_t count, int self) {
    size_t ran = 0;
    depth++;
    for (;;) {
        const size_t i = claim(count, self);
        if (i >= count) break;
        fn(ctx, i);
        ran++;
    }
    depth--;
    if (self) __atomic_fetch_add(&pool.worker_items, (uint32_t)ran, __ATOMIC_RELAXED);
    __atomic_fetch_add(&pool.done, ran, __ATOMIC_ACQ_REL); // once a thread: the counter's line moves less
}

size_t aw_threads_worker_items(void) { return __atomic_load_n(&pool.worker_items, __ATOMIC_RELAXED); }

size_t aw_threads(void) {
    const int32_t w = __atomic_load_n(&pool.workers, __ATOMIC_ACQUIRE), u = pool.use;
    return 1 + (size_t)(u < w ? u : w);
}

void aw_parallel_for(size_t count, aw_item_fn fn, void *ctx) {
    if (count == 0) return;
    if (depth > 0 || count == 1 || count > UINT32_MAX || aw_threads() == 1) { // claim() counts in 32 bits
        for (size_t i = 0; i < count; i++) fn(ctx, i);
        return;
    }
    __atomic_store_n(&pool.writing, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&pool.active, __ATOMIC_SEQ_CST) != 0) { } // a late worker leaving the last job
    pool.fn = fn, pool.ctx = ctx, pool.count = count;
    const size_t threads = aw_threads(), n = threads < MAX_RUNS ? threads : MAX_RUNS;
    for (size_t t = 0; t < n; t++)
        __atomic_store_n(&runs[t].ends, ((uint64_t)(t + 1) * count / n << 32) | ((uint64_t)t * count / n), __ATOMIC_RELEASE);
    __atomic_store_n(&nruns, (int32_t)n, __ATOMIC_RELEASE);
    __atomic_store_n(&pool.done, 0, __ATOMIC_RELEASE);
    __atomic_fetch_add(&pool.seq, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&pool.writing, 0, __ATOMIC_SEQ_CST);
    POOL_NOTIFY(&pool.seq, (uint32_t)pool.use);
    run_items(fn, ctx, count, 0);
    while (__atomic_load_n(&pool.done, __ATOMIC_ACQUIRE) < count) { } // the main thread may not wait
    while (__atomic_load_n(&pool.active, __ATOMIC_ACQUIRE) != 0) { }
}

int aw_threads_set(int n) {
    pool.use = n > 1 ? n - 1 : 0;
    return (int)aw_threads();
}

int aw_threads_built(void) { return 1; }

void aw_threads_loop(int index) {
    __atomic_fetch_add(&pool.workers, 1, __ATOMIC_ACQ_REL);
    int32_t seen = __atomic_load_n(&pool.seq, __ATOMIC_ACQUIRE);
    for (;;) {
        // spin a little before sleeping: the next job often follows at once (a model's step runs
        // dozens), and waking a sleeping thread costs tens of microseconds
        for (int i = 0; i < SPIN && __atomic_load_n(&pool.seq, __ATOMIC_ACQUIRE) == seen; i++) { }
        POOL_WAIT(&pool.seq, seen);
        __atomic_fetch_add(&pool.active, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&pool.writing, __ATOMIC_SEQ_CST)) { // a job is being written: wait for its bump
            __atomic_fetch_sub(&pool.active, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        const int32_t s = __atomic_load_n(&pool.seq, __ATOMIC_ACQUIRE);
        if (s != seen) {
            seen = s;
            if (index < pool.use) run_items(pool.fn, pool.ctx, pool.count, index + 1);
        }
        __atomic_fetch_sub(&pool.active, 1, __ATOMIC_ACQ_REL);
    }
}

#endif
