/* norm_rmsnorm (cpu) through the plugin ABI: plain RMSNorm and the fused add + RMSNorm + pad against
 * a double reference; pads exactly +0, the residual unpadded and rounded once, nothing written
 * outside the outputs, in-place residual, and the argument errors. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_plugin_fixture.h"
#include "sy_numeric.h"
#include "sy_test.h"

static const sy_norm_ops *ops(void)
{
    return sy_cpu_plugin(SY_KIND_NORM, "norm_rmsnorm")->ops;
}

/* A matrix of M rows of `cols` elements, `stride` apart, with a guard row after it. */
typedef struct matrix {
    int32_t dtype;
    int64_t rows, cols, stride;
    void *data;
} matrix;

static matrix make(int32_t dtype, int64_t rows, int64_t cols, int64_t stride)
{
    matrix m = {dtype, rows, cols, stride, NULL};
    size_t bytes = (size_t)(rows + 1) * stride * sy_dtype_size(dtype);
    m.data = malloc(bytes);
    sy_poison_bytes(m.data, bytes);
    return m;
}

static sy_tensor view(const matrix *m)
{
    int64_t shape[2] = {m->rows, m->cols};
    sy_tensor t = sy_tensor_contiguous(m->data, m->dtype, 2, shape);
    t.stride[0] = m->stride;
    return t;
}

static double get(const matrix *m, int64_t r, int64_t c)
{
    size_t i = (size_t)(r * m->stride + c);
    return m->dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((uint16_t *)m->data)[i]) : ((float *)m->data)[i];
}

static uint32_t raw(const matrix *m, int64_t r, int64_t c)
{
    size_t i = (size_t)(r * m->stride + c);
    return m->dtype == SY_DTYPE_BF16 ? ((uint16_t *)m->data)[i] : sy_f32_bits(((float *)m->data)[i]);
}

static void fill(sy_rng *rng, matrix *m, double lo, double hi)
{
    for (int64_t r = 0; r < m->rows; r++)
        for (int64_t c = 0; c < m->cols; c++) {
            float v = (float)sy_rng_range(rng, lo, hi);
            size_t i = (size_t)(r * m->stride + c);
            if (m->dtype == SY_DTYPE_BF16)
                ((uint16_t *)m->data)[i] = sy_f32_to_bf16(v);
            else
                ((float *)m->data)[i] = v;
        }
}

/* Bytes from the end of row `r`'s `from` column to the next row, and the guard row: still poison. */
static void expect_untouched(const matrix *m, int64_t from, const char *what)
{
    size_t es = sy_dtype_size(m->dtype);
    uint8_t poison[8];
    sy_poison_bytes(poison, sizeof poison);
    for (int64_t r = 0; r <= m->rows; r++)
        for (int64_t c = r == m->rows ? 0 : from; c < m->stride; c++) {
            const uint8_t *p = (const uint8_t *)m->data + (size_t)(r * m->stride + c) * es;
            ck_assert_msg(memcmp(p, poison, es) == 0, "%s: row %lld column %lld was written", what, (long long)r,
                          (long long)c);
        }
}

typedef struct norm_case {
    int64_t M, N;
    uint32_t pad;
    int32_t act, weight;
    int with_residual;
} norm_case;

static void run_case(sy_rng *rng, const norm_case *k)
{
    const int64_t p = k->pad > 1 ? k->pad : 1, Nout = (k->N + p - 1) / p * p;
    matrix x = make(k->act, k->M, k->N, k->N + 3), res = make(k->act, k->M, k->N, k->N + 5);
    matrix w = make(k->weight, 1, k->N, k->N), out = make(k->act, k->M, Nout, Nout + 7);
    matrix res_out = make(k->act, k->M, k->N, k->N + 2);
    fill(rng, &x, -3, 3);
    fill(rng, &res, -2, 2);
    fill(rng, &w, 0.5, 1.5);
    sy_norm_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.pad_to_multiple = k->pad;
    a.x = view(&x);
    a.weight = view(&w);
    a.weight.ndim = 1;
    a.weight.shape[0] = k->N;
    a.weight.stride[0] = 1;
    a.out = view(&out);
    if (k->with_residual) {
        a.residual = view(&res);
        a.residual_out = view(&res_out);
    }
    a.eps = 1e-5f;
    sy_error err = {{0}};
    ck_assert_msg(ops()->rmsnorm(NULL, NULL, &a, &err) == SY_OK, "%s", err.msg);

    double *want = malloc(sizeof(double) * k->N);
    double num = 0, den = 0, worst_bf16 = 0;
    for (int64_t m = 0; m < k->M; m++) {
        double ss = 0;
        for (int64_t n = 0; n < k->N; n++) {
            /* s is the f32 sum of the f32 inputs (the contract); everything after it in double. */
            float s = (float)get(&x, m, n) + (k->with_residual ? (float)get(&res, m, n) : 0.0f);
            want[n] = s;
            ss += (double)s * s;
            if (k->with_residual) {
                uint32_t once = k->act == SY_DTYPE_BF16 ? sy_f32_to_bf16(s) : sy_f32_bits(s);
                ck_assert_msg(raw(&res_out, m, n) == once, "residual_out[%lld][%lld] is not s rounded once",
                              (long long)m, (long long)n);
            }
        }
        double r = 1.0 / sqrt(ss / (double)k->N + 1e-5);
        for (int64_t n = 0; n < k->N; n++) {
            double ref = want[n] * r * get(&w, 0, n), got = get(&out, m, n);
            num += (got - ref) * (got - ref);
            den += ref * ref;
            if (fabs(ref) > 1e-30 && fabs(got - ref) / fabs(ref) > worst_bf16)
                worst_bf16 = fabs(got - ref) / fabs(ref);
        }
        for (int64_t n = k->N; n < Nout; n++)
            ck_assert_msg(raw(&out, m, n) == 0, "pad out[%lld][%lld] is 0x%x, not +0", (long long)m, (long long)n,
                          raw(&out, m, n));
    }
    if (k->act == SY_DTYPE_F32)
        ck_assert_msg(sqrt(num / den) < 1e-6, "M %lld N %lld pad %u: relative L2 %.3g", (long long)k->M,
                      (long long)k->N, k->pad, sqrt(num / den));
    else /* one bf16 rounding of the output: at most half an ulp (8 significant bits: 2^-8), plus f32 work */
        ck_assert_msg(worst_bf16 < 0.00391, "M %lld N %lld pad %u: bf16 output off by %.3g relative", (long long)k->M,
                      (long long)k->N, k->pad, worst_bf16);
    expect_untouched(&out, Nout, "out");
    if (k->with_residual)
        expect_untouched(&res_out, k->N, "residual_out");
    free(want);
    free(x.data);
    free(res.data);
    free(w.data);
    free(out.data);
    free(res_out.data);
}

START_TEST(add_rmsnorm_pad_matches_double_reference)
{
    sy_rng rng = {sy_test_seed()};
    const norm_case cases[] = {
        {7, 2880, 256, SY_DTYPE_F32, SY_DTYPE_F32, 1}, /* gpt-oss: 2880 -> 3072 */
        {5, 2880, 256, SY_DTYPE_BF16, SY_DTYPE_BF16, 1}, {3, 1000, 64, SY_DTYPE_F32, SY_DTYPE_BF16, 1},
        {4, 100, 256, SY_DTYPE_BF16, SY_DTYPE_F32, 1}, /* the pad is longer than the row */
        {6, 768, 256, SY_DTYPE_F32, SY_DTYPE_F32, 1},  /* already a multiple: no pad */
        {9, 2880, 0, SY_DTYPE_F32, SY_DTYPE_F32, 1},   /* no padding asked */
        {9, 2880, 1, SY_DTYPE_BF16, SY_DTYPE_F32, 0},  /* plain rmsnorm */
        {2, 333, 128, SY_DTYPE_F32, SY_DTYPE_F32, 0},  /* plain rmsnorm, padded */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&rng, &cases[i]);
}
END_TEST

/* residual_out may alias residual: the in-place update of the residual stream. */
START_TEST(residual_in_place)
{
    sy_rng rng = {sy_test_seed()};
    const int64_t M = 4, N = 2880, Nout = 3072;
    float *x = malloc(sizeof(float) * M * N), *res = malloc(sizeof(float) * M * N), *w = malloc(sizeof(float) * N);
    float *sum = malloc(sizeof(float) * M * N), *out = malloc(sizeof(float) * M * Nout);
    float *out2 = malloc(sizeof(float) * M * Nout), *res2 = malloc(sizeof(float) * M * N);
    sy_fill_uniform_f32(&rng, x, (size_t)(M * N), -1, 1);
    sy_fill_uniform_f32(&rng, res, (size_t)(M * N), -1, 1);
    sy_fill_uniform_f32(&rng, w, (size_t)N, 0, 2);
    int64_t s_mn[2] = {M, N}, s_out[2] = {M, Nout}, s_w[1] = {N};
    sy_norm_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.pad_to_multiple = 256;
    a.x = sy_tensor_contiguous(x, SY_DTYPE_F32, 2, s_mn);
    a.weight = sy_tensor_contiguous(w, SY_DTYPE_F32, 1, s_w);
    a.eps = 1e-5f;
    sy_error err = {{0}};
    /* Out of place first, as the reference. */
    a.residual = sy_tensor_contiguous(res, SY_DTYPE_F32, 2, s_mn);
    a.residual_out = sy_tensor_contiguous(sum, SY_DTYPE_F32, 2, s_mn);
    a.out = sy_tensor_contiguous(out, SY_DTYPE_F32, 2, s_out);
    sy_poison_f32(out, (size_t)(M * Nout));
    ck_assert_msg(ops()->rmsnorm(NULL, NULL, &a, &err) == SY_OK, "%s", err.msg);
    memcpy(res2, res, sizeof(float) * M * N);
    a.residual = sy_tensor_contiguous(res2, SY_DTYPE_F32, 2, s_mn);
    a.residual_out = a.residual;
    a.out = sy_tensor_contiguous(out2, SY_DTYPE_F32, 2, s_out);
    sy_poison_f32(out2, (size_t)(M * Nout));
    ck_assert_msg(ops()->rmsnorm(NULL, NULL, &a, &err) == SY_OK, "%s", err.msg);
    ck_assert(memcmp(res2, sum, sizeof(float) * M * N) == 0);
    ck_assert(memcmp(out2, out, sizeof(float) * M * Nout) == 0);
    free(x);
    free(res);
    free(w);
    free(sum);
    free(out);
    free(out2);
    free(res2);
}
END_TEST

START_TEST(argument_errors_name_the_argument)
{
    float x[64 * 2], w[64], out[128 * 2], res[64 * 2];
    int64_t s_x[2] = {2, 64}, s_w[1] = {64}, s_out[2] = {2, 128}, s_bad[2] = {2, 64};
    sy_norm_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.pad_to_multiple = 128;
    a.x = sy_tensor_contiguous(x, SY_DTYPE_F32, 2, s_x);
    a.weight = sy_tensor_contiguous(w, SY_DTYPE_F32, 1, s_w);
    a.out = sy_tensor_contiguous(out, SY_DTYPE_F32, 2, s_bad);
    a.eps = 1e-5f;
    sy_error err = {{0}};
    ck_assert_int_eq(ops()->rmsnorm(NULL, NULL, &a, &err), SY_E_INVALID);
    ck_assert_str_eq(err.msg, "norm rmsnorm: out has shape [2, 64], expected [2, 128]");
    a.out = sy_tensor_contiguous(out, SY_DTYPE_F32, 2, s_out);
    a.residual = sy_tensor_contiguous(res, SY_DTYPE_F32, 2, s_x);
    ck_assert_int_eq(ops()->rmsnorm(NULL, NULL, &a, &err), SY_E_INVALID);
    ck_assert_str_eq(err.msg, "norm rmsnorm: residual is given but residual_out is missing");
    a.residual.data = NULL;
    a.weight.dtype = SY_DTYPE_F16;
    ck_assert_int_eq(ops()->rmsnorm(NULL, NULL, &a, &err), SY_E_UNSUPPORTED);
    ck_assert_str_eq(err.msg, "norm rmsnorm: weight has dtype f16, expected f32 or bf16");
    a.weight.dtype = SY_DTYPE_F32;
    a.x.stride[1] = 2;
    ck_assert_int_eq(ops()->rmsnorm(NULL, NULL, &a, &err), SY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "norm rmsnorm: x has stride 2 in dim 1, expected 1"));
    a.x.stride[1] = 1;
    a.eps = -1.0f;
    ck_assert_int_eq(ops()->rmsnorm(NULL, NULL, &a, &err), SY_E_INVALID);
    ck_assert_str_eq(err.msg, "norm rmsnorm: eps -1 must be finite and >= 0");
}
END_TEST

START_TEST(caps_declare_fused_add_and_pad)
{
    const sy_norm_caps *caps = sy_cpu_plugin(SY_KIND_NORM, "norm_rmsnorm")->caps;
    ck_assert(caps->features & SY_NORM_FUSED_ADD);
    ck_assert(caps->features & SY_NORM_PAD_TO_MULTIPLE);
    ck_assert_uint_ge(caps->max_pad_multiple, 256);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("norm_rmsnorm");
    TCase *tc = tcase_create("rmsnorm");
    tcase_add_test(tc, add_rmsnorm_pad_matches_double_reference);
    tcase_add_test(tc, residual_in_place);
    tcase_add_test(tc, argument_errors_name_the_argument);
    tcase_add_test(tc, caps_declare_fused_add_and_pad);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
