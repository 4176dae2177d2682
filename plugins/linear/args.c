#include "args.h"

#include "sy_op_check.h"

sy_status sy_linear_check_args(const sy_linear_args *a, sy_error *err)
{
    static const char op[] = "linear";
    if (!a || a->struct_size < sizeof *a)
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_linear_args (%zu)", op,
                          a ? a->struct_size : 0u, sizeof *a);
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
    if (st == SY_OK)
        st = sy_op_check_dense_tensor(op, "y", &a->y, SY_LINEAR_DTYPES, 2, want_y, 1, err);
    /* A product over no input features is a model built wrong, not a call to answer with the bias. */
    if (st == SY_OK && K == 0)
        return sy_op_fail(err, SY_E_INVALID, "%s: x and w have K = 0 columns", op);
    return st;
}
