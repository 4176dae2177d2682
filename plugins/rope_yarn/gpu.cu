/* rope_yarn on the GPU: rope and the fused rope + KV write of plugins/common/rope_gpu.cuh.
 *
 * Context: the frequencies (inv_freq and the concentration, from sy_rope.h on the host) of the
 * last parameters seen, so that a call with the same parameters, the usual case, computes none. The
 * argument rules are the host plugin's (cpu.c); the fused form also takes kv_layout.write's
 * (kv_store_gpu.cuh). */
#include <math.h>
#include <stdlib.h>

#include "rope_gpu.cuh"

#define ACT_DTYPES (SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16))

typedef struct rope_yarn_gpu_ctx {
    sy_rope_params params; /* of freqs; struct_size 0 until the first call */
    sy_rope_gpu_freqs freqs;
} rope_yarn_gpu_ctx;

extern "C" sy_status sy_rope_yarn_gpu_init(const sy_host_api *host, void **ctx, sy_error *err)
{
    (void)host;
    *ctx = calloc(1, sizeof(rope_yarn_gpu_ctx));
    return *ctx ? SY_OK : sy_op_fail(err, SY_E_NOMEM, "rope_yarn (%s): out of host memory for the context",
                                     SY_GPU_BACKEND_NAME);
}

extern "C" void sy_rope_yarn_gpu_fini(void *ctx)
{
    free(ctx);
}

/* Style neox, scaling yarn or none, an even head dim up to the kernels' limit, finite theta > 1 and
 * concentration, and for YaRN with a factor above 1: beta_fast > beta_slow > 0 and an original
 * context length. */
static sy_status check_params(const char *op, const sy_rope_params *p, sy_error *err)
{
    const bool yarn = p->scaling == SY_ROPE_SCALING_YARN;
    sy_status status = SY_E_INVALID;
    const char *bad = NULL;
    if (p->struct_size < sizeof *p) {
        bad = "struct_size is smaller than sy_rope_params";
    } else if (p->style != SY_ROPE_STYLE_NEOX || (!yarn && p->scaling != SY_ROPE_SCALING_NONE)) {
        bad = "style must be neox and scaling yarn or none, the ones served";
        status = SY_E_UNSUPPORTED;
    } else if (p->head_dim == 0 || p->head_dim % 2 || p->head_dim > SY_ROPE_GPU_MAX_HEAD_DIM) {
        bad = "head_dim must be even and at most 512";
    } else if (!(p->theta > 1.0f) || isinf(p->theta) || !isfinite(p->concentration)) {
        bad = "theta must be finite and > 1, concentration finite";
    } else if (yarn && (!(p->yarn_factor >= 1.0f) || isinf(p->yarn_factor))) {
        bad = "yarn_factor must be finite and >= 1";
    } else if (sy_rope_uses_yarn(p) && (!(p->yarn_beta_slow > 0.0f) || !(p->yarn_beta_fast > p->yarn_beta_slow) ||
                                        isinf(p->yarn_beta_fast) || p->yarn_original_max_position == 0)) {
        bad = "YaRN needs beta_fast > beta_slow > 0 and original_max_position > 0";
    }
    if (!bad)
        return SY_OK;
    return sy_op_fail(err, status,
                      "%s: params: %s (style 0x%x, scaling 0x%x, head_dim %u, theta %g, concentration %g, factor %g, "
                      "beta_fast %g, beta_slow %g, original_max_position %u)",
                      op, bad, p->style, p->scaling, p->head_dim, (double)p->theta, (double)p->concentration,
                      (double)p->yarn_factor, (double)p->yarn_beta_fast, (double)p->yarn_beta_slow,
                      p->yarn_original_max_position);
}

static sy_status check_heads(const char *op, const char *name, const sy_tensor *t, int64_t T, uint32_t D, sy_error *err)
{
    int64_t want[3] = {T, SY_ANY_DIM, D};
    sy_status st = sy_op_check_tensor(op, name, t, ACT_DTYPES, 3, want, err);
    if (st == SY_OK && D > 1 && t->stride[2] != 1)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %s has stride %lld along head_dim, expected 1", op, name,
                          (long long)t->stride[2]);
    return st;
}

/* The rope args, and the context's frequencies brought up to their parameters. */
static sy_status prepare(const char *op, rope_yarn_gpu_ctx *ctx, const sy_rope_args *a, sy_error *err)
{
    if (!ctx)
        return sy_op_fail(err, SY_E_INVALID, "%s: the plugin was not initialized (init gives the context)", op);
    if (!a || a->struct_size < sizeof *a)
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_rope_args (%zu)", op,
                          a ? a->struct_size : 0u, sizeof *a);
    sy_status st = check_params(op, &a->params, err);
    int64_t want_pos[1] = {SY_ANY_DIM};
    if (st == SY_OK)
        st = sy_op_check_tensor(op, "positions", &a->positions, SY_DTYPE_BIT(SY_DTYPE_I32), 1, want_pos, err);
    if (st == SY_OK)
        st = check_heads(op, "q", &a->q, a->positions.shape[0], a->params.head_dim, err);
    if (st == SY_OK)
        st = check_heads(op, "k", &a->k, a->positions.shape[0], a->params.head_dim, err);
    if (st == SY_OK && a->positions.shape[0] > 0x7FFFFFFFLL * SY_ROPE_GPU_TOKENS)
        st = sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %lld tokens exceed the grid", op, (long long)a->positions.shape[0]);
    if (st == SY_OK && memcmp(&ctx->params, &a->params, sizeof ctx->params) != 0) {
        sy_rope_gpu_freqs_of(&a->params, &ctx->freqs);
        ctx->params = a->params;
    }
    return st;
}

[[maybe_unused]] static sy_status rope(void *vctx, sy_stream stream, const sy_rope_args *a, sy_error *err)
{
    static const char op[] = "rope (" SY_GPU_BACKEND_NAME ")";
    rope_yarn_gpu_ctx *ctx = (rope_yarn_gpu_ctx *)vctx;
    sy_status st = prepare(op, ctx, a, err);
    if (st != SY_OK || a->positions.shape[0] == 0)
        return st;
    sy_rope_gpu_launch(ctx->freqs, sy_rope_gpu_args_of(a), sy_gpu_stream(stream));
    SY_GPU_CHECK_LAUNCH(err, "sy_rope_gpu_kernel");
    return SY_OK;
}

static bool same_view(const sy_tensor *x, const sy_tensor *y)
{
    if (x->data != y->data || x->dtype != y->dtype || x->ndim != y->ndim)
        return false;
    for (int32_t i = 0; i < x->ndim; i++)
        if (x->shape[i] != y->shape[i] || x->stride[i] != y->stride[i])
            return false;
    return true;
}

[[maybe_unused]] static sy_status rope_kv_write(void *vctx, sy_stream stream, const sy_rope_kv_write_args *a,
                                                sy_error *err)
{
    static const char op[] = "rope_kv_write (" SY_GPU_BACKEND_NAME ")";
    rope_yarn_gpu_ctx *ctx = (rope_yarn_gpu_ctx *)vctx;
    if (!a || a->struct_size < sizeof *a)
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_rope_kv_write_args (%zu)", op,
                          a ? a->struct_size : 0u, sizeof *a);
    const sy_kv_write_args *kv = &a->kv;
    const uint32_t layout = kv->geom.layout;
    if (layout != SY_LAYOUT_NHD && layout != SY_LAYOUT_VECTORIZED_5D)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: kv.geom.layout %u is neither nhd (%d) nor vectorized_5d (%d)", op,
                          layout, SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D);
    sy_status st = prepare(op, ctx, &a->rope, err);
    sy_kv_geometry g;
    if (st == SY_OK)
        st = sy_kv_gpu_check_write(op, layout, kv, &g, err);
    if (st != SY_OK)
        return st;
    if (!same_view(&kv->k, &a->rope.k))
        return sy_op_fail(err, SY_E_INVALID, "%s: kv.k must be the same view as rope.k (the rotated keys)", op);
    const int64_t T = a->rope.positions.shape[0];
    if (kv->slots.shape[0] != T)
        return sy_op_fail(err, SY_E_INVALID, "%s: kv.slots has %lld entries for %lld tokens", op,
                          (long long)kv->slots.shape[0], (long long)T);
    sy_kv_gpu_launch l = {0, 0, dim3(1, 1, 1)};
    if (T == 0 || (st = sy_kv_gpu_plan(op, &g, T, &l, err)) != SY_OK)
        return st;
    const sy_kv_gpu_pool pool = sy_kv_gpu_pool_of(&g, kv->k_cache, kv->v_cache, kv->k_scale, kv->v_scale);
    sy_rope_gpu_kv_launch(ctx->freqs, sy_rope_gpu_args_of(&a->rope), g.store_dtype, pool, sy_kv_gpu_rows_of(&kv->k, &kv->v),
                          sy_kv_gpu_index_of(&g, &kv->slots, &kv->slot_map), l, sy_gpu_stream(stream));
    SY_GPU_CHECK_LAUNCH(err, "sy_rope_gpu_kv_kernel");
    return SY_OK;
}

SY_GPU_HOST_TABLE(extern "C" const sy_rope_ops sy_rope_yarn_gpu_ops = {sizeof(sy_rope_ops), 0, rope, rope_kv_write});
