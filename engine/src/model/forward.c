/* One forward of the gpt-oss decoder through the composed plugins. Per layer, exactly:
 *   input add+rmsnorm -> q/k/v linears with bias (one linear over their stacked weights with
 *   linear.fuse_qkv, q, k and v then slices of its rows; unfused, one linear writing three arrays
 *   where the linear plugin declares split_y, else three linears) -> rope (fused with the KV write
 *   when composed, else rope then kv_layout.write) -> attention (decode_paged for decode; prefill_linear on the
 *   fresh K/V for a first chunk; for a later chunk prefill_paged over the pool where composed, else
 *   kv_layout.gather + prefill_linear) -> o linear
 *   -> post-attention add+rmsnorm (padded when fuse_pad was composed) -> router on the unpadded
 *   slice -> top-k -> MoE (output trimmed to hidden).
 * Then the final norm, lm_head on each sequence's last token, and its greedy token. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calls/checks.h"
#include "model/engine_impl.h"
#include "sy_greedy.h"
#include "sy_numeric.h"
#include "util/strbuf.h"

static sy_rope_params rope_params(const sy_engine *e)
{
    sy_rope_params p = {0};
    p.struct_size = sizeof p;
    p.style = SY_ROPE_STYLE_NEOX;
    p.scaling = e->d.yarn_factor > 1.0f ? SY_ROPE_SCALING_YARN : SY_ROPE_SCALING_NONE;
    p.head_dim = e->d.head_dim;
    p.theta = e->d.rope_theta;
    p.yarn_factor = e->d.yarn_factor;
    p.yarn_beta_fast = e->d.yarn_beta_fast;
    p.yarn_beta_slow = e->d.yarn_beta_slow;
    p.yarn_original_max_position = e->d.yarn_original_max_position;
    p.concentration = 0;
    return p;
}

/* Rows of q [T, Hq, D], or of k or v [T, H, D], with the engine's token stride (e->q_row, e->kv_row). */
static sy_tensor head_rows(const sy_engine *e, void *p, uint32_t T, uint32_t heads, uint32_t head_dim, uint32_t row)
{
    sy_tensor t = sy_t3(p, e->act, T, heads, head_dim);
    t.stride[0] = row;
    return t;
}

/* Sizes of one forward; its index arrays are in the index block (index_block.c). */
typedef struct step_layout {
    uint32_t T, B;
    int has_prefix;
    uint32_t rows_full, rows_swa;
} step_layout;

static sy_kv_write_args kv_write_args(sy_engine *e, uint32_t l, uint32_t T)
{
    int sliding = sy_layer_is_sliding(&e->d, l);
    sy_kv_write_args a = {0};
    a.struct_size = sizeof a;
    a.geom = sliding ? e->geom_swa : e->geom_full;
    a.k = head_rows(e, e->k, T, e->d.kv_heads, e->d.head_dim, e->kv_row);
    a.v = head_rows(e, e->v, T, e->d.kv_heads, e->d.head_dim, e->kv_row);
    a.slots = sy_t1(e->d_slots, SY_DTYPE_I32, T);
    a.slot_map = sliding ? sy_t1(e->d_slot_map, SY_DTYPE_I32, (int64_t)e->full_pages * e->plan.page_size) : sy_tnone();
    a.k_cache = e->layer[l].k_cache;
    a.v_cache = e->layer[l].v_cache;
    a.k_scale = e->plan.k_scale;
    a.v_scale = e->plan.v_scale;
    return a;
}

static sy_status rope_and_write(sy_engine *e, uint32_t l, uint32_t T, sy_error *err)
{
    sy_rope_args r = {0};
    r.struct_size = sizeof r;
    r.params = rope_params(e);
    r.q = head_rows(e, e->q, T, e->d.q_heads, e->d.head_dim, e->q_row);
    r.k = head_rows(e, e->k, T, e->d.kv_heads, e->d.head_dim, e->kv_row);
    r.positions = sy_t1(e->d_positions, SY_DTYPE_I32, T);
    sy_kv_write_args w = kv_write_args(e, l, T);
    /* Every full (sliding) layer of a forward writes the same slots through the same map into a
     * pool of the same geometry: the first one's check holds for the others. */
    int *checked = &e->write_checked[sy_layer_is_sliding(&e->d, l)];
    sy_status st = *checked ? SY_OK : sy_check_kv_write(&w, e->h_slots, e->cache.slot_map, err);
    if (st != SY_OK)
        return st;
    *checked = 1;
    if (e->plan.fuse_rope_kv) {
        sy_rope_kv_write_args a = {0};
        a.struct_size = sizeof a;
        a.rope = r;
        a.kv = w;
        CALL(e, SY_KIND_ROPE, "rope_kv_write", e->rope->rope_kv_write(e->ctx[SY_KIND_ROPE], e->stream, &a, err));
        return SY_OK;
    }
    CALL(e, SY_KIND_ROPE, "rope", e->rope->rope(e->ctx[SY_KIND_ROPE], e->stream, &r, err));
    CALL(e, SY_KIND_KV_LAYOUT, "write", e->kv->write(e->ctx[SY_KIND_KV_LAYOUT], e->stream, &w, err));
    return SY_OK;
}

static sy_status attention(sy_engine *e, uint32_t l, const step_layout *s, int decode, sy_error *err)
{
    const sy_model_dims *d = &e->d;
    int sliding = sy_layer_is_sliding(d, l);
    uint32_t T = s->T, B = s->B, Hq = d->q_heads, Hkv = d->kv_heads, D = d->head_dim;
    sy_tensor sinks = d->has_sinks ? sy_t1(e->layer[l].sinks, SY_DTYPE_F32, Hq) : sy_tnone();
    int32_t window = sliding ? (int32_t)d->sliding_window : 0;
    int32_t kv_dt = e->plan.kv_dtype;
    sy_status st;
    if (decode) {
        sy_attn_decode_args a = {0};
        a.struct_size = sizeof a;
        a.geom = sliding ? e->geom_swa : e->geom_full;
        a.q = head_rows(e, e->q, B, Hq, D, e->q_row);
        a.out = sy_t3(e->attn_out, e->act, B, Hq, D);
        a.k_cache = e->layer[l].k_cache;
        a.v_cache = e->layer[l].v_cache;
        a.block_tables = sy_t2(sliding ? e->d_bt_swa : e->d_bt_full, SY_DTYPE_I32, B, e->cache.max_pages_per_seq);
        a.context_lens = sy_t1(e->d_ctx_lens, SY_DTYPE_I32, B);
        a.sinks = sinks;
        a.scale = d->attn_scale;
        a.window = window;
        a.k_scale = e->plan.k_scale;
        a.v_scale = e->plan.v_scale;
        a.num_splits = e->plan.attn_num_splits;
        /* Every full (sliding) layer of a step passes the same page tables and lengths and
         * differs only in the pool and sinks pointers the engine allocated: the check of the
         * step's first such layer holds for the others, which saves walking batch x pages
         * entries per layer. */
        int *checked = &e->decode_checked[sliding];
        if (!*checked &&
            (st = sy_check_decode_args(&a, sliding ? e->h_bt_swa : e->h_bt_full, e->h_ctx_lens, err)) != SY_OK)
            return st;
        *checked = 1;
        CALL(e, SY_KIND_ATTENTION, "decode_paged",
             e->attn->decode_paged(e->ctx[SY_KIND_ATTENTION], e->stream, &a, err));
        return SY_OK;
    }
    sy_attn_prefill_args a = {0};
    a.struct_size = sizeof a;
    a.q = head_rows(e, e->q, T, Hq, D, e->q_row);
    a.out = sy_t3(e->attn_out, e->act, T, Hq, D);
    a.cu_seqlens_q = sy_t1(e->d_cu_q, SY_DTYPE_I32, B + 1);
    a.sinks = sinks;
    a.scale = d->attn_scale;
    a.causal = 1;
    a.window = window;
    a.k_scale = e->plan.k_scale;
    a.v_scale = e->plan.v_scale;
    const int32_t *cu_k_host = e->h_cu_q;
    if (!s->has_prefix) {
        /* A first chunk attends to its own fresh K/V: nothing to read back from the pool. */
        a.k = head_rows(e, e->k, T, Hkv, D, e->kv_row);
        a.v = head_rows(e, e->v, T, Hkv, D, e->kv_row);
        a.cu_seqlens_k = a.cu_seqlens_q;
        a.k_scale = a.v_scale = 1.0f;
    } else if (e->plan.prefill_paged) {
        /* A later chunk whose K/V the pool already holds, read where it lies. */
        sy_attn_prefill_paged_args pa = {0};
        pa.struct_size = sizeof pa;
        pa.geom = sliding ? e->geom_swa : e->geom_full;
        pa.q = a.q;
        pa.out = a.out;
        pa.k_cache = e->layer[l].k_cache;
        pa.v_cache = e->layer[l].v_cache;
        pa.block_tables = sy_t2(sliding ? e->d_bt_swa : e->d_bt_full, SY_DTYPE_I32, B, e->cache.max_pages_per_seq);
        pa.context_lens = sy_t1(e->d_ctx_lens, SY_DTYPE_I32, B);
        pa.cu_seqlens_q = a.cu_seqlens_q;
        pa.sinks = sinks;
        pa.scale = a.scale;
        pa.causal = 1;
        pa.window = window;
        pa.k_scale = e->plan.k_scale;
        pa.v_scale = e->plan.v_scale;
        if ((st = sy_check_prefill_paged_args(&pa, sliding ? e->h_bt_swa : e->h_bt_full, e->h_ctx_lens, e->h_cu_q,
                                              err)) != SY_OK)
            return st;
        CALL(e, SY_KIND_ATTENTION, "prefill_paged",
             sy_attention_prefill_paged(e->attn)(e->ctx[SY_KIND_ATTENTION], e->stream, &pa, err));
        return SY_OK;
    } else {
        /* A later chunk: the pool already holds this chunk's K/V; gather prefix + chunk to linear. */
        uint32_t rows = sliding ? s->rows_swa : s->rows_full;
        sy_kv_gather_args g = {0};
        g.struct_size = sizeof g;
        g.geom = sliding ? e->geom_swa : e->geom_full;
        g.slots = sy_t1(sliding ? e->d_gslots_swa : e->d_gslots_full, SY_DTYPE_I32, rows);
        g.slot_map = sliding ? sy_t1(e->d_slot_map, SY_DTYPE_I32, (int64_t)e->full_pages * e->plan.page_size) : sy_tnone();
        g.k_cache = e->layer[l].k_cache;
        g.v_cache = e->layer[l].v_cache;
        g.k_out = sy_t3(e->k_lin, kv_dt, rows, Hkv, D);
        g.v_out = sy_t3(e->v_lin, kv_dt, rows, Hkv, D);
        if ((st = sy_check_kv_gather(&g, sliding ? e->h_gslots_swa : e->h_gslots_full, e->cache.slot_map, err)) != SY_OK)
            return st;
        CALL(e, SY_KIND_KV_LAYOUT, "gather", e->kv->gather(e->ctx[SY_KIND_KV_LAYOUT], e->stream, &g, err));
        a.k = g.k_out;
        a.v = g.v_out;
        a.cu_seqlens_k = sy_t1(sliding ? e->d_cu_k_swa : e->d_cu_k_full, SY_DTYPE_I32, B + 1);
        cu_k_host = sliding ? e->h_cu_k_swa : e->h_cu_k_full;
        if (kv_dt != SY_DTYPE_FP8_E4M3)
            a.k_scale = a.v_scale = 1.0f;
    }
    if ((st = sy_check_prefill_args(&a, e->h_cu_q, cu_k_host, err)) != SY_OK)
        return st;
    CALL(e, SY_KIND_ATTENTION, "prefill_linear", e->attn->prefill_linear(e->ctx[SY_KIND_ATTENTION], e->stream, &a, err));
    return SY_OK;
}

static sy_status moe_block(sy_engine *e, uint32_t l, uint32_t T, sy_error *err)
{
    const sy_model_dims *d = &e->d;
    sy_status st;
    /* The router reads the unpadded slice of the (possibly padded) normed rows. */
    sy_tensor x_unpadded = sy_t2_strided(e->normed, e->act, T, d->hidden, e->hp);
    if ((st = sy_eng_linear(e, x_unpadded, e->layer[l].router_w, e->layer[l].router_b, d->experts, e->router_logits,
                            SY_DTYPE_F32, err)) != SY_OK)
        return st;
    sy_moe_route_args r = {0};
    r.struct_size = sizeof r;
    r.shape = e->moe_shape;
    r.logits = sy_t2(e->router_logits, SY_DTYPE_F32, T, d->experts);
    r.topk_ids = sy_t2(e->topk_ids, SY_DTYPE_I32, T, d->top_k);
    r.topk_weights = sy_t2(e->topk_w, SY_DTYPE_F32, T, d->top_k);
    CALL(e, SY_KIND_MOE, "route", e->moe->route(e->ctx[SY_KIND_MOE], e->stream, &r, err));
    sy_moe_forward_args a = {0};
    a.struct_size = sizeof a;
    a.shape = e->moe_shape;
    a.prepared = e->layer[l].moe;
    a.x = sy_t2(e->normed, e->act, T, e->hp);
    a.topk_ids = r.topk_ids;
    a.topk_weights = r.topk_weights;
    a.out = sy_t2(e->hidden, e->act, T, d->hidden);
    CALL(e, SY_KIND_MOE, "forward", e->moe->forward(e->ctx[SY_KIND_MOE], e->stream, &a, err));
    return SY_OK;
}

/* Host copy of a layer's output (residual stream after the layer: residual + hidden, in f32). */
static sy_status emit_checkpoint(sy_engine *e, uint32_t l, uint32_t T, sy_error *err)
{
    size_t n = (size_t)T * e->d.hidden;
    sy_status st;
    /* h_rows2 holds n floats, room for the hidden rows in any activation dtype. */
    if ((st = sy_eng_copy(e, e->h_rows, e->residual, n * sizeof(float), SY_MEMCPY_D2H, err)) ||
        (st = sy_eng_copy(e, e->h_rows2, e->hidden, n * sy_dtype_size(e->act), SY_MEMCPY_D2H, err)) || (st = sy_eng_sync(e, err)))
        return st;
    const uint16_t *hidden_bf16 = (const uint16_t *)e->h_rows2;
    for (size_t i = 0; i < n; i++)
        e->h_rows[i] += e->act == SY_DTYPE_BF16 ? sy_bf16_to_f32(hidden_bf16[i]) : e->h_rows2[i];
    e->checkpoint(e->checkpoint_user, e->step_index, l, e->h_rows, T, e->d.hidden);
    return SY_OK;
}

/* Each sequence's greedy token into e->h_next, and the wait for the device. Chosen where the logits
 * are when the backend can (4 bytes a sequence come back, not its vocab's logits); the logits come
 * back whole only for a backend without greedy_rows, or when a checkpoint reads them. */
static sy_status greedy_tokens(sy_engine *e, uint32_t B, sy_error *err)
{
    const uint32_t V = e->d.vocab;
    sy_status st;
    if (!e->checkpoint && SY_HAS_MEMBER(e->be->struct_size, sy_backend_desc, greedy_rows) && e->be->greedy_rows) {
        sy_error inner = {{0}};
        if (e->be->greedy_rows(e->bctx, e->stream, e->logits, B, V, V, e->d_next, &inner) != SY_OK)
            return sy_fail(err, SY_E_BACKEND, "%s greedy_rows of %u rows failed: %s", e->be->name, B, inner.msg);
        if ((st = sy_eng_copy(e, e->h_next, e->d_next, (size_t)B * sizeof *e->h_next, SY_MEMCPY_D2H, err)))
            return st;
        return sy_eng_sync(e, err);
    }
    if ((st = sy_eng_copy(e, e->h_logits, e->logits, (size_t)B * V * sizeof(float), SY_MEMCPY_D2H, err)) ||
        (st = sy_eng_sync(e, err)))
        return st;
    for (uint32_t b = 0; b < B; b++)
        e->h_next[b] = sy_greedy_token(e->h_logits + (size_t)b * V, V);
    return SY_OK;
}

sy_status sy_forward(sy_engine *e, const uint32_t *start, const uint32_t *n, const uint32_t *token_ids, int decode,
                     sy_error *err)
{
    const sy_model_dims *d = &e->d;
    step_layout s = {.B = e->plan.batch};
    e->n_pending_ops = 0;
    sy_status st = sy_index_block_upload(e, start, n, decode, &s.T, &s.has_prefix, &s.rows_full, &s.rows_swa, err);
    if (st != SY_OK)
        return st;
    uint32_t T = s.T, H = d->hidden;
    for (uint32_t t = 0; t < T; t++) {
        const uint16_t *row = e->embed_host + (size_t)token_ids[t] * H;
        for (uint32_t i = 0; i < H; i++)
            e->h_rows[(size_t)t * H + i] = sy_bf16_to_f32(row[i]);
    }
    if ((st = sy_eng_copy(e, e->residual, e->h_rows, (size_t)T * H * sizeof(float), SY_MEMCPY_H2D, err)))
        return st;
    uint32_t qd = d->q_heads * d->head_dim, kvd = d->kv_heads * d->head_dim;
    for (uint32_t l = 0; l < d->layers; l++) {
        layer_weights *w = &e->layer[l];
        /* Layer 0 normalizes the embeddings; later layers add the previous MoE output first. */
        st = sy_eng_rmsnorm(e, T, l == 0 ? e->residual : e->hidden, l == 0 ? SY_DTYPE_F32 : e->act,
                            l == 0 ? NULL : e->residual, w->attn_norm, 0, err);
        if (st != SY_OK)
            return st;
        sy_tensor x = sy_t2(e->normed, e->act, T, H);
        if (e->plan.fuse_qkv)
            st = sy_eng_linear(e, x, w->q_w, w->q_b, qd + 2 * kvd, e->q, e->act, err);
        else if (e->plan.qkv_split_y) {
            const uint32_t columns[3] = {qd, kvd, kvd};
            void *const out[3] = {e->q, e->k, e->v};
            st = sy_eng_linear_parts(e, x, w->q_w, w->q_b, 3, columns, out, e->act, err);
        } else if ((st = sy_eng_linear(e, x, w->q_w, w->q_b, qd, e->q, e->act, err)) == SY_OK &&
                 (st = sy_eng_linear(e, x, w->k_w, w->k_b, kvd, e->k, e->act, err)) == SY_OK)
            st = sy_eng_linear(e, x, w->v_w, w->v_b, kvd, e->v, e->act, err);
        if (st || (st = rope_and_write(e, l, T, err)) || (st = attention(e, l, &s, decode, err)))
            return st;
        if ((st = sy_eng_linear(e, sy_t2(e->attn_out, e->act, T, qd), w->o_w, w->o_b, H, e->hidden, e->act, err)))
            return st;
        if ((st = sy_eng_rmsnorm(e, T, e->hidden, e->act, e->residual, w->mlp_norm, e->plan.pad_multiple, err)) ||
            (st = moe_block(e, l, T, err)))
            return st;
        if (e->checkpoint && (st = emit_checkpoint(e, l, T, err)))
            return st;
    }
    if ((st = sy_eng_rmsnorm(e, T, e->hidden, e->act, e->residual, e->final_norm, 0, err)))
        return st;
    /* lm_head only where a token is sampled: each sequence's last new token. With equal chunks the
     * last rows are evenly spaced, so one GEMM reads the (large) lm_head once for the whole batch. */
    int uniform = 1;
    for (uint32_t b = 1; b < s.B; b++)
        uniform &= n[b] == n[0];
    const size_t normed_row_bytes = (size_t)H * sy_dtype_size(e->act);
    if (uniform) {
        sy_tensor rows = sy_t2_strided((char *)e->normed + (size_t)(n[0] - 1) * normed_row_bytes, e->act, s.B, H,
                                       (int64_t)n[0] * H);
        if ((st = sy_eng_linear(e, rows, e->lm_head, NULL, d->vocab, e->logits, SY_DTYPE_F32, err)))
            return st;
    } else {
        for (uint32_t b = 0; b < s.B; b++) {
            uint32_t last = (uint32_t)e->h_cu_q[b + 1] - 1;
            sy_tensor row = sy_t2((char *)e->normed + (size_t)last * normed_row_bytes, e->act, 1, H);
            if ((st = sy_eng_linear(e, row, e->lm_head, NULL, d->vocab, (float *)e->logits + (size_t)b * d->vocab,
                                    SY_DTYPE_F32, err)))
                return st;
        }
    }
    if ((st = greedy_tokens(e, s.B, err)))
        return st;
    sy_op_times_collect(e);
    if (e->checkpoint)
        e->checkpoint(e->checkpoint_user, e->step_index, d->layers, e->h_logits, s.B, d->vocab);
    return SY_OK;
}
