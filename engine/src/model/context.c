/* Synthetic contexts (context.h). */
#include "model/context.h"

#include <math.h>
#include <string.h>

#include "calls/checks.h"
#include "model/engine_impl.h"
#include "util/strbuf.h"

/* Above every checkpoint tensor id (layer * 64 + kind, globals at layer 1023), so a context never
 * repeats a weight's values under the same seed. */
#define CONTEXT_TENSOR_BASE 0x40000000u

sy_synth_spec sy_context_synth_spec(uint64_t seed, uint32_t layer, int is_v, uint32_t seq)
{
    sy_synth_spec s = {0};
    s.struct_size = sizeof s;
    s.kind = SY_SYNTH_BF16_UNIFORM;
    s.seed = seed;
    s.tensor = CONTEXT_TENSOR_BASE + (((layer * 2u + (is_v ? 1u : 0u)) & 0x3FFFu) << 16) + (seq & 0xFFFFu);
    s.scale = sqrtf(3.0f);
    return s;
}

/* err's message with `what` in front (the message is copied first: sy_fail writes into err). */
static sy_status prefixed(sy_error *err, sy_status st, const char *what)
{
    sy_error inner = *err;
    return sy_fail(err, st, "workload.context synthetic%s: %s", what, inner.msg);
}

/* One sequence's K or V of one layer, every context position, into dst (bf16 on the device). */
static sy_status generate(sy_engine *e, uint32_t layer, int is_v, uint32_t seq, void *dst, sy_error *err)
{
    const sy_plan *p = &e->plan;
    uint64_t count = (uint64_t)p->input_len * e->d.kv_heads * e->d.head_dim;
    sy_synth_spec spec = sy_context_synth_spec(p->token_seed, layer, is_v, seq);
    if (!e->h_ctx_stage) {
        sy_error inner = {{0}};
        if (e->be->synth_fill(e->bctx, e->stream, dst, count, &spec, &inner) != SY_OK)
            return sy_fail(err, SY_E_BACKEND, "%s: generating the synthetic context (layer %u, sequence %u) failed: %s",
                           e->be->name, layer, seq, inner.msg);
        return SY_OK;
    }
    /* No device generator: made on the host, and the staging buffer is reused only once the copy
     * has landed. */
    sy_synth_fill_host(&spec, e->h_ctx_stage, count);
    sy_status st = sy_eng_copy(e, dst, e->h_ctx_stage, count * sizeof(uint16_t), SY_MEMCPY_H2D, err);
    return st == SY_OK ? sy_eng_sync(e, err) : st;
}

/* The pages a prefill in chunks of the plan's chunk reserves and releases, in its order. */
static sy_status reserve_as_prefill(sy_engine *e, sy_error *err)
{
    const sy_plan *p = &e->plan;
    uint32_t L = p->input_len, chunk = sy_plan_chunk(p);
    for (uint32_t c = 0; c < L; c += chunk) {
        uint32_t len = L - c < chunk ? L - c : chunk;
        for (uint32_t b = 0; b < p->batch; b++) {
            sy_status st = sy_kv_cache_advance(&e->cache, b, c, len, err);
            if (st != SY_OK)
                return prefixed(err, st, "");
        }
    }
    return SY_OK;
}

sy_status sy_context_fill(sy_engine *e, sy_error *err)
{
    const sy_plan *p = &e->plan;
    const sy_model_dims *d = &e->d;
    uint32_t B = p->batch, L = p->input_len, P = p->page_size;
    sy_status st;
    if ((st = sy_engine_reset_cache(e, err)) != SY_OK || (st = reserve_as_prefill(e, err)) != SY_OK)
        return st;
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t pos = 0; pos < L; pos++)
            e->h_ctx_slots[(size_t)b * L + pos] = sy_kv_cache_full_slot(&e->cache, b, pos);
    if ((st = sy_eng_copy(e, e->d_ctx_slots, e->h_ctx_slots, (size_t)B * L * sizeof(int32_t), SY_MEMCPY_H2D, err)))
        return st;
    int64_t map_len = (int64_t)e->full_pages * P;
    if (d->sliding_window) {
        if ((st = sy_eng_copy(e, e->d_slot_map, e->cache.slot_map, (size_t)map_len * sizeof(int32_t), SY_MEMCPY_H2D,
                              err)))
            return st;
        e->cache.slot_map_dirty = 0;
    }
    size_t kvd = (size_t)d->kv_heads * d->head_dim;
    int caps_checked[2] = {0, 0}; /* full, sliding: bf16 sources are not part of the composition */
    for (uint32_t l = 0; l < d->layers; l++) {
        int sliding = sy_layer_is_sliding(d, l);
        for (uint32_t b = 0; b < B; b++) {
            /* A sliding layer holds the positions of the pages still in its pool (the prefill's
             * last chunk and the window before it); the rest were written and released. */
            uint32_t lo = sliding ? e->cache.seq[b].swa_live_from * P : 0;
            if (lo >= L)
                continue;
            uint32_t rows = L - lo;
            if ((st = generate(e, l, 0, b, e->ctx_stage_k, err)) != SY_OK ||
                (st = generate(e, l, 1, b, e->ctx_stage_v, err)) != SY_OK)
                return st;
            sy_kv_write_args w = {0};
            w.struct_size = sizeof w;
            w.geom = sliding ? e->geom_swa : e->geom_full;
            w.k = sy_t3((uint16_t *)e->ctx_stage_k + lo * kvd, SY_DTYPE_BF16, rows, d->kv_heads, d->head_dim);
            w.v = sy_t3((uint16_t *)e->ctx_stage_v + lo * kvd, SY_DTYPE_BF16, rows, d->kv_heads, d->head_dim);
            w.slots = sy_t1((int32_t *)e->d_ctx_slots + (size_t)b * L + lo, SY_DTYPE_I32, rows);
            w.slot_map = sliding ? sy_t1(e->d_slot_map, SY_DTYPE_I32, map_len) : sy_tnone();
            w.k_cache = e->layer[l].k_cache;
            w.v_cache = e->layer[l].v_cache;
            w.k_scale = p->k_scale;
            w.v_scale = p->v_scale;
            if (!caps_checked[sliding]) {
                if ((st = sy_check_kv_write_caps(e->pd[SY_KIND_KV_LAYOUT], &w, err)) != SY_OK)
                    return prefixed(err, st, " writes bf16 K/V");
                caps_checked[sliding] = 1;
            }
            if ((st = sy_check_kv_write(&w, e->h_ctx_slots + (size_t)b * L + lo, e->cache.slot_map, err)) != SY_OK)
                return st;
            sy_status wst = e->kv->write(e->ctx[SY_KIND_KV_LAYOUT], e->stream, &w, err);
            if (wst != SY_OK)
                return sy_op_failed(e, SY_KIND_KV_LAYOUT, "write (synthetic context)", wst, err);
        }
    }
    /* The slots' host copy stays in use until the device has read it. */
    return sy_eng_sync(e, err);
}
