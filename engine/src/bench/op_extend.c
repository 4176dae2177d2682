/* extend cases: a later prefill chunk of one sequence, as the engine's forward runs it. The pool
 * already holds the prefix and the chunk's own K/V (written before attention), so either
 * kv_layout.gather reads prefix + chunk back to linear K/V and prefill_linear attends the chunk's
 * queries to them (causal, sinks), or prefill_paged attends them to the pool's pages. Four cases
 * time the gather alone, the prefill alone (over linear K/V as the gather leaves them, the same
 * for every layout), the two back to back as one call, and prefill_paged. */
#include <stdio.h>
#include <string.h>

#include "bench/paging.h"
#include "calls/checks.h"
#include "conformance/pool.h"
#include "model/engine_impl.h"

enum { BF16 = SY_DTYPE_BF16, I32 = SY_DTYPE_I32, F32 = SY_DTYPE_F32 };

typedef struct extend_calls {
    const sy_kv_layout_ops *kv;
    void *kv_ctx;
    const sy_attention_ops *attn;
    void *attn_ctx;
    sy_stream stream;
    sy_kv_gather_args *gather; /* one per input copy */
    sy_attn_prefill_args *prefill;
    sy_attn_prefill_paged_args *paged;
} extend_calls;

static sy_status gather_once(void *user, uint32_t copy, sy_error *err)
{
    const extend_calls *e = user;
    return e->kv->gather(e->kv_ctx, e->stream, &e->gather[copy], err);
}

static sy_status prefill_once(void *user, uint32_t copy, sy_error *err)
{
    const extend_calls *e = user;
    return e->attn->prefill_linear(e->attn_ctx, e->stream, &e->prefill[copy], err);
}

static sy_status paged_once(void *user, uint32_t copy, sy_error *err)
{
    const extend_calls *e = user;
    return sy_attention_prefill_paged(e->attn)(e->attn_ctx, e->stream, &e->paged[copy], err);
}

static sy_status total_once(void *user, uint32_t copy, sy_error *err)
{
    sy_status st = gather_once(user, copy, err);
    return st != SY_OK ? st : prefill_once(user, copy, err);
}

void sy_bench_op_extend(sy_bench_job *j)
{
    const int32_t op = j->c->op;
    const int paged = op == SY_BENCH_OP_EXTEND_PAGED;
    const int gathers = op == SY_BENCH_OP_EXTEND_GATHER || op == SY_BENCH_OP_EXTEND_TOTAL;
    const int attends = op != SY_BENCH_OP_EXTEND_GATHER, pooled = gathers || paged;
    const sy_bench_heads h = sy_bench_job_heads(j);
    const uint32_t P = SY_BENCH_PAGE_SIZE, lq = j->s->chunk, lk = j->s->context + j->s->chunk;
    const size_t es = sy_dtype_size(BF16), q_elems = (size_t)lq * h.q_heads * h.head_dim;
    const size_t kv_elems = (size_t)lk * h.kv_heads * h.head_dim;
    sy_bench_job_shape(j, "prefix=%u chunk=%u kv=bf16 q=bf16 page=%u q_heads=%u kv_heads=%u dim=%u", j->s->context, lq,
                       P, h.q_heads, h.kv_heads, h.head_dim);
    if (gathers)
        snprintf(j->r->note, sizeof j->r->note, "the gather reads prefix + chunk (%u rows) back from the pool, as the "
                                                "engine's forward does", lk);
    if (paged)
        snprintf(j->r->note, sizeof j->r->note, "prefill_paged reads prefix + chunk (%u keys) from the pool's pages, "
                                                "as the engine's forward does where composed", lk);
    extend_calls calls;
    memset(&calls, 0, sizeof calls);
    calls.stream = j->run->side.stream;
    const sy_plugin_desc *kv_plugin = NULL, *attn_plugin = NULL;
    if (gathers) {
        kv_plugin = sy_bench_job_plugin(j, SY_KIND_KV_LAYOUT, sy_conf_layout_reference(j->c->layout), &calls.kv_ctx);
        if (!kv_plugin)
            return;
        calls.kv = kv_plugin->ops;
    }
    if (attends) {
        attn_plugin = sy_bench_job_plugin(j, SY_KIND_ATTENTION, "attn_paged", &calls.attn_ctx);
        if (!attn_plugin)
            return;
        calls.attn = attn_plugin->ops;
    }

    sy_error err = {{0}};
    sy_kv_gather_args g;
    memset(&g, 0, sizeof g);
    g.struct_size = sizeof g;
    g.slots = sy_t1(NULL, I32, lk);
    g.k_out = sy_t3(NULL, BF16, lk, h.kv_heads, h.head_dim);
    g.v_out = sy_t3(NULL, BF16, lk, h.kv_heads, h.head_dim);
    g.geom.struct_size = sizeof g.geom;
    g.geom.layout = j->c->layout;
    g.geom.store_dtype = BF16;
    sy_attn_prefill_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.q = sy_t3(NULL, BF16, lq, h.q_heads, h.head_dim);
    a.out = sy_t3(NULL, BF16, lq, h.q_heads, h.head_dim);
    a.k = g.k_out;
    a.v = g.v_out;
    a.cu_seqlens_q = sy_t1(NULL, I32, 2);
    a.cu_seqlens_k = sy_t1(NULL, I32, 2);
    a.sinks = sy_t1(NULL, F32, h.q_heads);
    a.scale = sy_bench_job_softmax_scale(j);
    a.causal = 1;
    a.k_scale = a.v_scale = 1.0f;
    if (gathers && !sy_bench_job_check(j, "kv_layout caps", sy_check_kv_gather_caps(kv_plugin, &g, &err), &err))
        return;
    sy_attn_prefill_paged_args pa;
    memset(&pa, 0, sizeof pa);
    pa.struct_size = sizeof pa;
    pa.geom = g.geom;
    pa.q = a.q;
    pa.out = a.out;
    pa.block_tables = sy_t2(NULL, I32, 1, (lk + P - 1) / P);
    pa.context_lens = sy_t1(NULL, I32, 1);
    pa.cu_seqlens_q = a.cu_seqlens_q;
    pa.sinks = a.sinks;
    pa.scale = a.scale;
    pa.causal = 1;
    pa.k_scale = pa.v_scale = 1.0f;
    pa.geom.page_size = P;
    pa.geom.head_dim = h.head_dim;
    pa.geom.kv_heads = h.kv_heads;
    if (paged && !sy_bench_job_check(j, "attention caps", sy_check_prefill_paged_caps(attn_plugin, &pa, &err), &err))
        return;
    if (attends && !paged &&
        !sy_bench_job_check(j, "attention caps", sy_check_prefill_caps(attn_plugin, &a, &err), &err))
        return;

    /* The whole call's traffic is the sum of its two ops' (the linear K/V is written, then read). */
    sy_bench_traffic t = {0, 0};
    if (gathers)
        t = sy_bench_kv_gather_traffic(&h, lk, es);
    if (attends) {
        sy_bench_traffic pt = sy_bench_prefill_traffic(&h, 1, lq, lk, 1, 0, es, es, 1);
        t.bytes += pt.bytes;
        t.flops += pt.flops;
    }
    sy_bench_job_traffic(j, t);
    const uint32_t copies = sy_bench_job_copies(j, t.bytes), pages_per_copy = (lk + P - 1) / P;
    const uint32_t *pages = NULL;
    if (pooled) {
        if (!sy_bench_job_geometry(j, j->c->layout, BF16, copies * pages_per_copy + 1, P, &g.geom))
            return;
        g.k_cache = sy_bench_job_random(j, BF16, g.geom.k_elems);
        g.v_cache = sy_bench_job_random(j, BF16, g.geom.v_elems);
        pages = sy_bench_shuffled_pages(j, g.geom.num_pages);
        pa.geom = g.geom;
        pa.k_cache = g.k_cache;
        pa.v_cache = g.v_cache;
    }
    int32_t cu_q[2] = {0, (int32_t)lq}, cu_k[2] = {0, (int32_t)lk}, lens[1] = {(int32_t)lk};
    if (attends) {
        a.cu_seqlens_q.data = sy_bench_job_upload(j, cu_q, sizeof cu_q);
        a.cu_seqlens_k.data = sy_bench_job_upload(j, cu_k, sizeof cu_k);
        a.sinks.data = sy_bench_job_sinks(j, h.q_heads);
        pa.cu_seqlens_q = a.cu_seqlens_q;
        pa.sinks = a.sinks;
        pa.context_lens.data = sy_bench_job_upload(j, lens, sizeof lens);
    }
    calls.gather = sy_bench_job_host(j, copies * sizeof g);
    calls.prefill = sy_bench_job_host(j, copies * sizeof a);
    calls.paged = sy_bench_job_host(j, copies * sizeof pa);
    for (uint32_t c = 0; c < copies && sy_bench_job_ok(j); c++) {
        sy_kv_gather_args *gc = &calls.gather[c];
        sy_attn_prefill_args *ac = &calls.prefill[c];
        *gc = g;
        *ac = a;
        /* Alone, the prefill reads K/V as a gather would have left them: random linear rows. */
        void *k_lin = gathers ? sy_bench_job_alloc(j, kv_elems * es) : sy_bench_job_random(j, BF16, kv_elems);
        void *v_lin = gathers ? sy_bench_job_alloc(j, kv_elems * es) : sy_bench_job_random(j, BF16, kv_elems);
        gc->k_out.data = ac->k.data = k_lin;
        gc->v_out.data = ac->v.data = v_lin;
        if (gathers) {
            int32_t *slots = sy_bench_slots(j, pages + (size_t)c * pages_per_copy, lk, P);
            gc->slots.data = sy_bench_job_upload(j, slots, (size_t)lk * sizeof *slots);
            if (sy_bench_job_ok(j))
                sy_bench_job_check(j, "host check of kv_layout.gather", sy_check_kv_gather(gc, slots, NULL, &err),
                                   &err);
        }
        if (attends) {
            ac->q.data = sy_bench_job_random(j, BF16, q_elems);
            ac->out.data = sy_bench_job_alloc(j, q_elems * es);
            if (sy_bench_job_ok(j) && !paged)
                sy_bench_job_check(j, "host check of prefill_linear", sy_check_prefill_args(ac, cu_q, cu_k, &err),
                                   &err);
        }
        if (paged) {
            sy_attn_prefill_paged_args *pc = &calls.paged[c];
            *pc = pa;
            pc->q = ac->q;
            pc->out = ac->out;
            int32_t *table = sy_bench_job_host(j, (size_t)pages_per_copy * sizeof *table);
            for (uint32_t i = 0; table && i < pages_per_copy; i++)
                table[i] = (int32_t)pages[(size_t)c * pages_per_copy + i];
            pc->block_tables.data = table ? sy_bench_job_upload(j, table, (size_t)pages_per_copy * sizeof *table) : NULL;
            if (sy_bench_job_ok(j))
                sy_bench_job_check(j, "host check of prefill_paged",
                                   sy_check_prefill_paged_args(pc, table, lens, cu_q, &err), &err);
        }
    }
    sy_bench_call_fn call = op == SY_BENCH_OP_EXTEND_GATHER    ? gather_once
                            : op == SY_BENCH_OP_EXTEND_PREFILL ? prefill_once
                            : paged                            ? paged_once
                                                               : total_once;
    sy_bench_job_time(j, call, &calls, copies);
}
