#include "attn_case.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "attn_reference.h"
#include "calls/checks.h"
#include "cpu_plugin_fixture.h"
#include "sy_numeric.h"

static sy_test_host host;
static void *ctx;
static int ctx_ready;

static void fini_attn(void)
{
    sy_cpu_plugin_fini(attn_plugin(), ctx);
}

const sy_plugin_desc *attn_plugin(void)
{
    return sy_cpu_plugin(SY_KIND_ATTENTION, "attn_paged");
}

void *attn_ctx(void)
{
    if (!ctx_ready) {
        sy_test_host_init(&host);
        ctx = sy_cpu_plugin_init(attn_plugin(), &host.api);
        ctx_ready = 1;
        atexit(fini_attn);
    }
    return ctx;
}

const sy_test_host *attn_host(void)
{
    attn_ctx();
    return &host;
}

const sy_plugin_desc *kv_plugin_for(uint32_t layout)
{
    return sy_cpu_plugin(SY_KIND_KV_LAYOUT, layout == SY_LAYOUT_NHD ? "kv_nhd" : "kv_vectorized_5d");
}

void encode_values(const float *x, size_t n, int32_t dtype, float scale, void *out)
{
    for (size_t i = 0; i < n; i++) {
        if (dtype == SY_DTYPE_F32)
            ((float *)out)[i] = x[i];
        else if (dtype == SY_DTYPE_BF16)
            ((uint16_t *)out)[i] = sy_f32_to_bf16(x[i]);
        else
            ((uint8_t *)out)[i] = sy_f32_to_fp8e4m3(x[i] / scale);
    }
}

void decode_values(const void *in, size_t n, int32_t dtype, float scale, float *x)
{
    for (size_t i = 0; i < n; i++) {
        if (dtype == SY_DTYPE_F32)
            x[i] = ((const float *)in)[i];
        else if (dtype == SY_DTYPE_BF16)
            x[i] = sy_bf16_to_f32(((const uint16_t *)in)[i]);
        else
            x[i] = sy_fp8e4m3_to_f32(((const uint8_t *)in)[i]) * scale;
    }
}

static void read_back(const decode_case *c, int64_t total)
{
    size_t n = (size_t)total * c->H * c->D, es = sy_dtype_size(c->dtype);
    void *k_out = malloc(n * es + 1), *v_out = malloc(n * es + 1);
    sy_kv_gather_args g = {0};
    g.struct_size = sizeof g;
    g.geom = c->pool.geom;
    int64_t nt[1] = {total}, shape[3] = {total, c->H, c->D};
    g.slots = sy_tensor_contiguous(c->seqs.slots, SY_DTYPE_I32, 1, nt);
    g.k_cache = c->pool.k;
    g.v_cache = c->pool.v;
    g.k_out = sy_tensor_contiguous(k_out, c->dtype, 3, shape);
    g.v_out = sy_tensor_contiguous(v_out, c->dtype, 3, shape);
    sy_error err = {{0}};
    ck_assert_msg(sy_check_kv_gather(&g, c->seqs.slots, NULL, &err) == SY_OK, "%s", err.msg);
    const sy_kv_layout_ops *ops = kv_plugin_for(c->layout)->ops;
    ck_assert_msg(ops->gather(NULL, NULL, &g, &err) == SY_OK, "%s", err.msg);
    decode_values(k_out, n, c->dtype, c->pool.k_scale, c->k_deq);
    decode_values(v_out, n, c->dtype, c->pool.v_scale, c->v_deq);
    free(k_out);
    free(v_out);
}

void decode_case_make(decode_case *c, uint64_t seed, uint32_t layout, int32_t dtype, uint32_t P, uint32_t H,
                      uint32_t group, uint32_t D, uint32_t B, const int32_t *lens)
{
    sy_rng rng = {seed};
    memset(c, 0, sizeof *c);
    c->layout = layout;
    c->dtype = dtype;
    c->q_dtype = SY_DTYPE_F32;
    c->P = P;
    c->H = H;
    c->group = group;
    c->Hq = H * group;
    c->D = D;
    c->B = B;
    c->scale = 0.3f;
    uint32_t pages = sy_test_pages_for(lens, B, P) + 2;
    sy_error err = {{0}};
    ck_assert_msg(sy_test_pool_create(kv_plugin_for(layout), dtype, pages, P, H, D, &c->pool, &err) == SY_OK, "%s",
                  err.msg);
    float k_scale = (float)sy_rng_range(&rng, 0.006, 0.02), v_scale = (float)sy_rng_range(&rng, 0.006, 0.02);
    if (dtype == SY_DTYPE_FP8_E4M3) {
        c->pool.k_scale = k_scale;
        c->pool.v_scale = v_scale;
    }
    sy_test_seqs_layout(lens, B, P, pages, &rng, &c->seqs);
    int64_t total = c->seqs.first_token[B];
    size_t n = (size_t)(total ? total : 1) * H * D;
    c->k = malloc(n * sizeof(float));
    c->v = malloc(n * sizeof(float));
    c->k_deq = malloc(n * sizeof(float));
    c->v_deq = malloc(n * sizeof(float));
    sy_fill_uniform_f32(&rng, c->k, (size_t)total * H * D, -2.0f, 2.0f);
    /* Values with a common offset, as real V rows have: the output is then not a near-zero mean of
     * random vectors, whose relative error would be the full per-element fp8 error (~4%). */
    sy_fill_uniform_f32(&rng, c->v, (size_t)total * H * D, -1.0f, 3.0f);
    c->q = malloc((size_t)B * c->Hq * D * sizeof(float));
    sy_fill_uniform_f32(&rng, c->q, (size_t)B * c->Hq * D, -1.5f, 1.5f);
    ck_assert_msg(sy_test_pool_write(kv_plugin_for(layout), &c->pool, c->k, c->v, c->seqs.slots, total, &err) == SY_OK,
                  "%s", err.msg);
    read_back(c, total);
}

void decode_case_free(decode_case *c)
{
    free(c->k);
    free(c->v);
    free(c->k_deq);
    free(c->v_deq);
    free(c->q);
    free(c->sinks);
    sy_test_seqs_free(&c->seqs);
    sy_test_pool_free(&c->pool);
    memset(c, 0, sizeof *c);
}

sy_attn_decode_args decode_case_args(const decode_case *c, void *q_in, void *out, int32_t num_splits)
{
    sy_attn_decode_args a = {0};
    a.struct_size = sizeof a;
    a.geom = c->pool.geom;
    int64_t qs[3] = {c->B, c->Hq, c->D}, bt[2] = {c->B, c->seqs.max_blocks}, nb[1] = {c->B}, nh[1] = {c->Hq};
    a.q = sy_tensor_contiguous(q_in, c->q_dtype, 3, qs);
    a.out = sy_tensor_contiguous(out, c->q_dtype, 3, qs);
    a.k_cache = c->pool.k;
    a.v_cache = c->pool.v;
    a.block_tables = sy_tensor_contiguous(c->seqs.block_tables, SY_DTYPE_I32, 2, bt);
    a.context_lens = sy_tensor_contiguous(c->seqs.lens, SY_DTYPE_I32, 1, nb);
    if (c->sinks)
        a.sinks = sy_tensor_contiguous(c->sinks, SY_DTYPE_F32, 1, nh);
    a.scale = c->scale;
    a.window = c->window;
    a.k_scale = c->pool.k_scale;
    a.v_scale = c->pool.v_scale;
    a.num_splits = num_splits;
    return a;
}

void decode_case_run(const decode_case *c, int32_t num_splits, float *out_f32)
{
    size_t n = (size_t)c->B * c->Hq * c->D, es = sy_dtype_size(c->q_dtype);
    void *q_in = malloc(n * es), *out = malloc(n * es);
    encode_values(c->q, n, c->q_dtype, 1.0f, q_in);
    sy_poison_bytes(out, n * es);
    sy_attn_decode_args a = decode_case_args(c, q_in, out, num_splits);
    sy_error err = {{0}};
    ck_assert_msg(sy_check_decode_args(&a, c->seqs.block_tables, c->seqs.lens, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(sy_check_decode_caps(attn_plugin(), &a, &err) == SY_OK, "%s", err.msg);
    const sy_attention_ops *ops = attn_plugin()->ops;
    ck_assert_msg(ops->decode_paged(attn_ctx(), NULL, &a, &err) == SY_OK, "%s", err.msg);
    decode_values(out, n, c->q_dtype, 1.0f, out_f32);
    free(q_in);
    free(out);
}

void decode_case_reference(const decode_case *c, int stored, double *ref)
{
    const float *k = stored ? c->k_deq : c->k, *v = stored ? c->v_deq : c->v;
    for (uint32_t b = 0; b < c->B; b++) {
        int64_t len = c->seqs.lens[b], lo = c->window > 0 && len > c->window ? len - c->window : 0;
        size_t row0 = (size_t)c->seqs.first_token[b] * c->H * c->D;
        for (uint32_t hq = 0; hq < c->Hq; hq++) {
            size_t head = (size_t)(hq / c->group) * c->D;
            sy_ref_attend(c->q + ((size_t)b * c->Hq + hq) * c->D, c->D, k + row0 + head, v + row0 + head,
                          (size_t)c->H * c->D, lo, len, c->scale, c->sinks ? &c->sinks[hq] : NULL,
                          ref + ((size_t)b * c->Hq + hq) * c->D, NULL);
        }
    }
}

double attn_storage_tolerance(int32_t kv_dtype)
{
    return kv_dtype == SY_DTYPE_F32 ? 1e-5 : kv_dtype == SY_DTYPE_BF16 ? 4e-3 : 5e-2;
}
