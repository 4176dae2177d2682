/* moe case: one gpt-oss-120b MoE layer's forward. The experts are a synthetic checkpoint made on
 * the device with the engine's own generator (model/synth.c: MXFP4 blocks, e8m0 scales, bf16
 * biases), prepared once by the plugin's prepare into its tile layout, the checkpoint freed
 * before timing. Routing is random: each token picks top_k distinct experts with weights summing
 * to one. x is passed padded to the plugin's input alignment when it accepts that, as the fused
 * norm leaves it (the pad columns hold finite random values; the prepared weights there are zero). */
#include <string.h>

#include "bench/job.h"
#include "model/engine_impl.h"

enum { BF16 = SY_DTYPE_BF16, U8 = SY_DTYPE_U8, I32 = SY_DTYPE_I32, F32 = SY_DTYPE_F32 };

typedef struct moe_calls {
    const sy_moe_ops *ops;
    void *ctx;
    sy_stream stream;
    sy_moe_forward_args *args; /* one per input copy */
} moe_calls;

static sy_status forward_once(void *user, uint32_t copy, sy_error *err)
{
    const moe_calls *m = user;
    return m->ops->forward(m->ctx, m->stream, &m->args[copy], err);
}

static int caps_cover(sy_bench_job *j, const sy_plugin_desc *plugin, const sy_moe_shape *shape)
{
    const sy_moe_caps *c = plugin->caps;
    if (c->weight_format != SY_MOE_WEIGHTS_MXFP4 || c->gate_up_layout != j->c->layout) {
        sy_bench_job_unsupported(j, "moe plugin %s declares weight format %u and gate_up layout %u, not MXFP4 (%d) "
                                    "with layout %u",
                                 plugin->name, c->weight_format, c->gate_up_layout, SY_MOE_WEIGHTS_MXFP4, j->c->layout);
        return 0;
    }
    if (c->max_experts < shape->num_experts || c->max_top_k < shape->top_k || !(c->act_dtypes & SY_DTYPE_BIT(BF16))) {
        sy_bench_job_unsupported(j, "moe plugin %s declares up to %u experts, top_k %u and activation mask 0x%x, not %u "
                                    "experts, top_k %u, bf16",
                                 plugin->name, c->max_experts, c->max_top_k, c->act_dtypes, shape->num_experts,
                                 shape->top_k);
        return 0;
    }
    return 1;
}

/* Checkpoint tensors of layer 0 on the device, prepared into `prepared`, then freed. */
static int prepare(sy_bench_job *j, const sy_plugin_desc *plugin, void *pctx, const sy_model_dims *dims,
                   const sy_moe_shape *shape, void *prepared)
{
    static const uint32_t KINDS[6] = {SY_T_W13_BLOCKS, SY_T_W13_SCALES, SY_T_W13_BIAS,
                                      SY_T_W2_BLOCKS,  SY_T_W2_SCALES,  SY_T_W2_BIAS};
    void *dev[6] = {0};
    sy_error err = {{0}};
    for (int i = 0; i < 6 && sy_bench_job_ok(j); i++) {
        sy_synth_spec spec = sy_synth_spec_for(dims, j->data.seed, 0, KINDS[i]);
        uint64_t n = sy_ckpt_numel(dims, 0, KINDS[i]);
        dev[i] = sy_bench_job_alloc(j, (size_t)n * (spec.kind == SY_SYNTH_BF16_UNIFORM ? 2 : 1));
        if (dev[i])
            sy_bench_job_check(j, "synthetic checkpoint", sy_bench_fill(&j->data, dev[i], n, &spec, &err), &err);
    }
    if (!sy_bench_job_ok(j))
        return 0;
    const int64_t E = shape->num_experts, H = shape->hidden, I = shape->intermediate;
    int64_t b13[4] = {E, 2 * I, H / 32, 16}, b2[4] = {E, H, I / 32, 16};
    sy_moe_prepare_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.shape = *shape;
    a.w13_blocks = sy_tensor_contiguous(dev[0], U8, 4, b13);
    a.w13_scales = sy_tensor_contiguous(dev[1], U8, 3, b13);
    a.w13_bias = sy_t2(dev[2], BF16, E, 2 * I);
    a.w2_blocks = sy_tensor_contiguous(dev[3], U8, 4, b2);
    a.w2_scales = sy_tensor_contiguous(dev[4], U8, 3, b2);
    a.w2_bias = sy_t2(dev[5], BF16, E, H);
    a.prepared = prepared;
    const sy_moe_ops *ops = plugin->ops;
    if (!sy_bench_job_check(j, "moe prepare", ops->prepare(pctx, j->run->side.stream, &a, &err), &err) ||
        !sy_bench_job_check(j, "moe prepare", sy_conf_side_sync(&j->run->side, &err), &err))
        return 0;
    for (int i = 0; i < 6; i++)
        sy_bench_free(&j->data, dev[i]);
    return 1;
}

/* Routing of T tokens: top_k distinct experts each (a partial shuffle of 0 .. E-1) and weights
 * summing to one. Returns how many experts at least one token picked. */
static uint32_t make_routing(sy_bench_job *j, uint32_t T, uint32_t E, uint32_t k, int32_t *ids, float *weights)
{
    uint32_t *order = sy_bench_job_host(j, E * sizeof *order);
    uint8_t *used = sy_bench_job_host(j, E);
    uint32_t n_used = 0;
    for (uint32_t t = 0; t < T; t++) {
        for (uint32_t e = 0; e < E; e++)
            order[e] = e;
        double sum = 0;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t pick = i + sy_conf_rng_below(&j->rng, E - i), e = order[pick];
            order[pick] = order[i];
            order[i] = e;
            ids[(size_t)t * k + i] = (int32_t)e;
            n_used += !used[e];
            used[e] = 1;
            weights[(size_t)t * k + i] = (float)(0.1 + sy_conf_rng_uniform(&j->rng));
            sum += weights[(size_t)t * k + i];
        }
        for (uint32_t i = 0; i < k; i++)
            weights[(size_t)t * k + i] = (float)(weights[(size_t)t * k + i] / sum);
    }
    return n_used;
}

void sy_bench_op_moe(sy_bench_job *j)
{
    const sy_bench_shape *s = j->s;
    const char *name = j->c->layout == SY_MOE_GATE_UP_INTERLEAVE ? "moe_mxfp4_interleave" : "moe_mxfp4_separated";
    void *pctx = NULL;
    const sy_plugin_desc *plugin = sy_bench_job_plugin(j, SY_KIND_MOE, name, &pctx);
    if (!plugin)
        return;
    sy_model_dims dims = j->run->model;
    dims.experts = s->experts;
    dims.top_k = s->top_k;
    dims.hidden = s->hidden;
    dims.intermediate = s->intermediate;
    sy_moe_shape shape;
    memset(&shape, 0, sizeof shape);
    shape.struct_size = sizeof shape;
    shape.num_experts = dims.experts;
    shape.hidden = dims.hidden;
    shape.intermediate = dims.intermediate;
    shape.top_k = dims.top_k;
    shape.swiglu_alpha = dims.swiglu_alpha;
    shape.swiglu_limit = dims.swiglu_limit;
    if (!caps_cover(j, plugin, &shape))
        return;
    const sy_moe_caps *caps = plugin->caps;
    const uint32_t T = s->tokens, k = s->top_k, H = s->hidden, align = caps->input_alignment;
    const uint32_t x_cols = caps->accepts_padded_input && align ? (H + align - 1) / align * align : H;
    const size_t es = sy_dtype_size(BF16), bias_es = sy_dtype_size(BF16);

    sy_error err = {{0}};
    uint64_t prepared_bytes = 0;
    const sy_moe_ops *ops = plugin->ops;
    if (!sy_bench_job_check(j, "moe prepared_bytes", ops->prepared_bytes(&shape, &prepared_bytes, &err), &err))
        return;
    void *prepared = sy_bench_job_alloc(j, (size_t)prepared_bytes);
    if (!prepared || !prepare(j, plugin, pctx, &dims, &shape, prepared))
        return;

    /* The first copy's routing sizes the rotation; the bytes are the mean over the copies. */
    const size_t route_bytes = (size_t)T * k * sizeof(int32_t);
    int32_t *ids = sy_bench_job_host(j, route_bytes);
    float *weights = sy_bench_job_host(j, route_bytes);
    uint64_t used_sum = make_routing(j, T, s->experts, k, ids, weights);
    sy_bench_traffic t = sy_bench_moe_traffic(T, k, (uint32_t)used_sum, H, x_cols, s->intermediate, es, bias_es);
    const uint32_t copies = sy_bench_job_copies(j, t.bytes);
    moe_calls calls = {ops, pctx, j->run->side.stream, sy_bench_job_host(j, copies * sizeof(sy_moe_forward_args))};
    for (uint32_t c = 0; c < copies && sy_bench_job_ok(j); c++) {
        if (c > 0) {
            ids = sy_bench_job_host(j, route_bytes);
            weights = sy_bench_job_host(j, route_bytes);
            used_sum += make_routing(j, T, s->experts, k, ids, weights);
        }
        sy_moe_forward_args *a = &calls.args[c];
        memset(a, 0, sizeof *a);
        a->struct_size = sizeof *a;
        a->shape = shape;
        a->prepared = prepared;
        a->x = sy_t2(sy_bench_job_random(j, BF16, (uint64_t)T * x_cols), BF16, T, x_cols);
        a->topk_ids = sy_t2(sy_bench_job_upload(j, ids, route_bytes), I32, T, k);
        a->topk_weights = sy_t2(sy_bench_job_upload(j, weights, route_bytes), F32, T, k);
        a->out = sy_t2(sy_bench_job_alloc(j, (size_t)T * H * es), BF16, T, H);
    }
    const uint32_t used = (uint32_t)((used_sum + copies / 2) / copies);
    t = sy_bench_moe_traffic(T, k, used, H, x_cols, s->intermediate, es, bias_es);
    sy_bench_job_traffic(j, t);
    sy_bench_job_shape(j, "tokens=%u experts=%u top_k=%u used_experts=%u hidden=%u x_cols=%u intermediate=%u act=bf16 "
                          "weights=mxfp4",
                       T, s->experts, k, used, H, x_cols, s->intermediate);
    sy_bench_job_time(j, forward_once, &calls, copies);
}
