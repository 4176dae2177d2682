/* Argument checks for host-side plugin ops: every failure fills the caller's sy_error with one line
 * naming the op, the argument and the offending values, as plugin.h requires. */
#ifndef SY_OP_CHECK_H
#define SY_OP_CHECK_H

#include <stdint.h>

#include "switchyard/plugin.h"

/* printf into err->msg (truncated to one line); returns `status` so that callers can write
 * `return sy_op_fail(err, SY_E_INVALID, ...)`. */
sy_status sy_op_fail(sy_error *err, sy_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Lower-case dtype name ("f32", "bf16", ...), "invalid" for unknown values. */
const char *sy_op_dtype_name(int32_t dtype);

/* Matches the shape wildcard in sy_op_check_tensor. */
#define SY_ANY_DIM (-1)

/* `t` is present, its dtype is in `dtype_mask` (SY_DTYPE_BIT bits), it has `ndim` dimensions and
 * shape[i] == want[i] wherever want[i] != SY_ANY_DIM. */
sy_status sy_op_check_tensor(const char *op, const char *name, const sy_tensor *t, uint32_t dtype_mask, int32_t ndim,
                             const int64_t *want, sy_error *err);

/* Row-major with unit innermost stride; the outermost stride may exceed the row size (rows of a
 * wider buffer) when `padded_rows` is 1. */
sy_status sy_op_check_dense(const char *op, const char *name, const sy_tensor *t, int padded_rows, sy_error *err);

/* Both of the above: sy_op_check_tensor, then sy_op_check_dense. */
sy_status sy_op_check_dense_tensor(const char *op, const char *name, const sy_tensor *t, uint32_t dtype_mask,
                                   int32_t ndim, const int64_t *want, int padded_rows, sy_error *err);

#endif
