/* linear cases against linear (cpu): y = x W^T + b at gpt-oss's projection shapes (qkv 2880 -> 5120
 * with bias, router 2880 -> 128, output 4096 -> 2880) and odd M / N / K, f32 and bf16 weights and
 * activations, x rows wider than K (a view into a larger buffer; the gap holds NaN), and y as column
 * parts (ABI 1.4's split_y: q, k and v of 4096 / 512 / 512, and parts whose edges split every run of
 * four columns) in one poisoned buffer with padded rows, whose padding must stay untouched. The
 * output is compared by relative L2 at the tolerance of the call's narrowest dtype (tolerance.h). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conformance/cases.h"
#include "conformance/tolerance.h"

enum { F32 = SY_DTYPE_F32, BF16 = SY_DTYPE_BF16, NONE = 0 };

typedef struct linear_shape {
    uint32_t m, n, k;
    int32_t x, w, y, bias; /* bias dtype, NONE for no bias */
    uint32_t x_pad;        /* extra elements per x row */
    uint8_t quick;
    uint8_t parts;         /* > 0: y as this many column parts (split_y), each row padded by Y_PART_PAD */
} linear_shape;

enum { Y_PART_PAD = 3 };

static const linear_shape SHAPES[] = {
    {5, 5120, 2880, F32, BF16, F32, F32, 0, 1, 0},   {5, 128, 2880, F32, BF16, F32, F32, 0, 1, 0},
    {3, 2880, 4096, F32, BF16, F32, NONE, 0, 0, 0},  {13, 37, 71, F32, F32, F32, F32, 0, 1, 0},
    {1, 1, 1, F32, F32, F32, NONE, 0, 0, 0},         {33, 257, 129, BF16, BF16, BF16, BF16, 0, 1, 0},
    {7, 100, 65, F32, F32, BF16, NONE, 15, 1, 0},    {64, 300, 2880, BF16, BF16, F32, NONE, 0, 0, 0},
    {2, 1000, 96, BF16, F32, F32, F32, 32, 0, 0},
    {7, 5120, 2880, BF16, BF16, BF16, F32, 0, 1, 3}, {13, 37, 71, F32, F32, F32, F32, 0, 1, 4},
    {1, 70, 33, F32, BF16, F32, NONE, 0, 1, 2},     {5, 301, 129, F32, BF16, BF16, F32, 8, 1, 3},
};

/* Columns of part i of s: q, k and v's 8 : 1 : 1 for three parts of a multiple of 10, else N / parts
 * each with the remainder on the first (37 in four: 10, 9, 9, 9). */
static uint32_t part_columns(const linear_shape *s, uint32_t i)
{
    if (s->parts == 3 && s->n % 10 == 0)
        return i == 0 ? s->n / 10 * 8 : s->n / 10;
    return s->n / s->parts + (i == 0 ? s->n % s->parts : 0);
}

static void shape_name(char *buf, size_t len, const void *row, const void *user)
{
    const linear_shape *s = row;
    (void)user;
    char parts[16] = "";
    if (s->parts)
        snprintf(parts, sizeof parts, "/yparts%u", (unsigned)s->parts);
    snprintf(buf, len, "linear/x%s/w%s/y%s/M%uN%uK%u/%s%s%s", sy_conf_dtype_tag(s->x), sy_conf_dtype_tag(s->w),
             sy_conf_dtype_tag(s->y), s->m, s->n, s->k, s->bias ? "bias" : "nobias", s->x_pad ? "/xstride" : "", parts);
}

static int caps_cover(sy_conf_case *c, const linear_shape *s)
{
    const sy_linear_caps *caps = c->target->p.desc->caps;
    if (!(caps->weight_dtypes & SY_DTYPE_BIT(s->w))) {
        sy_conf_case_unsupported(c, "caps do not declare weight dtype %s", sy_dtype_name(s->w));
        return 0;
    }
    int32_t acts[3] = {s->x, s->y, s->bias ? s->bias : s->x};
    static const char *const what[3] = {"x", "y", "bias"};
    for (int i = 0; i < 3; i++)
        if (!(caps->act_dtypes & SY_DTYPE_BIT(acts[i]))) {
            sy_conf_case_unsupported(c, "caps do not declare activation dtype %s (for %s)", sy_dtype_name(acts[i]),
                                     what[i]);
            return 0;
        }
    if (s->bias && !caps->has_bias) {
        sy_conf_case_unsupported(c, "caps do not declare a bias (has_bias 0)");
        return 0;
    }
    if (s->parts && !sy_linear_split_y(caps)) {
        sy_conf_case_unsupported(c, "caps do not declare split_y (y as column parts)");
        return 0;
    }
    return 1;
}

typedef struct linear_buffers {
    void *x, *w, *b, *y;
} linear_buffers;

/* With parts, p->y holds them one after another, part i [M, N_i] with rows of N_i + Y_PART_PAD. */
static sy_linear_args linear_args(const linear_shape *s, const linear_buffers *p, int as_parts)
{
    sy_linear_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    int64_t xs[2] = {s->m, s->k}, ws[2] = {s->n, s->k}, bs[1] = {s->n}, ys[2] = {s->m, s->n};
    a.x = sy_tensor_contiguous(p->x, s->x, 2, xs);
    a.x.stride[0] = (int64_t)s->k + s->x_pad;
    a.w = sy_tensor_contiguous(p->w, s->w, 2, ws);
    if (s->bias)
        a.b = sy_tensor_contiguous(p->b, s->bias, 1, bs);
    if (!as_parts) {
        a.y = sy_tensor_contiguous(p->y, s->y, 2, ys);
        return a;
    }
    a.n_y_parts = s->parts;
    char *at = p->y;
    for (uint32_t i = 0; i < s->parts; i++) {
        const int64_t shape[2] = {s->m, part_columns(s, i)};
        a.y_parts[i] = sy_tensor_contiguous(at, s->y, 2, shape);
        a.y_parts[i].stride[0] = shape[1] + Y_PART_PAD;
        at += (size_t)s->m * (size_t)a.y_parts[i].stride[0] * sy_dtype_size(s->y);
    }
    return a;
}

/* Each part against its columns of the reference y, and every padding element still the poison.
 * `shift` moves a part's device address to where its bytes lie in the download. */
static void check_parts(sy_conf_case *c, const linear_shape *s, const sy_linear_args *ta, ptrdiff_t shift,
                        const void *ref_y, double tol)
{
    const size_t es = sy_dtype_size(s->y);
    uint32_t col0 = 0;
    for (uint32_t i = 0; i < s->parts; i++) {
        const sy_tensor *t = &ta->y_parts[i];
        const uint32_t n = (uint32_t)t->shape[1];
        const size_t ld = (size_t)t->stride[0];
        const char *got = (const char *)t->data + shift;
        char *test = sy_conf_case_host(c, (size_t)s->m * n * es), *ref = sy_conf_case_host(c, (size_t)s->m * n * es);
        for (uint32_t m = 0; m < s->m; m++) {
            memcpy(test + (size_t)m * n * es, got + m * ld * es, n * es);
            memcpy(ref + (size_t)m * n * es, (const char *)ref_y + ((size_t)m * s->n + col0) * es, n * es);
            for (size_t b = n * es; b < ld * es; b++)
                if ((unsigned char)got[m * ld * es + b] != 0xFF) {
                    sy_conf_case_fail(c, "y_parts[%u] row %u: the padding after column %u was written", i, m, n - 1);
                    return;
                }
        }
        char what[24];
        snprintf(what, sizeof what, "y_parts[%u]", i);
        sy_conf_where where = sy_conf_shape(2, s->m, n, 0, 0);
        sy_conf_check_close(c, what, s->y, test, ref, (uint64_t)s->m * n, tol, &where);
        col0 += n;
    }
}

static void linear_case(sy_conf_case *c, const void *shape_row, const void *user)
{
    const linear_shape *s = shape_row;
    (void)user;
    if (!caps_cover(c, s))
        return;
    const sy_conf_plugin_ctx *ref = sy_conf_case_reference(c, SY_KIND_LINEAR, "linear");
    if (!ref)
        return;
    const size_t row = (size_t)s->k + s->x_pad, x_bytes = (size_t)s->m * row * sy_dtype_size(s->x);
    const size_t w_bytes = (size_t)s->n * s->k * sy_dtype_size(s->w), y_bytes = (size_t)s->m * s->n * sy_dtype_size(s->y);
    const size_t b_bytes = s->bias ? s->n * sy_dtype_size(s->bias) : 0;
    linear_buffers h;
    h.x = sy_conf_case_random(c, (size_t)s->m * row, s->x, 1.0);
    for (uint32_t m = 0; m < s->m; m++) /* the gap between rows holds NaN */
        memset((char *)h.x + (m * row + s->k) * sy_dtype_size(s->x), 0xFF, s->x_pad * sy_dtype_size(s->x));
    h.w = sy_conf_case_random(c, (size_t)s->n * s->k, s->w, 1.0 / sqrt((double)s->k));
    h.b = s->bias ? sy_conf_case_random(c, s->n, s->bias, 1.0) : NULL;
    h.y = sy_conf_case_host(c, y_bytes);

    sy_error err = {{0}};
    sy_linear_args ra = linear_args(s, &h, 0);
    const sy_linear_ops *ref_ops = ref->desc->ops;
    if (!sy_conf_case_call(c, "reference linear", ref_ops->linear(ref->ctx, NULL, &ra, &err), &err))
        return;

    linear_buffers d;
    d.x = sy_conf_case_upload(c, h.x, x_bytes);
    d.w = sy_conf_case_upload(c, h.w, w_bytes);
    d.b = s->bias ? sy_conf_case_upload(c, h.b, b_bytes) : NULL;
    const size_t y_dev_bytes = y_bytes + (s->parts ? (size_t)s->m * s->parts * Y_PART_PAD * sy_dtype_size(s->y) : 0);
    d.y = sy_conf_case_dev(c, y_dev_bytes);
    if (!sy_conf_case_op_begin(c))
        return;
    sy_linear_args ta = linear_args(s, &d, s->parts > 0);
    const sy_linear_ops *ops = c->target->p.desc->ops;
    if (!sy_conf_case_op_end(c, "linear", ops->linear(c->target->p.ctx, c->target->p.side->stream, &ta, &err), &err))
        return;
    void *y = sy_conf_case_download(c, d.y, y_dev_bytes);
    if (!y)
        return;
    int32_t narrowest = sy_conf_narrower(sy_conf_narrower(s->x, s->w), sy_conf_narrower(s->y, s->bias ? s->bias : F32));
    const double tol = sy_conf_tolerance(SY_CONF_OP_LINEAR, narrowest);
    if (!s->parts) {
        sy_conf_where where = sy_conf_shape(2, s->m, s->n, 0, 0);
        sy_conf_check_close(c, "y", s->y, y, h.y, (uint64_t)s->m * s->n, tol, &where);
        return;
    }
    check_parts(c, s, &ta, (const char *)y - (const char *)d.y, h.y, tol);
}

void sy_conf_cases_linear(sy_conf_run *run, const sy_conf_target *t)
{
    sy_conf_note_reference(run, t, sy_conf_reference(run, SY_KIND_LINEAR, "linear", NULL));
    sy_conf_table table = {SHAPES, sizeof SHAPES / sizeof SHAPES[0], sizeof SHAPES[0], offsetof(linear_shape, quick),
                           shape_name, linear_case, NULL};
    sy_conf_run_table(run, t, &table);
}
