#include "extend_compose.h"

#include <stdio.h>
#include <stdlib.h>

#include "calls/checks.h"

static sy_status extend_paged(const extend_request *r, sy_error *err)
{
    const sy_kv_geometry *g = r->geom;
    int32_t *lens = malloc((r->B ? r->B : 1) * sizeof *lens);
    if (!lens) {
        snprintf(err->msg, sizeof err->msg, "extend: out of memory");
        return SY_E_NOMEM;
    }
    for (uint32_t b = 0; b < r->B; b++)
        lens[b] = r->cu_k[b + 1] - r->cu_k[b];
    sy_attn_prefill_paged_args pa = {0};
    pa.struct_size = sizeof pa;
    pa.geom = *g;
    int64_t nb[1] = {(int64_t)r->B + 1}, nlen[1] = {r->B}, nh[1] = {r->q.shape[1]}, bt[2] = {r->B, r->max_blocks};
    pa.q = r->q;
    pa.out = r->out;
    pa.k_cache = r->k_cache;
    pa.v_cache = r->v_cache;
    pa.block_tables = sy_tensor_contiguous((void *)r->block_tables, SY_DTYPE_I32, 2, bt);
    pa.context_lens = sy_tensor_contiguous(lens, SY_DTYPE_I32, 1, nlen);
    pa.cu_seqlens_q = sy_tensor_contiguous((void *)r->cu_q, SY_DTYPE_I32, 1, nb);
    if (r->sinks)
        pa.sinks = sy_tensor_contiguous((void *)r->sinks, SY_DTYPE_F32, 1, nh);
    pa.scale = r->scale;
    pa.causal = 1;
    pa.window = r->window;
    pa.k_scale = g->store_dtype == SY_DTYPE_FP8_E4M3 ? r->k_scale : 1.0f;
    pa.v_scale = g->store_dtype == SY_DTYPE_FP8_E4M3 ? r->v_scale : 1.0f;
    sy_status st;
    if ((st = sy_check_prefill_paged_args(&pa, r->block_tables, lens, r->cu_q, err)) == SY_OK &&
        (st = sy_check_prefill_paged_caps(r->attn_plugin, &pa, err)) == SY_OK)
        st = sy_attention_prefill_paged(r->attn_plugin->ops)(r->attn_ctx, NULL, &pa, err);
    free(lens);
    return st;
}

sy_status extend_with_prefix(const extend_request *r, sy_error *err)
{
    if (r->paged)
        return extend_paged(r, err);
    const sy_kv_geometry *g = r->geom;
    int64_t rows = r->cu_k[r->B];
    size_t bytes = (size_t)(rows ? rows : 1) * g->kv_heads * g->head_dim * sy_dtype_size(g->store_dtype);
    void *k_lin = malloc(bytes), *v_lin = malloc(bytes);
    if (!k_lin || !v_lin) {
        free(k_lin);
        free(v_lin);
        snprintf(err->msg, sizeof err->msg, "extend: out of memory for %lld linear rows", (long long)rows);
        return SY_E_NOMEM;
    }
    sy_kv_gather_args ga = {0};
    ga.struct_size = sizeof ga;
    ga.geom = *g;
    int64_t n[1] = {rows}, shape[3] = {rows, g->kv_heads, g->head_dim}, nb[1] = {(int64_t)r->B + 1};
    int64_t nh[1] = {r->q.shape[1]};
    ga.slots = sy_tensor_contiguous((void *)r->slots, SY_DTYPE_I32, 1, n);
    ga.k_cache = r->k_cache;
    ga.v_cache = r->v_cache;
    ga.k_out = sy_tensor_contiguous(k_lin, g->store_dtype, 3, shape);
    ga.v_out = sy_tensor_contiguous(v_lin, g->store_dtype, 3, shape);
    sy_status st = sy_check_kv_gather(&ga, r->slots, NULL, err);
    if (st == SY_OK)
        st = ((const sy_kv_layout_ops *)r->kv_plugin->ops)->gather(NULL, NULL, &ga, err);
    if (st == SY_OK) {
        sy_attn_prefill_args pa = {0};
        pa.struct_size = sizeof pa;
        pa.q = r->q;
        pa.k = ga.k_out;
        pa.v = ga.v_out;
        pa.out = r->out;
        pa.cu_seqlens_q = sy_tensor_contiguous((void *)r->cu_q, SY_DTYPE_I32, 1, nb);
        pa.cu_seqlens_k = sy_tensor_contiguous((void *)r->cu_k, SY_DTYPE_I32, 1, nb);
        if (r->sinks)
            pa.sinks = sy_tensor_contiguous((void *)r->sinks, SY_DTYPE_F32, 1, nh);
        pa.scale = r->scale;
        pa.causal = 1;
        pa.window = r->window;
        pa.k_scale = g->store_dtype == SY_DTYPE_FP8_E4M3 ? r->k_scale : 1.0f;
        pa.v_scale = g->store_dtype == SY_DTYPE_FP8_E4M3 ? r->v_scale : 1.0f;
        if ((st = sy_check_prefill_args(&pa, r->cu_q, r->cu_k, err)) == SY_OK &&
            (st = sy_check_prefill_caps(r->attn_plugin, &pa, err)) == SY_OK)
            st = ((const sy_attention_ops *)r->attn_plugin->ops)->prefill_linear(r->attn_ctx, NULL, &pa, err);
    }
    free(k_lin);
    free(v_lin);
    return st;
}
