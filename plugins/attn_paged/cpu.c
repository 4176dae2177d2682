/* attn_paged ops on the host: the decode and prefill drivers around attn_cpu_core.
 *
 * Scratch: all of it (K/V tiles, scores, query rows, split-K partials) comes from the context's
 * workspace, which init reserves through sy_host_api.workspace_alloc and a call grows when its
 * shape needs more (a host API without workspace calls falls back to the C heap: stand-alone use).
 * Nothing is allocated per call once the workspace has reached the largest shape seen.
 *
 * Split-K: num_splits = 0 means 1 here: one host thread gains nothing from splitting, and a split
 * count only changes rounding (tests/attention checks 1, 2, 3 and 7 against each other). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_cpu_core.h"
#include "attn_paged.h"
#include "sy_numeric.h"
#include "sy_op_check.h"

enum {
    QUERIES_PER_BLOCK = 16, /* prefill queries sharing each loaded K/V tile */
    MAX_SPLITS = 1024
};

/* Reserved at init: head dim 128, a GQA group of 16 and 8 splits cover the common models. */
enum { INIT_HEAD_DIM = 128, INIT_GROUP = 16, INIT_SPLITS = 8 };

typedef struct scratch {
    float *core; /* sy_attn_cpu_partial's tiles and scores */
    float *q;    /* [rows][D] */
    float *m;    /* [parts][rows] */
    float *l;
    float *acc;  /* [parts][rows][D] */
    float *out;  /* [D] */
    int64_t *lo; /* [rows] */
    int64_t *hi;
} scratch;

static size_t round64(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

/* Sizes of the pieces, in order; with base != NULL also points s at them. Returns the total. */
static size_t layout_scratch(char *base, uint32_t rows, uint32_t parts, uint32_t D, scratch *s)
{
    size_t f = sizeof(float), sizes[8] = {
        round64(sy_attn_cpu_scratch_floats(rows, D) * f), round64((size_t)rows * D * f),
        round64((size_t)parts * rows * f),                round64((size_t)parts * rows * f),
        round64((size_t)parts * rows * D * f),           round64((size_t)D * f),
        round64((size_t)rows * sizeof(int64_t)),          round64((size_t)rows * sizeof(int64_t)),
    };
    void **slots[8] = {(void **)&s->core, (void **)&s->q,   (void **)&s->m,  (void **)&s->l,
                       (void **)&s->acc,  (void **)&s->out, (void **)&s->lo, (void **)&s->hi};
    size_t off = 0;
    for (int i = 0; i < 8; i++) {
        if (base)
            *slots[i] = base + off;
        off += sizes[i];
    }
    return off;
}

static sy_status reserve_scratch(attn_paged_ctx *ctx, uint32_t rows, uint32_t parts, uint32_t D, scratch *s,
                                 sy_error *err)
{
    void *base;
    sy_status st = sy_cpu_workspace_reserve(&ctx->ws, layout_scratch(NULL, rows, parts, D, s), &base, err);
    if (st == SY_OK)
        layout_scratch(base, rows, parts, D, s);
    return st;
}

sy_status sy_attn_paged_cpu_init(const sy_host_api *host, void **out, sy_error *err)
{
    attn_paged_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return sy_op_fail(err, SY_E_NOMEM, "attn_paged: out of host memory for the context");
    ctx->ws.host = host;
    scratch s;
    sy_status st = reserve_scratch(ctx, INIT_GROUP * QUERIES_PER_BLOCK, INIT_SPLITS, INIT_HEAD_DIM, &s, err);
    if (st != SY_OK) {
        free(ctx);
        return st;
    }
    *out = ctx;
    return SY_OK;
}

void sy_attn_paged_cpu_fini(void *ctx)
{
    attn_paged_ctx *c = ctx;
    if (!c)
        return;
    sy_cpu_workspace_release(&c->ws);
    free(c);
}

static int float_io(int32_t dtype)
{
    return dtype == SY_DTYPE_F32 || dtype == SY_DTYPE_BF16;
}

static int kv_element(int32_t dtype)
{
    return float_io(dtype) || dtype == SY_DTYPE_FP8_E4M3;
}

/* Heads head0 .. head0 + n - 1 of row `row` of a [rows, heads, D] f32 / bf16 tensor, to f32. */
static void load_heads(const sy_tensor *t, int64_t row, int64_t head0, uint32_t n, uint32_t D, float *dst)
{
    for (uint32_t i = 0; i < n; i++) {
        int64_t base = row * t->stride[0] + (head0 + i) * t->stride[1];
        for (uint32_t d = 0; d < D; d++)
            dst[(size_t)i * D + d] = t->dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)t->data)[base + d])
                                                               : ((const float *)t->data)[base + d];
    }
}

static void store_head(const sy_tensor *t, int64_t row, int64_t head, const float *src, uint32_t D)
{
    int64_t base = row * t->stride[0] + head * t->stride[1];
    for (uint32_t d = 0; d < D; d++) {
        if (t->dtype == SY_DTYPE_BF16)
            ((uint16_t *)t->data)[base + d] = sy_f32_to_bf16(src[d]);
        else
            ((float *)t->data)[base + d] = src[d];
    }
}

/* fp8 K/V read through 256-entry tables with the scales folded in. */
static void set_dequant(sy_attn_kv_view *kv, float k_scale, float v_scale, float luts[2][256])
{
    kv->k_lut = kv->v_lut = NULL;
    if (kv->dtype != SY_DTYPE_FP8_E4M3)
        return;
    sy_attn_cpu_fp8_lut(k_scale, luts[0]);
    sy_attn_cpu_fp8_lut(v_scale, luts[1]);
    kv->k_lut = luts[0];
    kv->v_lut = luts[1];
}

static sy_status check_heads(const char *op, const sy_tensor *q, const sy_tensor *out, uint32_t kv_heads,
                             uint32_t D, sy_error *err)
{
    if (!float_io(q->dtype) || out->dtype != q->dtype)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: q and out must both be f32 or bf16 (got %s and %s)", op,
                          sy_op_dtype_name(q->dtype), sy_op_dtype_name(out->dtype));
    if (q->ndim != 3 || q->shape[2] != D || kv_heads == 0 || q->shape[1] % kv_heads != 0 || q->shape[1] == 0)
        return sy_op_fail(err, SY_E_INVALID, "%s: q must be [rows, Hq, %u] with Hq a multiple of %u KV heads", op, D,
                          kv_heads);
    return SY_OK;
}

/* The pool's addressing (sy_kv_addr.h), for the layouts and store dtypes read here, and the
 * checks every op over the pool makes first (an initialized context, q and out against it). */
static sy_status pool_call(const char *op, const void *ctx, const sy_kv_geometry *g, const sy_tensor *q,
                           const sy_tensor *out, sy_kv_dims *dims, sy_error *err)
{
    if (!ctx)
        return sy_op_fail(err, SY_E_INVALID, "%s: the plugin was not initialized (init gives the context)", op);
    *dims = sy_kv_dims_of(g);
    dims->vec = sy_kv_vec_for(g->layout, g->store_dtype);
    if ((g->layout != SY_LAYOUT_NHD && g->layout != SY_LAYOUT_VECTORIZED_5D) || !kv_element(g->store_dtype))
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: layout %u with store %s is not read here (nhd or vectorized_5d; "
                          "f32, bf16, fp8_e4m3)", op, g->layout, sy_op_dtype_name(g->store_dtype));
    if (g->page_size == 0 || dims->vec == 0 || g->page_size % dims->vec || g->head_dim % dims->vec)
        return sy_op_fail(err, SY_E_INVALID, "%s: page_size %u and head_dim %u must be multiples of X = %u", op,
                          g->page_size, g->head_dim, dims->vec);
    return check_heads(op, q, out, g->kv_heads, g->head_dim, err);
}

static sy_status decode_paged(void *vctx, sy_stream stream, const sy_attn_decode_args *a, sy_error *err)
{
    static const char op[] = "attn_paged.decode_paged";
    (void)stream;
    attn_paged_ctx *ctx = vctx;
    const sy_kv_geometry *g = &a->geom;
    const uint32_t D = g->head_dim, H = g->kv_heads;
    sy_kv_dims dims;
    sy_status st = pool_call(op, ctx, g, &a->q, &a->out, &dims, err);
    if (st != SY_OK)
        return st;
    if (a->num_splits < 0 || a->num_splits > MAX_SPLITS)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: num_splits %d is outside 0..%d", op, a->num_splits, MAX_SPLITS);
    const uint32_t group = (uint32_t)(a->q.shape[1] / H), splits = a->num_splits > 0 ? (uint32_t)a->num_splits : 1;
    scratch s;
    if ((st = reserve_scratch(ctx, group, splits, D, &s, err)) != SY_OK)
        return st;
    float luts[2][256];
    sy_attn_kv_view kv = {.dtype = g->store_dtype, .k = a->k_cache, .v = a->v_cache, .head_dim = D, .dims = dims};
    set_dequant(&kv, a->k_scale, a->v_scale, luts);
    const int32_t *lens = a->context_lens.data, *tables = a->block_tables.data;
    const float *sinks = a->sinks.data;
    for (int64_t b = 0; b < a->q.shape[0]; b++) {
        int64_t len = lens[b * a->context_lens.stride[0]];
        int64_t lo = a->window > 0 && len > a->window ? len - a->window : 0;
        int64_t span = (len - lo + splits - 1) / splits;
        kv.block_table = tables + b * a->block_tables.stride[0];
        for (uint32_t h = 0; h < H; h++) {
            load_heads(&a->q, b, (int64_t)h * group, group, D, s.q);
            for (uint32_t p = 0; p < splits; p++) {
                int64_t split_lo = lo + p * span, split_hi = split_lo + span < len ? split_lo + span : len;
                for (uint32_t r = 0; r < group; r++) {
                    s.lo[r] = split_lo;
                    s.hi[r] = split_hi;
                }
                sy_attn_rows rows = {group, s.q, s.lo, s.hi, s.m + (size_t)p * group, s.l + (size_t)p * group,
                                     s.acc + (size_t)p * group * D};
                sy_attn_cpu_partial(&kv, h, &rows, a->scale, s.core);
            }
            for (uint32_t r = 0; r < group; r++) {
                int64_t head = (int64_t)h * group + r;
                sy_attn_cpu_combine(splits, group, D, s.m + r, s.l + r, s.acc + (size_t)r * D,
                                    sinks ? &sinks[head * a->sinks.stride[0]] : NULL, s.out);
                store_head(&a->out, b, head, s.out, D);
            }
        }
    }
    return SY_OK;
}

/* Keys query i of a sequence sees: it sits at position p = Lk - Lq + i (a cached prefix comes
 * first); causal or windowed, keys up to p; windowed, the last W of them. */
static void query_range(int64_t lq, int64_t lk, int64_t i, int32_t causal, int32_t window, int64_t *lo, int64_t *hi)
{
    int64_t p = lk - lq + i;
    *hi = causal || window > 0 ? p + 1 : lk;
    *lo = window > 0 && p + 1 > window ? p + 1 - window : 0;
}

/* Where a prefill's keys lie: linear rows (row0 and the key count from cu_seqlens_k) or a
 * sequence's pages (its block table row and context length). */
typedef struct key_source {
    const int32_t *cu_k;
    const int32_t *lens, *tables;
    int64_t lens_stride, table_stride;
} key_source;

/* Points kv at sequence b's keys; returns how many it has. */
static int64_t sequence_keys(const key_source *src, int64_t b, sy_attn_kv_view *kv)
{
    if (src->cu_k) {
        kv->row0 = src->cu_k[b];
        return src->cu_k[b + 1] - src->cu_k[b];
    }
    kv->block_table = src->tables + b * src->table_stride;
    return src->lens[b * src->lens_stride];
}

/* The ragged batch of queries against `kv`, sequence by sequence: QUERIES_PER_BLOCK queries of a
 * sequence share each loaded K/V tile. */
static sy_status prefill_rows(attn_paged_ctx *ctx, const sy_tensor *q, const sy_tensor *out, const sy_tensor *cu_seqlens_q,
                              const sy_tensor *sinks_t, float scale, int32_t causal, int32_t window, uint32_t H,
                              sy_attn_kv_view *kv, const key_source *src, sy_error *err)
{
    const uint32_t D = kv->head_dim, group = (uint32_t)(q->shape[1] / H), max_rows = QUERIES_PER_BLOCK * group;
    scratch s;
    sy_status st = reserve_scratch(ctx, max_rows, 1, D, &s, err);
    if (st != SY_OK)
        return st;
    const int32_t *cu_q = cu_seqlens_q->data;
    const float *sinks = sinks_t->data;
    for (int64_t b = 0; b + 1 < cu_seqlens_q->shape[0]; b++) {
        int64_t q0 = cu_q[b], lq = cu_q[b + 1] - q0, lk = sequence_keys(src, b, kv);
        for (int64_t i0 = 0; i0 < lq; i0 += QUERIES_PER_BLOCK) {
            uint32_t nq = (uint32_t)(lq - i0 < QUERIES_PER_BLOCK ? lq - i0 : QUERIES_PER_BLOCK);
            for (uint32_t h = 0; h < H; h++) {
                for (uint32_t i = 0; i < nq; i++) {
                    load_heads(q, q0 + i0 + i, (int64_t)h * group, group, D, s.q + (size_t)i * group * D);
                    int64_t lo, hi;
                    query_range(lq, lk, i0 + i, causal, window, &lo, &hi);
                    for (uint32_t r = 0; r < group; r++) {
                        s.lo[i * group + r] = lo;
                        s.hi[i * group + r] = hi;
                    }
                }
                sy_attn_rows rows = {nq * group, s.q, s.lo, s.hi, s.m, s.l, s.acc};
                sy_attn_cpu_partial(kv, h, &rows, scale, s.core);
                for (uint32_t row = 0; row < nq * group; row++) {
                    int64_t head = (int64_t)h * group + row % group;
                    sy_attn_cpu_combine(1, 1, D, s.m + row, s.l + row, s.acc + (size_t)row * D,
                                        sinks ? &sinks[head * sinks_t->stride[0]] : NULL, s.out);
                    store_head(out, q0 + i0 + row / group, head, s.out, D);
                }
            }
        }
    }
    return SY_OK;
}

static sy_status prefill_linear(void *vctx, sy_stream stream, const sy_attn_prefill_args *a, sy_error *err)
{
    static const char op[] = "attn_paged.prefill_linear";
    (void)stream;
    attn_paged_ctx *ctx = vctx;
    if (!ctx)
        return sy_op_fail(err, SY_E_INVALID, "%s: the plugin was not initialized (init gives the context)", op);
    if (!kv_element(a->k.dtype) || a->v.dtype != a->k.dtype || a->k.ndim != 3 || a->v.ndim != 3)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: k and v must be [T, Hkv, D] f32, bf16 or fp8_e4m3 (got %s, %s)",
                          op, sy_op_dtype_name(a->k.dtype), sy_op_dtype_name(a->v.dtype));
    const uint32_t D = (uint32_t)a->k.shape[2], H = (uint32_t)a->k.shape[1];
    sy_status st = check_heads(op, &a->q, &a->out, H, D, err);
    if (st != SY_OK)
        return st;
    float luts[2][256];
    sy_attn_kv_view kv = {.dtype = a->k.dtype, .k = a->k.data, .v = a->v.data, .head_dim = D,
                          .k_strides = {a->k.stride[0], a->k.stride[1]}, .v_strides = {a->v.stride[0], a->v.stride[1]}};
    set_dequant(&kv, a->k_scale, a->v_scale, luts);
    const key_source src = {.cu_k = a->cu_seqlens_k.data};
    return prefill_rows(ctx, &a->q, &a->out, &a->cu_seqlens_q, &a->sinks, a->scale, a->causal, a->window, H, &kv, &src,
                        err);
}

static sy_status prefill_paged(void *vctx, sy_stream stream, const sy_attn_prefill_paged_args *a, sy_error *err)
{
    static const char op[] = "attn_paged.prefill_paged";
    (void)stream;
    attn_paged_ctx *ctx = vctx;
    const sy_kv_geometry *g = &a->geom;
    const uint32_t D = g->head_dim, H = g->kv_heads;
    sy_kv_dims dims;
    sy_status st = pool_call(op, ctx, g, &a->q, &a->out, &dims, err);
    if (st != SY_OK)
        return st;
    float luts[2][256];
    sy_attn_kv_view kv = {.dtype = g->store_dtype, .k = a->k_cache, .v = a->v_cache, .head_dim = D, .dims = dims};
    set_dequant(&kv, a->k_scale, a->v_scale, luts);
    const key_source src = {.lens = a->context_lens.data, .tables = a->block_tables.data,
                            .lens_stride = a->context_lens.stride[0], .table_stride = a->block_tables.stride[0]};
    return prefill_rows(ctx, &a->q, &a->out, &a->cu_seqlens_q, &a->sinks, a->scale, a->causal, a->window, H, &kv, &src,
                        err);
}

const sy_attention_ops sy_attn_paged_cpu_ops = {
    .struct_size = sizeof(sy_attention_ops),
    .decode_paged = decode_paged,
    .prefill_linear = prefill_linear,
    .prefill_paged = prefill_paged,
};
