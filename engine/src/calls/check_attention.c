/* Call-boundary checks of attention.decode_paged and attention.prefill_linear (checks.h). */
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

sy_status sy_check_decode_args(const sy_attn_decode_args *a, const int32_t *block_tables_host,
                               const int32_t *context_lens_host, sy_error *err)
{
    const char *op = "attention.decode_paged";
    const sy_kv_geometry *g = &a->geom;
    sy_status st;
    if ((st = sy_call_check_args_size(op, a->struct_size, sizeof(sy_attn_decode_args), err)) != SY_OK)
        return st;
    if ((st = sy_check_kv_geometry(op, g, err)) != SY_OK ||
        (st = check_q_out_sinks(op, &a->q, &a->out, &a->sinks, g->kv_heads, g->head_dim, err)) != SY_OK ||
        (st = check_common_scalars(op, a->scale, a->window, err)) != SY_OK ||
        (st = check_fp8_scales(op, g->store_dtype, a->k_scale, a->v_scale, err)) != SY_OK)
        return st;
    if (a->num_splits < 0)
        return sy_fail(err, SY_E_INVALID, "%s: num_splits %d is negative (0 = the plugin chooses)", op, a->num_splits);
    if (!a->k_cache || !a->v_cache)
        return sy_fail(err, SY_E_INVALID, "%s: k_cache or v_cache is NULL", op);
    int64_t B = a->q.shape[0];
    int64_t want_bt[2] = {B, SY_CALL_ANY}, want_b[1] = {B};
    if ((st = sy_call_check_tensor(op, "block_tables", &a->block_tables, SY_CALL_INDEX_DTYPES, 2, want_bt, err)) !=
            SY_OK ||
        (st = sy_call_check_packed(op, "block_tables", &a->block_tables, 1, err)) != SY_OK ||
        (st = sy_call_check_tensor(op, "context_lens", &a->context_lens, SY_CALL_INDEX_DTYPES, 1, want_b, err)) !=
            SY_OK ||
        (st = sy_call_check_packed(op, "context_lens", &a->context_lens, 0, err)) != SY_OK)
        return st;
    if (B > 0 && (!block_tables_host || !context_lens_host))
        return sy_fail(err, SY_E_INVALID, "%s: no host copy of block_tables or context_lens to check", op);
    int64_t max_blocks = a->block_tables.shape[1], row_stride = a->block_tables.stride[0];
    uint64_t P = g->page_size;
    for (int64_t b = 0; b < B; b++) {
        int64_t len = context_lens_host[b];
        if (len < 0)
            return sy_fail(err, SY_E_INVALID, "%s: context_lens[%lld] = %lld is negative", op, (long long)b,
                           (long long)len);
        int64_t pages = (int64_t)(((uint64_t)len + P - 1) / P);
        if (pages > max_blocks)
            return sy_fail(err, SY_E_INVALID,
                           "%s: context_lens[%lld] = %lld needs %lld pages of %llu, block_tables has %lld columns", op,
                           (long long)b, (long long)len, (long long)pages, (unsigned long long)P,
                           (long long)max_blocks);
        /* Only the pages the (windowed) context covers are read: an SWA table holds 0 for freed pages. */
        int64_t first_key = a->window > 0 && len > a->window ? len - a->window : 0;
        for (int64_t j = first_key / (int64_t)P; j < pages; j++) {
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
    if (a->causal != 0 && a->causal != 1)
        return sy_fail(err, SY_E_INVALID, "%s: causal = %d, expected 0 or 1", op, a->causal);
    int64_t any[1] = {SY_CALL_ANY};
    if ((st = sy_call_check_tensor(op, "cu_seqlens_q", &a->cu_seqlens_q, SY_CALL_INDEX_DTYPES, 1, any, err)) != SY_OK ||
        (st = sy_call_check_packed(op, "cu_seqlens_q", &a->cu_seqlens_q, 0, err)) != SY_OK)
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
