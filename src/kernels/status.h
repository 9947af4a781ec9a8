// status.h: the status codes every exported C function returns. The JS wrapper maps
// each to an Error in one place (wasm/core.js, STATUS_MESSAGES); keep the two in step.
#ifndef AW_STATUS_H
#define AW_STATUS_H

enum aw_status {
    AW_OK = 0,
    AW_ERR_ARG = 1,      // an argument is out of range (the wrapper checks first; this is the backstop)
    AW_ERR_NOMEM = 2,    // malloc failed: the wasm heap could not grow
    AW_ERR_STATE = 3,    // an object is used in a state that does not allow the call
    AW_ERR_FORMAT = 4,   // bytes that should be a checkpoint are not one
    AW_ERR_NONFINITE = 5 // a NaN or Infinity was met where it cannot be handled
};

#endif
