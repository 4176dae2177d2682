/* rope_yarn (cpu) through the plugin ABI: the YaRN frequencies and concentration of gpt-oss, the
 * rotation against a double reference at positions up to 131072 (gpt-oss at head dim 64, then a
 * table of unscaled, set-concentration and other-head-dim cases), and the fused rope + K/V store
 * bit for bit against rope followed by the kv_layout plugins' write, for both layouts. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_plugin_fixture.h"
#include "sy_numeric.h"
#include "sy_rope.h"
#include "sy_test.h"

static const sy_plugin_desc *plugin(void)
{
    return sy_cpu_plugin(SY_KIND_ROPE, "rope_yarn");
}

static const sy_rope_ops *ops(void)
{
    return plugin()->ops;
}

/* gpt-oss: theta 150000, YaRN factor 32, beta_fast 32, beta_slow 1, original 4096, head dim 64. */
static sy_rope_params gpt_oss_params(void)
{
    sy_rope_params p = {sizeof p, SY_ROPE_STYLE_NEOX, SY_ROPE_SCALING_YARN, 64, 150000.0f, 32.0f, 32.0f, 1.0f, 4096,
                        0.0f};
    return p;
}

/* The reference's formula, written out again (openai/gpt-oss torch/model.py), in double. */
static double ref_inv_freq(uint32_t i, uint32_t D)
{
    const double base = 150000, factor = 32, L = 4096, pi = 3.14159265358979323846, half = D / 2.0;
    double freq = pow(base, (2.0 * i) / D);
    double low = half * log(L / (32 * 2 * pi)) / log(base), high = half * log(L / (1 * 2 * pi)) / log(base);
    double ramp = ((double)i - low) / (high - low);
    double mask = 1 - fmin(fmax(ramp, 0), 1);
    return 1 / (factor * freq) * (1 - mask) + 1 / freq * mask;
}

START_TEST(yarn_frequencies_and_concentration)
{
    sy_rope_params p = gpt_oss_params();
    ck_assert_double_eq_tol(sy_rope_concentration(&p), 0.1 * log(32.0) + 1.0, 1e-15);
    double low, high;
    sy_rope_yarn_bounds(&p, &low, &high);
    /* The reference asserts 0 < low < high < d_half - 1: here about 8.09 and 17.40. */
    ck_assert(0 < low && low < high && high < 31);
    ck_assert_double_eq_tol(low, 8.0927, 1e-3);
    ck_assert_double_eq_tol(high, 17.3980, 1e-3);
    for (uint32_t i = 0; i < 32; i++) {
        double want = ref_inv_freq(i, 64), got = sy_rope_inv_freq(&p, i);
        ck_assert_msg(fabs(got - want) <= 1e-15 * want, "inv_freq[%u] = %.17g, reference %.17g", i, got, want);
        double plain = pow(150000.0, -2.0 * i / 64);
        if (i <= 8) /* below low: the original frequency (extrapolation) */
            ck_assert_double_eq_tol(got, plain, 1e-15 * plain);
        if (i >= 18) /* above high: interpolated by the factor */
            ck_assert_double_eq_tol(got, plain / 32, 1e-15 * plain);
    }
    sy_rope_params none = p;
    none.scaling = SY_ROPE_SCALING_NONE;
    ck_assert_double_eq(sy_rope_concentration(&none), 1.0);
    ck_assert_double_eq_tol(sy_rope_inv_freq(&none, 20), pow(150000.0, -40.0 / 64), 1e-18);
    none.concentration = 1.25f;
    ck_assert_double_eq(sy_rope_concentration(&none), 1.25);
}
END_TEST

enum { T = 29, HQ = 6, HKV = 2, D = 64, ROW = (HQ + 2 * HKV) * D };

/* Positions over the whole range: 0, around the original 4096, up to 131072. */
static void positions(sy_rng *rng, int32_t *pos)
{
    const int32_t fixed[] = {0, 1, 4095, 4096, 4097, 65535, 131071, 131072};
    for (int t = 0; t < T; t++)
        pos[t] = t < (int)(sizeof fixed / sizeof fixed[0]) ? fixed[t] : (int32_t)sy_rng_below(rng, 131073);
}

/* q and k as slices of one fused qkv row per token, as the qkv projection writes them. */
static sy_rope_args rope_args(void *qkv, int32_t dtype, int32_t *pos)
{
    sy_rope_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.params = gpt_oss_params();
    int64_t sq[3] = {T, HQ, D}, sk[3] = {T, HKV, D}, sp[1] = {T};
    size_t es = sy_dtype_size(dtype);
    a.q = sy_tensor_contiguous(qkv, dtype, 3, sq);
    a.k = sy_tensor_contiguous((uint8_t *)qkv + (size_t)HQ * D * es, dtype, 3, sk);
    a.q.stride[0] = a.k.stride[0] = ROW;
    a.positions = sy_tensor_contiguous(pos, SY_DTYPE_I32, 1, sp);
    return a;
}

/* Rotation of one head row in double: x1 cos - x2 sin, x2 cos + x1 sin, cos and sin times the
 * concentration. */
static void ref_rotate(const double *x, int32_t pos, double *out)
{
    const double conc = 0.1 * log(32.0) + 1.0;
    for (int i = 0; i < D / 2; i++) {
        double ang = (double)pos * ref_inv_freq((uint32_t)i, D), c = cos(ang) * conc, s = sin(ang) * conc;
        out[i] = x[i] * c - x[i + D / 2] * s;
        out[i + D / 2] = x[i + D / 2] * c + x[i] * s;
    }
}

static double elem(const void *p, int32_t dtype, size_t i)
{
    return dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void *random_qkv(sy_rng *rng, int32_t dtype)
{
    size_t n = (size_t)T * ROW;
    void *qkv = malloc(n * sy_dtype_size(dtype));
    for (size_t i = 0; i < n; i++) {
        float v = (float)sy_rng_range(rng, -2, 2);
        if (dtype == SY_DTYPE_BF16)
            ((uint16_t *)qkv)[i] = sy_f32_to_bf16(v);
        else
            ((float *)qkv)[i] = v;
    }
    return qkv;
}

static void check_rotation(int32_t dtype)
{
    sy_rng rng = {sy_test_seed()};
    int32_t pos[T];
    positions(&rng, pos);
    void *qkv = random_qkv(&rng, dtype);
    size_t bytes = (size_t)T * ROW * sy_dtype_size(dtype);
    void *before = malloc(bytes);
    memcpy(before, qkv, bytes);
    sy_rope_args a = rope_args(qkv, dtype, pos);
    sy_error err = {{0}};
    ck_assert_msg(ops()->rope(NULL, NULL, &a, &err) == SY_OK, "%s", err.msg);
    double x[D], want[D], num = 0, den = 0, worst = 0;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < HQ + 2 * HKV; h++) {
            size_t base = (size_t)t * ROW + (size_t)h * D;
            if (h >= HQ + HKV) { /* v: untouched */
                ck_assert(memcmp((uint8_t *)qkv + base * sy_dtype_size(dtype),
                                 (uint8_t *)before + base * sy_dtype_size(dtype), D * sy_dtype_size(dtype)) == 0);
                continue;
            }
            for (int d = 0; d < D; d++)
                x[d] = elem(before, dtype, base + d);
            ref_rotate(x, pos[t], want);
            for (int d = 0; d < D; d++) {
                double got = elem(qkv, dtype, base + d), e = fabs(got - want[d]);
                num += e * e;
                den += want[d] * want[d];
                worst = fmax(worst, e / fmax(fabs(want[d]), 1e-3));
            }
        }
    if (dtype == SY_DTYPE_F32)
        ck_assert_msg(sqrt(num / den) < 1e-6, "f32: relative L2 %.3g against the double reference", sqrt(num / den));
    else /* one bf16 rounding: half an ulp is 2^-8 relative, plus the f32 arithmetic */
        ck_assert_msg(worst < 0.0041, "bf16: worst relative error %.3g", worst);
    free(before);
    free(qkv);
}

START_TEST(rope_matches_double_reference_f32)
{
    check_rotation(SY_DTYPE_F32);
}
END_TEST

START_TEST(rope_matches_double_reference_bf16)
{
    check_rotation(SY_DTYPE_BF16);
}
END_TEST

/* ---- the rotation beyond gpt-oss at head dim 64 ------------------------------------------ */

/* Each case runs through the loaded plugin's rope and is checked element by element against a
 * double reference written from the formula. Token counts are odd, head dims not powers of two,
 * positions odd, random and up to the case's maximum. */
typedef struct rope_case {
    const char *name;
    uint32_t scaling;      /* SY_ROPE_SCALING_* */
    uint32_t head_dim;
    float theta, factor, beta_fast, beta_slow;
    uint32_t original;     /* YaRN's original max positions */
    float concentration;   /* params.concentration; 0: the default */
    int32_t dtype;
    int tokens, hq, hkv;
    int32_t max_pos;
} rope_case;

static const rope_case rope_cases[] = {
    /* Unscaled: scaling none must ignore the YaRN fields, here gpt-oss's (factor 32), and use
     * concentration 1 (sy_rope.h; the frequencies would differ up to 32x at the high indices). */
    {"none, D 96, theta 1e4, factor field 32", SY_ROPE_SCALING_NONE, 96, 10000.0f, 32.0f, 32.0f, 1.0f, 4096, 0.0f,
     SY_DTYPE_F32, 13, 5, 1, 131072},
    /* Unscaled the other way: YaRN with factor 1 is no scaling (gpt-oss: scaling_factor > 1). */
    {"yarn factor 1, D 40", SY_ROPE_SCALING_YARN, 40, 150000.0f, 1.0f, 32.0f, 1.0f, 4096, 0.0f, SY_DTYPE_F32, 7, 3, 1,
     65536},
    /* A set concentration multiplies cos and sin without scaling too (plugin.h sy_rope_params). */
    {"none, concentration 1.25, D 34, bf16", SY_ROPE_SCALING_NONE, 34, 10000.0f, 1.0f, 0.0f, 0.0f, 0, 1.25f,
     SY_DTYPE_BF16, 5, 2, 1, 8191},
    /* gpt-oss's YaRN with a concentration other than its default 0.1 ln 32 + 1 = 1.3466. */
    {"yarn gpt-oss, concentration 1.25, D 64", SY_ROPE_SCALING_YARN, 64, 150000.0f, 32.0f, 32.0f, 1.0f, 4096, 1.25f,
     SY_DTYPE_F32, 11, 6, 2, 131072},
    {"yarn factor 8, concentration 0.8, D 40, bf16", SY_ROPE_SCALING_YARN, 40, 500000.0f, 8.0f, 32.0f, 1.0f, 8192,
     0.8f, SY_DTYPE_BF16, 9, 4, 2, 65536},
    /* The default concentration at other head dims: the ramp bounds scale with D / 2. */
    {"yarn gpt-oss, D 96", SY_ROPE_SCALING_YARN, 96, 150000.0f, 32.0f, 32.0f, 1.0f, 4096, 0.0f, SY_DTYPE_F32, 9, 3, 3,
     131072},
    {"yarn factor 4, beta 16 / 2, D 510, bf16", SY_ROPE_SCALING_YARN, 510, 1000000.0f, 4.0f, 16.0f, 2.0f, 2048, 0.0f,
     SY_DTYPE_BF16, 3, 1, 1, 32767},
};

enum { MAX_HALF = 256 }; /* head dim / 2 of the largest case */

static sy_rope_params case_params(const rope_case *c)
{
    sy_rope_params p = {sizeof p,  SY_ROPE_STYLE_NEOX, c->scaling,   c->head_dim, c->theta,
                        c->factor, c->beta_fast,       c->beta_slow, c->original, c->concentration};
    return p;
}

/* openai/gpt-oss gpt_oss/torch/model.py, RotaryEmbedding._compute_concentration_and_inv_freq,
 * written again in double for any parameters (ntk_beta = beta_fast, ntk_alpha = beta_slow,
 * initial_context_length = original): freq_i = theta^(2i / D); with scaling_factor > 1 (YaRN
 * "NTK by parts", arXiv:2309.00071) low / high = D/2 ln(L / (beta 2 pi)) / ln theta, mask = 1 -
 * clamp((i - low) / (high - low), 0, 1), inv_freq = 1 / (factor freq) (1 - mask) + 1 / freq mask,
 * concentration 0.1 ln(factor) + 1; otherwise inv_freq = 1 / freq, concentration 1. Then the
 * ABI's override (switchyard/plugin.h, sy_rope_params.concentration): a non-zero
 * params.concentration replaces the concentration. */
static double case_reference_freqs(const rope_case *c, double *inv_freq)
{
    const double pi = 3.14159265358979323846, dims = c->head_dim, base = c->theta, half = dims / 2;
    ck_assert(c->head_dim / 2 <= MAX_HALF);
    int yarn = c->scaling == SY_ROPE_SCALING_YARN && c->factor > 1.0f;
    double conc = yarn ? 0.1 * log((double)c->factor) + 1.0 : 1.0;
    double low = 0, high = 0;
    if (yarn) {
        low = half * log(c->original / ((double)c->beta_fast * 2 * pi)) / log(base);
        high = half * log(c->original / ((double)c->beta_slow * 2 * pi)) / log(base);
        /* gpt-oss asserts 0 < low < high < d_half - 1; the cases keep to it so that the ramp,
         * the extrapolated and the interpolated part are all exercised. */
        ck_assert_msg(0 < low && low < high && high < half - 1, "%s: low %g, high %g", c->name, low, high);
    }
    for (uint32_t i = 0; i < c->head_dim / 2; i++) {
        double freq = pow(base, 2.0 * i / dims);
        if (!yarn) {
            inv_freq[i] = 1 / freq;
            continue;
        }
        double mask = 1 - fmin(fmax(((double)i - low) / (high - low), 0), 1);
        inv_freq[i] = 1 / ((double)c->factor * freq) * (1 - mask) + 1 / freq * mask;
    }
    return c->concentration != 0.0f ? (double)c->concentration : conc;
}

/* q and k heads with a head stride of D + 3 and a token stride of (Hq + Hkv)(D + 3) + 5, so that
 * the gaps between heads and tokens (and a tail) hold poison: a kernel that writes outside the
 * views changes them, one that reads outside them gets NaN into its results. The rotation is in
 * place, so the views themselves hold the inputs, not poison. */
enum { HEAD_GAP = 3, TOKEN_GAP = 5, TAIL = 7 };

static size_t case_head_stride(const rope_case *c)
{
    return c->head_dim + HEAD_GAP;
}

static size_t case_token_stride(const rope_case *c)
{
    return (size_t)(c->hq + c->hkv) * case_head_stride(c) + TOKEN_GAP;
}

static void poison_elems(void *p, int32_t dtype, size_t n)
{
    if (dtype == SY_DTYPE_F32)
        sy_poison_f32(p, n);
    else
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)p)[i] = 0xFFC1; /* a bf16 NaN */
}

/* Error bound of the kernel's f32 arithmetic against the exact rotation: cos and sin times the
 * concentration rounded to f32 (u = 2^-24 each), two products and a sum (u each), so |err| <=
 * 3u (|x1 C| + |x2 S|) to first order; 4u for the second-order terms and an FMA-free or fused
 * evaluation alike. The angle is double on both sides; the two computations of inv_freq differ by
 * a few double ulps, at most about 1e-10 rad at position 131072, covered by the 2^-30 term.
 * bf16 outputs add their own rounding, half an ulp = 2^-8 of the magnitude (plus the smallest
 * subnormal, for results that land there). */
static double rotation_bound(int32_t dtype, double x1, double x2, double C, double S, double conc, double want)
{
    double b = 4 * 0x1p-24 * (fabs(x1 * C) + fabs(x2 * S)) + 0x1p-30 * fabs(conc) * (fabs(x1) + fabs(x2));
    return dtype == SY_DTYPE_BF16 ? b + 0x1p-8 * (fabs(want) + b) + 0x1p-133 : b;
}

static void run_rope_case(const rope_case *c, sy_rng *rng)
{
    const sy_rope_caps *caps = plugin()->caps;
    /* Only what the plugin says it serves. */
    ck_assert_msg((caps->scalings & c->scaling) && c->head_dim <= caps->head_dim_max &&
                      (caps->dtypes & SY_DTYPE_BIT(c->dtype)),
                  "%s: not in the plugin's caps", c->name);
    const int nt = c->tokens, dim = (int)c->head_dim, half = dim / 2;
    const size_t hs = case_head_stride(c), ts = case_token_stride(c), n = (size_t)nt * ts + TAIL;
    const size_t es = sy_dtype_size(c->dtype);
    void *buf = malloc(n * es), *before = malloc(n * es);
    poison_elems(buf, c->dtype, n);
    for (int t = 0; t < nt; t++)
        for (int h = 0; h < c->hq + c->hkv; h++)
            for (int d = 0; d < dim; d++) {
                size_t i = (size_t)t * ts + (size_t)h * hs + (size_t)d;
                float v = (float)sy_rng_range(rng, -2, 2);
                if (c->dtype == SY_DTYPE_BF16)
                    ((uint16_t *)buf)[i] = sy_f32_to_bf16(v);
                else
                    ((float *)buf)[i] = v;
            }
    memcpy(before, buf, n * es);

    /* Positions: the case's maximum, 0, 1 and odd ones first, then random ones (any order). */
    int32_t *pos = malloc((size_t)nt * sizeof *pos);
    const int32_t fixed[] = {c->max_pos, 0, 1, 4097, 3, c->max_pos - 1, 12345};
    for (int t = 0; t < nt; t++)
        pos[t] = t < (int)(sizeof fixed / sizeof fixed[0]) ? fixed[t] % (c->max_pos + 1)
                                                           : (int32_t)sy_rng_below(rng, (uint32_t)c->max_pos + 1);

    sy_rope_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.params = case_params(c);
    int64_t sq[3] = {nt, c->hq, dim}, sk[3] = {nt, c->hkv, dim}, sp[1] = {nt};
    a.q = sy_tensor_contiguous(buf, c->dtype, 3, sq);
    a.k = sy_tensor_contiguous((uint8_t *)buf + (size_t)c->hq * hs * es, c->dtype, 3, sk);
    a.q.stride[0] = a.k.stride[0] = (int64_t)ts;
    a.q.stride[1] = a.k.stride[1] = (int64_t)hs;
    a.positions = sy_tensor_contiguous(pos, SY_DTYPE_I32, 1, sp);
    sy_error err = {{0}};
    ck_assert_msg(ops()->rope(NULL, NULL, &a, &err) == SY_OK, "%s: %s", c->name, err.msg);

    double *inv_freq = malloc((size_t)half * sizeof *inv_freq);
    const double conc = case_reference_freqs(c, inv_freq);
    double worst = 0; /* largest error / bound */
    for (int t = 0; t < nt; t++)
        for (int h = 0; h < c->hq + c->hkv; h++) {
            size_t row = (size_t)t * ts + (size_t)h * hs;
            for (int i = 0; i < half; i++) {
                double ang = (double)pos[t] * inv_freq[i], C = cos(ang) * conc, S = sin(ang) * conc;
                double x1 = elem(before, c->dtype, row + (size_t)i);
                double x2 = elem(before, c->dtype, row + (size_t)(i + half));
                /* gpt-oss _apply_rotary_emb: o1 = x1 cos - x2 sin, o2 = x2 cos + x1 sin. */
                const double want[2] = {x1 * C - x2 * S, x2 * C + x1 * S};
                const size_t at[2] = {row + (size_t)i, row + (size_t)(i + half)};
                for (int o = 0; o < 2; o++) {
                    double got = elem(buf, c->dtype, at[o]), e = fabs(got - want[o]);
                    double bound = rotation_bound(c->dtype, o ? x2 : x1, o ? x1 : x2, C, S, conc, want[o]);
                    ck_assert_msg(e <= bound,
                                  "%s: token %d (position %d) head %d dim %zu: got %.9g, want %.9g, error %.3g > "
                                  "bound %.3g",
                                  c->name, t, pos[t], h, at[o] - row, got, want[o], e, bound);
                    worst = fmax(worst, e / bound);
                }
            }
        }
    /* Everything outside the q and k views, the gaps and the tail, still holds its poison. */
    for (size_t i = 0; i < n; i++) {
        size_t in_token = i % ts;
        int in_view = i < (size_t)nt * ts && in_token < (size_t)(c->hq + c->hkv) * hs && in_token % hs < (size_t)dim;
        if (!in_view)
            ck_assert_msg(memcmp((uint8_t *)buf + i * es, (uint8_t *)before + i * es, es) == 0,
                          "%s: element %zu outside q and k was written", c->name, i);
    }
    /* The comparison saw the kernel's outputs: random f32 rotations are never all exact. */
    ck_assert(worst > 0 || c->dtype == SY_DTYPE_BF16);
    free(inv_freq);
    free(pos);
    free(before);
    free(buf);
}

START_TEST(rope_cases_match_double_reference)
{
    sy_rng rng = {sy_test_seed()};
    for (size_t i = 0; i < sizeof rope_cases / sizeof rope_cases[0]; i++)
        run_rope_case(&rope_cases[i], &rng);
}
END_TEST

/* The table must tell its cases apart: the references of a case under the plausible mistakes
 * (YaRN applied despite scaling none or factor 1, the default concentration instead of the set one,
 * the gpt-oss head dim 64's frequencies) differ from its own far beyond the tolerance at the
 * positions used, so a kernel making one of them fails above. */
START_TEST(rope_cases_are_distinguishable)
{
    for (size_t k = 0; k < sizeof rope_cases / sizeof rope_cases[0]; k++) {
        const rope_case *c = &rope_cases[k];
        rope_case alt[3];
        int n_alt = 0;
        if (c->scaling == SY_ROPE_SCALING_NONE || c->factor <= 1.0f) { /* as if YaRN applied */
            alt[n_alt] = *c;
            alt[n_alt].scaling = SY_ROPE_SCALING_YARN;
            alt[n_alt].factor = 32.0f;
            alt[n_alt].beta_fast = 32.0f;
            alt[n_alt].beta_slow = 1.0f;
            alt[n_alt].original = 4096;
            alt[n_alt].theta = 150000.0f;
            n_alt++;
        }
        if (c->concentration != 0.0f) { /* the set concentration ignored */
            alt[n_alt] = *c;
            alt[n_alt].concentration = 0.0f;
            n_alt++;
        }
        if (c->head_dim != 64) { /* frequencies of D 64 */
            alt[n_alt] = *c;
            alt[n_alt].head_dim = 64;
            n_alt++;
        }
        ck_assert_msg(n_alt > 0, "%s: nothing to tell apart", c->name);
        double f[MAX_HALF], g[MAX_HALF];
        double conc = case_reference_freqs(c, f);
        for (int j = 0; j < n_alt; j++) {
            double conc_alt = case_reference_freqs(&alt[j], g);
            /* Largest difference of cos over the pairs both have, at the case's largest position,
             * against the f32 tolerance (about 1e-6). */
            double d = fabs(conc - conc_alt);
            uint32_t m = (c->head_dim < alt[j].head_dim ? c->head_dim : alt[j].head_dim) / 2;
            for (uint32_t i = 0; i < m; i++)
                d = fmax(d, fabs(conc * cos(c->max_pos * f[i]) - conc_alt * cos(c->max_pos * g[i])));
            ck_assert_msg(d > 1e-2, "%s: alternative %d differs by only %g", c->name, j, d);
        }
    }
}
END_TEST

/* One pool per run; geometry from the kv_layout plugin itself. */
typedef struct pool {
    sy_kv_geometry geom;
    void *k, *v;
    size_t bytes;
} pool;

static pool make_pool(const sy_kv_layout_ops *kv, uint32_t layout, int32_t store)
{
    pool p;
    memset(&p, 0, sizeof p);
    p.geom.struct_size = sizeof p.geom;
    p.geom.layout = layout;
    p.geom.store_dtype = store;
    p.geom.num_pages = 5;
    p.geom.page_size = 16;
    p.geom.kv_heads = HKV;
    p.geom.head_dim = D;
    sy_error err = {{0}};
    ck_assert_msg(kv->geometry(&p.geom, &err) == SY_OK, "%s", err.msg);
    p.bytes = p.geom.k_elems * sy_dtype_size(store);
    p.k = malloc(p.bytes);
    p.v = malloc(p.bytes);
    sy_poison_bytes(p.k, p.bytes);
    sy_poison_bytes(p.v, p.bytes);
    return p;
}

static sy_kv_write_args write_args(const pool *p, const sy_rope_args *r, int32_t *slots, int32_t *slot_map)
{
    sy_kv_write_args w;
    memset(&w, 0, sizeof w);
    w.struct_size = sizeof w;
    w.geom = p->geom;
    w.k = r->k;
    w.v = r->k;
    w.v.data = (uint8_t *)r->k.data + (size_t)HKV * D * sy_dtype_size(r->k.dtype);
    int64_t ss[1] = {T}, sm[1] = {T + 3};
    w.slots = sy_tensor_contiguous(slots, SY_DTYPE_I32, 1, ss);
    if (slot_map)
        w.slot_map = sy_tensor_contiguous(slot_map, SY_DTYPE_I32, 1, sm);
    w.k_cache = p->k;
    w.v_cache = p->v;
    w.k_scale = 0.37f;
    w.v_scale = 0.61f;
    return w;
}

static void fused_equals_unfused(uint32_t layout, const char *kv_name, int32_t act, int32_t store, int with_map)
{
    sy_rng rng = {sy_test_seed()};
    const sy_kv_layout_ops *kv = sy_cpu_plugin(SY_KIND_KV_LAYOUT, kv_name)->ops;
    int32_t pos[T], slots[T], slot_map[T + 3];
    positions(&rng, pos);
    /* Distinct slots past the padding page, some skipped (-1). */
    for (int t = 0; t < T; t++)
        slots[t] = t % 7 == 3 ? -1 : 16 + (int32_t)((t * 37) % 64);
    for (int i = 0; i < T + 3; i++)
        slot_map[i] = 16 + (int32_t)((i * 11) % 64);
    if (with_map)
        for (int t = 0; t < T; t++)
            slots[t] = slots[t] < 0 ? -1 : t;
    void *qkv_fused = random_qkv(&rng, act);
    size_t bytes = (size_t)T * ROW * sy_dtype_size(act);
    void *qkv_pair = malloc(bytes);
    memcpy(qkv_pair, qkv_fused, bytes);
    pool pf = make_pool(kv, layout, store), pp = make_pool(kv, layout, store);
    sy_error err = {{0}};

    sy_rope_args r = rope_args(qkv_pair, act, pos);
    ck_assert_msg(ops()->rope(NULL, NULL, &r, &err) == SY_OK, "%s", err.msg);
    sy_kv_write_args w = write_args(&pp, &r, slots, with_map ? slot_map : NULL);
    ck_assert_msg(kv->write(NULL, NULL, &w, &err) == SY_OK, "%s write: %s", kv_name, err.msg);

    sy_rope_kv_write_args f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    f.rope = rope_args(qkv_fused, act, pos);
    f.kv = write_args(&pf, &f.rope, slots, with_map ? slot_map : NULL);
    ck_assert_msg(ops()->rope_kv_write(NULL, NULL, &f, &err) == SY_OK, "%s", err.msg);

    ck_assert_msg(memcmp(qkv_fused, qkv_pair, bytes) == 0, "%s: q/k/v differ between fused and rope + write", kv_name);
    ck_assert_msg(memcmp(pf.k, pp.k, pf.bytes) == 0, "%s store %d: K pools differ", kv_name, store);
    ck_assert_msg(memcmp(pf.v, pp.v, pf.bytes) == 0, "%s store %d: V pools differ", kv_name, store);
    /* Not vacuous: both pools were written (they no longer hold only the poison). */
    uint8_t *poison = malloc(pf.bytes);
    sy_poison_bytes(poison, pf.bytes);
    ck_assert(memcmp(pf.k, poison, pf.bytes) != 0 && memcmp(pf.v, poison, pf.bytes) != 0);
    free(poison);
    free(qkv_fused);
    free(qkv_pair);
    free(pf.k);
    free(pf.v);
    free(pp.k);
    free(pp.v);
}

START_TEST(fused_kv_write_is_bit_exact)
{
    const int32_t stores[3] = {SY_DTYPE_BF16, SY_DTYPE_FP8_E4M3, SY_DTYPE_F32};
    const int32_t acts[2] = {SY_DTYPE_F32, SY_DTYPE_BF16};
    for (int s = 0; s < 3; s++)
        for (int a = 0; a < 2; a++)
            for (int m = 0; m < 2; m++) {
                fused_equals_unfused(SY_LAYOUT_NHD, "kv_nhd", acts[a], stores[s], m);
                fused_equals_unfused(SY_LAYOUT_VECTORIZED_5D, "kv_vectorized_5d", acts[a], stores[s], m);
            }
}
END_TEST

/* A slot outside the pool: the fused call fails as rope + write would, q and k rotated, the pool
 * untouched. */
START_TEST(fused_bad_slot_behaves_like_the_pair)
{
    sy_rng rng = {sy_test_seed()};
    const sy_kv_layout_ops *kv = sy_cpu_plugin(SY_KIND_KV_LAYOUT, "kv_vectorized_5d")->ops;
    int32_t pos[T], slots[T];
    positions(&rng, pos);
    for (int t = 0; t < T; t++)
        slots[t] = 16 + t;
    slots[T - 2] = 5 * 16; /* one past the last slot of a 5-page pool */
    void *qkv = random_qkv(&rng, SY_DTYPE_F32);
    size_t bytes = (size_t)T * ROW * sizeof(float);
    void *rotated = malloc(bytes);
    memcpy(rotated, qkv, bytes);
    sy_rope_args r = rope_args(rotated, SY_DTYPE_F32, pos);
    sy_error err = {{0}};
    ck_assert(ops()->rope(NULL, NULL, &r, &err) == SY_OK);
    pool pf = make_pool(kv, SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_BF16);
    sy_rope_kv_write_args f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    f.rope = rope_args(qkv, SY_DTYPE_F32, pos);
    f.kv = write_args(&pf, &f.rope, slots, NULL);
    ck_assert_int_eq(ops()->rope_kv_write(NULL, NULL, &f, &err), SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "slots[27] = 80 is outside the pool (80 slots)") != NULL, "%s", err.msg);
    ck_assert(memcmp(qkv, rotated, bytes) == 0);
    uint8_t *poison = malloc(pf.bytes);
    sy_poison_bytes(poison, pf.bytes);
    ck_assert(memcmp(pf.k, poison, pf.bytes) == 0 && memcmp(pf.v, poison, pf.bytes) == 0);
    free(poison);
    free(qkv);
    free(rotated);
    free(pf.k);
    free(pf.v);
}
END_TEST

START_TEST(caps_list_both_fused_layouts)
{
    const sy_rope_caps *c = plugin()->caps;
    ck_assert_uint_eq(c->n_fused_kv_layouts, 2);
    ck_assert_uint_eq(c->fused_kv_layouts[0], SY_LAYOUT_NHD);
    ck_assert_uint_eq(c->fused_kv_layouts[1], SY_LAYOUT_VECTORIZED_5D);
    ck_assert(c->styles & SY_ROPE_STYLE_NEOX);
    ck_assert(c->scalings & SY_ROPE_SCALING_YARN);
    ck_assert(c->fused_kv_dtypes & SY_DTYPE_BIT(SY_DTYPE_FP8_E4M3));
}
END_TEST

START_TEST(argument_errors_name_the_argument)
{
    sy_rng rng = {sy_test_seed()};
    int32_t pos[T];
    positions(&rng, pos);
    void *qkv = random_qkv(&rng, SY_DTYPE_F32);
    sy_rope_args a = rope_args(qkv, SY_DTYPE_F32, pos);
    sy_error err = {{0}};
    a.params.style = SY_ROPE_STYLE_GPTJ;
    ck_assert_int_eq(ops()->rope(NULL, NULL, &a, &err), SY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "rope: params.style 0x2 is not neox"));
    a = rope_args(qkv, SY_DTYPE_F32, pos);
    a.params.head_dim = 32;
    ck_assert_int_eq(ops()->rope(NULL, NULL, &a, &err), SY_E_INVALID);
    ck_assert_str_eq(err.msg, "rope: q has shape [29, 6, 64], expected [29, *, 32]");
    a = rope_args(qkv, SY_DTYPE_F32, pos);
    a.params.yarn_beta_slow = 40.0f;
    ck_assert_int_eq(ops()->rope(NULL, NULL, &a, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "YaRN needs beta_fast > beta_slow > 0"));
    sy_rope_kv_write_args f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    f.rope = rope_args(qkv, SY_DTYPE_F32, pos);
    f.kv.geom.layout = SY_LAYOUT_NHD;
    f.kv.k = f.rope.q;
    ck_assert_int_eq(ops()->rope_kv_write(NULL, NULL, &f, &err), SY_E_INVALID);
    ck_assert_str_eq(err.msg, "rope_kv_write: kv.k must be the same view as rope.k (the rotated keys)");
    f.kv.geom.layout = 99;
    ck_assert_int_eq(ops()->rope_kv_write(NULL, NULL, &f, &err), SY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "kv.geom.layout 99 is neither nhd"));
    free(qkv);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rope_yarn");
    TCase *tc = tcase_create("rope");
    tcase_add_test(tc, yarn_frequencies_and_concentration);
    tcase_add_test(tc, rope_matches_double_reference_f32);
    tcase_add_test(tc, rope_matches_double_reference_bf16);
    tcase_add_test(tc, rope_cases_match_double_reference);
    tcase_add_test(tc, rope_cases_are_distinguishable);
    tcase_add_test(tc, fused_kv_write_is_bit_exact);
    tcase_add_test(tc, fused_bad_slot_behaves_like_the_pair);
    tcase_add_test(tc, caps_list_both_fused_layouts);
    tcase_add_test(tc, argument_errors_name_the_argument);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
