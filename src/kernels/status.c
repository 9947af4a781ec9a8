// status.c: the message of the last failure (see status.h).
//
// The threaded build keeps one record for the instance, not one per thread: a call runs on the
// main thread and on the workers it hands items to (src/kernels/parallel.h), and a failure inside
// a worker's item must reach the caller with its own message. The first failure since
// aw_clear_error claims the record atomically and writes it; the caller reads it after
// aw_parallel_for has joined. The single-thread build needs no claim.
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

static char last_message[512];
static int last_status;
#ifdef AW_THREADS
static int claimed; // 1 once a failure has claimed the record
#define CLAIM() (__atomic_exchange_n(&claimed, 1, __ATOMIC_ACQ_REL) == 0)
#define RELEASE_CLAIM() __atomic_store_n(&claimed, 0, __ATOMIC_RELEASE)
#else
#define CLAIM() (last_message[0] == '\0')
#define RELEASE_CLAIM() ((void)0)
#endif

int aw_fail(int status, const char *fmt, ...) {
    if (CLAIM()) {
        last_status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(last_message, sizeof last_message, fmt, ap);
        va_end(ap);
    }
    return status;
}

const char *aw_error_message(void) { return last_message; }

int aw_error_status(void) { return last_message[0] ? last_status : AW_OK; }

void aw_clear_error(void) {
    last_message[0] = '\0', last_status = AW_OK;
    RELEASE_CLAIM();
}
