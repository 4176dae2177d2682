/* rope cases against rope_yarn (cpu).
 *
 *   rope.rope           q and k rotated in place at positions up to 131072 (0, 4095, 4096, 131071
 *                       and 131072 always among them), gpt-oss YaRN or plain RoPE; optionally q and k
 *                       are views into one packed QKV buffer, whose V part must stay untouched.
 *   rope.rope_kv_write  the fused rotation + KV store, for every in-tree layout: rotated q and k
 *                       against the reference's rope by relative L2, and the pool bit for bit against
 *                       the layout reference's write of the plugin's own rotated k and its v (the ABI
 *                       makes the fused pool equal rope followed by kv_layout.write); v untouched.
 * Rotations of f32 inputs are compared at 2e-6: the reference evaluates angles in double, and an
 * f32 angle at position 131072 is off by about 1e-2 rad (plugins/common/sy_rope.h). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "calls/checks.h"
#include "conformance/cases.h"
#include "conformance/pool.h"
#include "conformance/tolerance.h"

enum { F32 = SY_DTYPE_F32, BF16 = SY_DTYPE_BF16, FP8 = SY_DTYPE_FP8_E4M3 };

typedef struct rope_shape {
    uint32_t tokens, hq, hkv, d;
    int32_t dtype;
    uint8_t yarn, packed, quick;
} rope_shape;

static const rope_shape ROPE[] = {
    {9, 64, 8, 64, F32, 1, 0, 1},  {9, 64, 8, 64, BF16, 1, 0, 1},  {13, 64, 8, 64, F32, 1, 1, 1},
    {5, 4, 4, 128, BF16, 0, 0, 0}, {13, 12, 4, 40, F32, 1, 0, 0},  {300, 64, 8, 64, BF16, 1, 1, 0},
};

typedef struct fused_shape {
    uint32_t tokens, hq, hkv, d;
    int32_t dtype, store;
    uint32_t page_size;
    uint8_t quick;
} fused_shape;

static const fused_shape FUSED[] = {
    {9, 64, 8, 64, BF16, BF16, 16, 1},
    {9, 64, 8, 64, F32, FP8, 64, 1},
    {37, 12, 4, 48, BF16, FP8, 16, 0},
    {200, 64, 8, 64, BF16, BF16, 128, 0},
};

enum { MAX_POSITION = 131072 };

/* gpt-oss: theta 150000, YaRN factor 32, beta_fast 32, beta_slow 1, original context 4096, the
 * default concentration 0.1 ln(32) + 1; without YaRN: theta 10000, concentration 1. */
static sy_rope_params params_for(int yarn, uint32_t d)
{
    sy_rope_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.style = SY_ROPE_STYLE_NEOX;
    p.head_dim = d;
    if (yarn) {
        p.scaling = SY_ROPE_SCALING_YARN;
        p.theta = 150000.0f;
        p.yarn_factor = 32.0f;
        p.yarn_beta_fast = 32.0f;
        p.yarn_beta_slow = 1.0f;
        p.yarn_original_max_position = 4096;
    } else {
        p.scaling = SY_ROPE_SCALING_NONE;
        p.theta = 10000.0f;
    }
    return p;
}

static int caps_cover(sy_conf_case *c, const sy_rope_params *p, int32_t dtype)
{
    const sy_rope_caps *caps = c->target->p.desc->caps;
    if (!(caps->styles & p->style) || !(caps->scalings & p->scaling)) {
        sy_conf_case_unsupported(c, "caps do not declare style 0x%x with scaling 0x%x (styles 0x%x, scalings 0x%x)",
                                 p->style, p->scaling, caps->styles, caps->scalings);
        return 0;
    }
    if (p->head_dim > caps->head_dim_max) {
        sy_conf_case_unsupported(c, "caps allow head dims up to %u, not %u", caps->head_dim_max, p->head_dim);
        return 0;
    }
    if (!(caps->dtypes & SY_DTYPE_BIT(dtype))) {
        sy_conf_case_unsupported(c, "caps do not declare q / k dtype %s", sy_dtype_name(dtype));
        return 0;
    }
    return 1;
}

static int32_t *make_positions(sy_conf_case *c, uint32_t tokens)
{
    static const int32_t edges[] = {0, 4095, 4096, MAX_POSITION - 1, MAX_POSITION};
    int32_t *pos = sy_conf_case_host(c, tokens * sizeof(int32_t));
    for (uint32_t t = 0; t < tokens; t++)
        pos[t] = t < sizeof edges / sizeof edges[0] ? edges[t] : (int32_t)sy_conf_rng_below(&c->rng, MAX_POSITION + 1);
    return pos;
}

/* q [T, Hq, D] and k [T, Hkv, D] as views of a row of `row` elements: q first, k after it. */
static void head_views(void *base, int32_t dtype, uint32_t tokens, uint32_t hq, uint32_t hkv, uint32_t d, int64_t row,
                       int64_t k_offset, sy_tensor *q, sy_tensor *k)
{
    int64_t qs[3] = {tokens, hq, d}, ks[3] = {tokens, hkv, d};
    *q = sy_tensor_contiguous(base, dtype, 3, qs);
    *k = sy_tensor_contiguous((char *)base + (size_t)k_offset * sy_dtype_size(dtype), dtype, 3, ks);
    q->stride[0] = k->stride[0] = row;
}

static sy_rope_args rope_args(const sy_rope_params *p, const sy_tensor *q, const sy_tensor *k, int32_t *positions,
                              uint32_t tokens)
{
    sy_rope_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.params = *p;
    a.q = *q;
    a.k = *k;
    int64_t n = tokens;
    a.positions = sy_tensor_contiguous(positions, SY_DTYPE_I32, 1, &n);
    return a;
}

static int reference_rope(sy_conf_case *c, sy_rope_args *a)
{
    const sy_conf_plugin_ctx *ref = sy_conf_case_reference(c, SY_KIND_ROPE, "rope_yarn");
    if (!ref)
        return 0;
    sy_error err = {{0}};
    const sy_rope_ops *ops = ref->desc->ops;
    return sy_conf_case_call(c, "reference rope", ops->rope(ref->ctx, NULL, a, &err), &err);
}

/* Rotated heads of `got` (rows `row` apart) against the reference's, packed for the comparison. */
static void compare_heads(sy_conf_case *c, const char *what, int32_t dtype, const void *got, const void *want,
                          uint32_t tokens, uint32_t heads, uint32_t d, int64_t row, int64_t offset, int32_t narrowest)
{
    size_t es = sy_dtype_size(dtype), width = (size_t)heads * d;
    void *g = sy_conf_case_host(c, tokens * width * es), *w = sy_conf_case_host(c, tokens * width * es);
    for (uint32_t t = 0; t < tokens; t++) {
        memcpy((char *)g + t * width * es, (const char *)got + ((size_t)t * row + offset) * es, width * es);
        memcpy((char *)w + t * width * es, (const char *)want + ((size_t)t * row + offset) * es, width * es);
    }
    sy_conf_where where = sy_conf_shape(3, tokens, heads, d, 0);
    sy_conf_check_close(c, what, dtype, g, w, tokens * width, sy_conf_tolerance(SY_CONF_OP_ROPE, narrowest), &where);
}

static void rope_name(char *buf, size_t len, const void *row, const void *user)
{
    const rope_shape *s = row;
    (void)user;
    snprintf(buf, len, "rope.rope/%s/%s/T%u/Hq%uHkv%uD%u%s", sy_conf_dtype_tag(s->dtype), s->yarn ? "yarn" : "plain",
             s->tokens, s->hq, s->hkv, s->d, s->packed ? "/qkv_packed" : "");
}

static void rope_case(sy_conf_case *c, const void *shape_row, const void *user)
{
    const rope_shape *s = shape_row;
    (void)user;
    sy_rope_params p = params_for(s->yarn, s->d);
    if (!caps_cover(c, &p, s->dtype))
        return;
    const int64_t q_width = (int64_t)s->hq * s->d, k_width = (int64_t)s->hkv * s->d;
    /* Packed: [T, q | k | v]; otherwise q and k are separate [T, H, D] buffers, here one after the
     * other in a single allocation with rows of q_width + k_width. */
    const int64_t row = s->packed ? q_width + 2 * k_width : q_width + k_width;
    const size_t n = (size_t)s->tokens * (size_t)row, bytes = n * sy_dtype_size(s->dtype);
    void *host = sy_conf_case_random(c, n, s->dtype, 1.0);
    int32_t *pos = make_positions(c, s->tokens);
    void *want = sy_conf_case_host(c, bytes);
    memcpy(want, host, bytes);
    sy_tensor q, k;
    head_views(want, s->dtype, s->tokens, s->hq, s->hkv, s->d, row, q_width, &q, &k);
    sy_rope_args ra = rope_args(&p, &q, &k, pos, s->tokens);
    if (!reference_rope(c, &ra))
        return;

    void *dev = sy_conf_case_upload(c, host, bytes);
    void *pos_dev = sy_conf_case_upload(c, pos, s->tokens * sizeof(int32_t));
    if (!sy_conf_case_op_begin(c))
        return;
    head_views(dev, s->dtype, s->tokens, s->hq, s->hkv, s->d, row, q_width, &q, &k);
    sy_rope_args ta = rope_args(&p, &q, &k, pos_dev, s->tokens);
    sy_error err = {{0}};
    const sy_rope_ops *ops = c->target->p.desc->ops;
    if (!sy_conf_case_op_end(c, "rope", ops->rope(c->target->p.ctx, c->target->p.side->stream, &ta, &err), &err))
        return;
    void *got = sy_conf_case_download(c, dev, bytes);
    if (!got)
        return;
    compare_heads(c, "q", s->dtype, got, want, s->tokens, s->hq, s->d, row, 0, s->dtype);
    compare_heads(c, "k", s->dtype, got, want, s->tokens, s->hkv, s->d, row, q_width, s->dtype);
    if (s->packed) { /* the V third of every row: still the input */
        size_t es = sy_dtype_size(s->dtype), vw = (size_t)k_width * es;
        void *gv = sy_conf_case_host(c, s->tokens * vw), *hv = sy_conf_case_host(c, s->tokens * vw);
        for (uint32_t t = 0; t < s->tokens; t++) {
            memcpy((char *)gv + t * vw, (char *)got + ((size_t)t * row + q_width + k_width) * es, vw);
            memcpy((char *)hv + t * vw, (char *)host + ((size_t)t * row + q_width + k_width) * es, vw);
        }
        sy_conf_check_bits(c, "v (not rotated)", gv, hv, (uint64_t)s->tokens * k_width, es, NULL);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* fused rope + KV write */

static void fused_name(char *buf, size_t len, const void *row, const void *user)
{
    const fused_shape *s = row;
    uint32_t layout = *(const uint32_t *)user;
    char tag[32];
    snprintf(buf, len, "rope.rope_kv_write/%s/%s-from-%s/P%u/T%u/Hq%uHkv%uD%u", sy_conf_layout_tag(layout, tag, sizeof tag),
             sy_conf_dtype_tag(s->store), sy_conf_dtype_tag(s->dtype), s->page_size, s->tokens, s->hq, s->hkv, s->d);
}

static int fused_caps_cover(sy_conf_case *c, uint32_t layout, const fused_shape *s)
{
    const sy_rope_caps *caps = c->target->p.desc->caps;
    const sy_rope_ops *ops = c->target->p.desc->ops;
    char tag[32];
    if (caps->n_fused_kv_layouts == 0 || !ops->rope_kv_write) {
        sy_conf_case_unsupported(c, "no fused rope + KV write (caps n_fused_kv_layouts %u)", caps->n_fused_kv_layouts);
        return 0;
    }
    int writes = 0;
    for (uint32_t i = 0; i < caps->n_fused_kv_layouts && i < SY_MAX_CAPS_LAYOUTS; i++)
        writes |= caps->fused_kv_layouts[i] == layout;
    if (!writes) {
        sy_conf_case_unsupported(c, "the fused write does not declare layout %s", sy_conf_layout_tag(layout, tag, sizeof tag));
        return 0;
    }
    if (!(caps->fused_kv_dtypes & SY_DTYPE_BIT(s->store))) {
        sy_conf_case_unsupported(c, "the fused write does not declare store dtype %s", sy_dtype_name(s->store));
        return 0;
    }
    return 1;
}

/* Distinct slots outside the padding page, about one token in eight skipped (negative). */
static int32_t *fused_slots(sy_conf_case *c, uint32_t tokens, uint32_t num_pages, uint32_t P)
{
    int32_t *slots = sy_conf_case_host(c, tokens * sizeof(int32_t));
    uint32_t *perm = sy_conf_case_host(c, (size_t)(num_pages - 1) * P * sizeof *perm);
    sy_conf_shuffle_u32(&c->rng, perm, (num_pages - 1) * P);
    for (uint32_t t = 0; t < tokens; t++)
        slots[t] = sy_conf_rng_below(&c->rng, 8) == 0 ? -1 : (int32_t)(P + perm[t]);
    return slots;
}

static void fused_case(sy_conf_case *c, const void *shape_row, const void *user)
{
    const fused_shape *s = shape_row;
    uint32_t layout = *(const uint32_t *)user;
    sy_rope_params p = params_for(1, s->d);
    if (!caps_cover(c, &p, s->dtype) || !fused_caps_cover(c, layout, s))
        return;
    const uint32_t P = s->page_size, T = s->tokens, num_pages = (T + P - 1) / P * 2 + 2;
    sy_conf_pool expected;
    if (!sy_conf_pool_make(c, layout, s->store, num_pages, P, s->hkv, s->d, 0.05f, 0.07f, &expected))
        return;
    const int64_t q_width = (int64_t)s->hq * s->d, k_width = (int64_t)s->hkv * s->d, row = q_width + k_width;
    const size_t es = sy_dtype_size(s->dtype), qk_bytes = (size_t)T * row * es, v_bytes = (size_t)T * k_width * es;
    void *qk = sy_conf_case_random(c, (size_t)T * row, s->dtype, 1.0), *v = sy_conf_case_random(c, (size_t)T * k_width, s->dtype, 1.0);
    int32_t *pos = make_positions(c, T), *slots = fused_slots(c, T, num_pages, P);

    /* The reference's rotation of q and k. */
    void *want = sy_conf_case_host(c, qk_bytes);
    memcpy(want, qk, qk_bytes);
    sy_tensor q, k;
    head_views(want, s->dtype, T, s->hq, s->hkv, s->d, row, q_width, &q, &k);
    sy_rope_args rr = rope_args(&p, &q, &k, pos, T);
    if (!reference_rope(c, &rr))
        return;

    /* The plugin's fused call into a poisoned pool. */
    const size_t store_es = sy_dtype_size(s->store);
    void *qk_dev = sy_conf_case_upload(c, qk, qk_bytes), *v_dev = sy_conf_case_upload(c, v, v_bytes);
    void *pos_dev = sy_conf_case_upload(c, pos, T * sizeof(int32_t)), *slots_dev = sy_conf_case_upload(c, slots, T * sizeof(int32_t));
    void *k_cache = sy_conf_case_dev(c, expected.k_bytes), *v_cache = sy_conf_case_dev(c, expected.v_bytes);
    if (!sy_conf_case_ok(c))
        return;
    sy_rope_kv_write_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    head_views(qk_dev, s->dtype, T, s->hq, s->hkv, s->d, row, q_width, &q, &k);
    a.rope = rope_args(&p, &q, &k, pos_dev, T);
    a.kv = sy_conf_pool_write_args(&expected, s->dtype, T, k.data, v_dev, slots_dev);
    a.kv.k = k; /* the rotated keys: the same view as rope.k */
    a.kv.k_cache = k_cache;
    a.kv.v_cache = v_cache;
    sy_error err = {{0}};
    if (!sy_conf_case_call(c, "host check of the fused KV write", sy_check_kv_write(&a.kv, slots, NULL, &err), &err) ||
        !sy_conf_case_op_begin(c))
        return;
    const sy_rope_ops *ops = c->target->p.desc->ops;
    if (!sy_conf_case_op_end(c, "rope_kv_write",
                             ops->rope_kv_write(c->target->p.ctx, c->target->p.side->stream, &a, &err), &err))
        return;
    void *got = sy_conf_case_download(c, qk_dev, qk_bytes), *v_after = sy_conf_case_download(c, v_dev, v_bytes);
    void *k_pool = sy_conf_case_download(c, k_cache, expected.k_bytes);
    void *v_pool = sy_conf_case_download(c, v_cache, expected.v_bytes);
    if (!sy_conf_case_ok(c))
        return;
    compare_heads(c, "q", s->dtype, got, want, T, s->hq, s->d, row, 0, s->dtype);
    compare_heads(c, "k", s->dtype, got, want, T, s->hkv, s->d, row, q_width, s->dtype);

    /* What the layout's reference writes from the plugin's own rotated k. */
    head_views(got, s->dtype, T, s->hq, s->hkv, s->d, row, q_width, &q, &k);
    sy_kv_write_args w = sy_conf_pool_write_args(&expected, s->dtype, T, k.data, v, slots);
    w.k = k;
    if (!sy_conf_pool_write(c, &expected, &w))
        return;
    uint64_t page = (uint64_t)P * s->hkv * s->d;
    sy_conf_pool_where wk = {expected.geom, 0, page}, wv = {expected.geom, 1, page};
    sy_conf_where where_k = {0, {0}, sy_conf_pool_describe, &wk}, where_v = {0, {0}, sy_conf_pool_describe, &wv};
    sy_conf_check_bits(c, "k_cache", (char *)k_pool + page * store_es, (char *)expected.k + page * store_es,
                       expected.geom.k_elems - page, store_es, &where_k);
    sy_conf_check_bits(c, "v_cache", (char *)v_pool + page * store_es, (char *)expected.v + page * store_es,
                       expected.geom.v_elems - page, store_es, &where_v);
    sy_conf_check_bits(c, "v input after write", v_after, v, v_bytes, 1, NULL);
}

void sy_conf_cases_rope(sy_conf_run *run, const sy_conf_target *t)
{
    sy_conf_note_reference(run, t, sy_conf_reference(run, SY_KIND_ROPE, "rope_yarn", NULL));
    sy_conf_table rope = {ROPE, sizeof ROPE / sizeof ROPE[0], sizeof ROPE[0], offsetof(rope_shape, quick),
                          rope_name, rope_case, NULL};
    sy_conf_run_table(run, t, &rope);
    static const uint32_t layouts[] = {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D};
    for (size_t l = 0; l < 2; l++) {
        sy_conf_table fused = {FUSED, sizeof FUSED / sizeof FUSED[0], sizeof FUSED[0], offsetof(fused_shape, quick),
                               fused_name, fused_case, &layouts[l]};
        sy_conf_run_table(run, t, &fused);
    }
}
