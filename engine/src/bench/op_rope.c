/* rope cases: gpt-oss's YaRN RoPE (NeoX style) on q [T, Hq, D] and k [T, Hkv, D] in place at the
 * positions of one T-token prefill, alone (rope.rope) or fused with the KV write of the rotated k
 * and v into a pool (rope.rope_kv_write, the rope plugin's own kernel). Every call rotates the
 * same buffers again, which scales them by YaRN's concentration (1.35) a call: from values below
 * one, 60 calls stay far inside bf16's range. */
#include <string.h>

#include "bench/paging.h"
#include "calls/checks.h"
#include "model/engine_impl.h"

enum { BF16 = SY_DTYPE_BF16, I32 = SY_DTYPE_I32 };

typedef struct rope_calls {
    const sy_rope_ops *ops;
    void *ctx;
    sy_stream stream;
    sy_rope_kv_write_args *args; /* one per input copy; .rope alone for rope.rope */
    int fused;
} rope_calls;

static sy_status rope_once(void *user, uint32_t copy, sy_error *err)
{
    const rope_calls *r = user;
    return r->fused ? r->ops->rope_kv_write(r->ctx, r->stream, &r->args[copy], err)
                    : r->ops->rope(r->ctx, r->stream, &r->args[copy].rope, err);
}

static sy_rope_params gpt_oss_rope(const sy_model_dims *m)
{
    sy_rope_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.style = SY_ROPE_STYLE_NEOX;
    p.scaling = SY_ROPE_SCALING_YARN;
    p.head_dim = m->head_dim;
    p.theta = m->rope_theta;
    p.yarn_factor = m->yarn_factor;
    p.yarn_beta_fast = m->yarn_beta_fast;
    p.yarn_beta_slow = m->yarn_beta_slow;
    p.yarn_original_max_position = m->yarn_original_max_position;
    p.concentration = 0.0f; /* the default, 0.1 ln(factor) + 1 */
    return p;
}

/* What the call needs of the rope plugin's caps, and for the fused op of its fused-write caps. */
static int caps_cover(sy_bench_job *j, const sy_plugin_desc *plugin, const sy_rope_params *p, int fused)
{
    const sy_rope_caps *c = plugin->caps;
    if (!(c->styles & p->style) || !(c->scalings & p->scaling)) {
        sy_bench_job_unsupported(j, "rope plugin %s declares styles 0x%x and scalings 0x%x, not NeoX (0x%x) with YaRN "
                                    "(0x%x)",
                                 plugin->name, c->styles, c->scalings, p->style, p->scaling);
        return 0;
    }
    if (p->head_dim > c->head_dim_max || !(c->dtypes & SY_DTYPE_BIT(BF16))) {
        sy_bench_job_unsupported(j, "rope plugin %s declares head dims up to %u and dtype mask 0x%x, not dim %u bf16",
                                 plugin->name, c->head_dim_max, c->dtypes, p->head_dim);
        return 0;
    }
    if (!fused)
        return 1;
    int layout = 0;
    for (uint32_t i = 0; i < c->n_fused_kv_layouts && i < SY_MAX_CAPS_LAYOUTS; i++)
        layout |= c->fused_kv_layouts[i] == j->c->layout;
    if (!plugin->ops || !((const sy_rope_ops *)plugin->ops)->rope_kv_write || !layout ||
        !(c->fused_kv_dtypes & SY_DTYPE_BIT(BF16))) {
        sy_bench_job_unsupported(j, "rope plugin %s has no fused KV write into a bf16 %s pool (%u fused layouts, store "
                                    "dtype mask 0x%x)",
                                 plugin->name, sy_layout_name(j->c->layout), c->n_fused_kv_layouts, c->fused_kv_dtypes);
        return 0;
    }
    return 1;
}

void sy_bench_op_rope(sy_bench_job *j)
{
    const int fused = j->c->op == SY_BENCH_OP_ROPE_KV_WRITE;
    const sy_bench_heads h = sy_bench_job_heads(j);
    const uint32_t P = SY_BENCH_PAGE_SIZE, T = j->s->tokens;
    const size_t es = sy_dtype_size(BF16);
    const size_t q_elems = (size_t)T * h.q_heads * h.head_dim, kv_elems = (size_t)T * h.kv_heads * h.head_dim;
    void *pctx = NULL;
    const sy_plugin_desc *plugin = sy_bench_job_plugin(j, SY_KIND_ROPE, "rope_yarn", &pctx);
    if (!plugin)
        return;
    sy_bench_job_shape(j, "tokens=%u dtype=bf16 scaling=yarn q_heads=%u kv_heads=%u dim=%u%s", T, h.q_heads,
                       h.kv_heads, h.head_dim, fused ? " store=bf16 page=64" : "");
    sy_rope_kv_write_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.rope.struct_size = sizeof a.rope;
    a.rope.params = gpt_oss_rope(&j->run->model);
    a.rope.q = sy_t3(NULL, BF16, T, h.q_heads, h.head_dim);
    a.rope.k = sy_t3(NULL, BF16, T, h.kv_heads, h.head_dim);
    a.rope.positions = sy_t1(NULL, I32, T);
    if (!caps_cover(j, plugin, &a.rope.params, fused))
        return;
    sy_error err = {{0}};
    sy_kv_write_args *kv = &a.kv;
    kv->struct_size = sizeof *kv;
    kv->v = sy_t3(NULL, BF16, T, h.kv_heads, h.head_dim);
    kv->slots = sy_t1(NULL, I32, T);
    kv->k_scale = kv->v_scale = 1.0f;
    const sy_bench_traffic t =
        fused ? sy_bench_rope_kv_write_traffic(&h, T, es, es) : sy_bench_rope_traffic(&h, T, es);
    sy_bench_job_traffic(j, t);
    const uint32_t copies = sy_bench_job_copies(j, t.bytes), pages_per_copy = (T + P - 1) / P;
    const uint32_t *pages = NULL;
    if (fused) {
        if (!sy_bench_job_geometry(j, j->c->layout, BF16, copies * pages_per_copy + 1, P, &kv->geom))
            return;
        kv->k_cache = sy_bench_job_random(j, BF16, kv->geom.k_elems);
        kv->v_cache = sy_bench_job_random(j, BF16, kv->geom.v_elems);
        pages = sy_bench_shuffled_pages(j, kv->geom.num_pages);
    }
    int32_t *positions = sy_bench_job_host(j, (size_t)T * sizeof *positions);
    for (uint32_t i = 0; i < T; i++)
        positions[i] = (int32_t)i;
    a.rope.positions.data = sy_bench_job_upload(j, positions, (size_t)T * sizeof *positions);

    rope_calls calls = {plugin->ops, pctx, j->run->side.stream, sy_bench_job_host(j, copies * sizeof a), fused};
    for (uint32_t c = 0; c < copies && sy_bench_job_ok(j); c++) {
        sy_rope_kv_write_args *ac = &calls.args[c];
        *ac = a;
        ac->rope.q.data = sy_bench_job_random(j, BF16, q_elems);
        ac->rope.k.data = sy_bench_job_random(j, BF16, kv_elems);
        if (!fused)
            continue;
        ac->kv.k = ac->rope.k; /* the ABI's fused write stores the rotated k: the same view */
        ac->kv.v.data = sy_bench_job_random(j, BF16, kv_elems);
        int32_t *slots = sy_bench_slots(j, pages + (size_t)c * pages_per_copy, T, P);
        ac->kv.slots.data = sy_bench_job_upload(j, slots, (size_t)T * sizeof *slots);
        if (sy_bench_job_ok(j))
            sy_bench_job_check(j, "host check of the fused KV write", sy_check_kv_write(&ac->kv, slots, NULL, &err),
                               &err);
    }
    sy_bench_job_time(j, rope_once, &calls, copies);
}
