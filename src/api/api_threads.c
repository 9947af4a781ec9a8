// api_threads.c: the thread pool for the loader (wasm/threads.js; src/kernels/parallel.h).
#include "api.h"

#include "../kernels/parallel.h"

// Use n threads from now on (1 = serial); returns how many run (at most the workers started + 1).
AW_API int32_t aw_set_threads(int32_t n) { return aw_threads_set(n); }
AW_API int32_t aw_thread_count(void) { return (int32_t)aw_threads(); }
// Entered once by each worker; never returns in the threaded build.
AW_API void aw_thread_loop(int32_t index) { aw_threads_loop(index); }
// Items the worker threads have run so far (0 in the serial build).
AW_API int32_t aw_thread_worker_items(void) { return (int32_t)aw_threads_worker_items(); }
