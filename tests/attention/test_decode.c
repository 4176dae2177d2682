/* attn_paged decode_paged over both KV layouts against the double-precision reference, and the
 * properties the engine relies on: layouts give identical bits, the window keeps exactly W keys,
 * sinks touch only the denominator, the split count changes only rounding. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_case.h"
#include "attn_reference.h"
#include "calls/checks.h"
#include "sy_numeric.h"
#include "sy_test.h"

static const char *dtype_label(int32_t dt)
{
    return dt == SY_DTYPE_F32 ? "f32" : dt == SY_DTYPE_BF16 ? "bf16" : "fp8_e4m3";
}

static const char *layout_label(uint32_t layout)
{
    return layout == SY_LAYOUT_NHD ? "nhd" : "vectorized_5d";
}

static void random_sinks(decode_case *c, sy_rng *rng, double lo, double hi)
{
    c->sinks = malloc(c->Hq * sizeof *c->sinks);
    for (uint32_t h = 0; h < c->Hq; h++)
        c->sinks[h] = (float)sy_rng_range(rng, lo, hi);
}

static size_t out_len(const decode_case *c)
{
    return (size_t)c->B * c->Hq * c->D;
}

static void check_against_reference(const decode_case *c, int32_t splits, double tol_stored, double tol_orig)
{
    size_t n = out_len(c);
    float *out = malloc(n * sizeof *out);
    double *ref = malloc(n * sizeof *ref);
    decode_case_run(c, splits, out);
    decode_case_reference(c, 1, ref);
    double e_stored = sy_rel_l2_f32(out, ref, n);
    decode_case_reference(c, 0, ref);
    double e_orig = sy_rel_l2_f32(out, ref, n);
    ck_assert_msg(e_stored < tol_stored && e_orig < tol_orig,
                  "%s %s P=%u D=%u window=%d sinks=%s splits=%d: rel L2 %.3g vs stored values (limit %.0e), "
                  "%.3g vs original f32 (limit %.0e)",
                  layout_label(c->layout), dtype_label(c->dtype), c->P, c->D, c->window, c->sinks ? "yes" : "no",
                  splits, e_stored, tol_stored, e_orig, tol_orig);
    free(out);
    free(ref);
}

START_TEST(decode_matches_reference)
{
    uint64_t seed = sy_test_seed();
    sy_rng rng = {seed};
    struct {
        uint32_t layout;
        int32_t dtype;
        uint32_t P, D;
    } cfg[] = {
        {SY_LAYOUT_NHD, SY_DTYPE_F32, 13, 40},           {SY_LAYOUT_NHD, SY_DTYPE_BF16, 16, 40},
        {SY_LAYOUT_NHD, SY_DTYPE_FP8_E4M3, 7, 24},        {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_F32, 12, 20},
        {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_BF16, 24, 40}, {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_FP8_E4M3, 48, 48},
    };
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        int32_t lens[6] = {1, 37, (int32_t)(4 * cfg[i].P), 0, 0, 0};
        for (int b = 3; b < 6; b++)
            lens[b] = 2 + (int32_t)sy_rng_below(&rng, 300);
        decode_case c;
        decode_case_make(&c, sy_rng_next(&rng), cfg[i].layout, cfg[i].dtype, cfg[i].P, 3, 3, cfg[i].D, 6, lens);
        check_against_reference(&c, 0, 1e-5, attn_storage_tolerance(c.dtype));
        c.window = 29;
        random_sinks(&c, &rng, -1.0, 3.0);
        check_against_reference(&c, 3, 1e-5, attn_storage_tolerance(c.dtype));
        decode_case_free(&c);
    }
}
END_TEST

START_TEST(decode_bf16_queries)
{
    sy_rng rng = {sy_test_seed()};
    int32_t lens[4] = {77, 5, 130, 64};
    decode_case c;
    decode_case_make(&c, sy_rng_next(&rng), SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_BF16, 24, 2, 5, 40, 4, lens);
    c.q_dtype = SY_DTYPE_BF16;
    for (size_t i = 0; i < (size_t)c.B * c.Hq * c.D; i++)
        c.q[i] = sy_round_bf16(c.q[i]);
    check_against_reference(&c, 2, ATTN_BF16_OUT_VS_STORED, ATTN_BF16_OUT_VS_ORIGINAL);
    decode_case_free(&c);
}
END_TEST

START_TEST(layouts_give_identical_bits)
{
    uint64_t seed = sy_test_seed();
    sy_rng rng = {seed};
    const int32_t dtypes[3] = {SY_DTYPE_F32, SY_DTYPE_BF16, SY_DTYPE_FP8_E4M3};
    for (int i = 0; i < 3; i++) {
        int32_t lens[5];
        for (int b = 0; b < 5; b++)
            lens[b] = 1 + (int32_t)sy_rng_below(&rng, 250);
        uint64_t case_seed = sy_rng_next(&rng), sink_seed = sy_rng_next(&rng);
        decode_case nhd, v5d;
        decode_case_make(&nhd, case_seed, SY_LAYOUT_NHD, dtypes[i], 48, 2, 4, 48, 5, lens);
        decode_case_make(&v5d, case_seed, SY_LAYOUT_VECTORIZED_5D, dtypes[i], 48, 2, 4, 48, 5, lens);
        ck_assert_msg(memcmp(nhd.pool.k, v5d.pool.k, nhd.pool.bytes) != 0, "the two pools must be laid out differently");
        sy_rng srng = {sink_seed};
        random_sinks(&nhd, &srng, -1.0, 2.0);
        srng.state = sink_seed;
        random_sinks(&v5d, &srng, -1.0, 2.0);
        size_t n = out_len(&nhd);
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        for (int variant = 0; variant < 2; variant++) {
            nhd.window = v5d.window = variant ? 50 : 0;
            decode_case_run(&nhd, variant ? 3 : 1, a);
            decode_case_run(&v5d, variant ? 3 : 1, b);
            ck_assert_msg(memcmp(a, b, n * sizeof *a) == 0, "%s, window %d: nhd and vectorized_5d outputs differ",
                          dtype_label(dtypes[i]), nhd.window);
        }
        free(a);
        free(b);
        decode_case_free(&nhd);
        decode_case_free(&v5d);
    }
}
END_TEST

/* Replaces the K and V of token `pos` of sequence b with fresh random values, in the pool. */
static void rewrite_token(decode_case *c, uint32_t b, int32_t pos, sy_rng *rng)
{
    size_t n = (size_t)c->H * c->D;
    float *k = malloc(n * sizeof *k), *v = malloc(n * sizeof *v);
    sy_fill_uniform_f32(rng, k, n, -2.0f, 2.0f);
    sy_fill_uniform_f32(rng, v, n, -2.0f, 2.0f);
    int32_t slot = c->seqs.slots[c->seqs.first_token[b] + pos];
    sy_error err = {{0}};
    ck_assert_msg(sy_test_pool_write(kv_plugin_for(c->layout), &c->pool, k, v, &slot, 1, &err) == SY_OK, "%s",
                  err.msg);
    free(k);
    free(v);
}

/* Rows of sequence b identical in a and b. */
static int seq_rows_equal(const decode_case *c, uint32_t b, const float *x, const float *y)
{
    size_t row = (size_t)c->Hq * c->D;
    return memcmp(x + b * row, y + b * row, row * sizeof *x) == 0;
}

START_TEST(window_keeps_exactly_w_keys)
{
    sy_rng rng = {sy_test_seed()};
    const int32_t W = 9;
    const uint32_t layouts[2] = {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D};
    for (int l = 0; l < 2; l++) {
        int32_t lens[3] = {40, 100, 7};
        uint64_t seed = sy_rng_next(&rng);
        decode_case base, far, near;
        decode_case_make(&base, seed, layouts[l], SY_DTYPE_BF16, 16, 2, 3, 32, 3, lens);
        decode_case_make(&far, seed, layouts[l], SY_DTYPE_BF16, 16, 2, 3, 32, 3, lens);
        decode_case_make(&near, seed, layouts[l], SY_DTYPE_BF16, 16, 2, 3, 32, 3, lens);
        /* far: the key at distance W from the current token (position L-1-W); near: distance W-1. */
        for (uint32_t b = 0; b < 2; b++) {
            rewrite_token(&far, b, lens[b] - 1 - W, &rng);
            rewrite_token(&near, b, lens[b] - W, &rng);
        }
        size_t n = out_len(&base);
        float *o_base = malloc(n * sizeof(float)), *o_far = malloc(n * sizeof(float)),
              *o_near = malloc(n * sizeof(float));
        for (int32_t splits = 1; splits <= 2; splits++) {
            base.window = far.window = near.window = W;
            decode_case_run(&base, splits, o_base);
            decode_case_run(&far, splits, o_far);
            decode_case_run(&near, splits, o_near);
            for (uint32_t b = 0; b < 3; b++)
                ck_assert_msg(seq_rows_equal(&base, b, o_base, o_far), "%s: window %d read the key at distance %d",
                              layout_label(layouts[l]), W, W);
            for (uint32_t b = 0; b < 2; b++)
                ck_assert_msg(!seq_rows_equal(&base, b, o_base, o_near),
                              "%s: window %d ignored the key at distance %d", layout_label(layouts[l]), W, W - 1);
            /* One more key of window: the far change shows. */
            base.window = far.window = W + 1;
            decode_case_run(&base, splits, o_base);
            decode_case_run(&far, splits, o_far);
            for (uint32_t b = 0; b < 2; b++)
                ck_assert_msg(!seq_rows_equal(&base, b, o_base, o_far), "%s: window %d ignored the key at distance %d",
                              layout_label(layouts[l]), W + 1, W);
        }
        free(o_base);
        free(o_far);
        free(o_near);
        decode_case_free(&base);
        decode_case_free(&far);
        decode_case_free(&near);
    }
}
END_TEST

START_TEST(sinks_change_the_denominator_only)
{
    sy_rng rng = {sy_test_seed()};
    int32_t lens[4] = {50, 3, 190, 77};
    decode_case c;
    decode_case_make(&c, sy_rng_next(&rng), SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_BF16, 24, 2, 3, 40, 4, lens);
    c.scale = 0.37f; /* a sink scaled by mistake would show as exp(scale * sink) */
    size_t n = out_len(&c);
    float *plain = malloc(n * sizeof *plain), *sunk = malloc(n * sizeof *sunk);
    double *ref = malloc(n * sizeof *ref);
    decode_case_run(&c, 1, plain);
    random_sinks(&c, &rng, 0.5, 3.0);
    decode_case_run(&c, 1, sunk);
    /* Per row, out_sink = out * S / (S + e^(sink - m)): one factor for every dim. */
    for (uint32_t b = 0; b < c.B; b++)
        for (uint32_t hq = 0; hq < c.Hq; hq++) {
            size_t row = ((size_t)b * c.Hq + hq) * c.D, head = (size_t)(hq / c.group) * c.D;
            size_t base = (size_t)c.seqs.first_token[b] * c.H * c.D;
            sy_ref_stats st;
            sy_ref_attend(c.q + row, c.D, c.k_deq + base + head, c.v_deq + base + head, (size_t)c.H * c.D, 0, lens[b],
                          c.scale, NULL, ref + row, &st);
            double factor = st.sum_exp / (st.sum_exp + exp((double)c.sinks[hq] - st.max_logit));
            for (uint32_t d = 0; d < c.D; d++) {
                if (fabs(plain[row + d]) < 1e-2)
                    continue;
                double got = (double)sunk[row + d] / (double)plain[row + d];
                ck_assert_msg(fabs(got - factor) < 1e-4 * factor,
                              "seq %u head %u dim %u: out ratio %.7f, expected the denominator factor %.7f", b, hq, d,
                              got, factor);
            }
        }
    /* A sink far above every logit: the output shrinks but stays exact (one max for both sums). */
    for (uint32_t h = 0; h < c.Hq; h++)
        c.sinks[h] = 60.0f;
    decode_case_run(&c, 3, sunk);
    decode_case_reference(&c, 1, ref);
    ck_assert_msg(sy_rel_l2_f32(sunk, ref, n) < 1e-5, "large sinks: rel L2 %.3g", sy_rel_l2_f32(sunk, ref, n));
    free(plain);
    free(sunk);
    free(ref);
    decode_case_free(&c);
}
END_TEST

START_TEST(split_counts_agree)
{
    sy_rng rng = {sy_test_seed()};
    struct {
        uint32_t layout;
        int32_t dtype;
        uint32_t P, D;
    } cfg[2] = {{SY_LAYOUT_NHD, SY_DTYPE_BF16, 16, 40}, {SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_FP8_E4M3, 48, 48}};
    const int32_t counts[5] = {1, 2, 3, 7, 0};
    for (int i = 0; i < 2; i++) {
        int32_t lens[5] = {3, 1, 211, 500, 64};
        decode_case c;
        decode_case_make(&c, sy_rng_next(&rng), cfg[i].layout, cfg[i].dtype, cfg[i].P, 2, 4, cfg[i].D, 5, lens);
        random_sinks(&c, &rng, -1.0, 2.0);
        size_t n = out_len(&c);
        float *one = malloc(n * sizeof *one), *many = malloc(n * sizeof *many);
        double *ref = malloc(n * sizeof *ref), *one_d = malloc(n * sizeof *one_d);
        for (int w = 0; w < 2; w++) {
            c.window = w ? 100 : 0;
            decode_case_run(&c, 1, one);
            decode_case_reference(&c, 1, ref);
            for (size_t e = 0; e < n; e++)
                one_d[e] = one[e];
            for (int s = 0; s < 5; s++) {
                decode_case_run(&c, counts[s], many);
                double vs_one = sy_rel_l2_f32(many, one_d, n), vs_ref = sy_rel_l2_f32(many, ref, n);
                ck_assert_msg(vs_one < 2e-6 && vs_ref < 1e-5,
                              "%s window %d: %d splits vs 1: rel L2 %.3g; vs reference %.3g", layout_label(c.layout),
                              c.window, counts[s], vs_one, vs_ref);
            }
        }
        free(one);
        free(many);
        free(ref);
        free(one_d);
        decode_case_free(&c);
    }
}
END_TEST

START_TEST(empty_context_gives_zeros)
{
    sy_rng rng = {sy_test_seed()};
    int32_t lens[3] = {10, 0, 33};
    decode_case c;
    decode_case_make(&c, sy_rng_next(&rng), SY_LAYOUT_NHD, SY_DTYPE_F32, 16, 1, 2, 16, 3, lens);
    size_t n = out_len(&c), row = (size_t)c.Hq * c.D;
    float *out = malloc(n * sizeof *out);
    for (int with_sinks = 0; with_sinks < 2; with_sinks++) {
        if (with_sinks)
            random_sinks(&c, &rng, 0.0, 1.0);
        decode_case_run(&c, 2, out);
        for (size_t e = row; e < 2 * row; e++)
            ck_assert_msg(out[e] == 0.0f, "context length 0: out[%zu] = %g", e - row, (double)out[e]);
    }
    free(out);
    decode_case_free(&c);
}
END_TEST

START_TEST(scratch_comes_from_the_workspace)
{
    const sy_test_host *h = attn_host();
    size_t before = h->allocs;
    ck_assert_msg(before >= 1, "init reserved no workspace through workspace_alloc");
    /* A GQA group and head dim beyond what init reserved make the workspace grow. */
    sy_rng rng = {sy_test_seed()};
    int32_t lens[1] = {300};
    decode_case c;
    decode_case_make(&c, sy_rng_next(&rng), SY_LAYOUT_NHD, SY_DTYPE_F32, 16, 1, 40, 256, 1, lens);
    check_against_reference(&c, 50, 1e-5, 1e-5);
    ck_assert_uint_gt(h->allocs, before);
    ck_assert_uint_eq(h->allocs, h->frees + 1); /* the old block went back */
    decode_case_free(&c);
    /* Without a host API the plugin still works, on the C heap. */
    void *ctx = NULL;
    sy_error err = {{0}};
    ck_assert_msg(attn_plugin()->init(NULL, &ctx, &err) == SY_OK, "%s", err.msg);
    attn_plugin()->fini(ctx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attn_decode");
    TCase *tc = tcase_create("decode");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, decode_matches_reference);
    tcase_add_test(tc, decode_bf16_queries);
    tcase_add_test(tc, layouts_give_identical_bits);
    tcase_add_test(tc, window_keeps_exactly_w_keys);
    tcase_add_test(tc, sinks_change_the_denominator_only);
    tcase_add_test(tc, split_counts_agree);
    tcase_add_test(tc, empty_context_gives_zeros);
    tcase_add_test(tc, scratch_comes_from_the_workspace);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
