/* norm case: the engine's fused add + RMSNorm + pad of the residual stream, bf16 x and residual
 * [M, N], a bf16 weight, out [M, Nout] padded with zeros to the MoE input alignment and the
 * summed residual written to a buffer of its own (gpt-oss's eps). */
#include <string.h>

#include "bench/job.h"
#include "model/engine_impl.h"

enum { BF16 = SY_DTYPE_BF16 };

typedef struct norm_calls {
    const sy_norm_ops *ops;
    void *ctx;
    sy_stream stream;
    sy_norm_args *args; /* one per input copy */
} norm_calls;

static sy_status norm_once(void *user, uint32_t copy, sy_error *err)
{
    const norm_calls *n = user;
    return n->ops->rmsnorm(n->ctx, n->stream, &n->args[copy], err);
}

static int caps_cover(sy_bench_job *j, const sy_plugin_desc *plugin, uint32_t pad)
{
    const sy_norm_caps *c = plugin->caps;
    const uint32_t need = SY_NORM_RMSNORM | SY_NORM_FUSED_ADD | SY_NORM_PAD_TO_MULTIPLE;
    if ((c->features & need) != need || c->max_pad_multiple < pad || !(c->dtypes & SY_DTYPE_BIT(BF16))) {
        sy_bench_job_unsupported(j, "norm plugin %s declares features 0x%x (needs 0x%x: rmsnorm, fused add, pad), pad "
                                    "multiples up to %u (needs %u), dtype mask 0x%x (needs bf16)",
                                 plugin->name, c->features, need, c->max_pad_multiple, pad, c->dtypes);
        return 0;
    }
    return 1;
}

void sy_bench_op_norm(sy_bench_job *j)
{
    const uint32_t M = j->s->tokens, N = j->s->cols, pad = j->s->pad_multiple;
    const uint32_t out_cols = (N + pad - 1) / pad * pad;
    const size_t es = sy_dtype_size(BF16);
    void *pctx = NULL;
    const sy_plugin_desc *plugin = sy_bench_job_plugin(j, SY_KIND_NORM, "norm_rmsnorm", &pctx);
    if (!plugin)
        return;
    sy_bench_job_shape(j, "rows=%u cols=%u out_cols=%u pad_multiple=%u dtype=bf16 weight=bf16", M, N, out_cols, pad);
    if (!caps_cover(j, plugin, pad))
        return;
    const sy_bench_traffic t = sy_bench_norm_traffic(M, N, out_cols, es, es);
    sy_bench_job_traffic(j, t);
    const uint32_t copies = sy_bench_job_copies(j, t.bytes);
    sy_norm_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.pad_to_multiple = pad;
    a.weight = sy_t1(sy_bench_job_random(j, BF16, N), BF16, N);
    a.eps = j->run->model.rms_eps;
    norm_calls calls = {plugin->ops, pctx, j->run->side.stream, sy_bench_job_host(j, copies * sizeof a)};
    for (uint32_t c = 0; c < copies && sy_bench_job_ok(j); c++) {
        sy_norm_args *ac = &calls.args[c];
        *ac = a;
        ac->x = sy_t2(sy_bench_job_random(j, BF16, (uint64_t)M * N), BF16, M, N);
        ac->residual = sy_t2(sy_bench_job_random(j, BF16, (uint64_t)M * N), BF16, M, N);
        ac->out = sy_t2(sy_bench_job_alloc(j, (size_t)M * out_cols * es), BF16, M, out_cols);
        ac->residual_out = sy_t2(sy_bench_job_alloc(j, (size_t)M * N * es), BF16, M, N);
    }
    sy_bench_job_time(j, norm_once, &calls, copies);
}
