// status.c: the message of the last failure (see status.h). One buffer per thread.
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_message[512];
static _Thread_local int last_status;

int aw_fail(int status, const char *fmt, ...) {
    if (last_message[0] == '\0') {
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

void aw_clear_error(void) { last_message[0] = '\0', last_status = AW_OK; }
