/* norm cases against norm_rmsnorm (cpu): plain RMSNorm, fused residual add (residual_out written
 * beside or over the residual, as the engine does), zero padding to a multiple of the columns.
 * Checks: the first N output columns by relative L2 (tolerance.h), the pad columns exactly zero,
 * residual_out bit for bit (it is one f32 add rounded once, the same on every backend). Rows get
 * scales from 0.01 to 100, so a plugin normalizing over the wrong span or the padded width shows. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conformance/cases.h"
#include "conformance/tolerance.h"

enum { F32 = SY_DTYPE_F32, BF16 = SY_DTYPE_BF16 };

typedef struct norm_shape {
    uint32_t rows, cols, pad;
    uint8_t fused, in_place;
    int32_t dtype, weight_dtype;
    uint8_t quick;
    int32_t residual_dtype; /* of residual and residual_out; 0: x's (the engine's bf16 activations keep an f32 one) */
} norm_shape;

static const norm_shape SHAPES[] = {
    {7, 2880, 256, 1, 1, F32, F32, 1, 0},    {7, 2880, 0, 0, 0, F32, F32, 1, 0},
    {5, 2880, 256, 1, 0, BF16, BF16, 1, 0},  {3, 1000, 256, 1, 0, F32, BF16, 0, 0},
    {9, 77, 64, 0, 0, BF16, BF16, 1, 0},     {1, 5, 0, 1, 1, BF16, F32, 0, 0},
    {33, 4095, 128, 1, 1, F32, F32, 0, 0},   {4, 256, 256, 1, 0, F32, F32, 0, 0},
    {2, 2880, 3072, 0, 0, F32, F32, 0, 0},   {6, 2880, 256, 1, 1, BF16, F32, 1, F32},
    {3, 77, 0, 1, 0, BF16, BF16, 0, F32},
};

static int32_t residual_dtype(const norm_shape *s)
{
    return s->residual_dtype ? s->residual_dtype : s->dtype;
}

static const float EPS = 1e-5f; /* gpt-oss */

static void shape_name(char *buf, size_t len, const void *row, const void *user)
{
    const norm_shape *s = row;
    (void)user;
    snprintf(buf, len, "norm.rmsnorm/%s/w%s/M%u/N%u/pad%u/%s%s%s%s", sy_conf_dtype_tag(s->dtype),
             sy_conf_dtype_tag(s->weight_dtype), s->rows, s->cols, s->pad, s->fused ? "fused_add" : "plain",
             s->in_place ? "/in_place" : "", s->residual_dtype ? "/residual_" : "",
             s->residual_dtype ? sy_conf_dtype_tag(s->residual_dtype) : "");
}

static int caps_cover(sy_conf_case *c, const norm_shape *s)
{
    const sy_norm_caps *caps = c->target->p.desc->caps;
    struct {
        int needed;
        uint32_t bit;
        const char *what;
    } features[] = {{1, SY_NORM_RMSNORM, "rmsnorm"},
                    {s->fused, SY_NORM_FUSED_ADD, "fused_add"},
                    {s->pad > 1, SY_NORM_PAD_TO_MULTIPLE, "pad_to_multiple"}};
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++)
        if (features[i].needed && !(caps->features & features[i].bit)) {
            sy_conf_case_unsupported(c, "caps do not declare %s", features[i].what);
            return 0;
        }
    if (s->pad > 1 && s->pad > caps->max_pad_multiple) {
        sy_conf_case_unsupported(c, "caps allow pad multiples up to %u, not %u", caps->max_pad_multiple, s->pad);
        return 0;
    }
    int32_t dts[3] = {s->dtype, s->weight_dtype, residual_dtype(s)};
    static const char *const what[3] = {"x / out dtype", "weight dtype", "residual dtype"};
    for (int i = 0; i < 3; i++)
        if (!(caps->dtypes & SY_DTYPE_BIT(dts[i]))) {
            sy_conf_case_unsupported(c, "caps do not declare %s %s", what[i], sy_dtype_name(dts[i]));
            return 0;
        }
    return 1;
}

static sy_tensor matrix(void *p, int32_t dt, int64_t rows, int64_t cols)
{
    int64_t shape[2] = {rows, cols};
    return sy_tensor_contiguous(p, dt, 2, shape);
}

/* Host buffers of one call; the plugin gets device copies of the same. */
typedef struct norm_buffers {
    void *x, *residual, *weight, *out, *residual_out;
} norm_buffers;

static sy_norm_args norm_args(const norm_shape *s, const norm_buffers *b, int64_t nout)
{
    sy_norm_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.pad_to_multiple = s->pad;
    a.x = matrix(b->x, s->dtype, s->rows, s->cols);
    int64_t n = s->cols;
    a.weight = sy_tensor_contiguous(b->weight, s->weight_dtype, 1, &n);
    a.out = matrix(b->out, s->dtype, s->rows, nout);
    if (s->fused) {
        a.residual = matrix(b->residual, residual_dtype(s), s->rows, s->cols);
        a.residual_out = matrix(b->residual_out, residual_dtype(s), s->rows, s->cols);
    }
    a.eps = EPS;
    return a;
}

static void norm_case(sy_conf_case *c, const void *row, const void *user)
{
    const norm_shape *s = row;
    (void)user;
    if (!caps_cover(c, s))
        return;
    const sy_conf_plugin_ctx *ref = sy_conf_case_reference(c, SY_KIND_NORM, "norm_rmsnorm");
    if (!ref)
        return;
    const int64_t M = s->rows, N = s->cols, p = s->pad > 1 ? s->pad : 1, nout = (N + p - 1) / p * p;
    const size_t es = sy_dtype_size(s->dtype), rs = sy_dtype_size(residual_dtype(s)), mat = (size_t)(M * N);
    float *x = sy_conf_case_host(c, mat * sizeof(float)), *res = sy_conf_case_host(c, mat * sizeof(float));
    float *w = sy_conf_case_host(c, (size_t)N * sizeof(float));
    sy_conf_fill_normal(&c->rng, x, mat, 1.0);
    sy_conf_fill_normal(&c->rng, res, mat, 1.0);
    for (int64_t m = 0; m < M; m++) {
        float row_scale = (float)pow(10.0, 4.0 * sy_conf_rng_uniform(&c->rng) - 2.0);
        for (int64_t n = 0; n < N; n++)
            x[m * N + n] *= row_scale;
    }
    sy_conf_fill_normal(&c->rng, w, (size_t)N, 0.3);
    for (int64_t n = 0; n < N; n++)
        w[n] += 1.0f;

    norm_buffers h;
    h.x = sy_conf_case_host(c, mat * es);
    h.residual = sy_conf_case_host(c, mat * rs);
    h.weight = sy_conf_case_host(c, (size_t)N * sy_dtype_size(s->weight_dtype));
    h.out = sy_conf_case_host(c, (size_t)(M * nout) * es);
    sy_conf_store(s->dtype, h.x, x, mat);
    sy_conf_store(residual_dtype(s), h.residual, res, mat);
    sy_conf_store(s->weight_dtype, h.weight, w, (size_t)N);
    void *residual_in = sy_conf_case_host(c, mat * rs); /* kept: in place overwrites h.residual */
    memcpy(residual_in, h.residual, mat * rs);
    h.residual_out = s->in_place ? h.residual : sy_conf_case_host(c, mat * rs);

    sy_error err = {{0}};
    sy_norm_args ra = norm_args(s, &h, nout);
    const sy_norm_ops *ref_ops = ref->desc->ops;
    if (!sy_conf_case_call(c, "reference rmsnorm", ref_ops->rmsnorm(ref->ctx, NULL, &ra, &err), &err))
        return;

    norm_buffers d;
    d.x = sy_conf_case_upload(c, h.x, mat * es);
    d.residual = sy_conf_case_upload(c, residual_in, mat * rs);
    d.weight = sy_conf_case_upload(c, h.weight, (size_t)N * sy_dtype_size(s->weight_dtype));
    d.out = sy_conf_case_dev(c, (size_t)(M * nout) * es);
    d.residual_out = s->in_place ? d.residual : sy_conf_case_dev(c, mat * rs);
    if (!sy_conf_case_op_begin(c))
        return;
    sy_norm_args ta = norm_args(s, &d, nout);
    const sy_norm_ops *ops = c->target->p.desc->ops;
    if (!sy_conf_case_op_end(c, "rmsnorm", ops->rmsnorm(c->target->p.ctx, c->target->p.side->stream, &ta, &err), &err))
        return;
    void *out = sy_conf_case_download(c, d.out, (size_t)(M * nout) * es);
    void *res_out = s->fused ? sy_conf_case_download(c, d.residual_out, mat * rs) : NULL;
    if (!sy_conf_case_ok(c))
        return;
    /* The unpadded columns, packed for the comparison. */
    void *got = sy_conf_case_host(c, mat * es), *want = sy_conf_case_host(c, mat * es);
    for (int64_t m = 0; m < M; m++) {
        memcpy((char *)got + (size_t)(m * N) * es, (char *)out + (size_t)(m * nout) * es, (size_t)N * es);
        memcpy((char *)want + (size_t)(m * N) * es, (char *)h.out + (size_t)(m * nout) * es, (size_t)N * es);
    }
    sy_conf_where where = sy_conf_shape(2, M, N, 0, 0);
    sy_conf_check_close(c, "out", s->dtype, got, want, mat,
                        sy_conf_tolerance(SY_CONF_OP_NORM, sy_conf_narrower(s->dtype, s->weight_dtype)), &where);
    if (nout > N)
        sy_conf_check_zero(c, "pad columns", s->dtype, out, M, nout, N, nout);
    if (s->fused)
        sy_conf_check_bits(c, "residual_out", res_out, h.residual_out, mat, rs, &where);
}

void sy_conf_cases_norm(sy_conf_run *run, const sy_conf_target *t)
{
    sy_conf_note_reference(run, t, sy_conf_reference(run, SY_KIND_NORM, "norm_rmsnorm", NULL));
    sy_conf_table table = {SHAPES, sizeof SHAPES / sizeof SHAPES[0], sizeof SHAPES[0], offsetof(norm_shape, quick),
                           shape_name, norm_case, NULL};
    sy_conf_run_table(run, t, &table);
}
