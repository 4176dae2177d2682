/* Element types and the tensor view passed across the ABI.
 * Part of the Switchyard plugin and backend ABI v1. */
#ifndef SWITCHYARD_TENSOR_H
#define SWITCHYARD_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Values are part of the ABI: never renumber, only append. 0 is invalid so that a zeroed tensor
 * is never mistaken for a valid f32 one. */
typedef enum sy_dtype {
    SY_DTYPE_INVALID = 0,
    SY_DTYPE_F32 = 1,
    SY_DTYPE_BF16 = 2,
    SY_DTYPE_F16 = 3,
    SY_DTYPE_FP8_E4M3 = 4, /* OCP e4m3fn: no infinities, max finite 448, NaN = S.1111.111 */
    SY_DTYPE_U8 = 5,
    SY_DTYPE_I32 = 6,
    SY_DTYPE_I64 = 7,
    SY_DTYPE_COUNT_ = 8
} sy_dtype;

/* Bit of a dtype in a capability bitmask (caps.h). */
#define SY_DTYPE_BIT(dt) (1u << (uint32_t)(dt))

#define SY_MAX_DIMS 6

/* A strided view of memory owned by someone else (the engine, or the backend on its behalf).
 * `data` is a host pointer for the cpu backend and a device pointer for GPU backends.
 * shape and stride are in elements, not bytes; dimensions past ndim are ignored.
 * An absent optional tensor has data == NULL (ndim and shape are then ignored). */
typedef struct sy_tensor {
    void *data;
    int32_t dtype;  /* sy_dtype */
    int32_t ndim;   /* 0 .. SY_MAX_DIMS */
    int64_t shape[SY_MAX_DIMS];
    int64_t stride[SY_MAX_DIMS];
} sy_tensor;

SY_STATIC_ASSERT(offsetof(sy_tensor, data) == 0, "sy_tensor v1 layout");
SY_STATIC_ASSERT(offsetof(sy_tensor, dtype) == 8, "sy_tensor v1 layout");
SY_STATIC_ASSERT(offsetof(sy_tensor, ndim) == 12, "sy_tensor v1 layout");
SY_STATIC_ASSERT(offsetof(sy_tensor, shape) == 16, "sy_tensor v1 layout");
SY_STATIC_ASSERT(offsetof(sy_tensor, stride) == 64, "sy_tensor v1 layout");
SY_STATIC_ASSERT(sizeof(sy_tensor) == 112, "sy_tensor v1 layout");

/* Bytes of one element; 0 for SY_DTYPE_INVALID or an unknown value. */
static inline size_t sy_dtype_size(int32_t dt)
{
    switch (dt) {
    case SY_DTYPE_F32: return 4;
    case SY_DTYPE_BF16: return 2;
    case SY_DTYPE_F16: return 2;
    case SY_DTYPE_FP8_E4M3: return 1;
    case SY_DTYPE_U8: return 1;
    case SY_DTYPE_I32: return 4;
    case SY_DTYPE_I64: return 8;
    default: return 0;
    }
}

/* Lower-case name ("bf16", "fp8_e4m3", ...); "invalid" for unknown values. */
const char *sy_dtype_name(int32_t dt);

/* A contiguous (row-major) view of `data` with the given shape. */
static inline sy_tensor sy_tensor_contiguous(void *data, int32_t dtype, int32_t ndim, const int64_t *shape)
{
    sy_tensor t;
    int32_t i;
    int64_t s = 1;
    t.data = data;
    t.dtype = dtype;
    t.ndim = ndim;
    for (i = SY_MAX_DIMS - 1; i >= 0; i--) {
        t.shape[i] = i < ndim ? shape[i] : 1;
        t.stride[i] = i < ndim ? s : 0;
        if (i < ndim)
            s *= shape[i];
    }
    return t;
}

/* Number of elements (product of the first ndim dimensions). */
static inline int64_t sy_tensor_numel(const sy_tensor *t)
{
    int64_t n = 1;
    int32_t i;
    for (i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

#ifdef __cplusplus
}
#endif
#endif
