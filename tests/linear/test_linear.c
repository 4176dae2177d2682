/* linear (cpu) through the plugin ABI: every mix of f32 / bf16 x, W, b and y against a double
 * reference, padded row strides with the padding left alone, blocked bf16 weights across block
 * edges, y as column parts (ABI 1.4), and the argument errors. */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_plugin_fixture.h"
#include "sy_numeric.h"
#include "sy_test.h"

typedef struct buf {
    int32_t dtype;
    size_t n;
    void *data;
} buf;

static buf make(sy_rng *rng, int32_t dtype, size_t n, double lo, double hi)
{
    buf b = {dtype, n, malloc(n * sy_dtype_size(dtype) + 1)};
    for (size_t i = 0; i < n; i++) {
        float v = rng ? (float)sy_rng_range(rng, lo, hi) : 0.0f;
        if (dtype == SY_DTYPE_BF16)
            ((uint16_t *)b.data)[i] = sy_f32_to_bf16(v);
        else
            ((float *)b.data)[i] = v;
    }
    if (!rng)
        sy_poison_bytes(b.data, n * sy_dtype_size(dtype));
    return b;
}

static double at(const buf *b, size_t i)
{
    return b->dtype == SY_DTYPE_BF16 ? sy_bf16_to_f32(((uint16_t *)b->data)[i]) : ((float *)b->data)[i];
}

static sy_tensor matrix(const buf *b, int64_t rows, int64_t cols, int64_t stride)
{
    int64_t shape[2] = {rows, cols};
    sy_tensor t = sy_tensor_contiguous(b->data, b->dtype, 2, shape);
    t.stride[0] = stride;
    return t;
}

typedef struct linear_case {
    int64_t M, N, K;
    int32_t x, w, b, y; /* b == 0: no bias */
    int parts;          /* > 0: y as this many column parts (ABI 1.4), odd parts in the other dtype */
} linear_case;

enum { Y_PAD = 3 };

static void run_case(sy_rng *rng, const sy_plugin_desc *d, void *ctx, const linear_case *k)
{
    const int64_t ldx = k->K + 5;
    const int nout = k->parts ? k->parts : 1;
    buf x = make(rng, k->x, (size_t)(k->M * ldx), -1, 1), w = make(rng, k->w, (size_t)(k->N * k->K), -1, 1);
    buf b = make(rng, k->b ? k->b : SY_DTYPE_F32, (size_t)k->N, -4, 4), y[SY_LINEAR_MAX_Y_PARTS];
    int64_t first[SY_LINEAR_MAX_Y_PARTS + 1] = {0}, ldy[SY_LINEAR_MAX_Y_PARTS];
    sy_linear_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.x = matrix(&x, k->M, k->K, ldx);
    a.w = matrix(&w, k->N, k->K, k->K);
    if (k->b) {
        int64_t nb[1] = {k->N};
        a.b = sy_tensor_contiguous(b.data, k->b, 1, nb);
    }
    for (int i = 0; i < nout; i++) {
        const int32_t other = k->y == SY_DTYPE_F32 ? SY_DTYPE_BF16 : SY_DTYPE_F32;
        first[i + 1] = k->N * (i + 1) / nout;
        ldy[i] = first[i + 1] - first[i] + Y_PAD;
        y[i] = make(NULL, k->parts && i % 2 ? other : k->y, (size_t)(k->M * ldy[i]), 0, 0);
        sy_tensor t = matrix(&y[i], k->M, first[i + 1] - first[i], ldy[i]);
        if (k->parts)
            a.y_parts[i] = t;
        else
            a.y = t;
    }
    a.n_y_parts = (uint32_t)k->parts;
    sy_error err = {{0}};
    const sy_linear_ops *ops = d->ops;
    ck_assert_msg(ops->linear(ctx, NULL, &a, &err) == SY_OK, "%s", err.msg);
    double num[2] = {0, 0}, den[2] = {0, 0};
    uint8_t poison[4];
    sy_poison_bytes(poison, sizeof poison);
    for (int64_t m = 0; m < k->M; m++) {
        for (int i = 0; i < nout; i++) {
            const int bf16 = y[i].dtype == SY_DTYPE_BF16;
            for (int64_t n = first[i]; n < first[i + 1]; n++) {
                double ref = k->b ? at(&b, (size_t)n) : 0.0, mag = 0;
                for (int64_t c = 0; c < k->K; c++) {
                    double p = at(&x, (size_t)(m * ldx + c)) * at(&w, (size_t)(n * k->K + c));
                    ref += p;
                    mag += fabs(p);
                }
                double got = at(&y[i], (size_t)(m * ldy[i] + n - first[i]));
                num[bf16] += (got - ref) * (got - ref);
                den[bf16] += ref * ref;
                /* bf16 y: one rounding (half an ulp, 2^-8 relative) on top of the f32 sum's error. */
                if (bf16)
                    ck_assert_msg(fabs(got - ref) <= fabs(ref) * 0.0040 + mag * 1e-6,
                                  "M %lld N %lld K %lld parts %d: y[%lld][%lld] = %g, reference %g", (long long)k->M,
                                  (long long)k->N, (long long)k->K, k->parts, (long long)m, (long long)n, got, ref);
            }
            const size_t es = sy_dtype_size(y[i].dtype);
            for (int64_t n = first[i + 1] - first[i]; n < ldy[i]; n++) /* the row padding of y is not written */
                ck_assert(memcmp((uint8_t *)y[i].data + (size_t)(m * ldy[i] + n) * es, poison, es) == 0);
        }
    }
    if (den[0] > 0)
        ck_assert_msg(sqrt(num[0] / den[0]) < 2e-6, "M %lld N %lld K %lld x %d w %d parts %d: relative L2 %.3g",
                      (long long)k->M, (long long)k->N, (long long)k->K, k->x, k->w, k->parts, sqrt(num[0] / den[0]));
    free(x.data);
    free(w.data);
    free(b.data);
    for (int i = 0; i < nout; i++)
        free(y[i].data);
}

START_TEST(every_dtype_mix_matches_double_reference)
{
    sy_rng rng = {sy_test_seed()};
    const sy_plugin_desc *d = sy_cpu_plugin(SY_KIND_LINEAR, "linear");
    void *ctx = sy_cpu_plugin_init(d, NULL);
    const int32_t dt[2] = {SY_DTYPE_F32, SY_DTYPE_BF16}, bias[3] = {0, SY_DTYPE_F32, SY_DTYPE_BF16};
    /* K 2880 puts 364 bf16 weight rows in a converted block: N 1000 spans three blocks, the last one
     * short. */
    const int64_t shapes[3][3] = {{9, 1000, 2880}, {1, 129, 2880}, {37, 7, 33}};
    for (int s = 0; s < 3; s++)
        for (int xi = 0; xi < 2; xi++)
            for (int wi = 0; wi < 2; wi++)
                for (int bi = 0; bi < 3; bi++)
                    for (int yi = 0; yi < 2; yi++) {
                        linear_case k = {shapes[s][0], shapes[s][1], shapes[s][2], dt[xi], dt[wi], bias[bi], dt[yi], 0};
                        run_case(&rng, d, ctx, &k);
                    }
    sy_cpu_plugin_fini(d, ctx);
}
END_TEST

/* y as column parts (ABI 1.4): q, k and v's three, and four whose edges fall inside the 364-row blocks
 * of converted bf16 weights and on single columns; f32 weights (one block) and one row. */
START_TEST(column_parts_match_double_reference)
{
    sy_rng rng = {sy_test_seed()};
    const sy_plugin_desc *d = sy_cpu_plugin(SY_KIND_LINEAR, "linear");
    void *ctx = sy_cpu_plugin_init(d, NULL);
    ck_assert(sy_linear_split_y(d->caps));
    const linear_case cases[] = {
        {9, 1000, 2880, SY_DTYPE_BF16, SY_DTYPE_BF16, SY_DTYPE_F32, SY_DTYPE_BF16, 3},
        {5, 4, 71, SY_DTYPE_F32, SY_DTYPE_F32, SY_DTYPE_F32, SY_DTYPE_F32, 4},
        {1, 129, 2880, SY_DTYPE_F32, SY_DTYPE_BF16, 0, SY_DTYPE_F32, 2},
        {37, 7, 33, SY_DTYPE_BF16, SY_DTYPE_F32, SY_DTYPE_BF16, SY_DTYPE_F32, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&rng, d, ctx, &cases[i]);
    sy_cpu_plugin_fini(d, ctx);
}
END_TEST

START_TEST(argument_errors_name_the_argument)
{
    const sy_plugin_desc *d = sy_cpu_plugin(SY_KIND_LINEAR, "linear");
    const sy_linear_ops *ops = d->ops;
    void *ctx = sy_cpu_plugin_init(d, NULL);
    float x[4 * 8], w[3 * 8], y[4 * 3];
    int64_t sx[2] = {4, 8}, sw[2] = {3, 9}, sy[2] = {4, 3};
    sy_linear_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.x = sy_tensor_contiguous(x, SY_DTYPE_F32, 2, sx);
    a.w = sy_tensor_contiguous(w, SY_DTYPE_F32, 2, sw);
    a.y = sy_tensor_contiguous(y, SY_DTYPE_F32, 2, sy);
    sy_error err = {{0}};
    ck_assert_int_eq(ops->linear(ctx, NULL, &a, &err), SY_E_INVALID);
    ck_assert_str_eq(err.msg, "linear: w has shape [3, 9], expected [3, 8]");
    sw[1] = 8;
    a.w = sy_tensor_contiguous(w, SY_DTYPE_F32, 2, sw);
    a.y.dtype = SY_DTYPE_FP8_E4M3;
    ck_assert_int_eq(ops->linear(ctx, NULL, &a, &err), SY_E_UNSUPPORTED);
    ck_assert_str_eq(err.msg, "linear: y has dtype fp8_e4m3, expected f32 or bf16");
    a.y.dtype = SY_DTYPE_F32;
    a.w.stride[0] = 16;
    ck_assert_int_eq(ops->linear(ctx, NULL, &a, &err), SY_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "linear: w has stride 16 in dim 0, expected 8"));
    a.w.stride[0] = 8;
    /* Column parts: y or parts, never both; parts that cover N exactly; at most the ABI's count. */
    int64_t s1[2] = {4, 1}, s2[2] = {4, 2};
    a.n_y_parts = 2;
    a.y_parts[0] = sy_tensor_contiguous(y, SY_DTYPE_F32, 2, s1);
    a.y_parts[1] = sy_tensor_contiguous(y + 4, SY_DTYPE_F32, 2, s2);
    ck_assert_int_eq(ops->linear(ctx, NULL, &a, &err), SY_E_INVALID);
    ck_assert_str_eq(err.msg, "linear: y is given as well as 2 y_parts; pass one or the other");
    memset(&a.y, 0, sizeof a.y);
    ck_assert_int_eq(ops->linear(ctx, NULL, &a, &err), SY_OK);
    a.y_parts[1] = sy_tensor_contiguous(y + 4, SY_DTYPE_F32, 2, s1);
    ck_assert_int_eq(ops->linear(ctx, NULL, &a, &err), SY_E_INVALID);
    ck_assert_str_eq(err.msg, "linear: y_parts hold 2 columns, w has N = 3");
    a.y_parts[1] = sy_tensor_contiguous(y + 4, SY_DTYPE_F32, 2, s2);
    a.y_parts[1].shape[0] = 3;
    ck_assert_int_eq(ops->linear(ctx, NULL, &a, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "linear: y_parts[1] has shape [3, 2], expected [4, 2]"));
    a.n_y_parts = SY_LINEAR_MAX_Y_PARTS + 1;
    ck_assert_int_eq(ops->linear(ctx, NULL, &a, &err), SY_E_INVALID);
    ck_assert_str_eq(err.msg, "linear: n_y_parts 5 exceeds SY_LINEAR_MAX_Y_PARTS (4)");
    /* A caller built before 1.4 passes a shorter struct: whatever lies past it is never read. */
    a.n_y_parts = 2;
    a.y = sy_tensor_contiguous(y, SY_DTYPE_F32, 2, sy);
    a.struct_size = (uint32_t)offsetof(sy_linear_args, n_y_parts);
    ck_assert_int_eq(ops->linear(ctx, NULL, &a, &err), SY_OK);
    sy_cpu_plugin_fini(d, ctx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("linear");
    TCase *tc = tcase_create("linear");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, every_dtype_mix_matches_double_reference);
    tcase_add_test(tc, column_parts_match_double_reference);
    tcase_add_test(tc, argument_errors_name_the_argument);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
