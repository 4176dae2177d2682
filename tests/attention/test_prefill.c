/* attn_paged prefill_linear on ragged batches against the double-precision reference (causal with
 * the cached-prefix position convention, window, sinks, f32 / bf16 / fp8 K/V), and extend with a
 * prefix composed as gather + prefill_linear, and as prefill_paged over the pool, against attention
 * over the whole sequence. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_case.h"
#include "attn_reference.h"
#include "calls/checks.h"
#include "extend_compose.h"
#include "sy_numeric.h"
#include "sy_test.h"

typedef struct prefill_case {
    uint32_t B, H, group, Hq, D;
    int32_t *cu_q, *cu_k;
    int32_t kv_dtype, q_dtype;
    float *q;             /* [Tq][Hq][D] */
    float *k, *v;         /* originals [Tk][H][D] */
    float *k_deq, *v_deq; /* what k_in / v_in hold, as f32 */
    void *k_in, *v_in;    /* kv_dtype, rows kv_stride elements apart */
    int64_t kv_stride;
    float *sinks;
    float scale;
    int32_t causal, window;
    float k_scale, v_scale;
} prefill_case;

static void prefill_case_make(prefill_case *c, uint64_t seed, int32_t kv_dtype, uint32_t H, uint32_t group,
                              uint32_t D, uint32_t B, const int32_t *lq, const int32_t *lk)
{
    sy_rng rng = {seed};
    memset(c, 0, sizeof *c);
    c->B = B;
    c->H = H;
    c->group = group;
    c->Hq = H * group;
    c->D = D;
    c->kv_dtype = kv_dtype;
    c->q_dtype = SY_DTYPE_F32;
    c->scale = 0.3f;
    c->causal = 1;
    c->cu_q = malloc((B + 1) * sizeof *c->cu_q);
    c->cu_k = malloc((B + 1) * sizeof *c->cu_k);
    c->cu_q[0] = c->cu_k[0] = 0;
    for (uint32_t b = 0; b < B; b++) {
        c->cu_q[b + 1] = c->cu_q[b] + lq[b];
        c->cu_k[b + 1] = c->cu_k[b] + lk[b];
    }
    int64_t tq = c->cu_q[B], tk = c->cu_k[B];
    c->k_scale = kv_dtype == SY_DTYPE_FP8_E4M3 ? (float)sy_rng_range(&rng, 0.006, 0.02) : 1.0f;
    c->v_scale = kv_dtype == SY_DTYPE_FP8_E4M3 ? (float)sy_rng_range(&rng, 0.006, 0.02) : 1.0f;
    size_t nk = (size_t)(tk ? tk : 1) * H * D, nq = (size_t)(tq ? tq : 1) * c->Hq * D;
    c->q = malloc(nq * sizeof(float));
    c->k = malloc(nk * sizeof(float));
    c->v = malloc(nk * sizeof(float));
    c->k_deq = malloc(nk * sizeof(float));
    c->v_deq = malloc(nk * sizeof(float));
    sy_fill_uniform_f32(&rng, c->q, (size_t)tq * c->Hq * D, -1.5f, 1.5f);
    sy_fill_uniform_f32(&rng, c->k, (size_t)tk * H * D, -2.0f, 2.0f);
    sy_fill_uniform_f32(&rng, c->v, (size_t)tk * H * D, -1.0f, 3.0f); /* offset: see attn_case.c */
    /* Rows of K/V a little wider than H*D: prefill honours the row stride. */
    c->kv_stride = (int64_t)H * D + 3;
    size_t es = sy_dtype_size(kv_dtype);
    c->k_in = calloc((size_t)(tk ? tk : 1) * c->kv_stride, es);
    c->v_in = calloc((size_t)(tk ? tk : 1) * c->kv_stride, es);
    for (int64_t t = 0; t < tk; t++) {
        size_t src = (size_t)t * H * D, dst = (size_t)t * c->kv_stride * es;
        encode_values(c->k + src, (size_t)H * D, kv_dtype, c->k_scale, (char *)c->k_in + dst);
        encode_values(c->v + src, (size_t)H * D, kv_dtype, c->v_scale, (char *)c->v_in + dst);
        decode_values((char *)c->k_in + dst, (size_t)H * D, kv_dtype, c->k_scale, c->k_deq + src);
        decode_values((char *)c->v_in + dst, (size_t)H * D, kv_dtype, c->v_scale, c->v_deq + src);
    }
}

static void prefill_case_free(prefill_case *c)
{
    free(c->cu_q);
    free(c->cu_k);
    free(c->q);
    free(c->k);
    free(c->v);
    free(c->k_deq);
    free(c->v_deq);
    free(c->k_in);
    free(c->v_in);
    free(c->sinks);
}

static size_t prefill_out_len(const prefill_case *c)
{
    return (size_t)c->cu_q[c->B] * c->Hq * c->D;
}

static void prefill_case_run(const prefill_case *c, float *out_f32)
{
    size_t n = prefill_out_len(c), es = sy_dtype_size(c->q_dtype);
    void *q_in = malloc(n * es + 4), *out = malloc(n * es + 4);
    encode_values(c->q, n, c->q_dtype, 1.0f, q_in);
    sy_poison_bytes(out, n * es);
    sy_attn_prefill_args a = {0};
    a.struct_size = sizeof a;
    int64_t qs[3] = {c->cu_q[c->B], c->Hq, c->D}, ks[3] = {c->cu_k[c->B], c->H, c->D}, nb[1] = {c->B + 1};
    int64_t nh[1] = {c->Hq};
    a.q = sy_tensor_contiguous(q_in, c->q_dtype, 3, qs);
    a.out = sy_tensor_contiguous(out, c->q_dtype, 3, qs);
    a.k = sy_tensor_contiguous(c->k_in, c->kv_dtype, 3, ks);
    a.v = sy_tensor_contiguous(c->v_in, c->kv_dtype, 3, ks);
    a.k.stride[0] = a.v.stride[0] = c->kv_stride;
    a.cu_seqlens_q = sy_tensor_contiguous(c->cu_q, SY_DTYPE_I32, 1, nb);
    a.cu_seqlens_k = sy_tensor_contiguous(c->cu_k, SY_DTYPE_I32, 1, nb);
    if (c->sinks)
        a.sinks = sy_tensor_contiguous(c->sinks, SY_DTYPE_F32, 1, nh);
    a.scale = c->scale;
    a.causal = c->causal;
    a.window = c->window;
    a.k_scale = c->k_scale;
    a.v_scale = c->v_scale;
    sy_error err = {{0}};
    ck_assert_msg(sy_check_prefill_args(&a, c->cu_q, c->cu_k, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(sy_check_prefill_caps(attn_plugin(), &a, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(((const sy_attention_ops *)attn_plugin()->ops)->prefill_linear(attn_ctx(), NULL, &a, &err) == SY_OK,
                  "%s", err.msg);
    decode_values(out, n, c->q_dtype, 1.0f, out_f32);
    free(q_in);
    free(out);
}

static void prefill_case_reference(const prefill_case *c, int stored, double *ref)
{
    const float *k = stored ? c->k_deq : c->k, *v = stored ? c->v_deq : c->v;
    for (uint32_t b = 0; b < c->B; b++) {
        int64_t lq = c->cu_q[b + 1] - c->cu_q[b], lk = c->cu_k[b + 1] - c->cu_k[b];
        for (int64_t i = 0; i < lq; i++) {
            int64_t p = lk - lq + i;
            int64_t hi = c->causal || c->window > 0 ? p + 1 : lk;
            int64_t lo = c->window > 0 && p + 1 > c->window ? p + 1 - c->window : 0;
            for (uint32_t hq = 0; hq < c->Hq; hq++) {
                size_t row = ((size_t)(c->cu_q[b] + i) * c->Hq + hq) * c->D;
                size_t keys = (size_t)c->cu_k[b] * c->H * c->D + (size_t)(hq / c->group) * c->D;
                sy_ref_attend(c->q + row, c->D, k + keys, v + keys, (size_t)c->H * c->D, lo, hi, c->scale,
                              c->sinks ? &c->sinks[hq] : NULL, ref + row, NULL);
            }
        }
    }
}

static void check_prefill(const prefill_case *c, double tol_stored, double tol_orig, const char *what)
{
    size_t n = prefill_out_len(c);
    float *out = malloc(n * sizeof *out + 4);
    double *ref = malloc(n * sizeof *ref + 8);
    prefill_case_run(c, out);
    prefill_case_reference(c, 1, ref);
    double e_stored = sy_rel_l2_f32(out, ref, n);
    prefill_case_reference(c, 0, ref);
    double e_orig = sy_rel_l2_f32(out, ref, n);
    ck_assert_msg(e_stored < tol_stored && e_orig < tol_orig,
                  "%s (kv %d, causal %d, window %d, sinks %s): rel L2 %.3g vs stored (limit %.0e), %.3g vs original "
                  "(limit %.0e)",
                  what, c->kv_dtype, c->causal, c->window, c->sinks ? "yes" : "no", e_stored, tol_stored, e_orig,
                  tol_orig);
    free(out);
    free(ref);
}

START_TEST(prefill_matches_reference)
{
    sy_rng rng = {sy_test_seed()};
    const int32_t lq[6] = {37, 5, 1, 0, 71, 20}, lk[6] = {37, 70, 19, 6, 71, 150};
    const int32_t dtypes[3] = {SY_DTYPE_F32, SY_DTYPE_BF16, SY_DTYPE_FP8_E4M3};
    for (int i = 0; i < 3; i++) {
        prefill_case c;
        prefill_case_make(&c, sy_rng_next(&rng), dtypes[i], 3, 3, 40, 6, lq, lk);
        check_prefill(&c, 1e-5, attn_storage_tolerance(dtypes[i]), "causal");
        c.window = 13;
        c.sinks = malloc(c.Hq * sizeof *c.sinks);
        for (uint32_t h = 0; h < c.Hq; h++)
            c.sinks[h] = (float)sy_rng_range(&rng, -1.0, 3.0);
        check_prefill(&c, 1e-5, attn_storage_tolerance(dtypes[i]), "causal, window, sinks");
        c.window = 0;
        c.causal = 0;
        check_prefill(&c, 1e-5, attn_storage_tolerance(dtypes[i]), "not causal");
        prefill_case_free(&c);
    }
    /* bf16 queries and output. */
    prefill_case c;
    prefill_case_make(&c, sy_rng_next(&rng), SY_DTYPE_BF16, 2, 4, 24, 6, lq, lk);
    c.q_dtype = SY_DTYPE_BF16;
    for (size_t e = 0; e < (size_t)c.cu_q[c.B] * c.Hq * c.D; e++)
        c.q[e] = sy_round_bf16(c.q[e]);
    check_prefill(&c, ATTN_BF16_OUT_VS_STORED, ATTN_BF16_OUT_VS_ORIGINAL, "bf16 queries");
    prefill_case_free(&c);
}
END_TEST

START_TEST(prefill_window_keeps_exactly_w_keys)
{
    sy_rng rng = {sy_test_seed()};
    const int32_t lq[1] = {60}, lk[1] = {60}, W = 9, changed_key = 20;
    prefill_case a, b;
    uint64_t seed = sy_rng_next(&rng);
    prefill_case_make(&a, seed, SY_DTYPE_F32, 2, 2, 16, 1, lq, lk);
    prefill_case_make(&b, seed, SY_DTYPE_F32, 2, 2, 16, 1, lq, lk);
    a.window = b.window = W;
    size_t row = (size_t)a.H * a.D;
    for (size_t e = 0; e < row; e++) {
        ((float *)b.k_in)[changed_key * b.kv_stride + e] = (float)sy_rng_range(&rng, -2, 2);
        ((float *)b.v_in)[changed_key * b.kv_stride + e] = (float)sy_rng_range(&rng, -2, 2);
    }
    size_t n = prefill_out_len(&a), qrow = (size_t)a.Hq * a.D;
    float *oa = malloc(n * sizeof *oa), *ob = malloc(n * sizeof *ob);
    prefill_case_run(&a, oa);
    prefill_case_run(&b, ob);
    /* Key 20 is among the W keys of queries 20 .. 20 + W - 1, and of no other. */
    for (int32_t p = 0; p < lq[0]; p++) {
        int same = memcmp(oa + p * qrow, ob + p * qrow, qrow * sizeof *oa) == 0;
        int sees = p >= changed_key && p <= changed_key + W - 1;
        ck_assert_msg(same != sees, "query %d, window %d, key %d changed: output %s", p, W, changed_key,
                      same ? "unchanged" : "changed");
    }
    free(oa);
    free(ob);
    prefill_case_free(&a);
    prefill_case_free(&b);
}
END_TEST

/* Extend with a prefix: per sequence Lk tokens in the pool, the last Lq of them new. */
static void check_extend(uint32_t layout, int32_t dtype, uint32_t P, int32_t window, int with_sinks, uint64_t seed)
{
    sy_rng rng = {seed};
    const uint32_t B = 4, H = 2, group = 3, D = 48;
    const int32_t lens[4] = {90, 33, 1, 150}, new_tokens[4] = {1, 17, 1, 40};
    decode_case c;
    decode_case_make(&c, sy_rng_next(&rng), layout, dtype, P, H, group, D, B, lens);
    c.window = window;
    if (with_sinks) {
        c.sinks = malloc(c.Hq * sizeof *c.sinks);
        for (uint32_t h = 0; h < c.Hq; h++)
            c.sinks[h] = (float)sy_rng_range(&rng, -1.0, 2.0);
    }
    int64_t total = c.seqs.first_token[B];
    size_t qrow = (size_t)c.Hq * D;
    /* One query per position of every sequence; the chunk is the last new_tokens[b] of them. */
    float *q_all = malloc((size_t)total * qrow * sizeof *q_all);
    sy_fill_uniform_f32(&rng, q_all, (size_t)total * qrow, -1.5f, 1.5f);
    int32_t cu_k[5], cu_all[5], cu_new[5];
    cu_k[0] = cu_all[0] = cu_new[0] = 0;
    for (uint32_t b = 0; b < B; b++) {
        cu_k[b + 1] = cu_k[b] + lens[b];
        cu_all[b + 1] = cu_k[b + 1];
        cu_new[b + 1] = cu_new[b] + new_tokens[b];
    }
    float *q_new = malloc((size_t)cu_new[B] * qrow * sizeof *q_new);
    for (uint32_t b = 0; b < B; b++)
        memcpy(q_new + (size_t)cu_new[b] * qrow, q_all + (size_t)(cu_k[b + 1] - new_tokens[b]) * qrow,
               (size_t)new_tokens[b] * qrow * sizeof *q_new);
    float *out_all = malloc((size_t)total * qrow * sizeof *out_all);
    float *out_new = malloc((size_t)cu_new[B] * qrow * sizeof *out_new);
    sy_poison_f32(out_all, (size_t)total * qrow);
    sy_poison_f32(out_new, (size_t)cu_new[B] * qrow);
    int64_t s_all[3] = {total, c.Hq, D}, s_new[3] = {cu_new[B], c.Hq, D};
    extend_request r = {kv_plugin_for(layout), attn_plugin(), attn_ctx(), &c.pool.geom, c.pool.k, c.pool.v,
                        c.pool.k_scale, c.pool.v_scale, B, cu_k, c.seqs.slots, cu_all,
                        sy_tensor_contiguous(q_all, SY_DTYPE_F32, 3, s_all),
                        sy_tensor_contiguous(out_all, SY_DTYPE_F32, 3, s_all), c.sinks, c.scale, window, 0,
                        c.seqs.block_tables, c.seqs.max_blocks};
    sy_error err = {{0}};
    ck_assert_msg(extend_with_prefix(&r, &err) == SY_OK, "full sequence: %s", err.msg);
    r.cu_q = cu_new;
    r.q = sy_tensor_contiguous(q_new, SY_DTYPE_F32, 3, s_new);
    r.out = sy_tensor_contiguous(out_new, SY_DTYPE_F32, 3, s_new);
    ck_assert_msg(extend_with_prefix(&r, &err) == SY_OK, "extend: %s", err.msg);
    /* The same chunk read from the pages: the keys are visited in the same tiles of absolute
     * positions, so the result is the gathered one bit for bit. */
    float *out_paged = malloc((size_t)cu_new[B] * qrow * sizeof *out_paged);
    sy_poison_f32(out_paged, (size_t)cu_new[B] * qrow);
    extend_request paged = r;
    paged.out = sy_tensor_contiguous(out_paged, SY_DTYPE_F32, 3, s_new);
    paged.paged = 1;
    paged.block_tables = c.seqs.block_tables;
    paged.max_blocks = c.seqs.max_blocks;
    ck_assert_msg(extend_with_prefix(&paged, &err) == SY_OK, "extend from the pages: %s", err.msg);
    ck_assert_msg(memcmp(out_paged, out_new, (size_t)cu_new[B] * qrow * sizeof *out_new) == 0,
                  "prefill_paged differs from gather + prefill_linear (layout %u, store %d, page %u, window %d)",
                  layout, dtype, P, window);
    free(out_paged);

    double *ref = malloc(qrow * sizeof *ref);
    float *dec = malloc((size_t)B * qrow * sizeof *dec);
    for (uint32_t b = 0; b < B; b++)
        for (int32_t i = 0; i < new_tokens[b]; i++) {
            int32_t pos = lens[b] - new_tokens[b] + i;
            const float *got = out_new + (size_t)(cu_new[b] + i) * qrow;
            const float *full = out_all + (size_t)(cu_k[b] + pos) * qrow;
            ck_assert_msg(memcmp(got, full, qrow * sizeof *got) == 0,
                          "seq %u position %d: extend with a %d-token prefix differs from the full sequence", b, pos,
                          lens[b] - new_tokens[b]);
            /* And both are the attention of that position over the pool's values. */
            int64_t lo = window > 0 && pos + 1 > window ? pos + 1 - window : 0;
            for (uint32_t hq = 0; hq < c.Hq; hq++) {
                size_t keys = ((size_t)cu_k[b] * H + hq / group) * D;
                sy_ref_attend(q_all + (size_t)(cu_k[b] + pos) * qrow + hq * D, D, c.k_deq + keys, c.v_deq + keys,
                              (size_t)H * D, lo, pos + 1, c.scale, c.sinks ? &c.sinks[hq] : NULL, ref + hq * D, NULL);
            }
            ck_assert_msg(sy_rel_l2_f32(got, ref, qrow) < 1e-5, "seq %u position %d: rel L2 %.3g vs reference", b, pos,
                          sy_rel_l2_f32(got, ref, qrow));
        }
    /* The last position of each sequence is also what decode_paged computes over the pool. */
    for (uint32_t b = 0; b < B; b++)
        memcpy(c.q + (size_t)b * qrow, q_all + (size_t)(cu_k[b + 1] - 1) * qrow, qrow * sizeof *c.q);
    decode_case_run(&c, 1, dec);
    for (uint32_t b = 0; b < B; b++) {
        const float *last = out_all + (size_t)(cu_k[b + 1] - 1) * qrow;
        double *last_d = malloc(qrow * sizeof *last_d);
        for (size_t e = 0; e < qrow; e++)
            last_d[e] = last[e];
        ck_assert_msg(sy_rel_l2_f32(dec + b * qrow, last_d, qrow) < 1e-6, "seq %u: decode vs prefill rel L2 %.3g", b,
                      sy_rel_l2_f32(dec + b * qrow, last_d, qrow));
        free(last_d);
    }
    free(ref);
    free(dec);
    free(q_all);
    free(q_new);
    free(out_all);
    free(out_new);
    decode_case_free(&c);
}

START_TEST(extend_with_prefix_equals_full_sequence)
{
    sy_rng rng = {sy_test_seed()};
    check_extend(SY_LAYOUT_NHD, SY_DTYPE_BF16, 16, 0, 0, sy_rng_next(&rng));
    check_extend(SY_LAYOUT_NHD, SY_DTYPE_FP8_E4M3, 13, 37, 1, sy_rng_next(&rng));
    check_extend(SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_BF16, 24, 37, 1, sy_rng_next(&rng));
    check_extend(SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_FP8_E4M3, 48, 0, 1, sy_rng_next(&rng));
    check_extend(SY_LAYOUT_VECTORIZED_5D, SY_DTYPE_F32, 12, 64, 0, sy_rng_next(&rng));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attn_prefill");
    TCase *tc = tcase_create("prefill");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, prefill_matches_reference);
    tcase_add_test(tc, prefill_window_keeps_exactly_w_keys);
    tcase_add_test(tc, extend_with_prefix_equals_full_sequence);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
