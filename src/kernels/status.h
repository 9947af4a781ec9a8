// status.h: the status codes every exported C function returns, and the message that goes with
// the last failure (the way SQLite keeps sqlite3_errmsg). Library code that rejects something
// calls aw_fail(status, "q has %zu values, expected n*d = %zu", ...): the message names the
// argument and what was expected, in words a user can act on. The JS wrapper reads it in one
// place (wasm/core.js, Core.check) and throws it as an Error; it never re-states C's bounds.
#ifndef AW_STATUS_H
#define AW_STATUS_H

enum aw_status {
    AW_OK = 0,
    AW_ERR_ARG = 1,      // an argument is out of range
    AW_ERR_NOMEM = 2,    // malloc failed, or a size does not fit in size_t (wasm32: 32 bits)
    AW_ERR_STATE = 3,    // an object is used in a state that does not allow the call
    AW_ERR_FORMAT = 4,   // bytes that should be a checkpoint are not one
    AW_ERR_NONFINITE = 5 // a NaN or Infinity was met where it cannot be handled
};

// Records the message of a failure (printf format) and returns status, so a check reads
// `if (bad) return aw_fail(AW_ERR_ARG, "...", ...);`. The first failure since aw_clear_error wins:
// an inner, more precise message is not overwritten by an outer caller's generic one.
int aw_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// The message of the last failure ("" when none), valid until the next aw_clear_error.
const char *aw_error_message(void);
// The status of that failure (AW_OK when none): for calls that return a pointer, not a status.
int aw_error_status(void);
// Forgets the last message. Every exported entry point calls it first.
void aw_clear_error(void);

#endif
