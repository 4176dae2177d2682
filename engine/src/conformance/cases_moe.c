/* moe cases against the cpu MXFP4 plugin of the same gate/up layout (interleave for any other
 * layout: the forward's result does not depend on the tile layout).
 *
 *   moe.route    router logits to top-k ids (exact, ties to the lower expert id: some are planted)
 *                and softmax weights (relative L2, tolerance.h).
 *   moe.forward  one random checkpoint per shape (gpt-oss-style MXFP4 blocks and scales, f32 or bf16
 *                biases), prepared by each plugin on its own backend, then forward with f32 and bf16
 *                activations, unpadded [T, H] and padded [T, Hp] input (pad columns zero). Both
 *                forwards get the reference's routing, so the forward is judged on its own. Scales
 *                are chosen so that gate and up pre-activations often pass the swiglu limit (7):
 *                a plugin that clamps wrongly misses the tolerance by far.
 * gpt-oss-120b (128 experts, hidden and intermediate 2880, top 4) holds 1.6 GB of checkpoint and as
 * much again per prepared copy: it is in the full list only. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conformance/cases.h"
#include "conformance/tolerance.h"

enum { F32 = SY_DTYPE_F32, BF16 = SY_DTYPE_BF16, U8 = SY_DTYPE_U8 };
enum { MXFP4_BLOCK = 32, MXFP4_BLOCK_BYTES = 16, ROUTE_TOKENS = 33 };

typedef struct moe_shape {
    uint32_t experts, hidden, intermediate, top_k, tokens;
    int32_t bias;
    uint8_t quick;
} moe_shape;

static const moe_shape SHAPES[] = {
    {3, 32, 32, 1, 4, F32, 1},         {7, 96, 160, 3, 9, BF16, 1},       {4, 2880, 64, 2, 3, F32, 1},
    {6, 320, 224, 2, 5, BF16, 0},      {32, 2880, 2880, 4, 5, F32, 0},    {128, 2880, 2880, 4, 3, BF16, 0},
};

static const float SWIGLU_ALPHA = 1.702f, SWIGLU_LIMIT = 7.0f; /* gpt-oss */

static sy_moe_shape shape_of(const moe_shape *s)
{
    sy_moe_shape m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.num_experts = s->experts;
    m.hidden = s->hidden;
    m.intermediate = s->intermediate;
    m.top_k = s->top_k;
    m.swiglu_alpha = SWIGLU_ALPHA;
    m.swiglu_limit = SWIGLU_LIMIT;
    return m;
}

static const char *reference_name(const sy_moe_caps *caps)
{
    return caps->gate_up_layout == SY_MOE_GATE_UP_SEPARATED ? "moe_mxfp4_separated" : "moe_mxfp4_interleave";
}

static int shape_supported(sy_conf_case *c, const moe_shape *s)
{
    const sy_moe_caps *caps = c->target->p.desc->caps;
    if (caps->weight_format != SY_MOE_WEIGHTS_MXFP4) {
        sy_conf_case_unsupported(c, "weight format %u: the cpu references are MXFP4 (%d) only", caps->weight_format,
                                 SY_MOE_WEIGHTS_MXFP4);
        return 0;
    }
    if (s->experts > caps->max_experts || s->top_k > caps->max_top_k) {
        sy_conf_case_unsupported(c, "caps allow %u experts and top_k %u, not %u and %u", caps->max_experts,
                                 caps->max_top_k, s->experts, s->top_k);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* route */

/* Router logits [T, E] from N(0, 2), with ties: token 0's best two are equal, token 1 has a tie
 * across the top-k boundary, token 2 is all equal. */
static float *make_logits(sy_conf_rng *rng, float *logits, uint32_t T, uint32_t E, uint32_t k)
{
    sy_conf_fill_normal(rng, logits, (size_t)T * E, 2.0);
    if (E >= 2 && T >= 3) {
        logits[0 * E + E - 1] = logits[0 * E + 0] = 9.0f;
        float boundary = 8.0f;
        for (uint32_t e = 0; e + 1 < E && e < k; e++)
            logits[1 * E + e] = boundary - (float)e;
        logits[1 * E + E - 1] = boundary - (float)(k - 1); /* ties the k-th largest */
        for (uint32_t e = 0; e < E; e++)
            logits[2 * E + e] = 0.5f;
    }
    return logits;
}

static sy_moe_route_args route_args(const sy_moe_shape *shape, uint32_t T, void *logits, void *ids, void *weights)
{
    sy_moe_route_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.shape = *shape;
    int64_t ls[2] = {T, shape->num_experts}, ks[2] = {T, shape->top_k};
    a.logits = sy_tensor_contiguous(logits, F32, 2, ls);
    a.topk_ids = sy_tensor_contiguous(ids, SY_DTYPE_I32, 2, ks);
    a.topk_weights = sy_tensor_contiguous(weights, F32, 2, ks);
    return a;
}

/* The reference's routing of `T` tokens: ids and weights in host memory of the case. */
static int reference_route(sy_conf_case *c, const sy_conf_plugin_ctx *ref, const sy_moe_shape *shape, uint32_t T,
                           float *logits, int32_t **ids, float **weights)
{
    sy_error err = {{0}};
    *ids = sy_conf_case_host(c, (size_t)T * shape->top_k * sizeof(int32_t));
    *weights = sy_conf_case_host(c, (size_t)T * shape->top_k * sizeof(float));
    sy_moe_route_args a = route_args(shape, T, logits, *ids, *weights);
    const sy_moe_ops *ops = ref->desc->ops;
    return sy_conf_case_call(c, "reference route", ops->route(ref->ctx, NULL, &a, &err), &err);
}

static void route_case(sy_conf_case *c, const moe_shape *s, const sy_conf_plugin_ctx *ref)
{
    sy_moe_shape shape = shape_of(s);
    const uint32_t T = ROUTE_TOKENS, k = s->top_k;
    float *logits = make_logits(&c->rng, sy_conf_case_host(c, (size_t)T * s->experts * sizeof(float)), T, s->experts, k);
    int32_t *want_ids;
    float *want_w;
    if (!reference_route(c, ref, &shape, T, logits, &want_ids, &want_w))
        return;
    size_t ids_bytes = (size_t)T * k * sizeof(int32_t);
    void *l_dev = sy_conf_case_upload(c, logits, (size_t)T * s->experts * sizeof(float));
    void *ids_dev = sy_conf_case_dev(c, ids_bytes), *w_dev = sy_conf_case_dev(c, ids_bytes);
    if (!sy_conf_case_op_begin(c))
        return;
    sy_error err = {{0}};
    sy_moe_route_args a = route_args(&shape, T, l_dev, ids_dev, w_dev);
    const sy_moe_ops *ops = c->target->p.desc->ops;
    if (!sy_conf_case_op_end(c, "route", ops->route(c->target->p.ctx, c->target->p.side->stream, &a, &err), &err))
        return;
    void *ids = sy_conf_case_download(c, ids_dev, ids_bytes), *w = sy_conf_case_download(c, w_dev, ids_bytes);
    if (!sy_conf_case_ok(c))
        return;
    sy_conf_where where = sy_conf_shape(2, T, k, 0, 0);
    sy_conf_check_bits(c, "topk_ids", ids, want_ids, (uint64_t)T * k, sizeof(int32_t), &where);
    sy_conf_check_close(c, "topk_weights", F32, w, want_w, (uint64_t)T * k, sy_conf_tolerance(SY_CONF_OP_ROUTE, F32),
                        &where);
}

/* ------------------------------------------------------------------------------------------ */
/* checkpoint and prepared weights, shared by the forward cases of one shape */

typedef struct checkpoint {
    void *w13_blocks, *w13_scales, *w13_bias, *w2_blocks, *w2_scales, *w2_bias;
    size_t w13_bytes, w13_scale_bytes, w2_bytes, w2_scale_bytes, w13_bias_bytes, w2_bias_bytes;
} checkpoint;

/* Scale bytes around 2^e0 (e0 - 1 .. e0 + 1) with e0 putting a row's dot product with inputs of
 * the given rms at about `target` rms: E2M1 codes have rms sqrt(68.5 / 8) = 2.93. */
static void fill_scales(sy_conf_rng *rng, uint8_t *scales, size_t n, uint32_t k, double input_rms, double target)
{
    int e0 = 127 + (int)lround(log2(target / (2.93 * sqrt((double)k) * input_rms)));
    for (size_t i = 0; i < n; i++)
        scales[i] = (uint8_t)(e0 - 1 + (int)sy_conf_rng_below(rng, 3));
}

/* gate / up pre-activations at rms 6 (the limit 7 is often passed); swiglu outputs have rms of
 * about 8, and the expert output lands at rms 4. */
static void make_checkpoint(sy_conf_case *c, sy_conf_arena *host, const moe_shape *s, checkpoint *ck)
{
    char what[96];
    snprintf(what, sizeof what, "moe.checkpoint/E%uH%uI%u", s->experts, s->hidden, s->intermediate);
    sy_conf_rng rng = sy_conf_shared_rng(c->run, what);
    const size_t E = s->experts, H = s->hidden, I = s->intermediate;
    ck->w13_bytes = E * 2 * I * (H / MXFP4_BLOCK) * MXFP4_BLOCK_BYTES;
    ck->w13_scale_bytes = E * 2 * I * (H / MXFP4_BLOCK);
    ck->w2_bytes = E * H * (I / MXFP4_BLOCK) * MXFP4_BLOCK_BYTES;
    ck->w2_scale_bytes = E * H * (I / MXFP4_BLOCK);
    ck->w13_blocks = sy_conf_arena_host(host, ck->w13_bytes);
    ck->w13_scales = sy_conf_arena_host(host, ck->w13_scale_bytes);
    ck->w2_blocks = sy_conf_arena_host(host, ck->w2_bytes);
    ck->w2_scales = sy_conf_arena_host(host, ck->w2_scale_bytes);
    sy_conf_fill_bytes(&rng, ck->w13_blocks, ck->w13_bytes);
    sy_conf_fill_bytes(&rng, ck->w2_blocks, ck->w2_bytes);
    fill_scales(&rng, ck->w13_scales, ck->w13_scale_bytes, (uint32_t)H, 1.0, 6.0);
    fill_scales(&rng, ck->w2_scales, ck->w2_scale_bytes, (uint32_t)I, 8.0, 4.0);
    ck->w13_bias_bytes = E * 2 * I * sy_dtype_size(s->bias);
    ck->w2_bias_bytes = E * H * sy_dtype_size(s->bias);
    ck->w13_bias = sy_conf_arena_random(host, &rng, E * 2 * I, s->bias, 1.0);
    ck->w2_bias = sy_conf_arena_random(host, &rng, E * H, s->bias, 1.0);
}

static sy_moe_prepare_args prepare_args(const moe_shape *s, const checkpoint *ck, void *prepared)
{
    sy_moe_prepare_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.shape = shape_of(s);
    const int64_t E = s->experts, H = s->hidden, I = s->intermediate;
    int64_t b13[4] = {E, 2 * I, H / MXFP4_BLOCK, MXFP4_BLOCK_BYTES}, b2[4] = {E, H, I / MXFP4_BLOCK, MXFP4_BLOCK_BYTES};
    int64_t bias13[2] = {E, 2 * I}, bias2[2] = {E, H};
    a.w13_blocks = sy_tensor_contiguous(ck->w13_blocks, U8, 4, b13);
    a.w13_scales = sy_tensor_contiguous(ck->w13_scales, U8, 3, b13);
    a.w13_bias = sy_tensor_contiguous(ck->w13_bias, s->bias, 2, bias13);
    a.w2_blocks = sy_tensor_contiguous(ck->w2_blocks, U8, 4, b2);
    a.w2_scales = sy_tensor_contiguous(ck->w2_scales, U8, 3, b2);
    a.w2_bias = sy_tensor_contiguous(ck->w2_bias, s->bias, 2, bias2);
    a.prepared = prepared;
    return a;
}

/* Prepared weights of both plugins; `error` says why the shape's forward cases cannot run. */
typedef struct prepared_pair {
    sy_conf_arena host, dev;
    void *ref, *test;
    int ready;
    char error[SY_ERROR_MSG_LEN + 64];
} prepared_pair;

static int pair_fail(prepared_pair *p, const char *what, sy_status st, const sy_error *err)
{
    snprintf(p->error, sizeof p->error, "%s returned %s: %s", what, sy_status_name(st), err->msg);
    return 0;
}

/* The checkpoint goes to the plugin's backend first and is released there before the reference
 * prepares its copy, which keeps the peak of the largest shape at checkpoint + two copies. */
static int prepare_pair(sy_conf_case *c, const moe_shape *s, const sy_conf_plugin_ctx *ref, prepared_pair *p)
{
    sy_error err = {{0}};
    sy_moe_shape shape = shape_of(s);
    checkpoint ck, dev_ck;
    make_checkpoint(c, &p->host, s, &ck);
    const sy_moe_ops *ops = c->target->p.desc->ops, *ref_ops = ref->desc->ops;
    uint64_t test_bytes = 0, ref_bytes = 0;
    sy_status st;
    if ((st = ops->prepared_bytes(&shape, &test_bytes, &err)) != SY_OK)
        return pair_fail(p, "prepared_bytes", st, &err);
    if ((st = ref_ops->prepared_bytes(&shape, &ref_bytes, &err)) != SY_OK)
        return pair_fail(p, "reference prepared_bytes", st, &err);
    dev_ck = ck;
    void **src[6] = {&ck.w13_blocks, &ck.w13_scales, &ck.w13_bias, &ck.w2_blocks, &ck.w2_scales, &ck.w2_bias};
    void **dst[6] = {&dev_ck.w13_blocks, &dev_ck.w13_scales, &dev_ck.w13_bias,
                     &dev_ck.w2_blocks,  &dev_ck.w2_scales,  &dev_ck.w2_bias};
    size_t bytes[6] = {ck.w13_bytes, ck.w13_scale_bytes, ck.w13_bias_bytes, ck.w2_bytes, ck.w2_scale_bytes,
                       ck.w2_bias_bytes};
    for (int i = 0; i < 6; i++)
        if ((st = sy_conf_arena_dev(&p->dev, bytes[i], dst[i], &err)) != SY_OK ||
            (st = sy_conf_side_copy(p->dev.side, *dst[i], *src[i], bytes[i], SY_MEMCPY_H2D, &err)) != SY_OK)
            return pair_fail(p, "checkpoint upload", st, &err);
    if ((st = sy_conf_arena_dev(&p->dev, test_bytes, &p->test, &err)) != SY_OK)
        return pair_fail(p, "prepared weights allocation", st, &err);
    sy_moe_prepare_args ta = prepare_args(s, &dev_ck, p->test);
    if ((st = ops->prepare(c->target->p.ctx, c->target->p.side->stream, &ta, &err)) != SY_OK ||
        (st = sy_conf_side_sync(p->dev.side, &err)) != SY_OK)
        return pair_fail(p, "prepare", st, &err);
    for (int i = 0; i < 6; i++)
        sy_conf_arena_dev_free(&p->dev, *dst[i]);
    p->ref = sy_conf_arena_host(&p->host, ref_bytes);
    sy_moe_prepare_args ra = prepare_args(s, &ck, p->ref);
    if ((st = ref_ops->prepare(ref->ctx, NULL, &ra, &err)) != SY_OK)
        return pair_fail(p, "reference prepare", st, &err);
    for (int i = 0; i < 6; i++)
        sy_conf_arena_host_free(&p->host, *src[i]);
    p->ready = 1;
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* forward */

typedef struct forward_variant {
    int32_t act;
    uint8_t padded;
} forward_variant;

static const forward_variant VARIANTS[] = {{F32, 0}, {F32, 1}, {BF16, 0}, {BF16, 1}};

static sy_moe_forward_args forward_args(const sy_moe_shape *shape, const void *prepared, int32_t act, uint32_t T,
                                        int64_t x_cols, void *x, void *ids, void *weights, void *out)
{
    sy_moe_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.shape = *shape;
    a.prepared = prepared;
    int64_t xs[2] = {T, x_cols}, ks[2] = {T, shape->top_k}, os[2] = {T, shape->hidden};
    a.x = sy_tensor_contiguous(x, act, 2, xs);
    a.topk_ids = sy_tensor_contiguous(ids, SY_DTYPE_I32, 2, ks);
    a.topk_weights = sy_tensor_contiguous(weights, F32, 2, ks);
    a.out = sy_tensor_contiguous(out, act, 2, os);
    return a;
}

static void forward_case(sy_conf_case *c, const moe_shape *s, const forward_variant *v, const sy_conf_plugin_ctx *ref,
                         prepared_pair *p)
{
    const sy_moe_caps *caps = c->target->p.desc->caps;
    if (!(caps->act_dtypes & SY_DTYPE_BIT(v->act))) {
        sy_conf_case_unsupported(c, "caps do not declare activation dtype %s", sy_dtype_name(v->act));
        return;
    }
    if (v->padded && (!caps->accepts_padded_input || caps->input_alignment == 0)) {
        sy_conf_case_unsupported(c, "caps do not declare padded input (accepts_padded_input %u, input_alignment %u)",
                                 caps->accepts_padded_input, caps->input_alignment);
        return;
    }
    if (!p->ready && !p->error[0])
        prepare_pair(c, s, ref, p);
    if (!p->ready) {
        sy_conf_case_fail(c, "%s", p->error);
        return;
    }
    sy_moe_shape shape = shape_of(s);
    const uint32_t T = s->tokens, H = s->hidden;
    const uint32_t cols = v->padded ? (H + caps->input_alignment - 1) / caps->input_alignment * caps->input_alignment : H;
    const size_t es = sy_dtype_size(v->act), x_bytes = (size_t)T * cols * es, out_bytes = (size_t)T * H * es;
    float *xf = sy_conf_case_host(c, (size_t)T * cols * sizeof(float));
    sy_conf_fill_normal(&c->rng, xf, (size_t)T * cols, 1.0);
    for (uint32_t t = 0; t < T; t++)
        for (uint32_t n = H; n < cols; n++)
            xf[(size_t)t * cols + n] = 0.0f;
    void *x = sy_conf_case_host(c, x_bytes);
    sy_conf_store(v->act, x, xf, (size_t)T * cols);
    float *logits = sy_conf_case_host(c, (size_t)T * s->experts * sizeof(float));
    sy_conf_fill_normal(&c->rng, logits, (size_t)T * s->experts, 2.0);
    int32_t *ids;
    float *weights;
    if (!reference_route(c, ref, &shape, T, logits, &ids, &weights))
        return;

    /* The reference reads the unpadded columns of the same rows. */
    sy_error err = {{0}};
    void *want = sy_conf_case_host(c, out_bytes);
    sy_moe_forward_args ra = forward_args(&shape, p->ref, v->act, T, H, x, ids, weights, want);
    ra.x.stride[0] = cols;
    const sy_moe_ops *ref_ops = ref->desc->ops;
    if (!sy_conf_case_call(c, "reference forward", ref_ops->forward(ref->ctx, NULL, &ra, &err), &err))
        return;

    size_t k_bytes = (size_t)T * s->top_k * sizeof(int32_t);
    void *x_dev = sy_conf_case_upload(c, x, x_bytes), *ids_dev = sy_conf_case_upload(c, ids, k_bytes);
    void *w_dev = sy_conf_case_upload(c, weights, k_bytes), *out_dev = sy_conf_case_dev(c, out_bytes);
    if (!sy_conf_case_op_begin(c))
        return;
    sy_moe_forward_args ta = forward_args(&shape, p->test, v->act, T, cols, x_dev, ids_dev, w_dev, out_dev);
    const sy_moe_ops *ops = c->target->p.desc->ops;
    if (!sy_conf_case_op_end(c, "forward", ops->forward(c->target->p.ctx, c->target->p.side->stream, &ta, &err), &err))
        return;
    void *got = sy_conf_case_download(c, out_dev, out_bytes);
    if (!got)
        return;
    sy_conf_where where = sy_conf_shape(2, T, H, 0, 0);
    sy_conf_check_close(c, "out", v->act, got, want, (uint64_t)T * H, sy_conf_tolerance(SY_CONF_OP_MOE, v->act), &where);
}

/* ------------------------------------------------------------------------------------------ */

static void shape_tag(char *buf, size_t len, const moe_shape *s)
{
    snprintf(buf, len, "E%uH%uI%u/k%u", s->experts, s->hidden, s->intermediate, s->top_k);
}

void sy_conf_cases_moe(sy_conf_run *run, const sy_conf_target *t)
{
    const sy_moe_caps *caps = t->p.desc->caps;
    const char *why = NULL;
    const sy_conf_plugin_ctx *ref = sy_conf_reference(run, SY_KIND_MOE, reference_name(caps), &why);
    sy_conf_note_reference(run, t, ref);
    char name[192], tag[64];
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        const moe_shape *s = &SHAPES[i];
        if (sy_conf_quick(run) && !s->quick)
            continue;
        shape_tag(tag, sizeof tag, s);
        snprintf(name, sizeof name, "moe.route/E%u/k%u/T%u", s->experts, s->top_k, ROUTE_TOKENS);
        sy_conf_case *c = sy_conf_case_begin(run, t, name);
        if (c && !ref)
            sy_conf_case_fail(c, "no reference: %s", why);
        else if (c && shape_supported(c, s))
            route_case(c, s, ref);
        sy_conf_case_end(c);

        prepared_pair pair;
        memset(&pair, 0, sizeof pair);
        sy_conf_arena_init(&pair.host, NULL); /* host memory only */
        sy_conf_arena_init(&pair.dev, t->p.side);
        for (size_t v = 0; v < sizeof VARIANTS / sizeof VARIANTS[0]; v++) {
            snprintf(name, sizeof name, "moe.forward/%s/%s/T%u/%s/bias%s", tag, sy_conf_dtype_tag(VARIANTS[v].act),
                     s->tokens, VARIANTS[v].padded ? "padded" : "unpadded", sy_conf_dtype_tag(s->bias));
            c = sy_conf_case_begin(run, t, name);
            if (c && !ref)
                sy_conf_case_fail(c, "no reference: %s", why);
            else if (c && shape_supported(c, s))
                forward_case(c, s, &VARIANTS[v], ref, &pair);
            sy_conf_case_end(c);
        }
        sy_conf_arena_release(&pair.dev);
        sy_conf_arena_release(&pair.host);
    }
}
