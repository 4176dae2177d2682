#include "moe_mxfp4_cpu.h"

#include <cblas.h>
/* cblas.h includes complex.h, whose macro I would clash with the usual name of the intermediate size. */
#undef I
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_workspace.h"
#include "mxfp4_decode_cpu.h"
#include "moe_mxfp4_args.h"
#include "moe_route.h"
#include "sy_mxfp4.h"
#include "sy_numeric.h"
#include "sy_op_check.h"

/* Rows decoded per tile: W13 tiles hold ROWS gate and ROWS up rows, W2 tiles ROWS rows. 2 * 32 rows
 * of 2880 f32 (737 KB) stay in a 1 MB L2 next to the tokens they meet. */
enum { TILE_ROWS = 32 };

typedef struct sy_moe_mxfp4_cpu {
    uint32_t gate_up_layout;
    sy_cpu_workspace ws;
    sy_mxfp4_cpu_decoder decoder;
} sy_moe_mxfp4_cpu;

sy_status sy_moe_mxfp4_cpu_init(const sy_host_api *host, uint32_t gate_up_layout, void **ctx, sy_error *err)
{
    if (gate_up_layout != SY_MOE_GATE_UP_INTERLEAVE && gate_up_layout != SY_MOE_GATE_UP_SEPARATED)
        return sy_op_fail(err, SY_E_INTERNAL,
                          "moe init: gate_up_layout %u is neither interleave (%d) nor separated (%d)", gate_up_layout,
                          SY_MOE_GATE_UP_INTERLEAVE, SY_MOE_GATE_UP_SEPARATED);
    sy_moe_mxfp4_cpu *c = calloc(1, sizeof *c);
    if (!c)
        return sy_op_fail(err, SY_E_NOMEM, "moe init: out of memory for the plugin context");
    c->gate_up_layout = gate_up_layout;
    c->ws.host = host;
    sy_mxfp4_cpu_decoder_init(&c->decoder, SY_MXFP4_DECODE_AVX512);
    *ctx = c;
    return SY_OK;
}

void sy_moe_mxfp4_cpu_fini(void *ctx)
{
    sy_moe_mxfp4_cpu *c = ctx;
    if (!c)
        return;
    sy_cpu_workspace_release(&c->ws);
    free(c);
}

static const char *layout_name(uint32_t layout)
{
    return layout == SY_MOE_GATE_UP_INTERLEAVE  ? "interleave"
           : layout == SY_MOE_GATE_UP_SEPARATED ? "separated"
                                                : "unknown";
}

/* ------------------------------------------------------------------------------------------ */
/* prepare / unprepare                                                                         */

static float bias_at(const sy_tensor *t, uint64_t i)
{
    return t->dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)t->data)[i]) : ((const float *)t->data)[i];
}

typedef struct prepared_view {
    sy_moe_dims dims;
    sy_moe_sections sec;
    uint32_t gate_up_layout;
    uint8_t *base;
} prepared_view;

static prepared_view view_of(uint8_t *base, const sy_moe_dims *d, uint32_t layout)
{
    prepared_view v;
    v.dims = *d;
    v.sec = sy_moe_sections_of(d);
    v.gate_up_layout = layout;
    v.base = base;
    return v;
}

/* Tile-order row q of checkpoint w13 row cr (row 2i gate, 2i+1 up), and its de-interleaved row. */
static uint32_t deinterleaved_row(uint32_t cr, uint32_t inter_padded)
{
    return (cr % 2u) * inter_padded + cr / 2u;
}

/* Copies every block and scale of one checkpoint matrix between the checkpoint order and the
 * shuffled order; `to_prepared` picks the direction. Rows of w13 go through the layout's row map. */
static void move_matrix(const prepared_view *v, int is_w13, uint8_t *ck_blocks, uint8_t *ck_scales, int to_prepared)
{
    const sy_moe_dims *d = &v->dims;
    uint32_t ck_rows = is_w13 ? 2u * d->intermediate : d->hidden;
    uint32_t ck_kblocks = (is_w13 ? d->hidden : d->intermediate) / SY_MXFP4_BLOCK;
    uint32_t kblocks = (is_w13 ? d->hidden_padded : d->intermediate_padded) / SY_MXFP4_BLOCK;
    uint64_t expert_bytes = is_w13 ? v->sec.w13_expert_bytes : v->sec.w2_expert_bytes;
    uint64_t expert_scales = is_w13 ? v->sec.w13_expert_scales : v->sec.w2_expert_scales;
    uint8_t *pb = v->base + (is_w13 ? v->sec.w13_blocks : v->sec.w2_blocks);
    uint8_t *ps = v->base + (is_w13 ? v->sec.w13_scales : v->sec.w2_scales);
    uint8_t *top = v->base + (is_w13 ? v->sec.w13_row_top : v->sec.w2_row_top);
    uint64_t expert_rows = is_w13 ? 2u * d->intermediate_padded : d->hidden_padded;
    for (uint32_t e = 0; e < d->experts; e++)
        for (uint32_t cr = 0; cr < ck_rows; cr++) {
            uint32_t q = is_w13 ? sy_moe_w13_tile_row(v->gate_up_layout, deinterleaved_row(cr, d->intermediate_padded),
                                                      d->intermediate_padded)
                                : cr;
            uint64_t ck_row = (uint64_t)e * ck_rows + cr;
            for (uint32_t j = 0; j < ck_kblocks; j++) {
                uint8_t *prep_block = pb + e * expert_bytes + sy_moe_block_offset(q, j, kblocks);
                uint8_t *prep_scale = ps + e * expert_scales + sy_moe_scale_offset(q, j, kblocks);
                uint8_t *ck_block = ck_blocks + (ck_row * ck_kblocks + j) * SY_MXFP4_BLOCK_BYTES;
                uint8_t *ck_scale = ck_scales + ck_row * ck_kblocks + j;
                if (to_prepared) {
                    memcpy(prep_block, ck_block, SY_MXFP4_BLOCK_BYTES);
                    *prep_scale = *ck_scale;
                } else {
                    memcpy(ck_block, prep_block, SY_MXFP4_BLOCK_BYTES);
                    *ck_scale = *prep_scale;
                }
            }
            if (to_prepared)
                top[e * expert_rows + q] = sy_moe_row_top(ck_scales + ck_row * ck_kblocks, ck_kblocks);
        }
}

sy_status sy_moe_mxfp4_cpu_prepare(void *ctx, sy_stream stream, const sy_moe_prepare_args *a, sy_error *err)
{
    static const char op[] = "moe prepare";
    sy_moe_mxfp4_cpu *c = ctx;
    (void)stream;
    sy_status st = sy_moe_mxfp4_check_call(op, c, 1, a, a ? a->struct_size : 0u, sizeof *a, "sy_moe_prepare_args",
                                           a ? &a->shape : NULL, err);
    if (st == SY_OK)
        st = sy_moe_mxfp4_check_prepare_tensors(op, a, err);
    if (st != SY_OK)
        return st;
    const sy_moe_shape *s = &a->shape;

    sy_moe_dims d = sy_moe_dims_of(s->num_experts, s->hidden, s->intermediate);
    prepared_view v = view_of(a->prepared, &d, c->gate_up_layout);
    const sy_moe_sections *sec = &v.sec;
    uint64_t E = d.experts, Hp = d.hidden_padded, Ip = d.intermediate_padded;

    /* Padding first: zero weights and biases, the neutral scale; then the checkpoint over it. */
    memset(v.base, 0, sec->total);
    memset(v.base + sec->w13_scales, SY_E8M0_ONE, E * sec->w13_expert_scales);
    memset(v.base + sec->w2_scales, SY_E8M0_ONE, E * sec->w2_expert_scales);
    memset(v.base + sec->w13_row_top, SY_E8M0_ONE, E * 2u * Ip);
    memset(v.base + sec->w2_row_top, SY_E8M0_ONE, E * Hp);
    const sy_moe_prepared_header h = {.magic = SY_MOE_PREPARED_MAGIC,
                                      .version = SY_MOE_PREPARED_VERSION,
                                      .gate_up_layout = c->gate_up_layout,
                                      .experts = d.experts,
                                      .hidden = d.hidden,
                                      .intermediate = d.intermediate,
                                      .hidden_padded = d.hidden_padded,
                                      .intermediate_padded = d.intermediate_padded,
                                      .code_order = SY_MOE_CODES_CHECKPOINT};
    memcpy(v.base + sec->header, &h, sizeof h);

    move_matrix(&v, 1, a->w13_blocks.data, a->w13_scales.data, 1);
    move_matrix(&v, 0, a->w2_blocks.data, a->w2_scales.data, 1);
    float *b13 = (float *)(v.base + sec->w13_bias), *b2 = (float *)(v.base + sec->w2_bias);
    for (uint64_t e = 0; e < E; e++) {
        for (uint32_t cr = 0; cr < 2u * d.intermediate; cr++)
            b13[e * 2u * Ip + deinterleaved_row(cr, (uint32_t)Ip)] =
                bias_at(&a->w13_bias, e * 2u * d.intermediate + cr);
        for (uint32_t n = 0; n < d.hidden; n++)
            b2[e * Hp + n] = bias_at(&a->w2_bias, e * d.hidden + n);
    }
    return SY_OK;
}

/* Reads and checks the header of a prepared buffer. */
static sy_status read_header(const char *op, const void *prepared, sy_moe_prepared_header *h, sy_error *err)
{
    if (!prepared)
        return sy_op_fail(err, SY_E_INVALID, "%s: prepared is NULL", op);
    memcpy(h, prepared, sizeof *h);
    if (h->magic != SY_MOE_PREPARED_MAGIC || h->version != SY_MOE_PREPARED_VERSION)
        return sy_op_fail(err, SY_E_INVALID,
                          "%s: prepared buffer has magic 0x%08x version %u, expected 0x%08x version %u (not written by "
                          "an MXFP4 MoE prepare)",
                          op, h->magic, h->version, SY_MOE_PREPARED_MAGIC, SY_MOE_PREPARED_VERSION);
    if (h->code_order != SY_MOE_CODES_CHECKPOINT)
        return sy_op_fail(err, SY_E_INVALID,
                          "%s: prepared buffer has its E2M1 codes in order %u (%s), the host reads the checkpoint's "
                          "order %u: prepare it with the host plugin",
                          op, h->code_order,
                          h->code_order == SY_MOE_CODES_TENSOR_PAIRS ? "the CUDA tensor-core order" : "unknown",
                          SY_MOE_CODES_CHECKPOINT);
    return SY_OK;
}

sy_status sy_moe_mxfp4_cpu_unprepare(const void *prepared, uint8_t *w13_blocks, uint8_t *w13_scales, float *w13_bias,
                                     uint8_t *w2_blocks, uint8_t *w2_scales, float *w2_bias, sy_error *err)
{
    sy_moe_prepared_header h;
    sy_status st = read_header("moe unprepare", prepared, &h, err);
    if (st != SY_OK)
        return st;
    sy_moe_dims d = sy_moe_dims_of(h.experts, h.hidden, h.intermediate);
    /* The functions below only read through the view when copying back. */
    prepared_view v = view_of((uint8_t *)(uintptr_t)prepared, &d, h.gate_up_layout);
    move_matrix(&v, 1, w13_blocks, w13_scales, 0);
    move_matrix(&v, 0, w2_blocks, w2_scales, 0);
    const float *b13 = (const float *)(v.base + v.sec.w13_bias), *b2 = (const float *)(v.base + v.sec.w2_bias);
    for (uint64_t e = 0; e < d.experts; e++) {
        for (uint32_t cr = 0; cr < 2u * d.intermediate; cr++)
            w13_bias[e * 2u * d.intermediate + cr] =
                b13[e * 2u * d.intermediate_padded + deinterleaved_row(cr, d.intermediate_padded)];
        for (uint32_t n = 0; n < d.hidden; n++)
            w2_bias[e * d.hidden + n] = b2[e * d.hidden_padded + n];
    }
    return SY_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* route                                                                                       */

sy_status sy_moe_mxfp4_cpu_route(void *ctx, sy_stream stream, const sy_moe_route_args *a, sy_error *err)
{
    static const char op[] = "moe route";
    (void)ctx;
    (void)stream;
    int64_t T = 0;
    sy_status st = sy_moe_mxfp4_check_call(op, ctx, 0, a, a ? a->struct_size : 0u, sizeof *a, "sy_moe_route_args",
                                           a ? &a->shape : NULL, err);
    if (st == SY_OK)
        st = sy_moe_mxfp4_check_route_tensors(op, a, &T, err);
    if (st != SY_OK)
        return st;
    const uint32_t E = a->shape.num_experts, k = a->shape.top_k;
    const float *logits = a->logits.data;
    for (int64_t t = 0; t < T; t++)
        sy_moe_route_token(logits + t * a->logits.stride[0], E, k, (int32_t *)a->topk_ids.data + t * k,
                           (float *)a->topk_weights.data + t * k);
    return SY_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* forward                                                                                     */

/* One expert's matrix inside a prepared buffer. */
typedef struct matrix_view {
    const uint8_t *blocks, *scales;
    const float *bias;
    uint32_t kblocks, kblocks_used; /* blocks a row stored, and blocks a row really has */
} matrix_view;

static matrix_view matrix_of(const prepared_view *v, uint32_t e, int matrix)
{
    const sy_moe_dims *d = &v->dims;
    const sy_moe_sections *sec = &v->sec;
    matrix_view m;
    if (matrix == SY_MOE_MATRIX_W13) {
        m.blocks = v->base + sec->w13_blocks + e * sec->w13_expert_bytes;
        m.scales = v->base + sec->w13_scales + e * sec->w13_expert_scales;
        m.bias = (const float *)(v->base + sec->w13_bias) + (uint64_t)e * 2u * d->intermediate_padded;
        m.kblocks = d->hidden_padded / SY_MXFP4_BLOCK;
        m.kblocks_used = d->hidden / SY_MXFP4_BLOCK;
    } else {
        m.blocks = v->base + sec->w2_blocks + e * sec->w2_expert_bytes;
        m.scales = v->base + sec->w2_scales + e * sec->w2_expert_scales;
        m.bias = (const float *)(v->base + sec->w2_bias) + (uint64_t)e * d->hidden_padded;
        m.kblocks = d->intermediate_padded / SY_MXFP4_BLOCK;
        m.kblocks_used = d->intermediate / SY_MXFP4_BLOCK;
    }
    return m;
}

sy_status sy_moe_mxfp4_cpu_decode_rows(const void *prepared, uint32_t expert, int matrix, const uint32_t *rows,
                                       uint32_t n, float *dst, sy_error *err)
{
    return sy_moe_mxfp4_cpu_decode_rows_with(prepared, expert, matrix, rows, n, SY_MXFP4_DECODE_AVX512, dst, err);
}

sy_status sy_moe_mxfp4_cpu_decode_rows_with(const void *prepared, uint32_t expert, int matrix, const uint32_t *rows,
                                            uint32_t n, int max_level, float *dst, sy_error *err)
{
    static const char op[] = "moe decode_rows";
    sy_moe_prepared_header h;
    sy_status st = read_header(op, prepared, &h, err);
    if (st != SY_OK)
        return st;
    sy_moe_dims d = sy_moe_dims_of(h.experts, h.hidden, h.intermediate);
    uint32_t row_limit = matrix == SY_MOE_MATRIX_W13 ? 2u * d.intermediate_padded : d.hidden;
    if (expert >= d.experts || (matrix != SY_MOE_MATRIX_W13 && matrix != SY_MOE_MATRIX_W2))
        return sy_op_fail(err, SY_E_INVALID, "%s: expert %u of %u, matrix %d", op, expert, d.experts, matrix);
    prepared_view v = view_of((uint8_t *)(uintptr_t)prepared, &d, h.gate_up_layout);
    matrix_view m = matrix_of(&v, expert, matrix);
    sy_mxfp4_cpu_decoder dec;
    sy_mxfp4_cpu_decoder_init(&dec, max_level);
    for (uint32_t r = 0; r < n; r++) {
        if (rows[r] >= row_limit)
            return sy_op_fail(err, SY_E_INVALID, "%s: rows[%u] = %u is outside 0..%u", op, r, rows[r], row_limit - 1u);
        uint32_t q = matrix == SY_MOE_MATRIX_W13 ? sy_moe_w13_tile_row(h.gate_up_layout, rows[r], d.intermediate_padded)
                                                 : rows[r];
        sy_mxfp4_cpu_decode_tile(&dec, m.blocks, m.scales, m.kblocks, m.kblocks_used, &q, 1,
                                 dst + (uint64_t)r * m.kblocks_used * SY_MXFP4_BLOCK);
    }
    return SY_OK;
}

static float load_act(const void *p, int32_t dtype, uint64_t i)
{
    return dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* Clamped SwiGLU of gpt-oss. Comparisons rather than fminf keep a NaN visible. */
static float swiglu(float g, float u, float alpha, float limit)
{
    g = g > limit ? limit : g;
    u = u > limit ? limit : (u < -limit ? -limit : u);
    return g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
}

typedef struct forward_scratch {
    int32_t *count;  /* [E + 1]: prefix offsets into the routed lists */
    int32_t *token;  /* [T*k]: token of each routed slot, grouped by expert, tokens ascending */
    float *weight;   /* [T*k] */
    float *acc;      /* [T][H] */
    float *xe;       /* [max_te][H] */
    float *act;      /* [max_te][I] */
    float *tile;     /* [2*TILE_ROWS][max(H, I)] decoded weights */
    float *prod;     /* [max_te][2*TILE_ROWS] */
    uint32_t *tiles; /* [2*TILE_ROWS/16]: the 16-row tiles of the current chunk */
} forward_scratch;

static sy_status reserve_forward(sy_moe_mxfp4_cpu *c, const sy_moe_dims *d, uint64_t T, uint32_t k, uint64_t max_te,
                                 forward_scratch *s, sy_error *err)
{
    uint64_t H = d->hidden, inter = d->intermediate, wide = H > inter ? H : inter;
    uint64_t sizes[9] = {4u * (d->experts + 1u),
                         4u * T * k,
                         4u * T * k,
                         4u * T * H,
                         4u * max_te * H,
                         4u * max_te * inter,
                         4u * 2u * TILE_ROWS * wide,
                         4u * max_te * 2u * TILE_ROWS,
                         4u * 2u * TILE_ROWS};
    uint64_t total = 0, off[9];
    for (int i = 0; i < 9; i++) {
        off[i] = total;
        total += (sizes[i] + 63u) / 64u * 64u;
    }
    void *base;
    sy_status st = sy_cpu_workspace_reserve(&c->ws, total, &base, err);
    if (st != SY_OK)
        return st;
    uint8_t *b = base;
    s->count = (int32_t *)(b + off[0]);
    s->token = (int32_t *)(b + off[1]);
    s->weight = (float *)(b + off[2]);
    s->acc = (float *)(b + off[3]);
    s->xe = (float *)(b + off[4]);
    s->act = (float *)(b + off[5]);
    s->tile = (float *)(b + off[6]);
    s->prod = (float *)(b + off[7]);
    s->tiles = (uint32_t *)(b + off[8]);
    return SY_OK;
}

static sy_status check_forward(const sy_moe_mxfp4_cpu *c, const sy_moe_forward_args *a, sy_moe_dims *d, sy_error *err)
{
    static const char op[] = "moe forward";
    sy_status st = sy_moe_mxfp4_check_call(op, c, 1, a, a ? a->struct_size : 0u, sizeof *a, "sy_moe_forward_args",
                                           a ? &a->shape : NULL, err);
    if (st != SY_OK)
        return st;
    const sy_moe_shape *s = &a->shape;
    *d = sy_moe_dims_of(s->num_experts, s->hidden, s->intermediate);
    sy_moe_prepared_header h;
    st = read_header(op, a->prepared, &h, err);
    if (st != SY_OK)
        return st;
    if (h.gate_up_layout != c->gate_up_layout)
        return sy_op_fail(err, SY_E_INVALID, "%s: prepared buffer is in the %s layout, this plugin reads %s", op,
                          layout_name(h.gate_up_layout), layout_name(c->gate_up_layout));
    if (h.experts != d->experts || h.hidden != d->hidden || h.intermediate != d->intermediate)
        return sy_op_fail(err, SY_E_INVALID,
                          "%s: prepared buffer holds experts %u hidden %u intermediate %u, shape says %u %u %u", op,
                          h.experts, h.hidden, h.intermediate, d->experts, d->hidden, d->intermediate);
    st = sy_moe_mxfp4_check_forward_tensors(op, a, err);
    if (st != SY_OK)
        return st;
    const int64_t T = a->x.shape[0];
    const int32_t *ids = a->topk_ids.data;
    for (int64_t i = 0; i < T * (int64_t)s->top_k; i++)
        if (ids[i] < 0 || (uint32_t)ids[i] >= s->num_experts)
            return sy_op_fail(err, SY_E_INVALID, "%s: topk_ids[%lld][%lld] = %d is outside 0..%u", op,
                              (long long)(i / s->top_k), (long long)(i % s->top_k), ids[i], s->num_experts - 1u);
    return SY_OK;
}

/* Groups the routed (token, weight) slots by expert, tokens ascending within each: a counting sort,
 * so the order (and hence every sum) is a function of the routing alone. Returns the largest group. */
static uint64_t group_by_expert(const sy_moe_forward_args *a, uint64_t T, forward_scratch *s)
{
    const uint32_t E = a->shape.num_experts, k = a->shape.top_k;
    const int32_t *ids = a->topk_ids.data;
    const float *w = a->topk_weights.data;
    memset(s->count, 0, sizeof(int32_t) * (E + 1u));
    for (uint64_t i = 0; i < T * k; i++)
        s->count[ids[i] + 1]++;
    uint64_t max_te = 0;
    for (uint32_t e = 0; e < E; e++) {
        if ((uint64_t)s->count[e + 1] > max_te)
            max_te = (uint64_t)s->count[e + 1];
        s->count[e + 1] += s->count[e];
    }
    if (s->token) {
        /* count[e] is used as the fill cursor, then restored from the next group's start. */
        for (uint64_t i = 0; i < T * k; i++) {
            int32_t pos = s->count[ids[i]]++;
            s->token[pos] = (int32_t)(i / k);
            s->weight[pos] = w[i];
        }
        for (uint32_t e = E; e > 0; e--)
            s->count[e] = s->count[e - 1];
        s->count[0] = 0;
    }
    return max_te;
}

/* prod[te][16 n] = x[te][K] times the n tiles of m, transposed. A few tokens take the fused
 * decode-and-multiply (weights read once, nothing stored); more decode the tiles once into `tile`
 * for sgemm. The choice depends only on te, never on the layout. */
static void multiply_tiles(const sy_moe_mxfp4_cpu *c, const matrix_view *m, const uint32_t *tiles, uint32_t n,
                           const float *x, uint32_t K, uint32_t te, float *tile, float *prod)
{
    if (te <= SY_MXFP4_DOT_MAX_TOKENS) {
        sy_mxfp4_cpu_decode_dot(&c->decoder, m->blocks, m->scales, m->kblocks, m->kblocks_used, tiles, n, x, K, te,
                                prod, 16u * n);
        return;
    }
    sy_mxfp4_cpu_decode_tiles(&c->decoder, m->blocks, m->scales, m->kblocks, m->kblocks_used, tiles, n, tile);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)te, (int)(16u * n), (int)K, 1.0f, x, (int)K, tile,
                (int)K, 0.0f, prod, (int)(16u * n));
}

/* One expert over its te tokens (token[], weight[]): accumulates weight * (W2 a + b2) into acc. */
static void expert_forward(const sy_moe_mxfp4_cpu *c, const sy_moe_forward_args *a, const prepared_view *v, uint32_t e,
                           const int32_t *token, const float *weight, uint32_t te, forward_scratch *s)
{
    const sy_moe_dims *d = &v->dims;
    const uint32_t H = d->hidden, inter = d->intermediate, Ip = d->intermediate_padded;
    const float alpha = a->shape.swiglu_alpha, limit = a->shape.swiglu_limit;
    const matrix_view w13 = matrix_of(v, e, SY_MOE_MATRIX_W13), w2 = matrix_of(v, e, SY_MOE_MATRIX_W2);
    const float *b13 = w13.bias, *b2 = w2.bias;

    /* The expert's tokens, unpadded: padded columns meet zero weights. */
    for (uint32_t t = 0; t < te; t++) {
        const uint8_t *row =
            (const uint8_t *)a->x.data + (uint64_t)token[t] * a->x.stride[0] * sy_dtype_size(a->x.dtype);
        for (uint32_t n = 0; n < H; n++)
            s->xe[(uint64_t)t * H + n] = load_act(row, a->x.dtype, n);
    }

    /* H and I are multiples of 32, so every chunk is whole 16-row tiles; a layout maps an aligned
     * group of 16 rows onto one tile, so the tile of a group is that of its first row. */
    for (uint32_t i0 = 0; i0 < inter; i0 += TILE_ROWS) {
        uint32_t rows = inter - i0 < TILE_ROWS ? inter - i0 : TILE_ROWS;
        for (uint32_t g = 0; g < rows / 16u; g++) {
            s->tiles[g] = sy_moe_w13_tile_row(v->gate_up_layout, i0 + 16u * g, Ip) / 16u;
            s->tiles[rows / 16u + g] = sy_moe_w13_tile_row(v->gate_up_layout, Ip + i0 + 16u * g, Ip) / 16u;
        }
        multiply_tiles(c, &w13, s->tiles, 2u * rows / 16u, s->xe, H, te, s->tile, s->prod);
        for (uint32_t t = 0; t < te; t++) {
            const float *p = s->prod + (uint64_t)t * 2u * rows;
            for (uint32_t r = 0; r < rows; r++)
                s->act[(uint64_t)t * inter + i0 + r] =
                    swiglu(p[r] + b13[i0 + r], p[rows + r] + b13[Ip + i0 + r], alpha, limit);
        }
    }

    for (uint32_t n0 = 0; n0 < H; n0 += 2u * TILE_ROWS) {
        uint32_t rows = H - n0 < 2u * TILE_ROWS ? H - n0 : 2u * TILE_ROWS;
        for (uint32_t g = 0; g < rows / 16u; g++)
            s->tiles[g] = n0 / 16u + g;
        multiply_tiles(c, &w2, s->tiles, rows / 16u, s->act, inter, te, s->tile, s->prod);
        for (uint32_t t = 0; t < te; t++) {
            float *acc = s->acc + (uint64_t)token[t] * H + n0;
            const float *p = s->prod + (uint64_t)t * rows;
            for (uint32_t r = 0; r < rows; r++)
                acc[r] += weight[t] * (p[r] + b2[n0 + r]);
        }
    }
}

sy_status sy_moe_mxfp4_cpu_forward(void *ctx, sy_stream stream, const sy_moe_forward_args *a, sy_error *err)
{
    sy_moe_mxfp4_cpu *c = ctx;
    sy_moe_dims d;
    (void)stream;
    sy_status st = check_forward(c, a, &d, err);
    if (st != SY_OK)
        return st;
    const uint64_t T = (uint64_t)a->x.shape[0];
    const uint32_t k = a->shape.top_k, H = d.hidden;
    if (T == 0)
        return SY_OK;
    forward_scratch s;
    /* First pass sizes the scratch by the largest expert group, the second fills it. */
    int32_t count_only[SY_MOE_MXFP4_MAX_EXPERTS + 1];
    s.count = count_only;
    s.token = NULL;
    uint64_t max_te = group_by_expert(a, T, &s);
    st = reserve_forward(c, &d, T, k, max_te, &s, err);
    if (st != SY_OK)
        return st;
    group_by_expert(a, T, &s);
    memset(s.acc, 0, sizeof(float) * T * H);

    prepared_view v = view_of((uint8_t *)(uintptr_t)a->prepared, &d, c->gate_up_layout);
    for (uint32_t e = 0; e < d.experts; e++) {
        uint32_t te = (uint32_t)(s.count[e + 1] - s.count[e]);
        if (te)
            expert_forward(c, a, &v, e, s.token + s.count[e], s.weight + s.count[e], te, &s);
    }

    for (uint64_t t = 0; t < T; t++) {
        const float *acc = s.acc + t * H;
        if (a->out.dtype == SY_DTYPE_BF16) {
            uint16_t *o = (uint16_t *)a->out.data + t * a->out.stride[0];
            for (uint32_t n = 0; n < H; n++)
                o[n] = sy_f32_to_bf16(acc[n]);
        } else {
            memcpy((float *)a->out.data + t * a->out.stride[0], acc, sizeof(float) * H);
        }
    }
    return SY_OK;
}

const sy_moe_ops sy_moe_mxfp4_cpu_ops = {
    sizeof(sy_moe_ops),       0, sy_moe_mxfp4_prepared_bytes, sy_moe_mxfp4_cpu_prepare, sy_moe_mxfp4_cpu_route,
    sy_moe_mxfp4_cpu_forward,
};
