/* Tensor-level checks shared by the call-boundary checks (checks.h). Each fills err with one line
 * "<op>: <name> ..." and returns SY_E_INVALID (SY_E_UNSUPPORTED for a dtype outside the mask). */
#ifndef SY_CALLS_CHECK_TENSOR_H
#define SY_CALLS_CHECK_TENSOR_H

#include <stdint.h>

#include "switchyard/plugin.h"

#define SY_CALL_ANY (-1) /* wildcard extent in an expected shape */

#define SY_CALL_FLOAT_DTYPES (SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16) | SY_DTYPE_BIT(SY_DTYPE_F16))
#define SY_CALL_INDEX_DTYPES SY_DTYPE_BIT(SY_DTYPE_I32)

/* Present, dtype in `dtypes`, `ndim` dimensions, each extent equal to want[i] unless SY_CALL_ANY. */
sy_status sy_call_check_tensor(const char *op, const char *name, const sy_tensor *t, uint32_t dtypes, int32_t ndim,
                               const int64_t *want, sy_error *err);

/* Innermost dimensions packed (stride[i] = product of the extents inside it); the outermost stride
 * may be larger (rows of a wider buffer) when rows_may_pad, never negative. */
sy_status sy_call_check_packed(const char *op, const char *name, const sy_tensor *t, int rows_may_pad, sy_error *err);

/* Same dtype and shape as `ref`. */
sy_status sy_call_check_like(const char *op, const char *name, const sy_tensor *t, const char *ref_name,
                             const sy_tensor *ref, sy_error *err);

/* An args struct at least as large as its v1 layout. */
sy_status sy_call_check_args_size(const char *op, uint32_t struct_size, size_t v1_size, sy_error *err);

/* An fp8 dequant scale: finite and positive. */
sy_status sy_call_check_scale(const char *op, const char *name, float scale, sy_error *err);

#endif
