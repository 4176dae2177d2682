/* The comparison's pieces in-process: statistics and verdicts, the run order, value comparison,
 * the step/row/position map, A's checkpoint spill, the same-inputs rule and the config diff. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab.h"
#include "ab/numerics.h"
#include "ab/spill.h"
#include "ab/stats.h"
#include "ab/step_rows.h"
#include "ab/timing.h"
#include "fixture_support.h"
#include "sy_test.h"

static sy_rng rng;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

START_TEST(median_matches_sorted_middle)
{
    for (int trial = 0; trial < 50; trial++) {
        size_t n = 1 + sy_rng_below(&rng, 41);
        double *x = calloc(n, sizeof *x), *sorted = calloc(n, sizeof *sorted);
        for (size_t i = 0; i < n; i++)
            x[i] = sorted[i] = sy_rng_range(&rng, -5, 5);
        qsort(sorted, n, sizeof *sorted, cmp_double);
        double want = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
        ck_assert_double_eq_tol(sy_ab_median(x, n), want, 1e-12);
        free(x);
        free(sorted);
    }
    ck_assert_double_eq(sy_ab_median(NULL, 0), 0);
}
END_TEST

/* B = c x A exactly: every paired resample has the same ratio, so the interval is the point c. */
START_TEST(bootstrap_of_a_scaled_copy_is_exact)
{
    size_t n = 7 + sy_rng_below(&rng, 20);
    double *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    double c = 0.8;
    for (size_t i = 0; i < n; i++) {
        a[i] = sy_rng_range(&rng, 5, 50);
        b[i] = c * a[i];
    }
    sy_ab_side_stats sa, sb;
    double lo, hi;
    sy_ab_bootstrap(a, b, n, 500, 42, 0.95, &sa, &sb, &lo, &hi);
    ck_assert_double_eq_tol(lo, c, 1e-12);
    ck_assert_double_eq_tol(hi, c, 1e-12);
    ck_assert_double_eq_tol(sb.median, c * sa.median, 1e-9);
    ck_assert(sa.ci_low <= sa.median && sa.median <= sa.ci_high);
    char text[96];
    ck_assert_int_eq(sy_ab_verdict_of(1, sb.median / sa.median, lo, hi, text, sizeof text), SY_AB_B_FASTER);
    ck_assert_str_eq(text, "B faster by 20.0% (20.0\u201320.0%)");
    free(a);
    free(b);
}
END_TEST

/* A and B drawn from one distribution: a 95% interval should exclude 1 in about 5% of trials. The
 * bound is loose (percentile intervals from 15 rounds run a little narrow), but a bootstrap that
 * ignored its resamples (a zero-width interval) lands far outside. */
START_TEST(bootstrap_interval_covers_no_difference)
{
    int excluded = 0, trials = 200;
    size_t n = 15;
    double a[15], b[15];
    for (int t = 0; t < trials; t++) {
        for (size_t i = 0; i < n; i++) {
            double drift = 10 + 3 * (double)i; /* both sides slow down alike, round by round */
            a[i] = drift * sy_rng_range(&rng, 0.95, 1.05);
            b[i] = drift * sy_rng_range(&rng, 0.95, 1.05);
        }
        sy_ab_side_stats sa, sb;
        double lo, hi;
        sy_ab_bootstrap(a, b, n, 400, sy_rng_next(&rng), 0.95, &sa, &sb, &lo, &hi);
        ck_assert(lo <= hi);
        excluded += lo > 1 || hi < 1;
    }
    ck_assert_msg(excluded <= trials * 15 / 100, "%d of %d intervals exclude 1", excluded, trials);
}
END_TEST

START_TEST(bootstrap_finds_a_real_speedup_and_is_reproducible)
{
    size_t n = 12;
    double a[12], b[12];
    for (size_t i = 0; i < n; i++) {
        a[i] = 100 * sy_rng_range(&rng, 0.97, 1.03);
        b[i] = 70 * sy_rng_range(&rng, 0.97, 1.03);
    }
    sy_ab_side_stats sa, sb, sa2, sb2;
    double lo, hi, lo2, hi2;
    sy_ab_bootstrap(a, b, n, SY_AB_BOOTSTRAP_RESAMPLES, SY_AB_BOOTSTRAP_SEED, 0.95, &sa, &sb, &lo, &hi);
    sy_ab_bootstrap(a, b, n, SY_AB_BOOTSTRAP_RESAMPLES, SY_AB_BOOTSTRAP_SEED, 0.95, &sa2, &sb2, &lo2, &hi2);
    ck_assert(lo > 0.6 && hi < 0.8);
    ck_assert(lo == lo2 && hi == hi2 && sa.ci_low == sa2.ci_low && sb.ci_high == sb2.ci_high);
    char text[96];
    ck_assert_int_eq(sy_ab_verdict_of(1, sb.median / sa.median, lo, hi, text, sizeof text), SY_AB_B_FASTER);
    ck_assert_msg(strncmp(text, "B faster by ", 12) == 0, "%s", text);
}
END_TEST

/* Rounds drift tenfold (a machine warming up, a neighbour starting) while B stays 10% faster than
 * A within each round: resampling rounds as pairs sees the 10% through the drift; resampling the
 * sides independently would not. */
START_TEST(bootstrap_pairs_rounds_through_drift)
{
    size_t n = 16;
    double a[16], b[16];
    for (size_t i = 0; i < n; i++) {
        double drift = 10 + 90 * sy_rng_uniform(&rng);
        a[i] = drift * sy_rng_range(&rng, 0.995, 1.005);
        b[i] = 0.9 * drift * sy_rng_range(&rng, 0.995, 1.005);
    }
    sy_ab_side_stats sa, sb;
    double lo, hi;
    sy_ab_bootstrap(a, b, n, SY_AB_BOOTSTRAP_RESAMPLES, SY_AB_BOOTSTRAP_SEED, 0.95, &sa, &sb, &lo, &hi);
    ck_assert_msg(lo > 0.8 && hi < 0.99, "ratio interval %g-%g", lo, hi);
}
END_TEST

START_TEST(verdict_sentences)
{
    char text[96];
    ck_assert_int_eq(sy_ab_verdict_of(1, 0.877, 0.862, 0.891, text, sizeof text), SY_AB_B_FASTER);
    ck_assert_str_eq(text, "B faster by 12.3% (10.9\u201313.8%)");
    ck_assert_int_eq(sy_ab_verdict_of(1, 1.25, 1.1, 1.4, text, sizeof text), SY_AB_B_SLOWER);
    ck_assert_str_eq(text, "B slower by 25.0% (10.0\u201340.0%)");
    /* Significant but under a tenth of a percent: more decimals, never "0.0% (0.0-0.0%)". */
    ck_assert_int_eq(sy_ab_verdict_of(1, 1.00031, 1.00012, 1.00052, text, sizeof text), SY_AB_B_SLOWER);
    ck_assert_str_eq(text, "B slower by 0.03% (0.01\u20130.05%)");
    ck_assert_int_eq(sy_ab_verdict_of(1, 0.99996, 0.99994, 0.99998, text, sizeof text), SY_AB_B_FASTER);
    ck_assert_str_eq(text, "B faster by 0.004% (0.002\u20130.006%)");
    ck_assert_int_eq(sy_ab_verdict_of(1, 1.02, 0.97, 1.08, text, sizeof text), SY_AB_NO_DIFFERENCE);
    ck_assert_str_eq(text, "no significant difference");
    ck_assert_int_eq(sy_ab_verdict_of(1, 0.99, 0.95, 1.0, text, sizeof text), SY_AB_NO_DIFFERENCE);
    ck_assert_int_eq(sy_ab_verdict_of(0, 1, 1, 1, text, sizeof text), SY_AB_NOT_MEASURED);
    ck_assert_str_eq(text, "not measured");
    ck_assert_int_eq(sy_ab_verdict_of(1, INFINITY, 1, INFINITY, text, sizeof text), SY_AB_NOT_MEASURED);
}
END_TEST

START_TEST(round_order_interleaves)
{
    char order[17] = {0};
    for (uint32_t i = 0; i < 16; i++)
        order[i] = "AB"[sy_ab_round_side(i)];
    ck_assert_str_eq(order, "ABBAABBAABBAABBA");
    for (uint32_t r = 0; r < 8; r++)
        ck_assert_int_ne(sy_ab_round_side(2 * r), sy_ab_round_side(2 * r + 1));
}
END_TEST

/* The double-precision reference of sy_ab_compare_values. */
static void reference_compare(const float *ref, const float *x, uint32_t n, double *ssd, double *ssr, double *mx,
                              uint64_t *differing, uint32_t *first)
{
    *ssd = *ssr = *mx = 0;
    *differing = 0;
    *first = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        *ssr += (double)ref[i] * ref[i];
        if (memcmp(&ref[i], &x[i], sizeof(float)) == 0)
            continue;
        if (*first == UINT32_MAX)
            *first = i;
        ++*differing;
        double d = (double)x[i] - (double)ref[i];
        *ssd += d * d;
        *mx = fabs(d) > *mx ? fabs(d) : *mx;
    }
}

START_TEST(compare_values_against_reference)
{
    for (int trial = 0; trial < 40; trial++) {
        uint32_t n = 1 + sy_rng_below(&rng, 300);
        float *ref = calloc(n, sizeof *ref), *x = calloc(n, sizeof *x);
        sy_fill_uniform_f32(&rng, ref, n, -3, 3);
        memcpy(x, ref, n * sizeof *x);
        uint32_t changes = trial % 4 == 0 ? 0 : 1 + sy_rng_below(&rng, n < 8 ? n : 8);
        for (uint32_t c = 0; c < changes; c++) {
            uint32_t i = sy_rng_below(&rng, n);
            x[i] = ref[i] + (float)sy_rng_range(&rng, -1e-3, 1e-3);
        }
        if (trial % 7 == 3) { /* -0 and +0 are equal values with different bits */
            uint32_t i = sy_rng_below(&rng, n);
            ref[i] = 0.0f;
            x[i] = -0.0f;
        }
        double ssd, ssr, mx;
        uint64_t differing;
        uint32_t first_ref, first = UINT32_MAX;
        reference_compare(ref, x, n, &ssd, &ssr, &mx, &differing, &first_ref);
        sy_ab_diff d = {0};
        sy_ab_compare_values(ref, x, n, &d, &first);
        ck_assert_uint_eq(d.values, n);
        ck_assert_uint_eq(d.differing, differing);
        ck_assert_uint_eq(first, first_ref);
        ck_assert_uint_eq(d.nonfinite, 0);
        ck_assert_double_eq_tol(d.sum_sq_diff, ssd, 1e-12 * (1 + ssd));
        /* + a tiny absolute term: a single value set to 0 (n = 1) leaves ssr = 0 */
        ck_assert_double_eq_tol(d.sum_sq_ref, ssr, 1e-9 * ssr + 1e-300);
        ck_assert(d.max_abs == mx);
        double rel = sy_ab_diff_rel_l2(&d);
        ck_assert(differing ? rel > 0 || ssd == 0 : rel == 0);
        free(ref);
        free(x);
    }
}
END_TEST

START_TEST(compare_values_not_finite)
{
    float ref[4] = {1, NAN, 2, 3}, x[4] = {1, NAN, 2, 3};
    sy_ab_diff d = {0};
    uint32_t first = UINT32_MAX;
    sy_ab_compare_values(ref, x, 4, &d, &first);
    ck_assert_uint_eq(d.differing, 0); /* the same NaN bits are bit-exact */
    ck_assert_double_eq(sy_ab_diff_rel_l2(&d), 0);
    x[2] = NAN;
    sy_ab_compare_values(ref, x, 4, &d, &first);
    ck_assert_uint_eq(d.differing, 1);
    ck_assert_uint_eq(d.nonfinite, 1);
    ck_assert_uint_eq(first, 2);
    ck_assert(isnan(sy_ab_diff_rel_l2(&d)));
    sy_ab_diff zero = {0}, other = {.sum_sq_diff = 1, .differing = 1, .values = 1};
    ck_assert_double_eq(sy_ab_diff_rel_l2(&zero), 0);
    ck_assert(isinf(sy_ab_diff_rel_l2(&other)));
}
END_TEST

/* The workload loop written out (engine/src/model/workload.c): every (step, row) of every
 * checkpoint, and where it lands; after a prefill in chunks, and after a synthetic context (no
 * prefill, every generated token from a decode step). */
START_TEST(step_rows_follow_the_workload)
{
    for (int trial = 0; trial < 90; trial++) {
        sy_plan p;
        memset(&p, 0, sizeof p);
        p.batch = 1 + sy_rng_below(&rng, 4);
        p.input_len = 1 + sy_rng_below(&rng, 40);
        p.output_len = 1 + sy_rng_below(&rng, 7);
        p.prefill_chunk = sy_rng_below(&rng, 3) == 0 ? 0 : 1 + sy_rng_below(&rng, 50);
        p.synthetic_context = trial % 3 == 2;
        sy_ab_shape s;
        sy_ab_shape_of(&p, &s);
        uint32_t first_pos = p.synthetic_context ? p.input_len : 0;
        uint32_t positions = p.synthetic_context ? p.output_len : p.input_len + p.output_len - 1;
        ck_assert_uint_eq(s.first_pos, first_pos);
        ck_assert_uint_eq(s.positions, positions);
        /* The position fed generated token 0: the first decode step's (after a synthetic context, the
         * first decode step is fed the seeded token at input_len). */
        ck_assert_uint_eq(s.first_fed, p.synthetic_context ? p.input_len + 1 : p.input_len);
        uint8_t *seen = calloc((size_t)p.batch * positions, 1);
        uint32_t step = 0;
        uint32_t chunk = p.prefill_chunk && p.prefill_chunk < p.input_len ? p.prefill_chunk : p.input_len;
        for (uint32_t c = 0; !p.synthetic_context && c < p.input_len; c += chunk, step++) {
            uint32_t len = p.input_len - c < chunk ? p.input_len - c : chunk;
            sy_ab_step st;
            ck_assert(sy_ab_step_of(&s, step, &st));
            ck_assert_uint_eq(sy_ab_step_rows(&s, &st, 0), p.batch * len);
            ck_assert_uint_eq(sy_ab_step_rows(&s, &st, 1), p.batch);
            uint32_t row = 0;
            for (uint32_t b = 0; b < p.batch; b++)
                for (uint32_t i = 0; i < len; i++, row++) {
                    uint32_t seq, pos;
                    sy_ab_row_place(&st, 0, row, &seq, &pos);
                    ck_assert_uint_eq(seq, b);
                    ck_assert_uint_eq(pos, c + i);
                    seen[(size_t)b * positions + sy_ab_position_index(&s, pos)]++;
                }
            for (uint32_t b = 0; b < p.batch; b++) {
                uint32_t seq, pos;
                sy_ab_row_place(&st, 1, b, &seq, &pos);
                ck_assert_uint_eq(seq, b);
                ck_assert_uint_eq(pos, c + len - 1);
            }
        }
        ck_assert_uint_eq(s.prefill_steps, step);
        /* Decode steps: after a prefill, tokens 1 .. output_len - 1 at positions input_len + t - 1;
         * after a synthetic context, tokens 0 .. output_len - 1 at positions input_len + t. */
        for (uint32_t t = p.synthetic_context ? 0 : 1; t < p.output_len; t++, step++) {
            sy_ab_step st;
            ck_assert(sy_ab_step_of(&s, step, &st));
            uint32_t want_pos = p.synthetic_context ? p.input_len + t : p.input_len + t - 1;
            for (uint32_t b = 0; b < p.batch; b++) {
                uint32_t seq, pos, lseq, lpos;
                sy_ab_row_place(&st, 0, b, &seq, &pos);
                sy_ab_row_place(&st, 1, b, &lseq, &lpos);
                ck_assert_uint_eq(seq, b);
                ck_assert_uint_eq(pos, want_pos);
                ck_assert(lseq == seq && lpos == pos);
                seen[(size_t)b * positions + sy_ab_position_index(&s, pos)]++;
            }
        }
        ck_assert_uint_eq(s.steps, step);
        sy_ab_step st;
        ck_assert(!sy_ab_step_of(&s, step, &st));
        for (size_t i = 0; i < (size_t)p.batch * positions; i++)
            ck_assert_uint_eq(seen[i], 1);
        free(seen);
    }
}
END_TEST

/* Positions are absolute: after a synthetic context they start at input_len. */
static void spill_round_trip_of(int synthetic)
{
    sy_model_dims d;
    memset(&d, 0, sizeof d);
    d.layers = 3;
    d.hidden = 5 + sy_rng_below(&rng, 40);
    d.vocab = 7 + sy_rng_below(&rng, 90);
    sy_plan p;
    memset(&p, 0, sizeof p);
    p.batch = 2;
    p.input_len = 9;
    p.output_len = synthetic ? 12 : 4;
    p.prefill_chunk = 4;
    p.synthetic_context = synthetic;
    sy_ab_shape s;
    sy_ab_shape_of(&p, &s);
    const uint32_t p0 = s.first_pos;
    sy_ab_spill sp;
    sy_error err = {{0}};
    ck_assert_msg(sy_ab_spill_open(&sp, NULL, &d, &s, &err) == SY_OK, "%s", err.msg);
    size_t n_layer = (size_t)d.layers * s.batch * s.positions;
    float *rows = calloc(n_layer * d.hidden, sizeof *rows), *logits = calloc((size_t)s.batch * s.positions * d.vocab, 4);
    sy_fill_uniform_f32(&rng, rows, n_layer * d.hidden, -9, 9);
    sy_fill_uniform_f32(&rng, logits, (size_t)s.batch * s.positions * d.vocab, -9, 9);
    /* Layers out of order, positions in runs of 3 (the last run shorter). */
    for (uint32_t l = d.layers; l-- > 0;)
        for (uint32_t b = 0; b < s.batch; b++)
            for (uint32_t i = 0; i < s.positions; i += 3) {
                uint32_t n = s.positions - i < 3 ? s.positions - i : 3;
                size_t at = ((size_t)(l * s.batch + b) * s.positions + i) * d.hidden;
                ck_assert(sy_ab_spill_put(&sp, l, b, p0 + i, n, rows + at, &err) == SY_OK);
            }
    for (uint32_t b = 0; b < s.batch; b++)
        for (uint32_t i = 1; i < s.positions; i += 2)
            ck_assert(sy_ab_spill_put(&sp, d.layers, b, p0 + i, 1, logits + ((size_t)b * s.positions + i) * d.vocab,
                                      &err) == SY_OK);
    float *back = calloc(d.vocab > 4 * d.hidden ? d.vocab : 4 * d.hidden, sizeof *back);
    for (int trial = 0; trial < 100; trial++) {
        uint32_t l = sy_rng_below(&rng, d.layers), b = sy_rng_below(&rng, s.batch);
        uint32_t i = sy_rng_below(&rng, s.positions), n = 1 + sy_rng_below(&rng, 4);
        if (i + n > s.positions)
            n = s.positions - i;
        int have = 0;
        sy_poison_f32(back, (size_t)n * d.hidden);
        ck_assert(sy_ab_spill_get(&sp, l, b, p0 + i, n, back, &have, &err) == SY_OK);
        ck_assert(have);
        size_t at = ((size_t)(l * s.batch + b) * s.positions + i) * d.hidden;
        ck_assert(memcmp(back, rows + at, (size_t)n * d.hidden * sizeof(float)) == 0);
        uint32_t li = sy_rng_below(&rng, s.positions);
        sy_poison_f32(back, d.vocab);
        ck_assert(sy_ab_spill_get(&sp, d.layers, b, p0 + li, 1, back, &have, &err) == SY_OK);
        ck_assert_int_eq(have, li % 2 == 1);
        if (have)
            ck_assert(memcmp(back, logits + ((size_t)b * s.positions + li) * d.vocab, d.vocab * sizeof(float)) == 0);
    }
    int have = 1;
    ck_assert(sy_ab_spill_get(&sp, 0, 0, p0 + s.positions, 1, back, &have, &err) == SY_OK && !have);
    if (p0) {
        have = 1;
        ck_assert(sy_ab_spill_get(&sp, 0, 0, p0 - 1, 1, back, &have, &err) == SY_OK && !have);
        ck_assert(sy_ab_spill_put(&sp, 0, 0, p0 - 1, 1, rows, &err) != SY_OK);
    }
    ck_assert(sy_ab_spill_put(&sp, 0, 0, p0 + s.positions - 1, 2, rows, &err) != SY_OK);
    sy_ab_spill_close(&sp);
    free(rows);
    free(logits);
    free(back);
}

START_TEST(spill_round_trip)
{
    spill_round_trip_of(0);
    spill_round_trip_of(1);
}
END_TEST

START_TEST(default_tolerance_by_kv_dtypes)
{
    char why[128];
    double same = sy_ab_default_tolerance(SY_DTYPE_BF16, SY_DTYPE_BF16, why, sizeof why);
    ck_assert_str_eq(why, "default for bf16 KV on both sides");
    double fp8 = sy_ab_default_tolerance(SY_DTYPE_BF16, SY_DTYPE_FP8_E4M3, why, sizeof why);
    ck_assert_str_eq(why, "default for bf16 vs fp8_e4m3 KV");
    ck_assert(sy_ab_default_tolerance(SY_DTYPE_FP8_E4M3, SY_DTYPE_BF16, why, sizeof why) == fp8);
    double both_fp8 = sy_ab_default_tolerance(SY_DTYPE_FP8_E4M3, SY_DTYPE_FP8_E4M3, why, sizeof why);
    ck_assert(same > 0 && same < fp8 && both_fp8 == same);
}
END_TEST

static sy_config *load(const char *name, const char *yaml)
{
    sy_diags diags = {0};
    sy_config *c = sy_config_load_string(name, yaml, strlen(yaml), SY_SYNTAX_YAML, NULL, &diags);
    ck_assert_msg(c && !sy_diags_count(&diags, SY_SEV_ERROR), "%s does not load", name);
    sy_diags_free(&diags);
    return c;
}

START_TEST(same_inputs_rule)
{
    sy_config *a = load("a.yaml", "model:\n  seed: 3\nkv_cache:\n  layout: nhd\n");
    sy_config *b = load("b.yaml", "model:\n  seed: 4\nkv_cache:\n  layout: vectorized_5d\n");
    sy_config *c = load("c.yaml", "model:\n  seed: 3\n  dtype: f32\nworkload:\n  prefill_chunk: 7\n  repeat: 9\n");
    sy_config *d = load("d.yaml", "model:\n  seed: 3\nworkload:\n  seed: 11\n");
    sy_error err = {{0}};
    ck_assert(sy_ab_check_same_inputs(a, b, &err) == SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "model.seed differs: A has 3 (a.yaml:2:3), B has 4 (b.yaml:2:3)"), "%s", err.msg);
    ck_assert(sy_ab_check_same_inputs(a, c, &err) == SY_OK);
    ck_assert(sy_ab_check_same_inputs(a, d, &err) == SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "workload.seed differs"), "%s", err.msg);
    ck_assert(sy_ab_is_identity_key("model.layers") && sy_ab_is_identity_key("workload.output_len"));
    ck_assert(sy_ab_is_identity_key("workload.context"));
    ck_assert(!sy_ab_is_identity_key("model.dtype") && !sy_ab_is_identity_key("workload.prefill_chunk"));
    sy_config_free(a);
    sy_config_free(b);
    sy_config_free(c);
    sy_config_free(d);
}
END_TEST

START_TEST(config_diff_lists_only_differences)
{
    sy_config *a = load("a.yaml", "kv_cache:\n  layout: nhd\nworkload:\n  batch: 2\n");
    sy_config *b = load("b.yaml", "kv_cache:\n  layout: vectorized_5d\nworkload:\n  batch: 2\n");
    sy_ab_report r;
    memset(&r, 0, sizeof r);
    sy_ab_config_diff(a, b, &r);
    ck_assert_uint_eq(r.n_changes, 1);
    ck_assert_str_eq(r.changes[0].key, "kv_cache.layout");
    ck_assert_str_eq(r.changes[0].value[SY_AB_A], "nhd");
    ck_assert_str_eq(r.changes[0].value[SY_AB_B], "vectorized_5d");
    ck_assert_str_eq(r.changes[0].source[SY_AB_A], "a.yaml:2:3");
    ck_assert_str_eq(r.changes[0].source[SY_AB_B], "b.yaml:2:3");
    sy_ab_report_free(&r);
    memset(&r, 0, sizeof r);
    sy_ab_config_diff(a, a, &r);
    ck_assert_uint_eq(r.n_changes, 0);
    sy_ab_report_free(&r);
    sy_config_free(a);
    sy_config_free(b);
}
END_TEST

int main(void)
{
    rng.state = sy_test_seed();
    const TTest *tests[] = {median_matches_sorted_middle,
                            bootstrap_of_a_scaled_copy_is_exact,
                            bootstrap_interval_covers_no_difference,
                            bootstrap_finds_a_real_speedup_and_is_reproducible,
                            bootstrap_pairs_rounds_through_drift,
                            verdict_sentences,
                            round_order_interleaves,
                            compare_values_against_reference,
                            compare_values_not_finite,
                            step_rows_follow_the_workload,
                            spill_round_trip,
                            default_tolerance_by_kv_dtypes,
                            same_inputs_rule,
                            config_diff_lists_only_differences};
    return sy_fixture_run_tests("ab_units", tests, sizeof tests / sizeof tests[0]);
}
