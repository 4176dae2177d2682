/* attention cases: decode_paged over a paged pool and prefill_linear over contiguous K/V, bf16 q
 * with gpt-oss's sinks and softmax scale, the plugin's own split count (num_splits 0). Every call
 * passes the host checks the engine runs before it (calls/checks.h) once per input copy. */
#include <string.h>

#include "bench/paging.h"
#include "calls/checks.h"
#include "model/engine_impl.h"

enum { BF16 = SY_DTYPE_BF16, FP8 = SY_DTYPE_FP8_E4M3, I32 = SY_DTYPE_I32, F32 = SY_DTYPE_F32 };

/* fp8 pools hold codes of 0.5 .. 3.75 (device_data.h); the scale brings K and V to below one. */
static const float FP8_KV_SCALE = 0.25f;

/* ------------------------------------------------------------------------------------------ */
/* decode_paged */

typedef struct decode_calls {
    const sy_attention_ops *ops;
    void *ctx;
    sy_stream stream;
    sy_attn_decode_args *args; /* one per input copy */
} decode_calls;

static sy_status decode_once(void *user, uint32_t copy, sy_error *err)
{
    const decode_calls *d = user;
    return d->ops->decode_paged(d->ctx, d->stream, &d->args[copy], err);
}

void sy_bench_op_decode(sy_bench_job *j)
{
    const sy_bench_shape *s = j->s;
    const sy_bench_heads h = sy_bench_job_heads(j);
    const uint32_t P = SY_BENCH_PAGE_SIZE, B = s->batch, context = s->context;
    const int32_t kv = s->kv_dtype, window = s->window;
    void *pctx = NULL;
    const sy_plugin_desc *plugin = sy_bench_job_plugin(j, SY_KIND_ATTENTION, "attn_paged", &pctx);
    if (!plugin)
        return;
    sy_bench_job_shape(j, "batch=%u context=%u window=%d kv=%s q=bf16 page=%u q_heads=%u kv_heads=%u dim=%u", B, context, window,
                       sy_dtype_name(kv), P, h.q_heads, h.kv_heads, h.head_dim);

    /* The call's shape first, for the caps check; pointers follow once the pool exists. */
    sy_attn_decode_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    const uint32_t max_blocks = (context + P - 1) / P;
    a.q = sy_t3(NULL, BF16, B, h.q_heads, h.head_dim);
    a.out = sy_t3(NULL, BF16, B, h.q_heads, h.head_dim);
    a.block_tables = sy_t2(NULL, I32, B, max_blocks);
    a.context_lens = sy_t1(NULL, I32, B);
    a.sinks = sy_t1(NULL, F32, h.q_heads);
    a.scale = sy_bench_job_softmax_scale(j);
    a.window = window;
    a.k_scale = a.v_scale = kv == FP8 ? FP8_KV_SCALE : 1.0f;
    a.num_splits = 0;
    a.geom.struct_size = sizeof a.geom;
    a.geom.layout = j->c->layout;
    a.geom.store_dtype = kv;
    a.geom.page_size = P;
    a.geom.kv_heads = h.kv_heads;
    a.geom.head_dim = h.head_dim;
    sy_error err = {{0}};
    if (!sy_bench_job_check(j, "attention caps", sy_check_decode_caps(plugin, &a, &err), &err))
        return;

    const sy_bench_traffic t =
        sy_bench_decode_traffic(&h, B, context, window, P, sy_dtype_size(kv), sy_dtype_size(BF16), 1);
    sy_bench_job_traffic(j, t);
    const uint32_t pages_per_copy = B * sy_bench_decode_pages(context, window, P);
    const uint32_t copies = sy_bench_job_copies(j, t.bytes);
    if (!sy_bench_job_geometry(j, j->c->layout, kv, copies * pages_per_copy + 1, P, &a.geom))
        return;
    a.k_cache = sy_bench_job_random(j, kv, a.geom.k_elems);
    a.v_cache = sy_bench_job_random(j, kv, a.geom.v_elems);
    a.sinks.data = sy_bench_job_sinks(j, h.q_heads);
    int32_t *lens = sy_bench_job_host(j, B * sizeof *lens);
    for (uint32_t b = 0; b < B; b++)
        lens[b] = (int32_t)context;
    a.context_lens.data = sy_bench_job_upload(j, lens, B * sizeof *lens);
    const uint32_t *pages = sy_bench_shuffled_pages(j, a.geom.num_pages);

    decode_calls calls = {plugin->ops, pctx, j->run->side.stream, sy_bench_job_host(j, copies * sizeof a)};
    for (uint32_t c = 0; c < copies && sy_bench_job_ok(j); c++) {
        int32_t *bt = sy_bench_block_tables(j, pages + (size_t)c * pages_per_copy, B, context, window, P, max_blocks);
        sy_attn_decode_args *ac = &calls.args[c];
        *ac = a;
        ac->block_tables.data = sy_bench_job_upload(j, bt, (size_t)B * max_blocks * sizeof *bt);
        ac->q.data = sy_bench_job_random(j, BF16, (uint64_t)B * h.q_heads * h.head_dim);
        ac->out.data = sy_bench_job_alloc(j, (size_t)B * h.q_heads * h.head_dim * sy_dtype_size(BF16));
        if (sy_bench_job_ok(j))
            sy_bench_job_check(j, "host check of decode_paged", sy_check_decode_args(ac, bt, lens, &err), &err);
    }
    sy_bench_job_time(j, decode_once, &calls, copies);
}

/* ------------------------------------------------------------------------------------------ */
/* prefill_linear */

typedef struct prefill_calls {
    const sy_attention_ops *ops;
    void *ctx;
    sy_stream stream;
    sy_attn_prefill_args *args;
} prefill_calls;

static sy_status prefill_once(void *user, uint32_t copy, sy_error *err)
{
    const prefill_calls *p = user;
    return p->ops->prefill_linear(p->ctx, p->stream, &p->args[copy], err);
}

/* B sequences of L tokens, each attending causally to itself, K/V as fresh as a first chunk's. */
void sy_bench_op_prefill(sy_bench_job *j)
{
    const sy_bench_shape *s = j->s;
    const sy_bench_heads h = sy_bench_job_heads(j);
    const uint32_t B = s->batch, L = s->context, rows = B * L;
    void *pctx = NULL;
    const sy_plugin_desc *plugin = sy_bench_job_plugin(j, SY_KIND_ATTENTION, "attn_paged", &pctx);
    if (!plugin)
        return;
    sy_bench_job_shape(j, "batch=%u length=%u window=%d causal=1 kv=bf16 q=bf16 q_heads=%u kv_heads=%u dim=%u", B, L, s->window,
                       h.q_heads, h.kv_heads, h.head_dim);
    sy_attn_prefill_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.q = sy_t3(NULL, BF16, rows, h.q_heads, h.head_dim);
    a.out = sy_t3(NULL, BF16, rows, h.q_heads, h.head_dim);
    a.k = sy_t3(NULL, BF16, rows, h.kv_heads, h.head_dim);
    a.v = sy_t3(NULL, BF16, rows, h.kv_heads, h.head_dim);
    a.cu_seqlens_q = sy_t1(NULL, I32, B + 1);
    a.cu_seqlens_k = sy_t1(NULL, I32, B + 1);
    a.sinks = sy_t1(NULL, F32, h.q_heads);
    a.scale = sy_bench_job_softmax_scale(j);
    a.causal = 1;
    a.window = s->window;
    a.k_scale = a.v_scale = 1.0f;
    sy_error err = {{0}};
    if (!sy_bench_job_check(j, "attention caps", sy_check_prefill_caps(plugin, &a, &err), &err))
        return;
    const sy_bench_traffic t = sy_bench_prefill_traffic(&h, B, L, L, 1, s->window, 2, 2, 1);
    sy_bench_job_traffic(j, t);
    const uint32_t copies = sy_bench_job_copies(j, t.bytes);
    int32_t *cu = sy_bench_job_host(j, (B + 1) * sizeof *cu);
    for (uint32_t b = 0; b <= B; b++)
        cu[b] = (int32_t)(b * L);
    a.cu_seqlens_q.data = a.cu_seqlens_k.data = sy_bench_job_upload(j, cu, (B + 1) * sizeof *cu);
    a.sinks.data = sy_bench_job_sinks(j, h.q_heads);

    prefill_calls calls = {plugin->ops, pctx, j->run->side.stream, sy_bench_job_host(j, copies * sizeof a)};
    for (uint32_t c = 0; c < copies && sy_bench_job_ok(j); c++) {
        sy_attn_prefill_args *ac = &calls.args[c];
        *ac = a;
        ac->q.data = sy_bench_job_random(j, BF16, (uint64_t)rows * h.q_heads * h.head_dim);
        ac->k.data = sy_bench_job_random(j, BF16, (uint64_t)rows * h.kv_heads * h.head_dim);
        ac->v.data = sy_bench_job_random(j, BF16, (uint64_t)rows * h.kv_heads * h.head_dim);
        ac->out.data = sy_bench_job_alloc(j, (size_t)rows * h.q_heads * h.head_dim * sy_dtype_size(BF16));
        if (sy_bench_job_ok(j))
            sy_bench_job_check(j, "host check of prefill_linear", sy_check_prefill_args(ac, cu, cu, &err), &err);
    }
    sy_bench_job_time(j, prefill_once, &calls, copies);
}
