/* Call-boundary checks of attention.decode_paged, prefill_linear and prefill_paged (checks.h). */
#include <math.h>
#include <stdio.h>

#include "calls/check_tensor.h"
#include "calls/checks.h"
#include "util/strbuf.h"

/* q [rows, Hq, D] with D = head_dim and Hq a positive multiple of kv_heads, out like q, optional
 * sinks f32 [Hq]. */
static sy_status check_q_out_sinks(const char *op, const sy_tensor *q, const sy_tensor *out, const sy_tensor *sinks,
                                   uint32_t kv_heads, uint32_t head_dim, sy_error *err)
{
    int64_t want[3] = {SY_CALL_ANY, SY_CALL_ANY, head_dim};
    sy_status st;
    if ((st = sy_call_check_tensor(op, "q", q, SY_CALL_FLOAT_DTYPES, 3, want, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "q", q, 1, err)) != SY_OK ||
        (st = sy_call_check_like(op, "out", out, "q", q, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "out", out, 1, err)) != SY_OK)
        return st;
    int64_t hq = q->shape[1];
    if (hq <= 0 || hq % kv_heads != 0)
        return sy_fail(err, SY_E_INVALID, "%s: q has %lld heads, not a positive multiple of the %u KV heads (GQA)", op,
                       (long long)hq, kv_heads);
    if (sinks->data) {
        int64_t want_s[1] = {hq};
        if ((st = sy_call_check_tensor(op, "sinks", sinks, SY_DTYPE_BIT(SY_DTYPE_F32), 1, want_s, err)) != SY_OK ||
            (st = sy_call_check_packed(op, "sinks", sinks, 0, err)) != SY_OK)
            return st;
    }
    return SY_OK;
}

static sy_status check_common_scalars(const char *op, float scale, int32_t window, sy_error *err)
{
    if (!isfinite(scale))
        return sy_fail(err, SY_E_INVALID, "%s: softmax scale %g is not finite", op, (double)scale);
    if (window < 0)
        return sy_fail(err, SY_E_INVALID, "%s: window %d is negative (0 = full context)", op, window);
    return SY_OK;
}

static sy_status check_fp8_scales(const char *op, int32_t kv_dtype, float k_scale, float v_scale, sy_error *err)
{
    sy_status st = SY_OK;
    if (kv_dtype == SY_DTYPE_FP8_E4M3 && ((st = sy_call_check_scale(op, "k_scale", k_scale, err)) != SY_OK ||
                                          (st = sy_call_check_scale(op, "v_scale", v_scale, err)) != SY_OK))
        return st;
    return SY_OK;
}

/* What decode_paged and prefill_paged share: the pool's geometry and pointers, q / out / sinks
 * against it, the scalars and the fp8 scales. */
static sy_status check_pool_call(const char *op, const sy_kv_geometry *g, const sy_tensor *q, const sy_tensor *out,
                                 const sy_tensor *sinks, float scale, int32_t window, float k_scale, float v_scale,
                                 const void *k_cache, const void *v_cache, sy_error *err)
{
    sy_status st;
    if ((st = sy_check_kv_geometry(op, g, err)) != SY_OK ||
        (st = check_q_out_sinks(op, q, out, sinks, g->kv_heads, g->head_dim, err)) != SY_OK ||
        (st = check_common_scalars(op, scale, window, err)) != SY_OK ||
        (st = check_fp8_scales(op, g->store_dtype, k_scale, v_scale, err)) != SY_OK)
        return st;
    if (!k_cache || !v_cache)
        return sy_fail(err, SY_E_INVALID, "%s: k_cache or v_cache is NULL", op);
    return SY_OK;
}

/* block_tables int32 [B, max_blocks] and context_lens int32 [B] with their host copies: every
 * length non-negative and at least the sequence's queries (queries_host: cu_seqlens_q, or NULL for
 * one query each), and every page the queries read inside the pool. Only the pages their (windowed)
 * keys cover are read: a sliding-window table holds 0 for freed pages. */
static sy_status check_pages(const char *op, const sy_kv_geometry *g, const sy_tensor *block_tables,
                             const sy_tensor *context_lens, int64_t B, int32_t window, const int32_t *block_tables_host,
                             const int32_t *context_lens_host, const int32_t *queries_host, sy_error *err)
{
    int64_t want_bt[2] = {B, SY_CALL_ANY}, want_b[1] = {B};
    sy_status st;
    if ((st = sy_call_check_tensor(op, "block_tables", block_tables, SY_CALL_INDEX_DTYPES, 2, want_bt, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "block_tables", block_tables, 1, err)) != SY_OK ||
        (st = sy_call_check_tensor(op, "context_lens", context_lens, SY_CALL_INDEX_DTYPES, 1, want_b, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "context_lens", context_lens, 0, err)) != SY_OK)
        return st;
    if (B > 0 && (!block_tables_host || !context_lens_host))
        return sy_fail(err, SY_E_INVALID, "%s: no host copy of block_tables or context_lens to check", op);
    int64_t max_blocks = block_tables->shape[1], row_stride = block_tables->stride[0];
    uint64_t P = g->page_size;
    for (int64_t b = 0; b < B; b++) {
        int64_t len = context_lens_host[b], lq = queries_host ? queries_host[b + 1] - queries_host[b] : 1;
        if (len < 0)
            return sy_fail(err, SY_E_INVALID, "%s: context_lens[%lld] = %lld is negative", op, (long long)b,
                           (long long)len);
        if (queries_host && len < lq)
            return sy_fail(err, SY_E_INVALID,
                           "%s: sequence %lld has %lld queries but context_lens %lld; queries are the last Lq of its "
                           "keys",
                           op, (long long)b, (long long)lq, (long long)len);
        int64_t pages = (int64_t)(((uint64_t)len + P - 1) / P);
        if (pages > max_blocks)
            return sy_fail(err, SY_E_INVALID,
                           "%s: context_lens[%lld] = %lld needs %lld pages of %llu, block_tables has %lld columns", op,
                           (long long)b, (long long)len, (long long)pages, (unsigned long long)P,
                           (long long)max_blocks);
        /* The first query's window starts the keys read (decode: its one query). */
        int64_t first_pos = len - (lq > 0 ? lq : 1);
        int64_t first_key = window > 0 && first_pos + 1 > window ? first_pos + 1 - window : 0;
        for (int64_t j = first_key / (int64_t)P; lq > 0 && j < pages; j++) {
            int64_t page = block_tables_host[b * row_stride + j];
            if (page < 1 || page >= (int64_t)g->num_pages)
                return sy_fail(err, SY_E_INVALID,
                               "%s: block_tables[%lld][%lld] = %lld is outside the pool (pages 1..%u; page 0 is the "
                               "padding page), read for context_lens[%lld] = %lld",
                               op, (long long)b, (long long)j, (long long)page, g->num_pages - 1, (long long)b,
                               (long long)len);
        }
    }
    return SY_OK;
}

sy_status sy_check_decode_args(const sy_attn_decode_args *a, const int32_t *block_tables_host,
                               const int32_t *context_lens_host, sy_error *err)
{
    const char *op = "attention.decode_paged";
    sy_status st;
    if ((st = sy_call_check_args_size(op, a->struct_size, sizeof(sy_attn_decode_args), err)) != SY_OK ||
        (st = check_pool_call(op, &a->geom, &a->q, &a->out, &a->sinks, a->scale, a->window, a->k_scale, a->v_scale,
                              a->k_cache, a->v_cache, err)) != SY_OK)
        return st;
    if (a->num_splits < 0)
        return sy_fail(err, SY_E_INVALID, "%s: num_splits %d is negative (0 = the plugin chooses)", op, a->num_splits);
    return check_pages(op, &a->geom, &a->block_tables, &a->context_lens, a->q.shape[0], a->window, block_tables_host,
                       context_lens_host, NULL, err);
}

/* causal 0 or 1, and cu_seqlens_q an int32 [B + 1] tensor: both prefill forms. */
static sy_status check_causal_cu_q(const char *op, int32_t causal, const sy_tensor *cu_seqlens_q, sy_error *err)
{
    if (causal != 0 && causal != 1)
        return sy_fail(err, SY_E_INVALID, "%s: causal = %d, expected 0 or 1", op, causal);
    int64_t any[1] = {SY_CALL_ANY};
    sy_status st;
    if ((st = sy_call_check_tensor(op, "cu_seqlens_q", cu_seqlens_q, SY_CALL_INDEX_DTYPES, 1, any, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "cu_seqlens_q", cu_seqlens_q, 0, err)) != SY_OK)
        return st;
    return SY_OK;
}

/* cu_seqlens [B + 1]: 0 first, non-decreasing, last within the rows. */
static sy_status check_cu_values(const char *op, const char *name, const int32_t *cu, int64_t B, int64_t rows,
                                 sy_error *err)
{
    if (cu[0] != 0)
        return sy_fail(err, SY_E_INVALID, "%s: %s[0] = %d, expected 0", op, name, cu[0]);
    for (int64_t b = 0; b < B; b++)
        if (cu[b + 1] < cu[b])
            return sy_fail(err, SY_E_INVALID, "%s: %s decreases: [%lld] = %d, [%lld] = %d", op, name, (long long)b,
                           cu[b], (long long)(b + 1), cu[b + 1]);
    if (cu[B] > rows)
        return sy_fail(err, SY_E_INVALID, "%s: %s[%lld] = %d exceeds the %lld rows", op, name, (long long)B, cu[B],
                       (long long)rows);
    return SY_OK;
}

sy_status sy_check_prefill_args(const sy_attn_prefill_args *a, const int32_t *cu_q, const int32_t *cu_k,
                                sy_error *err)
{
    const char *op = "attention.prefill_linear";
    sy_status st;
    if ((st = sy_call_check_args_size(op, a->struct_size, sizeof(sy_attn_prefill_args), err)) != SY_OK)
        return st;
    int64_t want_k[3] = {SY_CALL_ANY, SY_CALL_ANY, a->q.data && a->q.ndim == 3 ? a->q.shape[2] : SY_CALL_ANY};
    uint32_t kv_dtypes = SY_CALL_FLOAT_DTYPES | SY_DTYPE_BIT(SY_DTYPE_FP8_E4M3);
    if ((st = sy_call_check_tensor(op, "k", &a->k, kv_dtypes, 3, want_k, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "k", &a->k, 1, err)) != SY_OK ||
        (st = sy_call_check_like(op, "v", &a->v, "k", &a->k, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "v", &a->v, 1, err)) != SY_OK)
        return st;
    int64_t hkv = a->k.shape[1], D = a->k.shape[2];
    if (hkv <= 0 || D <= 0)
        return sy_fail(err, SY_E_INVALID, "%s: k has %lld heads of dim %lld; both must be positive", op,
                       (long long)hkv, (long long)D);
    if ((st = check_q_out_sinks(op, &a->q, &a->out, &a->sinks, (uint32_t)hkv, (uint32_t)D, err)) != SY_OK ||
        (st = check_common_scalars(op, a->scale, a->window, err)) != SY_OK ||
        (st = check_fp8_scales(op, a->k.dtype, a->k_scale, a->v_scale, err)) != SY_OK)
        return st;
    if ((st = check_causal_cu_q(op, a->causal, &a->cu_seqlens_q, err)) != SY_OK)
        return st;
    int64_t want_cu[1] = {a->cu_seqlens_q.shape[0]};
    if ((st = sy_call_check_tensor(op, "cu_seqlens_k", &a->cu_seqlens_k, SY_CALL_INDEX_DTYPES, 1, want_cu, err)) !=
            SY_OK ||
        (st = sy_call_check_packed(op, "cu_seqlens_k", &a->cu_seqlens_k, 0, err)) != SY_OK)
        return st;
    int64_t B = a->cu_seqlens_q.shape[0] - 1;
    if (B < 0)
        return sy_fail(err, SY_E_INVALID, "%s: cu_seqlens_q is empty; it holds B + 1 offsets", op);
    if (!cu_q || !cu_k)
        return sy_fail(err, SY_E_INVALID, "%s: no host copy of cu_seqlens_q or cu_seqlens_k to check", op);
    if ((st = check_cu_values(op, "cu_seqlens_q", cu_q, B, a->q.shape[0], err)) != SY_OK ||
        (st = check_cu_values(op, "cu_seqlens_k", cu_k, B, a->k.shape[0], err)) != SY_OK)
        return st;
    for (int64_t b = 0; b < B; b++) {
        int64_t lq = cu_q[b + 1] - cu_q[b], lk = cu_k[b + 1] - cu_k[b];
        if (lk < lq)
            return sy_fail(err, SY_E_INVALID,
                           "%s: sequence %lld has %lld queries but %lld keys; queries are the last Lq of Lk >= Lq "
                           "positions",
                           op, (long long)b, (long long)lq, (long long)lk);
    }
    return SY_OK;
}

sy_status sy_check_prefill_paged_args(const sy_attn_prefill_paged_args *a, const int32_t *block_tables_host,
                                      const int32_t *context_lens_host, const int32_t *cu_q, sy_error *err)
{
    const char *op = "attention.prefill_paged";
    sy_status st;
    if ((st = sy_call_check_args_size(op, a->struct_size, sizeof(sy_attn_prefill_paged_args), err)) != SY_OK ||
        (st = check_pool_call(op, &a->geom, &a->q, &a->out, &a->sinks, a->scale, a->window, a->k_scale, a->v_scale,
                              a->k_cache, a->v_cache, err)) != SY_OK)
        return st;
    if ((st = check_causal_cu_q(op, a->causal, &a->cu_seqlens_q, err)) != SY_OK)
        return st;
    int64_t B = a->cu_seqlens_q.shape[0] - 1;
    if (B < 0)
        return sy_fail(err, SY_E_INVALID, "%s: cu_seqlens_q is empty; it holds B + 1 offsets", op);
    if (!cu_q)
        return sy_fail(err, SY_E_INVALID, "%s: no host copy of cu_seqlens_q to check", op);
    if ((st = check_cu_values(op, "cu_seqlens_q", cu_q, B, a->q.shape[0], err)) != SY_OK)
        return st;
    return check_pages(op, &a->geom, &a->block_tables, &a->context_lens, B, a->window, block_tables_host,
                       context_lens_host, cu_q, err);
}
