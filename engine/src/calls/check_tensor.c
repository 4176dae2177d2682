#include "calls/check_tensor.h"

#include <math.h>
#include <stdio.h>

#include "util/strbuf.h"

static const char *shape_str(char *buf, size_t len, int32_t ndim, const int64_t *shape)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int32_t i = 0; i < ndim && used < len; i++)
        used += shape[i] == SY_CALL_ANY ? (size_t)snprintf(buf + used, len - used, "%s*", i ? ", " : "")
                                        : (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "",
                                                           (long long)shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
    return buf;
}

sy_status sy_call_check_tensor(const char *op, const char *name, const sy_tensor *t, uint32_t dtypes, int32_t ndim,
                               const int64_t *want, sy_error *err)
{
    char got[128], exp[128];
    if (!t->data)
        return sy_fail(err, SY_E_INVALID, "%s: %s is missing (data is NULL)", op, name);
    if (t->dtype <= 0 || t->dtype >= 32 || !(dtypes & SY_DTYPE_BIT(t->dtype)))
        return sy_fail(err, dtypes == SY_CALL_INDEX_DTYPES ? SY_E_INVALID : SY_E_UNSUPPORTED,
                       "%s: %s has dtype %s%s", op, name, sy_dtype_name(t->dtype),
                       dtypes == SY_CALL_INDEX_DTYPES ? "; index tensors are int32 (i32)" : ", not one this call accepts");
    if (t->ndim != ndim)
        return sy_fail(err, SY_E_INVALID, "%s: %s has %d dimensions, expected %d %s", op, name, t->ndim, ndim,
                       shape_str(exp, sizeof exp, ndim, want));
    for (int32_t i = 0; i < ndim; i++)
        if (t->shape[i] < 0 || (want[i] != SY_CALL_ANY && t->shape[i] != want[i]))
            return sy_fail(err, SY_E_INVALID, "%s: %s has shape %s, expected %s", op, name,
                           shape_str(got, sizeof got, ndim, t->shape), shape_str(exp, sizeof exp, ndim, want));
    return SY_OK;
}

sy_status sy_call_check_packed(const char *op, const char *name, const sy_tensor *t, int rows_may_pad, sy_error *err)
{
    int64_t inner = 1;
    for (int32_t i = t->ndim - 1; i >= 0; i--) {
        int outer_padded = i == 0 && rows_may_pad;
        int ok = t->shape[i] <= 1 || (outer_padded ? t->stride[i] >= inner : t->stride[i] == inner);
        if (!ok)
            return sy_fail(err, SY_E_INVALID, "%s: %s has stride %lld in dimension %d, expected %s%lld", op, name,
                           (long long)t->stride[i], (int)i, outer_padded ? ">= " : "", (long long)inner);
        inner *= t->shape[i];
    }
    return SY_OK;
}

sy_status sy_call_check_like(const char *op, const char *name, const sy_tensor *t, const char *ref_name,
                             const sy_tensor *ref, sy_error *err)
{
    char got[128], exp[128];
    if (!t->data)
        return sy_fail(err, SY_E_INVALID, "%s: %s is missing (data is NULL)", op, name);
    if (t->dtype != ref->dtype)
        return sy_fail(err, SY_E_INVALID, "%s: %s has dtype %s, %s has %s; they must match", op, name,
                       sy_dtype_name(t->dtype), ref_name, sy_dtype_name(ref->dtype));
    int same = t->ndim == ref->ndim;
    for (int32_t i = 0; same && i < t->ndim; i++)
        same = t->shape[i] == ref->shape[i];
    if (!same)
        return sy_fail(err, SY_E_INVALID, "%s: %s has shape %s, %s has %s; they must match", op, name,
                       shape_str(got, sizeof got, t->ndim >= 0 && t->ndim <= SY_MAX_DIMS ? t->ndim : 0, t->shape),
                       ref_name, shape_str(exp, sizeof exp, ref->ndim, ref->shape));
    return SY_OK;
}

sy_status sy_call_check_args_size(const char *op, uint32_t struct_size, size_t v1_size, sy_error *err)
{
    if (struct_size < v1_size)
        return sy_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than v1 (%zu)", op, struct_size, v1_size);
    return SY_OK;
}

sy_status sy_call_check_scale(const char *op, const char *name, float scale, sy_error *err)
{
    if (!isfinite(scale) || scale <= 0.0f)
        return sy_fail(err, SY_E_INVALID, "%s: %s = %g; an fp8 pool needs a finite positive scale (1 = unit)", op,
                       name, (double)scale);
    return SY_OK;
}
