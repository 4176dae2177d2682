#include "moe_mxfp4_args.h"

#include <stdio.h>

#include "sy_op_check.h"

static sy_status check_shape(const char *op, const sy_moe_shape *s, sy_error *err)
{
    if (!s || s->struct_size < sizeof(sy_moe_shape))
        return sy_op_fail(err, SY_E_INVALID, "%s: shape struct_size %u is smaller than sy_moe_shape (%zu)", op,
                          s ? s->struct_size : 0u, sizeof(sy_moe_shape));
    if (s->num_experts == 0 || s->num_experts > SY_MOE_MXFP4_MAX_EXPERTS)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: shape.num_experts %u is outside 1..%d", op, s->num_experts,
                          SY_MOE_MXFP4_MAX_EXPERTS);
    const struct {
        const char *name;
        uint32_t value;
    } dims[] = {{"hidden", s->hidden}, {"intermediate", s->intermediate}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].value == 0 || dims[i].value % SY_MXFP4_BLOCK || dims[i].value > SY_MOE_MXFP4_MAX_DIM)
            return sy_op_fail(err, SY_E_INVALID, "%s: shape.%s %u must be a positive multiple of %d up to %d", op,
                              dims[i].name, dims[i].value, SY_MXFP4_BLOCK, SY_MOE_MXFP4_MAX_DIM);
    if (s->top_k == 0 || s->top_k > s->num_experts || s->top_k > SY_MOE_MAX_TOP_K)
        return sy_op_fail(err, SY_E_INVALID, "%s: shape.top_k %u is outside 1..min(num_experts %u, %d)", op, s->top_k,
                          s->num_experts, SY_MOE_MAX_TOP_K);
    return SY_OK;
}

sy_status sy_moe_mxfp4_prepared_bytes(const sy_moe_shape *shape, uint64_t *bytes, sy_error *err)
{
    sy_status st = check_shape("moe prepared_bytes", shape, err);
    if (st != SY_OK)
        return st;
    sy_moe_dims d = sy_moe_dims_of(shape->num_experts, shape->hidden, shape->intermediate);
    *bytes = sy_moe_sections_of(&d).total;
    return SY_OK;
}

sy_status sy_moe_mxfp4_check_call(const char *op, const void *ctx, int needs_ctx, const void *args,
                                  uint32_t struct_size, size_t want, const char *args_type, const sy_moe_shape *shape,
                                  sy_error *err)
{
    if (needs_ctx && !ctx)
        return sy_op_fail(err, SY_E_INVALID, "%s: ctx is NULL (init was not called)", op);
    if (!args || struct_size < want)
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than %s (%zu)", op,
                          args ? struct_size : 0u, args_type, want);
    return check_shape(op, shape, err);
}

/* One checkpoint matrix: blocks [E, R, K/32, 16], scales [E, R, K/32], bias [E, R]. */
static sy_status check_checkpoint(const char *op, const char *what, const sy_tensor *blocks, const sy_tensor *scales,
                                  const sy_tensor *bias, uint32_t E, uint32_t rows, uint32_t k, sy_error *err)
{
    const uint32_t u8 = SY_DTYPE_BIT(SY_DTYPE_U8), fb = SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16);
    const int64_t want_blocks[4] = {E, rows, k / SY_MXFP4_BLOCK, SY_MXFP4_BLOCK_BYTES}, want_bias[2] = {E, rows};
    const sy_tensor *t[3] = {blocks, scales, bias};
    const char *suffix[3] = {"blocks", "scales", "bias"};
    const int32_t ndim[3] = {4, 3, 2};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s_%s", what, suffix[i]);
        sy_status st = sy_op_check_dense_tensor(op, name, t[i], i < 2 ? u8 : fb, ndim[i],
                                                i < 2 ? want_blocks : want_bias, 0, err);
        if (st != SY_OK)
            return st;
    }
    return SY_OK;
}

sy_status sy_moe_mxfp4_check_prepare_tensors(const char *op, const sy_moe_prepare_args *a, sy_error *err)
{
    const sy_moe_shape *s = &a->shape;
    sy_status st = check_checkpoint(op, "w13", &a->w13_blocks, &a->w13_scales, &a->w13_bias, s->num_experts,
                                    2u * s->intermediate, s->hidden, err);
    if (st == SY_OK)
        st = check_checkpoint(op, "w2", &a->w2_blocks, &a->w2_scales, &a->w2_bias, s->num_experts, s->hidden,
                              s->intermediate, err);
    if (st == SY_OK && !a->prepared)
        return sy_op_fail(err, SY_E_INVALID, "%s: prepared is NULL", op);
    return st;
}

/* topk_ids int32 [T, k] and topk_weights f32 [T, k], contiguous: what route writes and forward reads. */
static sy_status check_topk(const char *op, const sy_tensor *ids, const sy_tensor *weights, int64_t T, uint32_t k,
                            sy_error *err)
{
    const int64_t want[2] = {T, k};
    sy_status st = sy_op_check_dense_tensor(op, "topk_ids", ids, SY_DTYPE_BIT(SY_DTYPE_I32), 2, want, 0, err);
    return st == SY_OK
               ? sy_op_check_dense_tensor(op, "topk_weights", weights, SY_DTYPE_BIT(SY_DTYPE_F32), 2, want, 0, err)
               : st;
}

sy_status sy_moe_mxfp4_check_route_tensors(const char *op, const sy_moe_route_args *a, int64_t *T, sy_error *err)
{
    *T = a->logits.ndim == 2 ? a->logits.shape[0] : SY_ANY_DIM;
    const int64_t want_logits[2] = {SY_ANY_DIM, a->shape.num_experts};
    sy_status st =
        sy_op_check_dense_tensor(op, "logits", &a->logits, SY_DTYPE_BIT(SY_DTYPE_F32), 2, want_logits, 1, err);
    return st == SY_OK ? check_topk(op, &a->topk_ids, &a->topk_weights, *T, a->shape.top_k, err) : st;
}

sy_status sy_moe_mxfp4_check_forward_tensors(const char *op, const sy_moe_forward_args *a, sy_error *err)
{
    const sy_moe_shape *s = &a->shape;
    const sy_moe_dims d = sy_moe_dims_of(s->num_experts, s->hidden, s->intermediate);
    const uint32_t acts = SY_MOE_MXFP4_ACT_DTYPES;
    const int64_t T = a->x.ndim == 2 ? a->x.shape[0] : SY_ANY_DIM;
    const int64_t want_x[2] = {T, SY_ANY_DIM}, want_out[2] = {T, s->hidden};
    sy_status st = sy_op_check_tensor(op, "x", &a->x, acts, 2, want_x, err);
    if (st == SY_OK && a->x.shape[1] != d.hidden && a->x.shape[1] != d.hidden_padded)
        return sy_op_fail(err, SY_E_INVALID, "%s: x has %lld columns, expected hidden %u or padded hidden %u", op,
                          (long long)a->x.shape[1], d.hidden, d.hidden_padded);
    if (st == SY_OK)
        st = sy_op_check_dense(op, "x", &a->x, 1, err);
    if (st == SY_OK)
        st = sy_op_check_dense_tensor(op, "out", &a->out, acts, 2, want_out, 1, err);
    if (st == SY_OK)
        st = check_topk(op, &a->topk_ids, &a->topk_weights, T, s->top_k, err);
    return st;
}
