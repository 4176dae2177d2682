/* Status codes and the error record every ABI call can fill.
 * Part of the Switchyard plugin and backend ABI v1. */
#ifndef SWITCHYARD_STATUS_H
#define SWITCHYARD_STATUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return value of every fallible ABI function. 0 is success; any other value is a failure whose
 * human-readable explanation is in the sy_error the caller passed. */
typedef int32_t sy_status;
enum {
    SY_OK = 0,
    SY_E_INVALID = 1,     /* arguments violate the documented contract (shapes, dtypes, ranges) */
    SY_E_UNSUPPORTED = 2, /* valid request outside what this implementation declares in its caps */
    SY_E_NOMEM = 3,       /* host or device allocation failed */
    SY_E_BACKEND = 4,     /* the device runtime reported an error */
    SY_E_INTERNAL = 5,    /* a bug: an invariant of the implementation itself failed */
    SY_E_IO = 6           /* a file could not be read or written */
};

#define SY_ERROR_MSG_LEN 512

/* Filled by the callee on failure: one line, no trailing newline, naming what was wrong and the
 * values involved. The caller owns the storage; callees never keep a pointer to it. */
typedef struct sy_error {
    char msg[SY_ERROR_MSG_LEN];
} sy_error;

const char *sy_status_name(sy_status s);

#ifdef __cplusplus
}
#endif
#endif
