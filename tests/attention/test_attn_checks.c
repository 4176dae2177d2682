/* The engine's call-boundary checks of decode_paged and prefill_linear (engine/src/calls): every
 * violation is one line naming the argument and the values; what the op would not read (unused
 * block-table columns, pages outside a window) is not held against the call. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn_case.h"
#include "calls/checks.h"
#include "sy_test.h"

static void expect_rejected(sy_status st, const sy_error *err, const char *needle)
{
    ck_assert_msg(st != SY_OK, "accepted; expected an error mentioning '%s'", needle);
    ck_assert_msg(strstr(err->msg, needle) != NULL, "message '%s' does not mention '%s'", err->msg, needle);
    ck_assert_msg(strchr(err->msg, '\n') == NULL, "message is not one line: %s", err->msg);
}

typedef struct decode_fixture {
    decode_case c;
    float *q_in, *out;
    sy_attn_decode_args a;
} decode_fixture;

static void decode_fixture_make(decode_fixture *f, int32_t dtype)
{
    sy_rng rng = {sy_test_seed()};
    int32_t lens[3] = {20, 35, 0};
    decode_case_make(&f->c, sy_rng_next(&rng), SY_LAYOUT_NHD, dtype, 16, 2, 3, 32, 3, lens);
    size_t n = (size_t)f->c.B * f->c.Hq * f->c.D;
    f->q_in = f->c.q;
    f->out = malloc(n * sizeof *f->out);
    f->a = decode_case_args(&f->c, f->q_in, f->out, 0);
}

static void decode_fixture_free(decode_fixture *f)
{
    free(f->out);
    decode_case_free(&f->c);
}

static sy_status check_decode(decode_fixture *f, sy_error *err)
{
    return sy_check_decode_args(&f->a, f->c.seqs.block_tables, f->c.seqs.lens, err);
}

START_TEST(decode_checks_block_tables)
{
    decode_fixture f;
    decode_fixture_make(&f, SY_DTYPE_BF16);
    sy_error err = {{0}};
    int32_t *bt = f.c.seqs.block_tables, *lens = f.c.seqs.lens;
    uint32_t cols = f.c.seqs.max_blocks, pages = f.c.pool.geom.num_pages;
    /* Valid as made, with out-of-pool garbage in the columns no sequence reaches. */
    ck_assert_msg(check_decode(&f, &err) == SY_OK, "%s", err.msg);
    ck_assert_int_gt(bt[cols - 1], (int32_t)pages);

    int32_t keep = bt[1 * cols + 2];
    bt[1 * cols + 2] = (int32_t)pages;
    expect_rejected(check_decode(&f, &err), &err, "block_tables[1][2]");
    bt[1 * cols + 2] = -3;
    expect_rejected(check_decode(&f, &err), &err, "outside the pool");
    bt[1 * cols + 2] = 0;
    expect_rejected(check_decode(&f, &err), &err, "padding page");
    /* A window reads only its own pages: page 0 (a freed SWA page) before it is fine. */
    f.a.window = 10; /* keys 25 .. 34 of sequence 1: pages 1 and 2 */
    bt[1 * cols + 0] = 0;
    bt[1 * cols + 2] = keep;
    ck_assert_msg(check_decode(&f, &err) == SY_OK, "%s", err.msg);
    f.a.window = 0;
    expect_rejected(check_decode(&f, &err), &err, "block_tables[1][0] = 0");
    decode_fixture_free(&f);
    decode_fixture_make(&f, SY_DTYPE_BF16);
    bt = f.c.seqs.block_tables;
    lens = f.c.seqs.lens;
    cols = f.c.seqs.max_blocks;

    lens[0] = (int32_t)(cols * f.c.P) + 1;
    expect_rejected(check_decode(&f, &err), &err, "context_lens[0]");
    lens[0] = -1;
    expect_rejected(check_decode(&f, &err), &err, "negative");
    lens[0] = 20;
    expect_rejected(sy_check_decode_args(&f.a, NULL, lens, &err), &err, "host copy");
    decode_fixture_free(&f);
}
END_TEST

START_TEST(decode_checks_dtypes_and_shapes)
{
    decode_fixture f;
    decode_fixture_make(&f, SY_DTYPE_FP8_E4M3);
    sy_error err = {{0}};
    ck_assert_msg(check_decode(&f, &err) == SY_OK, "%s", err.msg);
    sy_attn_decode_args ok = f.a;
    f.a.block_tables.dtype = SY_DTYPE_I64;
    expect_rejected(check_decode(&f, &err), &err, "block_tables has dtype i64; index tensors are int32");
    f.a = ok;
    f.a.context_lens.dtype = SY_DTYPE_F32;
    expect_rejected(check_decode(&f, &err), &err, "context_lens has dtype f32");
    f.a = ok;
    f.a.q.shape[2] = f.c.D + 1;
    expect_rejected(check_decode(&f, &err), &err, "q has shape");
    f.a = ok;
    f.a.geom.kv_heads = 4; /* 6 q heads */
    expect_rejected(check_decode(&f, &err), &err, "not a positive multiple");
    f.a = ok;
    f.a.out.shape[1] = f.c.Hq - 1;
    expect_rejected(check_decode(&f, &err), &err, "out has shape");
    f.a = ok;
    f.a.out.dtype = SY_DTYPE_BF16;
    expect_rejected(check_decode(&f, &err), &err, "out has dtype");
    f.a = ok;
    float sinks[7] = {0};
    int64_t n7[1] = {7};
    f.a.sinks = sy_tensor_contiguous(sinks, SY_DTYPE_F32, 1, n7);
    expect_rejected(check_decode(&f, &err), &err, "sinks has shape");
    f.a.sinks.shape[0] = f.c.Hq;
    f.a.sinks.dtype = SY_DTYPE_BF16;
    expect_rejected(check_decode(&f, &err), &err, "sinks has dtype");
    f.a = ok;
    f.a.block_tables.shape[0] = 2;
    expect_rejected(check_decode(&f, &err), &err, "block_tables has shape");
    f.a = ok;
    f.a.num_splits = -1;
    expect_rejected(check_decode(&f, &err), &err, "num_splits");
    f.a = ok;
    f.a.window = -5;
    expect_rejected(check_decode(&f, &err), &err, "window");
    f.a = ok;
    f.a.scale = NAN;
    expect_rejected(check_decode(&f, &err), &err, "scale");
    f.a = ok;
    f.a.v_scale = 0.0f;
    expect_rejected(check_decode(&f, &err), &err, "v_scale");
    f.a = ok;
    f.a.geom.k_elems = 0;
    expect_rejected(check_decode(&f, &err), &err, "geometry");
    f.a = ok;
    f.a.k_cache = NULL;
    expect_rejected(check_decode(&f, &err), &err, "k_cache");
    /* Against the caps: a layout the plugin does not read, a feature it would have to have. */
    f.a = ok;
    ck_assert_msg(sy_check_decode_caps(attn_plugin(), &f.a, &err) == SY_OK, "%s", err.msg);
    f.a.geom.layout = SY_LAYOUT_VENDOR_BASE + 3;
    expect_rejected(sy_check_decode_caps(attn_plugin(), &f.a, &err), &err, "does not read layout");
    f.a = ok;
    f.a.q.dtype = SY_DTYPE_F16;
    expect_rejected(sy_check_decode_caps(attn_plugin(), &f.a, &err), &err, "q dtype f16");
    /* The plugin refuses what it cannot do even when called without the checks. */
    f.a = ok;
    f.a.num_splits = 5000;
    expect_rejected(((const sy_attention_ops *)attn_plugin()->ops)->decode_paged(attn_ctx(), NULL, &f.a, &err), &err,
                    "num_splits");
    decode_fixture_free(&f);
}
END_TEST

START_TEST(prefill_checks_ragged_offsets)
{
    const uint32_t B = 3, H = 2, Hq = 4, D = 16;
    int32_t cu_q[4] = {0, 5, 6, 10}, cu_k[4] = {0, 9, 12, 16};
    float *q = calloc(10 * Hq * D, sizeof *q), *out = calloc(10 * Hq * D, sizeof *out);
    float *k = calloc(16 * H * D, sizeof *k), *v = calloc(16 * H * D, sizeof *v);
    int64_t qs[3] = {10, Hq, D}, ks[3] = {16, H, D}, nb[1] = {B + 1};
    sy_attn_prefill_args a = {0};
    a.struct_size = sizeof a;
    a.q = sy_tensor_contiguous(q, SY_DTYPE_F32, 3, qs);
    a.out = sy_tensor_contiguous(out, SY_DTYPE_F32, 3, qs);
    a.k = sy_tensor_contiguous(k, SY_DTYPE_F32, 3, ks);
    a.v = sy_tensor_contiguous(v, SY_DTYPE_F32, 3, ks);
    a.cu_seqlens_q = sy_tensor_contiguous(cu_q, SY_DTYPE_I32, 1, nb);
    a.cu_seqlens_k = sy_tensor_contiguous(cu_k, SY_DTYPE_I32, 1, nb);
    a.scale = 0.25f;
    a.causal = 1;
    a.k_scale = a.v_scale = 1.0f;
    sy_error err = {{0}};
    ck_assert_msg(sy_check_prefill_args(&a, cu_q, cu_k, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(sy_check_prefill_caps(attn_plugin(), &a, &err) == SY_OK, "%s", err.msg);

    cu_q[0] = 1;
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "cu_seqlens_q[0] = 1");
    cu_q[0] = 0;
    cu_k[2] = 8;
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "cu_seqlens_k decreases");
    cu_k[2] = 12;
    cu_q[3] = 11;
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "exceeds the 10 rows");
    cu_q[3] = 10;
    cu_q[1] = 2; /* sequence 1 then has 4 queries against 3 keys */
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "sequence 1 has 4 queries but 3 keys");
    cu_q[1] = 5;
    expect_rejected(sy_check_prefill_args(&a, cu_q, NULL, &err), &err, "host copy");

    sy_attn_prefill_args ok = a;
    a.cu_seqlens_k.shape[0] = 3;
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "cu_seqlens_k has shape");
    a = ok;
    a.cu_seqlens_q.dtype = SY_DTYPE_I64;
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "int32");
    a = ok;
    a.k.shape[2] = D / 2;
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "k has shape");
    a = ok;
    a.k.shape[1] = a.v.shape[1] = 3; /* 4 q heads */
    a.k.stride[0] = a.v.stride[0] = 3 * D;
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "not a positive multiple");
    a = ok;
    a.v.dtype = SY_DTYPE_BF16;
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "v has dtype");
    a = ok;
    a.causal = 2;
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "causal");
    a = ok;
    a.k.dtype = a.v.dtype = SY_DTYPE_FP8_E4M3;
    a.k_scale = INFINITY;
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "k_scale");
    a = ok;
    a.k.stride[2] = 2;
    expect_rejected(sy_check_prefill_args(&a, cu_q, cu_k, &err), &err, "stride");
    free(q);
    free(out);
    free(k);
    free(v);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attn_checks");
    TCase *tc = tcase_create("checks");
    tcase_add_test(tc, decode_checks_block_tables);
    tcase_add_test(tc, decode_checks_dtypes_and_shapes);
    tcase_add_test(tc, prefill_checks_ragged_offsets);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
