#include "sy_op_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

sy_status sy_op_fail(sy_error *err, sy_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        for (char *c = err->msg; *c; c++)
            if (*c == '\n')
                *c = ' ';
    }
    return status;
}

const char *sy_op_dtype_name(int32_t dtype)
{
    static const char *const names[SY_DTYPE_COUNT_] = {
        [SY_DTYPE_F32] = "f32", [SY_DTYPE_BF16] = "bf16", [SY_DTYPE_F16] = "f16", [SY_DTYPE_FP8_E4M3] = "fp8_e4m3",
        [SY_DTYPE_U8] = "u8",   [SY_DTYPE_I32] = "i32",   [SY_DTYPE_I64] = "i64",
    };
    return dtype > 0 && dtype < SY_DTYPE_COUNT_ && names[dtype] ? names[dtype] : "invalid";
}

/* "[4, 2880]" into buf. */
static const char *shape_text(char *buf, size_t len, int32_t ndim, const int64_t *shape)
{
    size_t used = 0;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, len, "[");
    for (int32_t i = 0; i < ndim && used < len; i++) {
        if (shape[i] == SY_ANY_DIM)
            used += (size_t)snprintf(buf + used, len - used, "%s*", i ? ", " : "");
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    }
    if (used < len)
        snprintf(buf + used, len - used, "]");
    return buf;
}

static const char *mask_text(char *buf, size_t len, uint32_t mask)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t dt = 1; dt < SY_DTYPE_COUNT_ && used < len; dt++)
        if (mask & SY_DTYPE_BIT(dt))
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " or " : "", sy_op_dtype_name(dt));
    return buf;
}

sy_status sy_op_check_tensor(const char *op, const char *name, const sy_tensor *t, uint32_t dtype_mask, int32_t ndim,
                             const int64_t *want, sy_error *err)
{
    char a[160], b[160];
    if (!t->data)
        return sy_op_fail(err, SY_E_INVALID, "%s: %s is missing (data is NULL)", op, name);
    if (t->dtype <= 0 || t->dtype >= SY_DTYPE_COUNT_ || !(dtype_mask & SY_DTYPE_BIT(t->dtype)))
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %s has dtype %s, expected %s", op, name,
                          sy_op_dtype_name(t->dtype), mask_text(a, sizeof a, dtype_mask));
    int ok = t->ndim == ndim;
    for (int32_t i = 0; ok && i < ndim; i++)
        ok = want[i] == SY_ANY_DIM || t->shape[i] == want[i];
    if (!ok)
        return sy_op_fail(err, SY_E_INVALID, "%s: %s has shape %s, expected %s", op, name,
                          shape_text(a, sizeof a, t->ndim > 0 && t->ndim <= SY_MAX_DIMS ? t->ndim : 0, t->shape),
                          shape_text(b, sizeof b, ndim, want));
    for (int32_t i = 0; i < ndim; i++)
        if (t->shape[i] < 0)
            return sy_op_fail(err, SY_E_INVALID, "%s: %s has negative extent %lld in dim %d", op, name,
                              (long long)t->shape[i], (int)i);
    return SY_OK;
}

sy_status sy_op_check_dense(const char *op, const char *name, const sy_tensor *t, int padded_rows, sy_error *err)
{
    int64_t expect = 1;
    for (int32_t i = t->ndim - 1; i >= 0; i--) {
        int outer = i == 0 && t->ndim > 1;
        int fine = t->shape[i] <= 1 || (outer && padded_rows ? t->stride[i] >= expect : t->stride[i] == expect);
        if (!fine)
            return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %s has stride %lld in dim %d, expected %s%lld (row-major%s)",
                              op, name, (long long)t->stride[i], (int)i, outer && padded_rows ? ">= " : "",
                              (long long)expect, padded_rows ? ", rows may be padded" : ", contiguous");
        expect *= t->shape[i];
    }
    return SY_OK;
}

sy_status sy_op_check_dense_tensor(const char *op, const char *name, const sy_tensor *t, uint32_t dtype_mask,
                                   int32_t ndim, const int64_t *want, int padded_rows, sy_error *err)
{
    sy_status st = sy_op_check_tensor(op, name, t, dtype_mask, ndim, want, err);
    return st == SY_OK ? sy_op_check_dense(op, name, t, padded_rows, err) : st;
}
