#include "args.h"

#include <stddef.h>
#include <stdio.h>

#include "sy_op_check.h"

static uint32_t y_parts_of(const sy_linear_args *a)
{
    return SY_HAS_MEMBER(a->struct_size, sy_linear_args, n_y_parts) ? a->n_y_parts : 0u;
}

sy_status sy_linear_check_args(const sy_linear_args *a, sy_error *err)
{
    static const char op[] = "linear";
    /* A host built before 1.4 passes the 1.0 struct, which ends before n_y_parts. */
    const size_t v1_size = offsetof(sy_linear_args, n_y_parts);
    if (!a || a->struct_size < v1_size)
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_linear_args 1.0 (%zu)", op,
                          a ? a->struct_size : 0u, v1_size);
    if (a->x.ndim != 2 || a->w.ndim != 2)
        return sy_op_fail(err, SY_E_INVALID, "%s: x and w must be 2-d ([M, K], [N, K]); got %d-d and %d-d", op,
                          (int)a->x.ndim, (int)a->w.ndim);
    const int64_t M = a->x.shape[0], K = a->x.shape[1], N = a->w.shape[0];
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: M %lld, N %lld, K %lld exceed the BLAS int range", op,
                          (long long)M, (long long)N, (long long)K);
    const int64_t want_x[2] = {M, K}, want_w[2] = {N, K}, want_b[1] = {N}, want_y[2] = {M, N};
    sy_status st = sy_op_check_dense_tensor(op, "x", &a->x, SY_LINEAR_DTYPES, 2, want_x, 1, err);
    if (st == SY_OK)
        st = sy_op_check_dense_tensor(op, "w", &a->w, SY_LINEAR_DTYPES, 2, want_w, 0, err);
    if (st == SY_OK && a->b.data)
        st = sy_op_check_dense_tensor(op, "b", &a->b, SY_LINEAR_DTYPES, 1, want_b, 0, err);
    const uint32_t parts = y_parts_of(a);
    if (st == SY_OK && parts > SY_LINEAR_MAX_Y_PARTS)
        return sy_op_fail(err, SY_E_INVALID, "%s: n_y_parts %u exceeds SY_LINEAR_MAX_Y_PARTS (%d)", op, parts,
                          SY_LINEAR_MAX_Y_PARTS);
    if (st == SY_OK && parts && a->y.data)
        return sy_op_fail(err, SY_E_INVALID, "%s: y is given as well as %u y_parts; pass one or the other", op, parts);
    if (st == SY_OK && !parts)
        st = sy_op_check_dense_tensor(op, "y", &a->y, SY_LINEAR_DTYPES, 2, want_y, 1, err);
    int64_t columns = 0;
    for (uint32_t i = 0; st == SY_OK && i < parts; i++) {
        const sy_tensor *t = &a->y_parts[i];
        if (t->ndim != 2 || t->shape[1] < 1)
            return sy_op_fail(err, SY_E_INVALID, "%s: y_parts[%u] must be [M, N_i] with N_i >= 1", op, i);
        char name[24];
        snprintf(name, sizeof name, "y_parts[%u]", i);
        const int64_t want_part[2] = {M, t->shape[1]};
        st = sy_op_check_dense_tensor(op, name, t, SY_LINEAR_DTYPES, 2, want_part, 1, err);
        columns += t->shape[1];
    }
    if (st == SY_OK && parts && columns != N)
        return sy_op_fail(err, SY_E_INVALID, "%s: y_parts hold %lld columns, w has N = %lld", op, (long long)columns,
                          (long long)N);
    /* A product over no input features is a model built wrong, not a call to answer with the bias. */
    if (st == SY_OK && K == 0)
        return sy_op_fail(err, SY_E_INVALID, "%s: x and w have K = 0 columns", op);
    return st;
}

void sy_linear_out_of(const sy_linear_args *a, sy_linear_out *out)
{
    const uint32_t parts = y_parts_of(a);
    out->n = parts ? parts : 1u;
    out->first[0] = 0;
    for (uint32_t i = 0; i < out->n; i++) {
        out->part[i] = parts ? &a->y_parts[i] : &a->y;
        out->first[i + 1] = out->first[i] + out->part[i]->shape[1];
    }
}
