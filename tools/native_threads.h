// native_threads.h: the library's thread pool (src/kernels/parallel.c) on pthreads, for the native
// tools (train.c, generate.c). start_threads(n) starts n - 1 pool workers beside the calling thread
// and returns how many threads run (1 when the library is built without AW_THREADS); each worker
// stays in aw_threads_loop for good. Results are bit-identical whatever the count (the work is cut
// by sizes alone).
#ifndef AW_TOOLS_NATIVE_THREADS_H
#define AW_TOOLS_NATIVE_THREADS_H

#include "../src/kernels/parallel.h"

#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

static void *worker(void *arg) {
    aw_threads_loop((int)(intptr_t)arg);
    return NULL;
}

static int start_threads(long n) {
    if (!aw_threads_built()) return 1;
    for (long i = 0; i + 1 < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, (void *)(intptr_t)i)) return (int)(i + 1);
        pthread_detach(t);
    }
    aw_threads_set((int)n);
    for (int i = 0; i < 1000 && aw_threads() < (size_t)n; i++) usleep(1000); // the workers enter the pool
    return (int)aw_threads();
}

#endif
