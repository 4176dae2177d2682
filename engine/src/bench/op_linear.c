/* linear case: y = x W^T + b at the shapes a gpt-oss-120b decode step calls the linear slot with
 * (cases.c): bf16 W [N, K], an f32 bias when the case has one, x [M, K] and y [M, N] in the case's
 * dtypes, or y as q, k and v's column parts (8 : 1 : 1) in arrays of their own. Each input copy has
 * its own W, so that every run reads its weights from memory, as a step does layer after layer. */
#include <string.h>

#include "bench/job.h"
#include "model/engine_impl.h"

enum { BF16 = SY_DTYPE_BF16, F32 = SY_DTYPE_F32 };

typedef struct linear_calls {
    const sy_linear_ops *ops;
    void *ctx;
    sy_stream stream;
    sy_linear_args *args; /* one per input copy */
} linear_calls;

static sy_status linear_once(void *user, uint32_t copy, sy_error *err)
{
    const linear_calls *l = user;
    return l->ops->linear(l->ctx, l->stream, &l->args[copy], err);
}

/* x and the bias may be f32, which the device generator does not make; they are small. */
static void *random_input(sy_bench_job *j, int32_t dtype, uint64_t count)
{
    return dtype == F32 ? sy_bench_job_uniform_f32(j, count, -1.0, 1.0) : sy_bench_job_random(j, dtype, count);
}

static int caps_cover(sy_bench_job *j, const sy_plugin_desc *plugin, const sy_bench_shape *s)
{
    const sy_linear_caps *c = plugin->caps;
    const uint32_t acts = SY_DTYPE_BIT(s->act_dtype) | SY_DTYPE_BIT(s->out_dtype);
    if (s->y_parts && !sy_linear_split_y(c)) {
        sy_bench_job_unsupported(j, "linear plugin %s declares no split_y (y as column parts)", plugin->name);
        return 0;
    }
    if (!(c->weight_dtypes & SY_DTYPE_BIT(BF16)) || (c->act_dtypes & acts) != acts || (s->bias && !c->has_bias)) {
        sy_bench_job_unsupported(j, "linear plugin %s declares weight dtypes 0x%x, activation dtypes 0x%x and bias %u "
                                    "(needs bf16 weights, activation mask 0x%x, bias %u)",
                                 plugin->name, c->weight_dtypes, c->act_dtypes, c->has_bias, acts, s->bias);
        return 0;
    }
    return 1;
}

void sy_bench_op_linear(sy_bench_job *j)
{
    const sy_bench_shape *s = j->s;
    const uint32_t M = s->tokens, K = s->in_features, N = s->out_features;
    void *pctx = NULL;
    const sy_plugin_desc *plugin = sy_bench_job_plugin(j, SY_KIND_LINEAR, "linear", &pctx);
    if (!plugin)
        return;
    sy_bench_job_shape(j, "rows=%u in=%u out=%u x=%s w=bf16 bias=%s y=%s%s", M, K, N, sy_dtype_name(s->act_dtype),
                       s->bias ? "f32" : "none", sy_dtype_name(s->out_dtype),
                       s->y_parts ? " in 3 parts (8:1:1)" : "");
    if (!caps_cover(j, plugin, s))
        return;
    const size_t x_elem = sy_dtype_size(s->act_dtype), y_elem = sy_dtype_size(s->out_dtype);
    const sy_bench_traffic t =
        sy_bench_linear_traffic(M, K, N, x_elem, sy_dtype_size(BF16), s->bias ? sy_dtype_size(F32) : 0, y_elem);
    sy_bench_job_traffic(j, t);
    const uint32_t copies = sy_bench_job_copies(j, t.bytes);
    linear_calls calls = {plugin->ops, pctx, j->run->side.stream, sy_bench_job_host(j, copies * sizeof(sy_linear_args))};
    for (uint32_t c = 0; c < copies && sy_bench_job_ok(j); c++) {
        sy_linear_args *a = &calls.args[c];
        memset(a, 0, sizeof *a);
        a->struct_size = sizeof *a;
        a->x = sy_t2(random_input(j, s->act_dtype, (uint64_t)M * K), s->act_dtype, M, K);
        a->w = sy_t2(sy_bench_job_random(j, BF16, (uint64_t)N * K), BF16, N, K);
        a->b = s->bias ? sy_t1(random_input(j, F32, N), F32, N) : sy_tnone();
        char *y = sy_bench_job_alloc(j, (size_t)M * N * y_elem);
        if (!s->y_parts) {
            a->y = sy_t2(y, s->out_dtype, M, N);
            continue;
        }
        const uint32_t columns[3] = {N / 10 * 8, N / 10, N - N / 10 * 9};
        a->n_y_parts = 3;
        for (uint32_t p = 0; p < 3; p++) {
            a->y_parts[p] = sy_t2(y, s->out_dtype, M, columns[p]);
            y += (size_t)M * columns[p] * y_elem;
        }
    }
    sy_bench_job_time(j, linear_once, &calls, copies);
}
