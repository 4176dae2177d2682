/* attention cases against attn_paged (cpu), by relative L2 of the output (tolerance.h).
 *
 *   attention.decode_paged  one query per sequence over a paged pool in each layout: the pool is
 *                           written by the layout's cpu reference and copied byte for byte to the
 *                           plugin's backend, so both read the same bf16 / fp8 bytes. Block tables
 *                           scatter the pages; entries the (windowed) context does not cover are 0,
 *                           and page 0 (the padding page) holds NaN, so reading outside the context
 *                           shows. Context lengths are not multiples of the page, and include 1, W
 *                           and W + 1.
 *   attention.prefill_linear  ragged causal (or not) batches over contiguous K/V, with and without a
 *                           cached prefix (Lk > Lq), window and sinks.
 *   attention.prefill_paged  the decode cases' pools, tables and contexts with a chunk of the last
 *                           Lq tokens of each sequence as queries (causal; Lq of 1, a page and
 *                           more, the whole context), for plugins that declare prefill_paged.
 * Sinks are drawn from [1, 7): large enough that a plugin ignoring them misses the tolerance by far
 * even at the longest contexts. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "calls/checks.h"
#include "conformance/cases.h"
#include "conformance/pool.h"
#include "conformance/tolerance.h"
#include "sy_numeric.h"

enum { F32 = SY_DTYPE_F32, BF16 = SY_DTYPE_BF16, FP8 = SY_DTYPE_FP8_E4M3, MAX_BATCH = 4 };

typedef struct heads {
    uint32_t hq, hkv, d;
} heads;

/* gpt-oss (64 q heads, 8 KV heads, head dim 64), then odd ones: GQA 3 at D 40, MQA 6 at D 48,
 * GQA 5 at D 80, and multi-head at D 128. */
static const heads HEADS[] = {{64, 8, 64}, {12, 4, 40}, {6, 1, 48}, {10, 2, 80}, {16, 16, 128}};
enum { GPT_OSS, ODD40, ODD48, ODD80, MHA128 };

typedef struct lengths {
    uint32_t batch;
    int32_t len[MAX_BATCH];
} lengths;

static const lengths CTX1000 = {4, {1000, 1, 129, 77}}, CTX300 = {3, {300, 17, 128}}, CTX16385 = {2, {16385, 4100}};

typedef struct decode_shape {
    uint8_t heads;
    int32_t kv, q;
    uint32_t page_size;
    const lengths *ctx;
    int32_t window;
    uint8_t sinks;
    int32_t splits;
    uint8_t quick;
    uint8_t row_pad; /* q and out rows ROW_PAD wider than their heads (needs row_stride) */
} decode_shape;

static const decode_shape DECODE[] = {
    {GPT_OSS, BF16, BF16, 16, &CTX1000, 0, 1, 0, 1, 0},
    {GPT_OSS, BF16, BF16, 64, &CTX1000, 128, 1, 3, 1, 0},
    {GPT_OSS, BF16, F32, 128, &CTX1000, 128, 0, 1, 0, 0},
    {GPT_OSS, FP8, BF16, 16, &CTX1000, 0, 1, 3, 0, 0},
    {GPT_OSS, FP8, F32, 64, &CTX1000, 128, 1, 0, 1, 0},
    {GPT_OSS, FP8, BF16, 128, &CTX1000, 128, 1, 7, 0, 0},
    {GPT_OSS, BF16, F32, 64, &CTX300, 0, 0, 1, 1, 0},
    {GPT_OSS, FP8, F32, 16, &CTX300, 128, 1, 1, 0, 0},
    {GPT_OSS, F32, F32, 16, &CTX300, 0, 1, 3, 0, 0},
    {GPT_OSS, BF16, BF16, 64, &CTX16385, 0, 1, 0, 0, 0},
    {GPT_OSS, FP8, BF16, 128, &CTX16385, 128, 1, 3, 0, 0},
    {ODD40, BF16, F32, 16, &CTX300, 37, 1, 3, 1, 0},
    {ODD40, FP8, BF16, 64, &CTX300, 0, 0, 1, 0, 0},
    {ODD40, F32, F32, 128, &CTX1000, 37, 1, 7, 0, 0},
    {ODD48, FP8, F32, 16, &CTX1000, 128, 1, 0, 1, 0},
    {ODD48, BF16, BF16, 128, &CTX300, 0, 1, 2, 0, 0},
    {ODD80, BF16, F32, 64, &CTX1000, 0, 1, 3, 0, 0},
    {ODD80, FP8, BF16, 16, &CTX300, 37, 0, 0, 0, 0},
    {MHA128, BF16, BF16, 16, &CTX1000, 128, 1, 3, 0, 0},
    {GPT_OSS, BF16, F32, 16, &CTX300, 128, 1, 3, 1, 1},
    {ODD40, FP8, BF16, 64, &CTX300, 0, 0, 1, 0, 1},
};

typedef struct prefill_shape {
    uint8_t heads;
    int32_t kv, q;
    uint32_t batch;
    int32_t lq[MAX_BATCH], prefix[MAX_BATCH];
    int32_t causal, window;
    uint8_t sinks, quick;
    uint8_t row_pad; /* q, out, k and v rows ROW_PAD wider than their heads (needs row_stride) */
} prefill_shape;

static const prefill_shape PREFILL[] = {
    {GPT_OSS, BF16, BF16, 3, {37, 1, 60}, {0, 0, 0}, 1, 0, 1, 1, 0},
    {GPT_OSS, BF16, F32, 3, {37, 1, 60}, {150, 0, 20}, 1, 128, 1, 1, 0},
    {GPT_OSS, FP8, BF16, 3, {37, 1, 100}, {150, 0, 20}, 1, 0, 1, 0, 0},
    {GPT_OSS, FP8, F32, 2, {64, 70}, {0, 200}, 1, 128, 0, 1, 0},
    {GPT_OSS, F32, F32, 2, {5, 33}, {7, 0}, 1, 0, 1, 0, 0},
    {ODD40, BF16, F32, 3, {5, 64, 3}, {0, 0, 0}, 0, 0, 1, 1, 0},
    {ODD40, BF16, BF16, 3, {5, 64, 3}, {11, 1, 40}, 0, 0, 0, 0, 0},
    {ODD48, FP8, F32, 2, {17, 2}, {50, 3}, 1, 7, 1, 1, 0},
    {GPT_OSS, BF16, BF16, 2, {600, 300}, {1000, 0}, 1, 128, 1, 0, 0},
    {ODD80, BF16, F32, 2, {100, 1}, {0, 500}, 1, 0, 1, 0, 0},
    {GPT_OSS, BF16, F32, 3, {37, 1, 60}, {150, 0, 20}, 1, 128, 1, 1, 1},
    {ODD48, FP8, BF16, 2, {17, 2}, {50, 3}, 1, 7, 1, 0, 1},
};

/* Extra elements a row in row_pad cases: q, k and v as slices of one fused QKV projection's rows. */
enum { ROW_PAD = 24 };

static const float K_SCALE = 0.02f, V_SCALE = 0.03f; /* fp8: values / scale span most of e4m3's range */

static float softmax_scale(uint32_t d)
{
    return (float)(1.0 / sqrt((double)d)); /* 0.125 for gpt-oss's 64 */
}

/* q [rows, Hq, D] in its dtype from N(0, 1), sinks [Hq] from [1, 7). */
typedef struct queries {
    void *q;
    float *sinks;
    size_t q_bytes;
} queries;

static void make_queries(sy_conf_case *c, int64_t rows, const heads *h, int32_t q_dtype, int sinks, queries *out)
{
    size_t n = (size_t)rows * h->hq * h->d;
    out->q_bytes = n * sy_dtype_size(q_dtype);
    out->q = sy_conf_case_random(c, n, q_dtype, 1.0);
    out->sinks = NULL;
    if (sinks) {
        out->sinks = sy_conf_case_host(c, h->hq * sizeof(float));
        sy_conf_fill_uniform(&c->rng, out->sinks, h->hq, 1.0, 7.0);
    }
}

static int reference_caps(sy_conf_case *c, sy_status st, const sy_error *err)
{
    if (st == SY_E_UNSUPPORTED)
        sy_conf_case_unsupported(c, "the cpu reference does not cover this case: %s", err->msg);
    else
        sy_conf_case_call(c, "conformance suite: host check of the reference call", st, err);
    return st == SY_OK;
}

/* rows of `width` elements as rows of width + ROW_PAD, the gaps all-ones bytes (NaN in f32, bf16 and
 * e4m3): a plugin that reads a gap puts NaN into its output. */
static void *widen_rows(sy_conf_case *c, const void *packed, int64_t rows, size_t width, int32_t dtype)
{
    const size_t es = sy_dtype_size(dtype), row = (width + ROW_PAD) * es;
    uint8_t *out = sy_conf_case_host(c, (size_t)rows * row);
    memset(out, 0xFF, (size_t)rows * row);
    for (int64_t r = 0; r < rows; r++)
        memcpy(out + (size_t)r * row, (const uint8_t *)packed + (size_t)r * width * es, width * es);
    return out;
}

/* The plugin's copy of a host tensor [rows, H, D], rows widened by ROW_PAD when `pad`. */
static sy_tensor upload_rows(sy_conf_case *c, sy_tensor t, int pad)
{
    const size_t width = (size_t)(t.shape[1] * t.shape[2]), es = sy_dtype_size(t.dtype);
    const int64_t rows = t.shape[0];
    if (!pad) {
        t.data = sy_conf_case_upload(c, t.data, (size_t)rows * width * es);
        return t;
    }
    t.data = sy_conf_case_upload(c, widen_rows(c, t.data, rows, width, t.dtype), (size_t)rows * (width + ROW_PAD) * es);
    t.stride[0] = (int64_t)(width + ROW_PAD);
    return t;
}

/* A poisoned device output like t (whose data is the reference's host output), rows widened when `pad`. */
static sy_tensor output_rows(sy_conf_case *c, sy_tensor t, int pad)
{
    const size_t width = (size_t)(t.shape[1] * t.shape[2]), es = sy_dtype_size(t.dtype);
    t.data = sy_conf_case_dev(c, (size_t)t.shape[0] * (width + (pad ? ROW_PAD : 0)) * es);
    if (pad)
        t.stride[0] = (int64_t)(width + ROW_PAD);
    return t;
}

/* The output against the reference's, by the attention tolerance of the call's narrowest dtype. Rows
 * wider than their heads come back whole: the gaps must still hold the poison. */
static void compare_out(sy_conf_case *c, const sy_tensor *out, const void *ref, int64_t rows, const heads *h,
                        int32_t q_dtype, int32_t kv_dtype)
{
    const size_t width = (size_t)h->hq * h->d, es = sy_dtype_size(q_dtype), n = (size_t)rows * width;
    const size_t row = rows > 1 ? (size_t)out->stride[0] : width;
    uint8_t *got = sy_conf_case_download(c, out->data, ((size_t)(rows - 1) * row + width) * es);
    if (!got)
        return;
    if (row > width) {
        for (int64_t r = 0; r + 1 < rows; r++)
            for (size_t i = width * es; i < row * es; i++)
                if (got[(size_t)r * row * es + i] != 0xFF) {
                    sy_conf_case_fail(c, "out: the plugin wrote between rows (row %lld, byte %zu past its heads)",
                                      (long long)r, i - width * es);
                    return;
                }
        for (int64_t r = 1; r < rows; r++)
            memmove(got + (size_t)r * width * es, got + (size_t)r * row * es, width * es);
    }
    sy_conf_where w = sy_conf_shape(3, rows, h->hq, h->d, 0);
    int32_t narrowest = sy_conf_narrower(q_dtype, kv_dtype);
    sy_conf_check_close(c, "out", q_dtype, got, ref, n, sy_conf_tolerance(SY_CONF_OP_ATTENTION, narrowest), &w);
    sy_conf_check_rows_close(c, "out rows", q_dtype, got, ref, (uint64_t)rows * h->hq, h->d,
                             sy_conf_tolerance(SY_CONF_OP_ATTENTION_ROW, narrowest), &w);
}

/* ------------------------------------------------------------------------------------------ */
/* decode_paged */

static void decode_name(char *buf, size_t len, const void *row, const void *user)
{
    const decode_shape *s = row;
    uint32_t layout = *(const uint32_t *)user;
    const heads *h = &HEADS[s->heads];
    char tag[32], window[24];
    int32_t longest = 0;
    for (uint32_t b = 0; b < s->ctx->batch; b++)
        longest = s->ctx->len[b] > longest ? s->ctx->len[b] : longest;
    snprintf(window, sizeof window, s->window ? "window%d" : "nowindow", s->window);
    snprintf(buf, len, "attention.decode_paged/%s/%s/q%s/P%u/Hq%uHkv%uD%u/B%u/ctx%d/%s/%s/splits%d%s",
             sy_conf_layout_tag(layout, tag, sizeof tag), sy_conf_dtype_tag(s->kv), sy_conf_dtype_tag(s->q),
             s->page_size, h->hq, h->hkv, h->d, s->ctx->batch, longest, window, s->sinks ? "sinks" : "nosinks",
             s->splits, s->row_pad ? "/rowstride" : "");
}

/* The queries of sequence b at the end of its context: one for decode, a chunk for prefill_paged
 * (chunk NULL: decode). */
static int32_t chunk_of(const decode_shape *s, const int32_t *chunk, uint32_t b)
{
    int32_t len = s->ctx->len[b];
    return chunk ? (chunk[b] < len ? chunk[b] : len) : 1;
}

/* Pages of each sequence scattered over the pool: block_tables [B, max_blocks], 0 where a page is
 * past the context or wholly before the first query's window (an SWA table's freed pages). */
static int32_t *make_block_tables(sy_conf_case *c, const decode_shape *s, const int32_t *chunk, uint32_t num_pages,
                                  uint32_t max_blocks)
{
    const uint32_t P = s->page_size;
    int32_t *bt = sy_conf_case_host(c, (size_t)s->ctx->batch * max_blocks * sizeof(int32_t));
    uint32_t *perm = sy_conf_case_host(c, (size_t)(num_pages - 1) * sizeof *perm);
    sy_conf_shuffle_u32(&c->rng, perm, num_pages - 1);
    uint32_t next = 0;
    for (uint32_t b = 0; b < s->ctx->batch; b++) {
        int32_t len = s->ctx->len[b], first_pos = len - chunk_of(s, chunk, b);
        uint32_t pages = ((uint32_t)len + P - 1) / P;
        uint32_t first = s->window > 0 && first_pos + 1 > s->window ? (uint32_t)(first_pos + 1 - s->window) / P : 0;
        for (uint32_t j = 0; j < max_blocks; j++)
            bt[b * max_blocks + j] = j < pages && j >= first ? (int32_t)(1 + perm[next + j]) : 0;
        next += pages;
    }
    return bt;
}

/* Window edges carry large values: the first key inside a window and the last one outside it (when
 * its page is still mapped) get V * EDGE_GAIN, so a window of W - 1 or W + 1 keys moves the output
 * far beyond any tolerance. v holds the token of slot P + t at row t. */
enum { EDGE_GAIN = 30 };

static void amplify_window_edges(const decode_shape *s, const int32_t *bt, uint32_t max_blocks, size_t row, float *v)
{
    const int32_t P = (int32_t)s->page_size;
    for (uint32_t b = 0; b < s->ctx->batch && s->window > 0; b++) {
        int32_t len = s->ctx->len[b];
        for (int32_t j = len - s->window - 1; j <= len - s->window; j++) {
            int32_t page = j >= 0 ? bt[b * max_blocks + (uint32_t)(j / P)] : 0;
            if (page <= 0)
                continue;
            float *x = v + (size_t)(page * P + j % P - P) * row;
            for (size_t i = 0; i < row; i++)
                x[i] *= EDGE_GAIN;
        }
    }
}

/* A prefill_paged case: a decode shape and the chunk of each sequence's last tokens it queries. */
typedef struct prefill_paged_shape {
    decode_shape base;
    int32_t chunk[MAX_BATCH];
} prefill_paged_shape;

/* The call of either op over one pool: decode_paged (chunk NULL), or prefill_paged. */
typedef struct paged_call {
    sy_attn_decode_args d;
    sy_attn_prefill_paged_args p;
} paged_call;

static sy_status paged_caps(const sy_plugin_desc *desc, const paged_call *a, const int32_t *chunk, sy_error *err)
{
    return chunk ? sy_check_prefill_paged_caps(desc, &a->p, err) : sy_check_decode_caps(desc, &a->d, err);
}

static sy_status paged_args(const paged_call *a, const int32_t *chunk, const int32_t *bt, const int32_t *lens,
                            const int32_t *cu_q, sy_error *err)
{
    return chunk ? sy_check_prefill_paged_args(&a->p, bt, lens, cu_q, err) : sy_check_decode_args(&a->d, bt, lens, err);
}

static sy_status paged_run(const sy_plugin_desc *desc, void *ctx, sy_stream stream, const paged_call *a,
                           const int32_t *chunk, sy_error *err)
{
    if (!chunk)
        return ((const sy_attention_ops *)desc->ops)->decode_paged(ctx, stream, &a->d, err);
    sy_attn_prefill_paged_fn *fn = sy_attention_prefill_paged(desc->ops);
    return fn ? fn(ctx, stream, &a->p, err) : SY_E_UNSUPPORTED;
}

/* Fills both forms of the call from the decode form's fields; the prefill form adds cu_seqlens_q
 * and causal. */
static void paged_sync(paged_call *a, sy_tensor cu_q)
{
    sy_attn_prefill_paged_args *p = &a->p;
    const sy_attn_decode_args *d = &a->d;
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->geom = d->geom;
    p->q = d->q;
    p->out = d->out;
    p->k_cache = d->k_cache;
    p->v_cache = d->v_cache;
    p->block_tables = d->block_tables;
    p->context_lens = d->context_lens;
    p->cu_seqlens_q = cu_q;
    p->sinks = d->sinks;
    p->scale = d->scale;
    p->causal = 1;
    p->window = d->window;
    p->k_scale = d->k_scale;
    p->v_scale = d->v_scale;
}

static void paged_case(sy_conf_case *c, const decode_shape *s, uint32_t layout, const int32_t *chunk)
{
    const heads *h = &HEADS[s->heads];
    const uint32_t P = s->page_size, B = s->ctx->batch;
    const char *op = chunk ? "prefill_paged" : "decode_paged";
    uint32_t used = 0, max_blocks = 0;
    int32_t cu_q[MAX_BATCH + 1] = {0};
    for (uint32_t b = 0; b < B; b++) {
        uint32_t pages = ((uint32_t)s->ctx->len[b] + P - 1) / P;
        used += pages;
        max_blocks = pages > max_blocks ? pages : max_blocks;
        cu_q[b + 1] = cu_q[b] + chunk_of(s, chunk, b);
    }
    max_blocks += 1;
    uint32_t num_pages = used + 4; /* the padding page and three no sequence owns */
    const int64_t Tq = cu_q[B];

    /* Caps first, on the geometry the call will carry. */
    sy_conf_pool pool;
    sy_error err = {{0}};
    paged_call a;
    memset(&a, 0, sizeof a);
    a.d.struct_size = sizeof a.d;
    int64_t q_shape[3] = {Tq, h->hq, h->d}, bt_shape[2] = {B, max_blocks}, b_shape[1] = {B}, hq_shape[1] = {h->hq},
            cu_shape[1] = {B + 1};
    static int32_t placeholder;
    a.d.q = sy_tensor_contiguous(&placeholder, s->q, 3, q_shape);
    if (s->row_pad)
        a.d.q.stride[0] += ROW_PAD;
    a.d.sinks = s->sinks ? sy_tensor_contiguous(&placeholder, SY_DTYPE_F32, 1, hq_shape) : a.d.sinks;
    a.d.window = s->window;
    a.d.num_splits = s->splits;
    a.d.geom.layout = layout;
    a.d.geom.store_dtype = s->kv;
    a.d.geom.page_size = P;
    a.d.geom.head_dim = h->d;
    a.d.geom.kv_heads = h->hkv;
    paged_sync(&a, (sy_tensor){0});
    sy_status cst = paged_caps(c->target->p.desc, &a, chunk, &err);
    if (cst == SY_E_UNSUPPORTED) {
        sy_conf_case_unsupported(c, "%s", err.msg);
        return;
    }
    if (!sy_conf_case_call(c, "conformance suite: caps check", cst, &err))
        return;
    if (!sy_conf_pool_make(c, layout, s->kv, num_pages, P, h->hkv, h->d, K_SCALE, V_SCALE, &pool))
        return;

    /* Every slot of pages 1.. holds a token; page 0 keeps its NaN poison. */
    int64_t T = (int64_t)(num_pages - 1) * P;
    size_t n = (size_t)T * h->hkv * h->d;
    float *k = sy_conf_case_random(c, n, F32, 1.0), *v = sy_conf_case_random(c, n, F32, 1.0);
    int32_t *bt = make_block_tables(c, s, chunk, num_pages, max_blocks);
    amplify_window_edges(s, bt, max_blocks, (size_t)h->hkv * h->d, v);
    int32_t *slots = sy_conf_case_host(c, (size_t)T * sizeof(int32_t));
    for (int64_t t = 0; t < T; t++)
        slots[t] = (int32_t)(P + t);
    sy_kv_write_args wa = sy_conf_pool_write_args(&pool, F32, T, k, v, slots);
    if (!sy_conf_pool_write(c, &pool, &wa))
        return;
    int32_t *lens = sy_conf_case_host(c, B * sizeof(int32_t));
    memcpy(lens, s->ctx->len, B * sizeof(int32_t));
    int32_t *cq = sy_conf_case_host(c, sizeof cu_q);
    memcpy(cq, cu_q, sizeof cu_q);
    queries qs;
    make_queries(c, Tq, h, s->q, s->sinks, &qs);

    /* Reference on the host. */
    a.d.geom = pool.geom;
    a.d.scale = softmax_scale(h->d);
    a.d.k_scale = pool.k_scale;
    a.d.v_scale = pool.v_scale;
    a.d.block_tables = sy_tensor_contiguous(bt, SY_DTYPE_I32, 2, bt_shape);
    a.d.context_lens = sy_tensor_contiguous(lens, SY_DTYPE_I32, 1, b_shape);
    a.d.sinks = qs.sinks ? sy_tensor_contiguous(qs.sinks, SY_DTYPE_F32, 1, hq_shape) : a.d.sinks;
    paged_call ra = a;
    const sy_conf_plugin_ctx *ref = sy_conf_case_reference(c, SY_KIND_ATTENTION, "attn_paged");
    if (!ref)
        return;
    void *ref_out = sy_conf_case_host(c, qs.q_bytes);
    ra.d.q = sy_tensor_contiguous(qs.q, s->q, 3, q_shape);
    ra.d.out = sy_tensor_contiguous(ref_out, s->q, 3, q_shape);
    ra.d.k_cache = pool.k;
    ra.d.v_cache = pool.v;
    paged_sync(&ra, sy_tensor_contiguous(cq, SY_DTYPE_I32, 1, cu_shape));
    char what[64];
    snprintf(what, sizeof what, "reference %s", op);
    if (!reference_caps(c, paged_caps(ref->desc, &ra, chunk, &err), &err) ||
        !sy_conf_case_call(c, "conformance suite: host check of the reference call",
                           paged_args(&ra, chunk, bt, lens, cq, &err), &err) ||
        !sy_conf_case_call(c, what, paged_run(ref->desc, ref->ctx, NULL, &ra, chunk, &err), &err))
        return;

    /* The plugin on its backend. */
    paged_call ta = ra;
    ta.d.q = upload_rows(c, ra.d.q, s->row_pad);
    ta.d.out = output_rows(c, ra.d.out, s->row_pad);
    ta.d.k_cache = sy_conf_case_upload(c, pool.k, pool.k_bytes);
    ta.d.v_cache = sy_conf_case_upload(c, pool.v, pool.v_bytes);
    ta.d.block_tables.data = sy_conf_case_upload(c, bt, (size_t)B * max_blocks * sizeof(int32_t));
    ta.d.context_lens.data = sy_conf_case_upload(c, lens, B * sizeof(int32_t));
    if (qs.sinks)
        ta.d.sinks.data = sy_conf_case_upload(c, qs.sinks, h->hq * sizeof(float));
    sy_tensor ta_cu = ra.p.cu_seqlens_q;
    ta_cu.data = sy_conf_case_upload(c, cq, sizeof cu_q);
    paged_sync(&ta, ta_cu);
    snprintf(what, sizeof what, "host check of %s", op);
    if (!sy_conf_case_ok(c) || !sy_conf_case_call(c, what, paged_args(&ta, chunk, bt, lens, cq, &err), &err) ||
        !sy_conf_case_op_begin(c))
        return;
    if (!sy_conf_case_op_end(c, op, paged_run(c->target->p.desc, c->target->p.ctx, c->target->p.side->stream, &ta, chunk,
                                              &err),
                             &err))
        return;
    compare_out(c, &ta.d.out, ref_out, Tq, h, s->q, s->kv);
}

static void decode_case(sy_conf_case *c, const void *row, const void *user)
{
    paged_case(c, row, *(const uint32_t *)user, NULL);
}

/* Chunks of 1 to a few hundred queries, some a whole context, some crossing a page or a window. */
static const prefill_paged_shape PREFILL_PAGED[] = {
    {{GPT_OSS, BF16, BF16, 16, &CTX1000, 0, 1, 0, 1, 0}, {37, 1, 64, 77}},
    {{GPT_OSS, BF16, F32, 64, &CTX1000, 128, 1, 0, 1, 0}, {200, 1, 129, 5}},
    {{GPT_OSS, FP8, BF16, 16, &CTX300, 128, 1, 0, 0, 0}, {64, 17, 100}},
    {{GPT_OSS, F32, F32, 16, &CTX300, 0, 1, 0, 0, 0}, {33, 5, 128}},
    {{ODD40, BF16, F32, 16, &CTX300, 37, 1, 0, 1, 0}, {70, 17, 1}},
    {{ODD80, FP8, BF16, 16, &CTX300, 37, 0, 0, 0, 0}, {40, 3, 64}},
    {{MHA128, BF16, BF16, 16, &CTX1000, 128, 1, 0, 0, 0}, {100, 1, 129, 30}},
    {{GPT_OSS, BF16, F32, 16, &CTX300, 128, 1, 0, 1, 1}, {65, 2, 128}},
};

static void prefill_paged_name(char *buf, size_t len, const void *row, const void *user)
{
    const prefill_paged_shape *s = row;
    const decode_shape *d = &s->base;
    const heads *h = &HEADS[d->heads];
    char tag[32], window[24];
    int32_t longest = 0, lq = 0;
    for (uint32_t b = 0; b < d->ctx->batch; b++) {
        longest = d->ctx->len[b] > longest ? d->ctx->len[b] : longest;
        lq += chunk_of(d, s->chunk, b);
    }
    snprintf(window, sizeof window, d->window ? "window%d" : "nowindow", d->window);
    snprintf(buf, len, "attention.prefill_paged/%s/%s/q%s/P%u/Hq%uHkv%uD%u/B%u/ctx%d/Lq%d/%s/%s%s",
             sy_conf_layout_tag(*(const uint32_t *)user, tag, sizeof tag), sy_conf_dtype_tag(d->kv),
             sy_conf_dtype_tag(d->q), d->page_size, h->hq, h->hkv, h->d, d->ctx->batch, longest, lq, window,
             d->sinks ? "sinks" : "nosinks", d->row_pad ? "/rowstride" : "");
}

static void prefill_paged_case(sy_conf_case *c, const void *row, const void *user)
{
    const prefill_paged_shape *s = row;
    paged_case(c, &s->base, *(const uint32_t *)user, s->chunk);
}

/* ------------------------------------------------------------------------------------------ */
/* prefill_linear */

static void prefill_name(char *buf, size_t len, const void *row, const void *user)
{
    const prefill_shape *s = row;
    (void)user;
    const heads *h = &HEADS[s->heads];
    int32_t lq = 0, prefix = 0;
    for (uint32_t b = 0; b < s->batch; b++) {
        lq += s->lq[b];
        prefix += s->prefix[b];
    }
    char window[24];
    snprintf(window, sizeof window, s->window ? "window%d" : "nowindow", s->window);
    snprintf(buf, len, "attention.prefill_linear/%s/q%s/Hq%uHkv%uD%u/B%u/Lq%d/prefix%d/%s/%s/%s%s",
             sy_conf_dtype_tag(s->kv), sy_conf_dtype_tag(s->q), h->hq, h->hkv, h->d, s->batch, lq, prefix,
             s->causal ? "causal" : "noncausal", window, s->sinks ? "sinks" : "nosinks", s->row_pad ? "/rowstride" : "");
}

/* K or V [Tk, Hkv, D] from N(0, 1) in the kv dtype: f32 / bf16 rounded, fp8 as fp8(x / scale).
 * With edge_stride > 0 every edge_stride-th row is EDGE_GAIN / 4 times larger: some query's window
 * starts at each, so a window one key too wide or too narrow shows (the decode cases place theirs
 * exactly at the edges). */
static void *make_keys(sy_conf_case *c, int64_t rows, size_t row, int32_t dtype, float scale, int64_t edge_stride)
{
    size_t n = (size_t)rows * row;
    float *f = sy_conf_case_random(c, n, F32, 1.0);
    for (int64_t r = 0; edge_stride > 0 && r < rows; r += edge_stride)
        for (size_t i = 0; i < row; i++)
            f[(size_t)r * row + i] *= EDGE_GAIN;
    uint8_t *out = sy_conf_case_host(c, n * sy_dtype_size(dtype));
    if (dtype == FP8)
        for (size_t i = 0; i < n; i++)
            out[i] = sy_f32_to_fp8e4m3(f[i] / scale);
    else
        sy_conf_store(dtype, out, f, n);
    return out;
}

static void prefill_case(sy_conf_case *c, const void *row, const void *user)
{
    const prefill_shape *s = row;
    (void)user;
    const heads *h = &HEADS[s->heads];
    const uint32_t B = s->batch;
    int32_t cu_q[MAX_BATCH + 1] = {0}, cu_k[MAX_BATCH + 1] = {0};
    for (uint32_t b = 0; b < B; b++) {
        cu_q[b + 1] = cu_q[b] + s->lq[b];
        cu_k[b + 1] = cu_k[b] + s->lq[b] + s->prefix[b];
    }
    const int64_t Tq = cu_q[B], Tk = cu_k[B];
    sy_error err = {{0}};
    sy_attn_prefill_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    int64_t q_shape[3] = {Tq, h->hq, h->d}, k_shape[3] = {Tk, h->hkv, h->d}, cu_shape[1] = {B + 1},
            hq_shape[1] = {h->hq};
    static int32_t placeholder;
    a.q = sy_tensor_contiguous(&placeholder, s->q, 3, q_shape);
    a.k = sy_tensor_contiguous(&placeholder, s->kv, 3, k_shape);
    if (s->row_pad)
        a.q.stride[0] += ROW_PAD, a.k.stride[0] += ROW_PAD;
    a.v = a.k;
    a.sinks = s->sinks ? sy_tensor_contiguous(&placeholder, SY_DTYPE_F32, 1, hq_shape) : a.sinks;
    a.window = s->window;
    sy_status cst = sy_check_prefill_caps(c->target->p.desc, &a, &err);
    if (cst == SY_E_UNSUPPORTED) {
        sy_conf_case_unsupported(c, "%s", err.msg);
        return;
    }
    if (!sy_conf_case_call(c, "conformance suite: caps check", cst, &err))
        return;

    queries qs;
    make_queries(c, Tq, h, s->q, s->sinks, &qs);
    const size_t width = (size_t)h->hkv * h->d;
    void *k = make_keys(c, Tk, width, s->kv, K_SCALE, 0);
    void *v = make_keys(c, Tk, width, s->kv, V_SCALE, s->window ? 31 : 0);
    int32_t *cq = sy_conf_case_host(c, sizeof cu_q), *ck = sy_conf_case_host(c, sizeof cu_k);
    memcpy(cq, cu_q, sizeof cu_q);
    memcpy(ck, cu_k, sizeof cu_k);

    const sy_conf_plugin_ctx *ref = sy_conf_case_reference(c, SY_KIND_ATTENTION, "attn_paged");
    if (!ref)
        return;
    void *ref_out = sy_conf_case_host(c, qs.q_bytes);
    a.q = sy_tensor_contiguous(qs.q, s->q, 3, q_shape);
    a.k = sy_tensor_contiguous(k, s->kv, 3, k_shape);
    a.v = sy_tensor_contiguous(v, s->kv, 3, k_shape);
    a.out = sy_tensor_contiguous(ref_out, s->q, 3, q_shape);
    a.cu_seqlens_q = sy_tensor_contiguous(cq, SY_DTYPE_I32, 1, cu_shape);
    a.cu_seqlens_k = sy_tensor_contiguous(ck, SY_DTYPE_I32, 1, cu_shape);
    a.sinks = qs.sinks ? sy_tensor_contiguous(qs.sinks, SY_DTYPE_F32, 1, hq_shape) : a.sinks;
    a.scale = softmax_scale(h->d);
    a.causal = s->causal;
    a.k_scale = s->kv == FP8 ? K_SCALE : 1.0f;
    a.v_scale = s->kv == FP8 ? V_SCALE : 1.0f;
    const sy_attention_ops *ref_ops = ref->desc->ops;
    if (!reference_caps(c, sy_check_prefill_caps(ref->desc, &a, &err), &err) ||
        !sy_conf_case_call(c, "conformance suite: host check of the reference call",
                           sy_check_prefill_args(&a, cq, ck, &err), &err) ||
        !sy_conf_case_call(c, "reference prefill_linear", ref_ops->prefill_linear(ref->ctx, NULL, &a, &err), &err))
        return;

    sy_attn_prefill_args ta = a;
    ta.q = upload_rows(c, a.q, s->row_pad);
    ta.k = upload_rows(c, a.k, s->row_pad);
    ta.v = upload_rows(c, a.v, s->row_pad);
    ta.out = output_rows(c, a.out, s->row_pad);
    ta.cu_seqlens_q.data = sy_conf_case_upload(c, cq, sizeof cu_q);
    ta.cu_seqlens_k.data = sy_conf_case_upload(c, ck, sizeof cu_k);
    if (qs.sinks)
        ta.sinks.data = sy_conf_case_upload(c, qs.sinks, h->hq * sizeof(float));
    if (!sy_conf_case_ok(c) ||
        !sy_conf_case_call(c, "host check of prefill_linear", sy_check_prefill_args(&ta, cq, ck, &err), &err) ||
        !sy_conf_case_op_begin(c))
        return;
    const sy_attention_ops *ops = c->target->p.desc->ops;
    if (!sy_conf_case_op_end(c, "prefill_linear",
                             ops->prefill_linear(c->target->p.ctx, c->target->p.side->stream, &ta, &err), &err))
        return;
    compare_out(c, &ta.out, ref_out, Tq, h, s->q, s->kv);
}

/* ------------------------------------------------------------------------------------------ */

void sy_conf_cases_attention(sy_conf_run *run, const sy_conf_target *t)
{
    const sy_attention_caps *caps = t->p.desc->caps;
    const sy_conf_plugin_ctx *ref = sy_conf_reference(run, SY_KIND_ATTENTION, "attn_paged", NULL);
    sy_conf_note_reference(run, t, ref);
    /* The in-tree layouts always (a plugin that does not read one gets not-supported cases), then
     * any other layout the plugin declares. */
    uint32_t layouts[2 + SY_MAX_CAPS_LAYOUTS] = {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D};
    size_t n_layouts = 2;
    for (uint32_t i = 0; i < caps->n_layouts && i < SY_MAX_CAPS_LAYOUTS; i++)
        if (!sy_conf_layout_reference(caps->layouts[i]))
            layouts[n_layouts++] = caps->layouts[i];
    for (size_t l = 0; l < n_layouts; l++) {
        sy_conf_table decode = {DECODE, sizeof DECODE / sizeof DECODE[0], sizeof DECODE[0],
                                offsetof(decode_shape, quick), decode_name, decode_case, &layouts[l]};
        sy_conf_run_table(run, t, &decode);
    }
    /* prefill_paged only where declared: it is optional (ABI 1.5), and the engine gathers without it. */
    for (size_t l = 0; (caps->features & SY_ATTN_PREFILL_PAGED) && l < n_layouts; l++) {
        sy_conf_table paged = {PREFILL_PAGED, sizeof PREFILL_PAGED / sizeof PREFILL_PAGED[0], sizeof PREFILL_PAGED[0],
                               offsetof(prefill_paged_shape, base.quick), prefill_paged_name, prefill_paged_case,
                               &layouts[l]};
        sy_conf_run_table(run, t, &paged);
    }
    sy_conf_table prefill = {PREFILL, sizeof PREFILL / sizeof PREFILL[0], sizeof PREFILL[0],
                             offsetof(prefill_shape, quick), prefill_name, prefill_case, NULL};
    sy_conf_run_table(run, t, &prefill);
}
