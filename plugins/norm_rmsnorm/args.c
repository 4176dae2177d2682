#include "args.h"

#include <math.h>

#include "sy_op_check.h"

static const char op[] = "norm rmsnorm";

static sy_status check_matrix(const char *name, const sy_tensor *t, uint32_t dtype_mask, int64_t M, int64_t N,
                              sy_error *err)
{
    const int64_t want[2] = {M, N};
    return sy_op_check_dense_tensor(op, name, t, dtype_mask, 2, want, 1, err);
}

sy_status sy_norm_rmsnorm_check_args(const sy_norm_args *a, uint32_t dtype_mask, int64_t max_out_cols, int64_t *nout,
                                     sy_error *err)
{
    if (!a || a->struct_size < sizeof *a)
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_norm_args (%zu)", op,
                          a ? a->struct_size : 0u, sizeof *a);
    if (a->x.ndim != 2)
        return sy_op_fail(err, SY_E_INVALID, "%s: x has %d dimensions, expected 2 ([M, N])", op, (int)a->x.ndim);
    const int64_t M = a->x.shape[0], N = a->x.shape[1];
    if (a->pad_to_multiple > SY_NORM_RMSNORM_MAX_PAD)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: pad_to_multiple %u exceeds the supported %d", op,
                          a->pad_to_multiple, SY_NORM_RMSNORM_MAX_PAD);
    if (!(a->eps >= 0.0f) || isinf(a->eps))
        return sy_op_fail(err, SY_E_INVALID, "%s: eps %g must be finite and >= 0", op, (double)a->eps);
    sy_status st = check_matrix("x", &a->x, dtype_mask, M, N, err);
    if (st != SY_OK)
        return st;
    const int64_t p = a->pad_to_multiple > 1 ? a->pad_to_multiple : 1;
    *nout = (N + p - 1) / p * p;
    if (*nout > max_out_cols)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %lld output columns exceed the %lld this op can index", op,
                          (long long)*nout, (long long)max_out_cols);
    const int64_t want_w[1] = {N};
    st = sy_op_check_dense_tensor(op, "weight", &a->weight, dtype_mask, 1, want_w, 0, err);
    if (st == SY_OK)
        st = check_matrix("out", &a->out, dtype_mask, M, *nout, err);
    if (st == SY_OK && a->residual.data)
        st = check_matrix("residual", &a->residual, dtype_mask, M, N, err);
    if (st == SY_OK && a->residual.data && !a->residual_out.data)
        return sy_op_fail(err, SY_E_INVALID, "%s: residual is given but residual_out is missing", op);
    if (st == SY_OK && a->residual_out.data)
        st = check_matrix("residual_out", &a->residual_out, dtype_mask, M, N, err);
    return st;
}
