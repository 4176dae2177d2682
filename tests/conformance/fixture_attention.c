/* Attention fixtures around the in-tree attn_paged implementation, one per build definition:
 *   CONF_DROP_SINKS   declares sinks but ignores them (a planted defect)
 *   CONF_WIDE_WINDOW  attends to W + 1 keys for a window of W (a planted defect: one of the
 *                     conventions SGLang's paths disagree on; the ABI pins W keys, the current one
 *                     included)
 *   CONF_NARROW_CAPS  correct, but declares only nhd, bf16 KV, f32 q, head dim 64, pages 16..64 and
 *                     no window, sinks, fp8 or split-K: every case beyond that is not-supported
 *   CONF_ROUND_Q      rounds an f32 q to bf16 whenever the KV operand is narrower than f32, as a GPU
 *                     kernel feeding one tensor-core type does (must still pass) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_plugin.h"
#include "sy_numeric.h"

#ifdef CONF_NARROW_CAPS
static const sy_attention_caps caps = {
    .struct_size = sizeof(sy_attention_caps),
    .features = SY_ATTN_DECODE_PAGED | SY_ATTN_PREFILL_LINEAR,
    .n_layouts = 1,
    .layouts = {SY_LAYOUT_NHD},
    .kv_dtypes = SY_DTYPE_BIT(SY_DTYPE_BF16),
    .q_dtypes = SY_DTYPE_BIT(SY_DTYPE_F32),
    .head_dim_min = 64,
    .head_dim_max = 64,
    .head_dim_multiple = 1,
    .page_size_min = 16,
    .page_size_max = 64,
    .page_size_multiple = 16,
    .max_gqa_ratio = 8,
    .max_tp = 1,
};
#else
/* Every feature of the plugin it wraps, prefill_paged included, so that conformance runs the planted
 * defect through each op. */
static const sy_attention_caps caps = CONF_ATTENTION_CAPS_ALL_PAGED_PREFILL;
#endif

/* The call as the fixture passes it on: without sinks, a wider window, or q rounded into `scratch`. */
static sy_status adjust(sy_tensor *q, sy_tensor *sinks, int32_t *window, int32_t kv_dtype, float **scratch,
                        sy_error *err)
{
    *scratch = NULL;
#ifdef CONF_WIDE_WINDOW
    *window += *window > 0;
#else
    (void)window;
#endif
#ifdef CONF_DROP_SINKS
    memset(sinks, 0, sizeof *sinks);
#else
    (void)sinks;
#endif
#ifdef CONF_ROUND_Q
    if (q->dtype == SY_DTYPE_F32 && kv_dtype != SY_DTYPE_F32) {
        int64_t rows = q->shape[0], width = q->shape[1] * q->shape[2];
        *scratch = malloc((size_t)(rows * width) * sizeof(float) + 1);
        if (!*scratch) {
            snprintf(err->msg, sizeof err->msg, "fixture: out of memory");
            return SY_E_NOMEM;
        }
        for (int64_t r = 0; r < rows; r++)
            for (int64_t i = 0; i < width; i++)
                (*scratch)[r * width + i] = sy_round_bf16(((const float *)q->data)[r * q->stride[0] + i]);
        *q = sy_tensor_contiguous(*scratch, SY_DTYPE_F32, 3, q->shape);
    }
#else
    (void)q;
    (void)kv_dtype;
    (void)err;
#endif
    return SY_OK;
}

static sy_status decode(void *ctx, sy_stream stream, const sy_attn_decode_args *a, sy_error *err)
{
    const conf_wrapped *w = ctx;
    const sy_attention_ops *inner = w->desc->ops;
    sy_attn_decode_args copy = *a;
    float *scratch;
    sy_status st = adjust(&copy.q, &copy.sinks, &copy.window, a->geom.store_dtype, &scratch, err);
    if (st == SY_OK)
        st = inner->decode_paged(w->ctx, stream, &copy, err);
    free(scratch);
    return st;
}

static sy_status prefill(void *ctx, sy_stream stream, const sy_attn_prefill_args *a, sy_error *err)
{
    const conf_wrapped *w = ctx;
    const sy_attention_ops *inner = w->desc->ops;
    sy_attn_prefill_args copy = *a;
    float *scratch;
    sy_status st = adjust(&copy.q, &copy.sinks, &copy.window, a->k.dtype, &scratch, err);
    if (st == SY_OK)
        st = inner->prefill_linear(w->ctx, stream, &copy, err);
    free(scratch);
    return st;
}

static sy_status prefill_paged(void *ctx, sy_stream stream, const sy_attn_prefill_paged_args *a, sy_error *err)
{
    const conf_wrapped *w = ctx;
    sy_attn_prefill_paged_fn *inner = sy_attention_prefill_paged(w->desc->ops);
    sy_attn_prefill_paged_args copy = *a;
    float *scratch;
    sy_status st = adjust(&copy.q, &copy.sinks, &copy.window, a->geom.store_dtype, &scratch, err);
    if (st == SY_OK)
        st = inner ? inner(w->ctx, stream, &copy, err) : SY_E_UNSUPPORTED;
    free(scratch);
    return st;
}

static const sy_attention_ops ops = {sizeof(sy_attention_ops), 0, decode, prefill, prefill_paged};

CONF_FIXTURE_ENTRY(SY_KIND_ATTENTION, CONF_FIXTURE_NAME, &caps, &ops, conf_wrapped_init, conf_wrapped_fini)
