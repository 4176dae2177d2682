/* moe_mxfp4_interleave and moe_mxfp4_separated (cpu), through the plugin ABI: route and forward
 * against a double-precision gpt-oss MoE built from the dequantized checkpoint, the two layouts
 * bit for bit against each other, padded against unpadded input, and the argument errors. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_plugin_fixture.h"
#include "moe_checkpoint.h"
#include "sy_numeric.h"
#include "sy_test.h"

static const char *const plugin_names[2] = {"moe_mxfp4_interleave", "moe_mxfp4_separated"};
static const uint32_t plugin_layouts[2] = {SY_MOE_GATE_UP_INTERLEAVE, SY_MOE_GATE_UP_SEPARATED};

typedef struct moe_plugin {
    const sy_plugin_desc *desc;
    const sy_moe_ops *ops;
    void *ctx;
    void *prepared;
} moe_plugin;

static moe_plugin open_moe(int which, const moe_checkpoint *c, const sy_moe_shape *shape, const sy_host_api *host)
{
    moe_plugin p;
    p.desc = sy_cpu_plugin(SY_KIND_MOE, plugin_names[which]);
    p.ops = p.desc->ops;
    p.ctx = sy_cpu_plugin_init(p.desc, host);
    uint64_t bytes = 0;
    sy_error err = {{0}};
    ck_assert_msg(p.ops->prepared_bytes(shape, &bytes, &err) == SY_OK, "%s", err.msg);
    p.prepared = malloc(bytes);
    sy_poison_bytes(p.prepared, bytes);
    sy_moe_prepare_args a = moe_checkpoint_prepare_args(c, shape, p.prepared);
    ck_assert_msg(p.ops->prepare(p.ctx, NULL, &a, &err) == SY_OK, "%s prepare: %s", p.desc->name, err.msg);
    return p;
}

static void close_moe(moe_plugin *p)
{
    sy_cpu_plugin_fini(p->desc, p->ctx);
    free(p->prepared);
}

/* A gpt-oss-like layer scaled down: hidden 736 -> 768 and intermediate 608 -> 768 padded (multiples
 * of 256, not of 512), 5 experts, top 3 of them, 37 tokens. Scale bytes 124..126 (2^-3 .. 2^-1) put
 * the pre-activations well past the clamp limit of 7 in both directions, and well inside it. */
enum { E = 5, H = 736, I = 608, K = 3, T = 37, HP = 768 };
static const float alpha = 1.702f, limit = 7.0f;

/* Biases on the scale of the products they join (|h| ~ 10, |y| ~ 300), so that a wrong bias cannot
 * hide under the tolerance. */
static moe_checkpoint layer_checkpoint(sy_rng *rng)
{
    moe_checkpoint c = moe_checkpoint_random(rng, E, H, I, 124, 126);
    for (int i = 0; i < E * 2 * I; i++)
        c.w13_bias[i] *= 4.0f;
    for (int i = 0; i < E * H; i++)
        c.w2_bias[i] *= 300.0f;
    return c;
}

static sy_moe_shape layer_shape(void)
{
    sy_moe_shape s = {sizeof s, E, H, I, K, alpha, limit, 0};
    return s;
}

typedef struct clamp_counts {
    long gate_clamped, up_high, up_low, unclamped;
} clamp_counts;

/* gpt-oss MLPBlock.forward in double from the dequantized checkpoint (row 2i gate, 2i+1 up). */
static void reference_forward(const moe_checkpoint *c, const float *w13, const float *w2, const float *x, int64_t ldx,
                              int tokens, const int32_t *ids, const float *weights, double *out, clamp_counts *cc,
                              int clamp)
{
    double *a = malloc(sizeof(double) * I);
    memset(out, 0, sizeof(double) * tokens * H);
    for (int t = 0; t < tokens; t++)
        for (int j = 0; j < K; j++) {
            int e = ids[t * K + j];
            for (int i = 0; i < I; i++) {
                double h[2];
                for (int g = 0; g < 2; g++) {
                    const float *row = w13 + ((size_t)e * 2 * I + 2 * i + g) * H;
                    double s = c->w13_bias[e * 2 * I + 2 * i + g];
                    for (int n = 0; n < H; n++)
                        s += (double)row[n] * x[t * ldx + n];
                    h[g] = s;
                }
                double gate = h[0], up = h[1];
                if (cc) {
                    cc->gate_clamped += gate > limit;
                    cc->up_high += up > limit;
                    cc->up_low += up < -limit;
                    cc->unclamped += gate <= limit && fabs(up) <= limit;
                }
                if (clamp) {
                    gate = fmin(gate, limit);
                    up = fmax(fmin(up, limit), -limit);
                }
                a[i] = gate / (1.0 + exp(-(double)alpha * gate)) * (up + 1.0);
            }
            for (int n = 0; n < H; n++) {
                const float *row = w2 + ((size_t)e * H + n) * I;
                double y = c->w2_bias[e * H + n];
                for (int i = 0; i < I; i++)
                    y += (double)row[i] * a[i];
                out[t * H + n] += weights[t * K + j] * y;
            }
        }
    free(a);
}

static void route(const moe_plugin *p, const float *logits, int32_t *ids, float *weights)
{
    sy_moe_route_args r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.shape = layer_shape();
    r.logits = moe_tensor((void *)(uintptr_t)logits, SY_DTYPE_F32, 2, T, E, 0, 0);
    r.topk_ids = moe_tensor(ids, SY_DTYPE_I32, 2, T, K, 0, 0);
    r.topk_weights = moe_tensor(weights, SY_DTYPE_F32, 2, T, K, 0, 0);
    sy_error err = {{0}};
    ck_assert_msg(p->ops->route(p->ctx, NULL, &r, &err) == SY_OK, "%s route: %s", p->desc->name, err.msg);
}

/* x: [T][HP] rows; `cols` H reads the unpadded slice of the same rows, HP the padded rows. */
static sy_moe_forward_args forward_args_n(const moe_plugin *p, int64_t tokens, void *x, int32_t dtype, int64_t cols,
                                          int32_t *ids, float *weights, void *out, int32_t out_dtype)
{
    sy_moe_forward_args f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    f.shape = layer_shape();
    f.prepared = p->prepared;
    f.x = moe_tensor(x, dtype, 2, tokens, cols, 0, 0);
    f.x.stride[0] = HP;
    f.topk_ids = moe_tensor(ids, SY_DTYPE_I32, 2, tokens, K, 0, 0);
    f.topk_weights = moe_tensor(weights, SY_DTYPE_F32, 2, tokens, K, 0, 0);
    f.out = moe_tensor(out, out_dtype, 2, tokens, H, 0, 0);
    return f;
}

static sy_moe_forward_args forward_args(const moe_plugin *p, void *x, int32_t dtype, int64_t cols, int32_t *ids,
                                        float *weights, void *out, int32_t out_dtype)
{
    return forward_args_n(p, T, x, dtype, cols, ids, weights, out, out_dtype);
}

static void forward_n(const moe_plugin *p, int64_t tokens, void *x, int32_t dtype, int64_t cols, int32_t *ids,
                      float *weights, void *out, int32_t out_dtype)
{
    sy_moe_forward_args f = forward_args_n(p, tokens, x, dtype, cols, ids, weights, out, out_dtype);
    sy_error err = {{0}};
    sy_poison_bytes(out, (size_t)tokens * H * sy_dtype_size(out_dtype));
    ck_assert_msg(p->ops->forward(p->ctx, NULL, &f, &err) == SY_OK, "%s forward: %s", p->desc->name, err.msg);
}

static void forward(const moe_plugin *p, void *x, int32_t dtype, int64_t cols, int32_t *ids, float *weights, void *out,
                    int32_t out_dtype)
{
    forward_n(p, T, x, dtype, cols, ids, weights, out, out_dtype);
}

/* Tokens in [T][HP] rows with zeros in the pad, as the fused add+RMSNorm+pad writes them. */
static float *random_tokens(sy_rng *rng)
{
    float *x = calloc((size_t)T * HP, sizeof(float));
    for (int t = 0; t < T; t++)
        sy_fill_uniform_f32(rng, x + (size_t)t * HP, H, -1, 1);
    return x;
}

/* With `tokens` tokens: 37 gives every expert more than SY_MXFP4_DOT_MAX_TOKENS of them (decoded
 * tiles and sgemm), 1 gives each chosen expert a single token (the fused decode-and-multiply), 3 a
 * mixture. */
static void forward_against_reference(int tokens)
{
    sy_rng rng = {sy_test_seed()};
    moe_checkpoint c = layer_checkpoint(&rng);
    sy_moe_shape shape = layer_shape();
    float *x = random_tokens(&rng), logits[T * E], weights[T * K];
    int32_t ids[T * K];
    sy_fill_uniform_f32(&rng, logits, T * E, -3, 3);

    float *w13 = moe_checkpoint_dequant_w13(&c), *w2 = moe_checkpoint_dequant_w2(&c);
    double *want = malloc(sizeof(double) * T * H), *unclamped = malloc(sizeof(double) * T * H);
    float *out[2][2];
    moe_plugin p[2];
    for (int l = 0; l < 2; l++) {
        p[l] = open_moe(l, &c, &shape, NULL);
        route(&p[l], logits, ids, weights);
        for (int padded = 0; padded < 2; padded++) {
            out[l][padded] = malloc(sizeof(float) * T * H);
            forward_n(&p[l], tokens, x, SY_DTYPE_F32, padded ? HP : H, ids, weights, out[l][padded], SY_DTYPE_F32);
        }
    }
    const size_t n = (size_t)tokens * H;
    clamp_counts cc = {0, 0, 0, 0};
    reference_forward(&c, w13, w2, x, HP, tokens, ids, weights, want, &cc, 1);
    reference_forward(&c, w13, w2, x, HP, tokens, ids, weights, unclamped, NULL, 0);
    ck_assert_msg(cc.gate_clamped > 0 && cc.up_high > 0 && cc.up_low > 0 && cc.unclamped > 0,
                  "the clamp is not exercised: gate>7 %ld, up>7 %ld, up<-7 %ld, neither %ld", cc.gate_clamped,
                  cc.up_high, cc.up_low, cc.unclamped);
    /* The clamp matters: without it the result is far off, so a missing clamp cannot pass below. */
    ck_assert_double_gt(sy_rel_l2_f32(out[0][0], unclamped, n), 1e-2);
    for (int l = 0; l < 2; l++) {
        double rel = sy_rel_l2_f32(out[l][0], want, n);
        ck_assert_msg(rel < 1e-5, "%s, %d tokens: relative L2 %.3g against the double reference", plugin_names[l],
                      tokens, rel);
        ck_assert_msg(memcmp(out[l][0], out[l][1], sizeof(float) * n) == 0,
                      "%s: padded and unpadded input give different outputs", plugin_names[l]);
    }
    ck_assert_msg(memcmp(out[0][0], out[1][0], sizeof(float) * n) == 0,
                  "INTERLEAVE and SEPARATED outputs differ on the same checkpoint (%d tokens)", tokens);
    for (int l = 0; l < 2; l++) {
        free(out[l][0]);
        free(out[l][1]);
        close_moe(&p[l]);
    }
    free(want);
    free(unclamped);
    free(w13);
    free(w2);
    free(x);
    moe_checkpoint_free(&c);
}

START_TEST(forward_matches_double_reference)
{
    forward_against_reference(T);
}
END_TEST

START_TEST(few_tokens_match_double_reference)
{
    forward_against_reference(1); /* every expert alone with its token: the fused path only */
    forward_against_reference(3);
}
END_TEST

/* bf16 activations take the f32 path on the bf16 values and round once at the end. */
START_TEST(bf16_activations_round_once)
{
    sy_rng rng = {sy_test_seed()};
    moe_checkpoint c = layer_checkpoint(&rng);
    sy_moe_shape shape = layer_shape();
    float *x = random_tokens(&rng), logits[T * E], weights[T * K];
    uint16_t *xb = malloc(sizeof(uint16_t) * T * HP), *outb = malloc(sizeof(uint16_t) * T * H);
    int32_t ids[T * K];
    for (int i = 0; i < T * HP; i++) {
        xb[i] = sy_f32_to_bf16(x[i]);
        x[i] = sy_bf16_to_f32(xb[i]);
    }
    sy_fill_uniform_f32(&rng, logits, T * E, -3, 3);
    float *outf = malloc(sizeof(float) * T * H);
    for (int l = 0; l < 2; l++) {
        moe_plugin p = open_moe(l, &c, &shape, NULL);
        route(&p, logits, ids, weights);
        forward(&p, x, SY_DTYPE_F32, H, ids, weights, outf, SY_DTYPE_F32);
        for (int padded = 0; padded < 2; padded++) {
            forward(&p, xb, SY_DTYPE_BF16, padded ? HP : H, ids, weights, outb, SY_DTYPE_BF16);
            for (int i = 0; i < T * H; i++)
                ck_assert_msg(outb[i] == sy_f32_to_bf16(outf[i]),
                              "%s: bf16 out[%d] = 0x%04x, f32 path rounds to 0x%04x", plugin_names[l], i, outb[i],
                              sy_f32_to_bf16(outf[i]));
        }
        close_moe(&p);
    }
    free(outf);
    free(outb);
    free(xb);
    free(x);
    moe_checkpoint_free(&c);
}
END_TEST

/* ---- route against the documented rule ----------------------------------------------------------
 * The rule (docs/plugin-abi.md `route`, the plugins' READMEs, the comment atop moe_route.h): the
 * top_k largest logits in descending order, equal logits to the lower expert id, a NaN below every
 * number (so chosen only when fewer than k logits are numbers); the weights are the softmax over
 * the k chosen. -0 and +0 are equal numbers, so they tie and go by id. The docs do not order NaNs
 * among themselves; taken here, like equal logits, by id (what moe_route.h's comparator does).
 * The reference sorts the whole row with that order as a comparator (not the plugins' bounded
 * insertion, and none of moe_route.h) and takes the softmax in double. */

typedef struct ranked_logit {
    float v;
    int id;
} ranked_logit;

static int rank_order(const void *pa, const void *pb)
{
    const ranked_logit *a = pa, *b = pb;
    int a_nan = isnan(a->v), b_nan = isnan(b->v);
    if (a_nan != b_nan)
        return a_nan - b_nan;    /* the number first */
    if (!a_nan && a->v != b->v) /* == holds for -0 and +0: a tie */
        return a->v > b->v ? -1 : 1;
    return a->id - b->id;
}

/* One row: order[experts] the full ranking (the first k are the ids), weights[k] the softmax of the
 * chosen. Returns 0 where the rule leaves the weights undefined: no chosen logit is NaN and the
 * largest is infinite (softmax of +inf against numbers, or of -inf alone, has no value the docs
 * give); only the ids are checked then. A chosen NaN makes every weight NaN, as it does in the
 * softmax that the rule names. */
static int reference_route(const float *logits, int experts, int k, int *order, double *weights)
{
    ranked_logit *r = malloc(sizeof *r * (size_t)experts);
    for (int e = 0; e < experts; e++) {
        r[e].v = logits[e];
        r[e].id = e;
    }
    qsort(r, (size_t)experts, sizeof *r, rank_order);
    int chosen_nan = 0;
    for (int e = 0; e < experts; e++) {
        order[e] = r[e].id;
        chosen_nan |= e < k && isnan(r[e].v);
    }
    const double top = r[0].v;
    int defined = chosen_nan || isfinite(top);
    double sum = 0;
    for (int j = 0; j < k; j++)
        sum += exp((double)r[j].v - top);
    for (int j = 0; j < k; j++)
        weights[j] = chosen_nan ? NAN : exp((double)r[j].v - top) / sum;
    free(r);
    return defined;
}

/* Rows of every kind in every shape: token t gets kind t % ROUTE_ROW_KINDS. */
enum route_row {
    ROW_NORMAL,       /* N(0, 4): distinct logits */
    ROW_FEW_VALUES,   /* four values: ties inside the top k and across its boundary */
    ROW_BOUNDARY_TIE, /* distinct, then the k-th largest copied onto two experts ranked below it */
    ROW_ALL_EQUAL,    /* one value everywhere: ids 0 .. k-1, weights 1/k */
    ROW_SIGNED_ZEROS, /* -0 at id 0, +0 at id 1, the rest -0, +0 or negative: ranked by id, not sign */
    ROW_NAN_UNCHOSEN, /* NaN at id 0 and at most E - k logits in all: no NaN is chosen */
    ROW_NAN_CHOSEN,   /* (k - 1) / 2 numbers, the rest NaNs of both signs and several payloads */
    ROW_SPECIALS,     /* NaN, -inf and +inf scattered among numbers */
    ROW_WIDE,         /* uniform in +-100: without the max subtracted, expf overflows */
    ROUTE_ROW_KINDS
};

static const char *const route_row_names[ROUTE_ROW_KINDS] = {
    "normal", "few values", "boundary tie", "all equal", "signed zeros",
    "NaN unchosen", "NaN chosen", "specials", "wide"};

static float f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Quiet NaNs of both signs with different payloads: a NaN is a NaN whatever its bits. */
static float some_nan(sy_rng *rng)
{
    static const uint32_t bits[] = {0x7fc00000u, 0xffc00000u, 0x7fc00123u, 0xfff00001u, 0x7fffffffu};
    return f32_of_bits(bits[sy_rng_below(rng, sizeof bits / sizeof bits[0])]);
}

/* perm[0 .. experts) a random permutation of the expert ids. */
static void random_permutation(sy_rng *rng, int *perm, int experts)
{
    for (int e = 0; e < experts; e++)
        perm[e] = e;
    for (int e = experts - 1; e > 0; e--) {
        int j = (int)sy_rng_below(rng, (uint32_t)e + 1), s = perm[e];
        perm[e] = perm[j];
        perm[j] = s;
    }
}

static void route_row(sy_rng *rng, enum route_row kind, float *l, int experts, int k, int *perm)
{
    static const float few[4] = {-1.0f, -0.25f, 0.5f, 1.25f};
    random_permutation(rng, perm, experts);
    switch (kind) {
    case ROW_NORMAL:
        for (int e = 0; e < experts; e++)
            l[e] = (float)(2.0 * sy_rng_normal(rng));
        break;
    case ROW_FEW_VALUES:
        for (int e = 0; e < experts; e++)
            l[e] = few[sy_rng_below(rng, 4)];
        break;
    case ROW_BOUNDARY_TIE:
        /* perm[e] is e's rank from the bottom, so the expert of rank experts - k is the k-th largest;
         * its value goes to (up to) two experts of lower rank, at random ids, below or above it. */
        for (int e = 0; e < experts; e++)
            l[e] = 0.25f * (float)perm[e] - 0.125f * (float)experts;
        for (int e = 0, copies = 0; e < experts && copies < 2; e++)
            if (perm[e] < experts - k) {
                l[e] = 0.25f * (float)(experts - k) - 0.125f * (float)experts;
                copies++;
            }
        break;
    case ROW_ALL_EQUAL: {
        float v = (float)sy_rng_range(rng, -3, 3);
        for (int e = 0; e < experts; e++)
            l[e] = v;
        break;
    }
    case ROW_SIGNED_ZEROS:
        for (int e = 0; e < experts; e++) {
            uint32_t u = sy_rng_below(rng, 3);
            l[e] = u == 0 ? 0.0f : u == 1 ? -0.0f : -0.5f;
        }
        l[0] = -0.0f;
        if (experts > 1)
            l[1] = 0.0f;
        break;
    case ROW_NAN_UNCHOSEN:
        for (int e = 0; e < experts; e++)
            l[e] = (float)(2.0 * sy_rng_normal(rng));
        /* A NaN at id 0, where a plain `>` scan would never displace it, and more at random ids. */
        for (int j = 0; j < experts - k; j++)
            l[perm[j]] = some_nan(rng);
        if (experts > k && !isnan(l[0])) {
            l[perm[0]] = l[0];
            l[0] = some_nan(rng);
        }
        break;
    case ROW_NAN_CHOSEN:
        for (int e = 0; e < experts; e++)
            l[e] = (float)(2.0 * sy_rng_normal(rng));
        for (int j = 0; j < experts - (k - 1) / 2; j++)
            l[perm[j]] = some_nan(rng);
        break;
    case ROW_SPECIALS:
        for (int e = 0; e < experts; e++) {
            uint32_t u = sy_rng_below(rng, 8);
            l[e] = u < 2 ? some_nan(rng) : u < 4 ? -INFINITY : u == 4 ? INFINITY : (float)(2.0 * sy_rng_normal(rng));
        }
        break;
    case ROW_WIDE:
        sy_fill_uniform_f32(rng, l, (size_t)experts, -100, 100);
        break;
    default:
        ck_abort_msg("row kind %d", (int)kind);
    }
}

/* Rows that show each part of the rule, counted over the whole test from the reference's ranking, so
 * that a generator that stops making them fails rather than quietly testing less. */
typedef struct route_coverage {
    long boundary_ties, nan_chosen, nan_unchosen, zeros_by_id, neg_inf_chosen, undefined;
} route_coverage;

static void count_coverage(route_coverage *cv, const float *l, int experts, int k, const int *order, int defined)
{
    int nan_in_row = 0, nan_chosen = 0;
    for (int e = 0; e < experts; e++)
        nan_in_row |= isnan(l[e]);
    for (int j = 0; j < k; j++) {
        float v = l[order[j]];
        nan_chosen |= isnan(v);
        cv->neg_inf_chosen += defined && v == -INFINITY && j > 0;
        /* -0 ranked before a +0 of higher id: an order by sign or by bits would swap them. */
        cv->zeros_by_id += j > 0 && v == 0 && l[order[j - 1]] == 0 && signbit(l[order[j - 1]]) && !signbit(v);
    }
    cv->nan_chosen += nan_chosen;
    cv->nan_unchosen += nan_in_row && !nan_chosen;
    cv->boundary_ties += k < experts && !isnan(l[order[k - 1]]) && l[order[k - 1]] == l[order[k]];
    cv->undefined += !defined;
}

/* The float softmax differs from the double one by rounding alone: the shifted logit l_j - l_0 (an
 * absolute error up to |l_j - l_0| 2^-24, so a relative one of that size in exp), expf (an ulp), the
 * sum of k terms and the division. Bound: (|d_j| + max |d| + k + 8) 2^-23 relative, twice the sum
 * of those, plus FLT_MIN for weights that underflow in f32. A wrong id, a missing max shift or a
 * softmax over the wrong set is off by far more. */
static double weight_tolerance(double want, double d_j, double d_max, int k)
{
    return want * (fabs(d_j) + d_max + k + 8) * 0x1p-23 + 0x1p-126;
}

START_TEST(route_matches_documented_rule)
{
    /* E above 32 (the top-k cap) and above 64, k = 1, k = E, k = 32 (the cap); rows padded to a
     * stride of E + pad in some cases, the pad +inf, which would rank first if read as a logit. */
    static const struct {
        int experts, top_k, pad;
    } cases[] = {{1, 1, 0},  {5, 1, 3},   {5, 3, 0},    {5, 5, 3},   {7, 2, 0},    {32, 32, 1}, {37, 1, 0},
                 {37, 4, 5}, {37, 32, 0}, {128, 1, 3},  {128, 4, 0}, {128, 32, 7}, {1000, 7, 0}};
    enum { ROUTE_T = 3 * ROUTE_ROW_KINDS + 2 };
    sy_rng rng = {sy_test_seed()};
    route_coverage cv = {0, 0, 0, 0, 0, 0};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int ne = cases[c].experts, k = cases[c].top_k, stride = ne + cases[c].pad;
        float *logits = malloc(sizeof(float) * ROUTE_T * (size_t)stride), *got_w = malloc(sizeof(float) * ROUTE_T * k);
        int32_t *got_ids = malloc(sizeof(int32_t) * ROUTE_T * k);
        int *order = malloc(sizeof(int) * ROUTE_T * ne), *defined = malloc(sizeof(int) * ROUTE_T);
        double *want_w = malloc(sizeof(double) * ROUTE_T * k);
        for (int t = 0; t < ROUTE_T; t++) {
            float *l = logits + (size_t)t * stride;
            route_row(&rng, (enum route_row)(t % ROUTE_ROW_KINDS), l, ne, k, order + t * ne);
            for (int e = ne; e < stride; e++)
                l[e] = INFINITY;
            defined[t] = reference_route(l, ne, k, order + t * ne, want_w + t * k);
            count_coverage(&cv, l, ne, k, order + t * ne, defined[t]);
        }
        for (int pl = 0; pl < 2; pl++) {
            const sy_plugin_desc *desc = sy_cpu_plugin(SY_KIND_MOE, plugin_names[pl]);
            const sy_moe_ops *ops = desc->ops;
            ck_assert_uint_ge(((const sy_moe_caps *)desc->caps)->max_top_k, (uint32_t)k);
            void *ctx = sy_cpu_plugin_init(desc, NULL);
            sy_moe_route_args r;
            memset(&r, 0, sizeof r);
            r.struct_size = sizeof r;
            r.shape = (sy_moe_shape){sizeof r.shape, (uint32_t)ne, 64, 96, (uint32_t)k, alpha, limit, 0};
            r.logits = moe_tensor(logits, SY_DTYPE_F32, 2, ROUTE_T, ne, 0, 0);
            r.logits.stride[0] = stride;
            r.topk_ids = moe_tensor(got_ids, SY_DTYPE_I32, 2, ROUTE_T, k, 0, 0);
            r.topk_weights = moe_tensor(got_w, SY_DTYPE_F32, 2, ROUTE_T, k, 0, 0);
            /* Twice: poisoned with NaN, then with a finite 3.4e38, so that an unwritten weight fails
             * where the reference is a number and where it is NaN alike. Ids start at -1. */
            for (int poison = 0; poison < 2; poison++) {
                memset(got_ids, 0xFF, sizeof(int32_t) * ROUTE_T * k);
                if (poison == 0)
                    sy_poison_f32(got_w, (size_t)ROUTE_T * k);
                else
                    memset(got_w, 0x7F, sizeof(float) * ROUTE_T * k);
                sy_error err = {{0}};
                ck_assert_msg(ops->route(ctx, NULL, &r, &err) == SY_OK, "%s route E%d k%d: %s", desc->name, ne, k,
                              err.msg);
                for (int t = 0; t < ROUTE_T; t++) {
                    const float *l = logits + (size_t)t * stride;
                    const int *o = order + t * ne;
                    const char *kind = route_row_names[t % ROUTE_ROW_KINDS];
                    double d_max = 0;
                    for (int j = 0; j < k; j++)
                        if (isfinite((double)l[o[j]] - l[o[0]]))
                            d_max = fmax(d_max, fabs((double)l[o[j]] - l[o[0]]));
                    for (int j = 0; j < k; j++) {
                        int32_t id = got_ids[t * k + j];
                        ck_assert_msg(id == o[j],
                                      "%s E%d k%d token %d (%s) slot %d: id %d (logit %g), expected %d (%g)",
                                      desc->name, ne, k, t, kind, j, (int)id, id >= 0 && id < ne ? (double)l[id] : 0.0,
                                      o[j], (double)l[o[j]]);
                        if (!defined[t])
                            continue;
                        double want = want_w[t * k + j], w = got_w[t * k + j];
                        if (isnan(want)) {
                            ck_assert_msg(isnan(w), "%s E%d k%d token %d (%s) slot %d: weight %g, expected NaN",
                                          desc->name, ne, k, t, kind, j, w);
                            continue;
                        }
                        double d = (double)l[o[j]] - l[o[0]];
                        ck_assert_msg(fabs(w - want) <= weight_tolerance(want, isfinite(d) ? d : 0, d_max, k),
                                      "%s E%d k%d token %d (%s) slot %d: weight %.9g, expected %.9g", desc->name, ne,
                                      k, t, kind, j, w, want);
                    }
                }
            }
            sy_cpu_plugin_fini(desc, ctx);
        }
        free(logits);
        free(got_w);
        free(got_ids);
        free(order);
        free(defined);
        free(want_w);
    }
    ck_assert_msg(cv.boundary_ties > 0 && cv.nan_chosen > 0 && cv.nan_unchosen > 0 && cv.zeros_by_id > 0 &&
                      cv.neg_inf_chosen > 0,
                  "rows do not exercise the rule: boundary ties %ld, NaN chosen %ld, NaN unchosen %ld, -0 before +0 "
                  "%ld, -inf chosen %ld",
                  cv.boundary_ties, cv.nan_chosen, cv.nan_unchosen, cv.zeros_by_id, cv.neg_inf_chosen);
}
END_TEST

static void expect_forward_error(const moe_plugin *p, sy_moe_forward_args *f, const char *part)
{
    sy_error err = {{0}};
    sy_status st = p->ops->forward(p->ctx, NULL, f, &err);
    ck_assert_msg(st != SY_OK, "%s: expected an error containing '%s'", p->desc->name, part);
    ck_assert_msg(strstr(err.msg, part) != NULL, "%s: message '%s' lacks '%s'", p->desc->name, err.msg, part);
    ck_assert_msg(strchr(err.msg, '\n') == NULL, "message is not one line: %s", err.msg);
}

START_TEST(buffer_of_the_other_layout_is_refused)
{
    sy_rng rng = {sy_test_seed()};
    moe_checkpoint c = layer_checkpoint(&rng);
    sy_moe_shape shape = layer_shape();
    moe_plugin inter = open_moe(0, &c, &shape, NULL), sep = open_moe(1, &c, &shape, NULL);
    float *x = random_tokens(&rng), *out = malloc(sizeof(float) * T * H), weights[T * K];
    int32_t ids[T * K];
    for (int i = 0; i < T * K; i++) {
        ids[i] = i % E;
        weights[i] = 0.25f;
    }
    /* A buffer prepared for the other layout is refused, naming both. */
    sy_moe_forward_args f = forward_args(&inter, x, SY_DTYPE_F32, H, ids, weights, out, SY_DTYPE_F32);
    f.prepared = sep.prepared;
    expect_forward_error(&inter, &f, "prepared buffer is in the separated layout, this plugin reads interleave");
    f = forward_args(&sep, x, SY_DTYPE_F32, H, ids, weights, out, SY_DTYPE_F32);
    f.prepared = inter.prepared;
    expect_forward_error(&sep, &f, "in the interleave layout");
    close_moe(&inter);
    close_moe(&sep);
    free(x);
    free(out);
    moe_checkpoint_free(&c);
}
END_TEST

START_TEST(argument_errors_name_the_argument)
{
    sy_rng rng = {sy_test_seed()};
    moe_checkpoint c = layer_checkpoint(&rng);
    sy_moe_shape shape = layer_shape();
    moe_plugin p = open_moe(0, &c, &shape, NULL);
    float *x = random_tokens(&rng), *out = malloc(sizeof(float) * T * H), weights[T * K];
    int32_t ids[T * K];
    for (int i = 0; i < T * K; i++) {
        ids[i] = i % E;
        weights[i] = 0.25f;
    }
    sy_moe_forward_args f = forward_args(&p, x, SY_DTYPE_F32, H - 32, ids, weights, out, SY_DTYPE_F32);
    expect_forward_error(&p, &f, "x has 704 columns, expected hidden 736 or padded hidden 768");
    ids[7] = E;
    f = forward_args(&p, x, SY_DTYPE_F32, H, ids, weights, out, SY_DTYPE_F32);
    expect_forward_error(&p, &f, "topk_ids[2][1] = 5 is outside 0..4");
    ids[7] = 0;
    f.shape.intermediate = I + 32;
    expect_forward_error(&p, &f, "prepared buffer holds experts 5 hidden 736 intermediate 608");
    f = forward_args(&p, x, SY_DTYPE_F32, H, ids, weights, out, SY_DTYPE_F16);
    expect_forward_error(&p, &f, "out has dtype f16, expected f32 or bf16");
    f = forward_args(&p, x, SY_DTYPE_F32, H, ids, weights, out, SY_DTYPE_F32);
    f.prepared = x;
    expect_forward_error(&p, &f, "not written by an MXFP4 MoE prepare");
    f = forward_args(&p, x, SY_DTYPE_F32, H, ids, weights, out, SY_DTYPE_F32);
    f.shape.hidden = 100;
    expect_forward_error(&p, &f, "shape.hidden 100 must be a positive multiple of 32");
    uint64_t bytes;
    sy_error err = {{0}};
    sy_moe_shape bad = layer_shape();
    bad.top_k = E + 1;
    ck_assert_int_eq(p.ops->prepared_bytes(&bad, &bytes, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "shape.top_k 6 is outside 1..min(num_experts 5"));
    close_moe(&p);
    free(x);
    free(out);
    moe_checkpoint_free(&c);
}
END_TEST

/* prepared_bytes is a pure function of the shape, equal for both layouts, callable before init. */
START_TEST(prepared_bytes_is_pure)
{
    sy_moe_shape s = {sizeof s, 32, 2880, 2880, 4, alpha, limit, 0};
    uint64_t b[2][2];
    sy_error err = {{0}};
    for (int l = 0; l < 2; l++) {
        const sy_moe_ops *ops = sy_cpu_plugin(SY_KIND_MOE, plugin_names[l])->ops;
        for (int r = 0; r < 2; r++)
            ck_assert_msg(ops->prepared_bytes(&s, &b[l][r], &err) == SY_OK, "%s", err.msg);
    }
    ck_assert(b[0][0] == b[0][1] && b[0][0] == b[1][0] && b[1][0] == b[1][1]);
    /* 32 experts of 2*3072 x 3072 and 3072 x 3072 four-bit weights, a scale per 32, f32 biases, a
     * top scale byte a row. */
    uint64_t weights = 32ull * (2 * 3072 * 3072 + 3072 * 3072) / 2;
    uint64_t scales = 32ull * (2 * 3072 * 3072 + 3072 * 3072) / 32, biases = 32ull * 4 * (2 * 3072 + 3072);
    uint64_t tops = 32ull * (2 * 3072 + 3072);
    ck_assert_uint_ge(b[0][0], weights + scales + biases + tops);
    ck_assert_uint_le(b[0][0], weights + scales + biases + tops + 9 * 256);
    ck_assert_uint_eq(b[0][0], 482771200); /* the figure the plugin's README gives */
}
END_TEST

START_TEST(caps_declare_layout_and_padding)
{
    for (int l = 0; l < 2; l++) {
        const sy_plugin_desc *d = sy_cpu_plugin(SY_KIND_MOE, plugin_names[l]);
        const sy_moe_caps *caps = d->caps;
        ck_assert_uint_eq(caps->gate_up_layout, plugin_layouts[l]);
        ck_assert_uint_eq(caps->weight_format, SY_MOE_WEIGHTS_MXFP4);
        ck_assert_uint_eq(caps->input_alignment, 256);
        ck_assert_uint_eq(caps->accepts_padded_input, 1);
        ck_assert_uint_ge(caps->max_tp, 1);
        ck_assert(caps->act_dtypes & SY_DTYPE_BIT(SY_DTYPE_F32));
        ck_assert(caps->act_dtypes & SY_DTYPE_BIT(SY_DTYPE_BF16));
    }
}
END_TEST

/* With a host API, scratch comes from workspace_alloc and is all returned at fini, and the output is
 * still the reference's. The workspace arrives full of NaN (0xFF bytes, -1 as int32) and stays with
 * the plugin between calls, so scratch read before it is written shows up in the output. */
typedef struct counting_host {
    long live, calls;
} counting_host;

static sy_status count_alloc(void *host, size_t bytes, void **ptr, sy_error *err)
{
    (void)err;
    counting_host *h = host;
    const size_t rounded = (bytes + 255) / 256 * 256;
    *ptr = aligned_alloc(256, rounded ? rounded : 256);
    ck_assert_ptr_nonnull(*ptr);
    memset(*ptr, 0xFF, rounded);
    h->live++;
    h->calls++;
    return SY_OK;
}

static void count_free(void *host, void *ptr)
{
    counting_host *h = host;
    free(ptr);
    h->live--;
}

START_TEST(scratch_goes_through_the_host_workspace)
{
    /* 1 token first (a small workspace), then T (it grows: fresh NaN memory), then 3 (the T call's
     * leftovers in it). Tokens are independent, so the reference of all T serves every call. */
    static const int token_counts[] = {1, T, 3};
    sy_rng rng = {sy_test_seed()};
    moe_checkpoint c = layer_checkpoint(&rng);
    sy_moe_shape shape = layer_shape();
    float *w13 = moe_checkpoint_dequant_w13(&c), *w2 = moe_checkpoint_dequant_w2(&c);
    float *x = random_tokens(&rng), *out = malloc(sizeof(float) * T * H), weights[T * K];
    double *want = malloc(sizeof(double) * T * H);
    int32_t ids[T * K];
    /* Random routing: K distinct experts a token (a random rotation of a random stride through the
     * E = 5), random weights. */
    for (int t = 0; t < T; t++) {
        int first = (int)sy_rng_below(&rng, E), step = 1 + (int)sy_rng_below(&rng, E - 1);
        for (int j = 0; j < K; j++) {
            ids[t * K + j] = (first + j * step) % E;
            weights[t * K + j] = (float)sy_rng_range(&rng, 0.05, 1.0);
        }
    }
    reference_forward(&c, w13, w2, x, HP, T, ids, weights, want, NULL, 1);
    for (int l = 0; l < 2; l++) {
        counting_host counts = {0, 0};
        sy_host_api host;
        memset(&host, 0, sizeof host);
        host.struct_size = sizeof host;
        host.abi_major = SY_ABI_MAJOR;
        host.abi_minor = SY_ABI_MINOR;
        host.host = &counts;
        host.workspace_alloc = count_alloc;
        host.workspace_free = count_free;
        moe_plugin p = open_moe(l, &c, &shape, &host);
        for (size_t r = 0; r < sizeof token_counts / sizeof token_counts[0]; r++) {
            const int n = token_counts[r];
            sy_moe_forward_args f = forward_args_n(&p, n, x, SY_DTYPE_F32, H, ids, weights, out, SY_DTYPE_F32);
            sy_error err = {{0}};
            sy_poison_f32(out, (size_t)T * H);
            ck_assert_msg(p.ops->forward(p.ctx, NULL, &f, &err) == SY_OK, "%s forward: %s", p.desc->name, err.msg);
            double rel = sy_rel_l2_f32(out, want, (size_t)n * H);
            ck_assert_msg(rel < 1e-5, "%s with the host workspace, %d tokens: relative L2 %.3g against the reference",
                          plugin_names[l], n, rel);
            /* Rows past the call's tokens are not its output and keep the poison. */
            for (size_t i = (size_t)n * H; i < (size_t)T * H; i++)
                ck_assert_msg(isnan(out[i]), "%s, %d tokens: out[%zu] = %g is past the output", plugin_names[l], n, i,
                              (double)out[i]);
        }
        ck_assert_int_gt(counts.calls, 0);
        close_moe(&p);
        ck_assert_int_eq(counts.live, 0);
    }
    free(want);
    free(w13);
    free(w2);
    free(x);
    free(out);
    moe_checkpoint_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("moe_forward");
    TCase *tc = tcase_create("forward");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, forward_matches_double_reference);
    tcase_add_test(tc, few_tokens_match_double_reference);
    tcase_add_test(tc, bf16_activations_round_once);
    tcase_add_test(tc, route_matches_documented_rule);
    tcase_add_test(tc, buffer_of_the_other_layout_is_refused);
    tcase_add_test(tc, argument_errors_name_the_argument);
    tcase_add_test(tc, prepared_bytes_is_pure);
    tcase_add_test(tc, caps_declare_layout_and_padding);
    tcase_add_test(tc, scratch_goes_through_the_host_workspace);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
