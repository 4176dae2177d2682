/* The decoder forward through the composed plugins, the KV cache bookkeeping, and the workload
 * (chunked prefill, then greedy decode). All device work goes through the backend and the plugins;
 * the engine itself only moves index arrays and a few rows between host and device. */
#include "model/engine_impl.h"
#include "model/weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sy_numeric.h"
#include "sy_synth.h"
#include "util/strbuf.h"

/* ------------------------------------------------------------------------------------------ */

double sy_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static sy_status dalloc(sy_engine *e, size_t bytes, void **ptr, sy_error *err)
{
    sy_error inner = {{0}};
    if (e->be->alloc(e->bctx, bytes ? bytes : 1, ptr, &inner) != SY_OK)
        return sy_fail(err, SY_E_NOMEM, "cannot allocate %zu bytes on backend %s: %s", bytes, e->be->name, inner.msg);
    if (e->n_allocs == e->cap_allocs) {
        e->cap_allocs = e->cap_allocs ? e->cap_allocs * 2 : 64;
        e->allocs = sy_xrealloc(e->allocs, e->cap_allocs * sizeof *e->allocs);
    }
    e->allocs[e->n_allocs++] = (allocation){*ptr, bytes};
    e->device_bytes += bytes;
    return SY_OK;
}

static void dfree(sy_engine *e, void *ptr)
{
    for (size_t i = 0; i < e->n_allocs; i++)
        if (e->allocs[i].ptr == ptr) {
            e->device_bytes -= e->allocs[i].bytes;
            e->allocs[i] = e->allocs[--e->n_allocs];
            e->be->free(e->bctx, ptr);
            return;
        }
}

sy_status sy_eng_copy(sy_engine *e, void *dst, const void *src, size_t bytes, int32_t kind, sy_error *err)
{
    sy_error inner = {{0}};
    if (bytes == 0)
        return SY_OK;
    if (e->be->memcpy_async(e->bctx, e->stream, dst, src, bytes, kind, &inner) != SY_OK)
        return sy_fail(err, SY_E_BACKEND, "%s memcpy of %zu bytes failed: %s", e->be->name, bytes, inner.msg);
    if (kind == SY_MEMCPY_H2D) {
        e->transfers.h2d_copies++;
        e->transfers.h2d_bytes += bytes;
    } else if (kind == SY_MEMCPY_D2H) {
        e->transfers.d2h_copies++;
        e->transfers.d2h_bytes += bytes;
    }
    return SY_OK;
}

sy_status sy_eng_sync(sy_engine *e, sy_error *err)
{
    sy_error inner = {{0}};
    e->transfers.syncs++;
    if (e->be->stream_sync(e->bctx, e->stream, &inner) != SY_OK)
        return sy_fail(err, SY_E_BACKEND, "%s stream synchronize failed: %s", e->be->name, inner.msg);
    return SY_OK;
}

/* Host API given to plugins: their scratch comes from the engine's backend and is accounted. */
static sy_status host_workspace_alloc(void *host, size_t bytes, void **ptr, sy_error *err)
{
    return dalloc(host, bytes, ptr, err);
}

static void host_workspace_free(void *host, void *ptr)
{
    dfree(host, ptr);
}

static void host_log(void *host, int32_t level, const char *msg)
{
    (void)host;
    if (level <= SY_LOG_WARNING)
        fprintf(stderr, "switchyard: plugin %s: %s\n", level == SY_LOG_ERROR ? "error" : "warning", msg);
}

/* ------------------------------------------------------------------------------------------ */
/* tensors */

sy_tensor sy_t1(void *p, int32_t dt, int64_t a)
{
    int64_t s[1] = {a};
    return sy_tensor_contiguous(p, dt, 1, s);
}

sy_tensor sy_t2(void *p, int32_t dt, int64_t a, int64_t b)
{
    int64_t s[2] = {a, b};
    return sy_tensor_contiguous(p, dt, 2, s);
}

sy_tensor sy_t3(void *p, int32_t dt, int64_t a, int64_t b, int64_t c)
{
    int64_t s[3] = {a, b, c};
    return sy_tensor_contiguous(p, dt, 3, s);
}

sy_tensor sy_tnone(void)
{
    sy_tensor t;
    memset(&t, 0, sizeof t);
    return t;
}

/* A [rows, cols] view whose rows are `stride` elements apart. */
sy_tensor sy_t2_strided(void *p, int32_t dt, int64_t rows, int64_t cols, int64_t stride)
{
    sy_tensor t = sy_t2(p, dt, rows, cols);
    t.stride[0] = stride;
    return t;
}

/* ------------------------------------------------------------------------------------------ */
/* plugin calls, timed per slot */

/* Events for one more pending op; the pool grows in the first forwards and is reused after. */
static sy_status reserve_op_events(sy_engine *e, sy_error *err)
{
    if (e->n_pending_ops < e->cap_pending_ops)
        return SY_OK;
    uint32_t cap = e->cap_pending_ops ? 2 * e->cap_pending_ops : 64;
    e->op_events = sy_xrealloc(e->op_events, 2 * (size_t)cap * sizeof *e->op_events);
    e->op_kinds = sy_xrealloc(e->op_kinds, cap * sizeof *e->op_kinds);
    for (uint32_t i = 2 * e->cap_pending_ops; i < 2 * cap; i++) {
        sy_error inner = {{0}};
        if (e->be->event_create(e->bctx, &e->op_events[i], &inner) != SY_OK) {
            e->cap_pending_ops = i / 2;
            return sy_fail(err, SY_E_BACKEND, "backend %s: creating the timing events of report.per_op: %s",
                           e->be->name, inner.msg);
        }
    }
    e->cap_pending_ops = cap;
    return SY_OK;
}

sy_status sy_op_begin(sy_engine *e, sy_error *err)
{
    if (!e->plan.per_op_timing)
        return SY_OK;
    sy_status st = reserve_op_events(e, err);
    if (st == SY_OK)
        e->be->event_record(e->bctx, e->op_events[2 * e->n_pending_ops], e->stream, NULL);
    return st;
}

void sy_op_end(sy_engine *e, int32_t kind)
{
    e->op_calls[kind]++;
    if (!e->plan.per_op_timing)
        return;
    e->be->event_record(e->bctx, e->op_events[2 * e->n_pending_ops + 1], e->stream, NULL);
    e->op_kinds[e->n_pending_ops++] = kind;
}

void sy_op_times_collect(sy_engine *e)
{
    for (uint32_t i = 0; i < e->n_pending_ops; i++) {
        float ms = 0;
        if (e->be->event_elapsed_ms(e->bctx, e->op_events[2 * i], e->op_events[2 * i + 1], &ms, NULL) == SY_OK)
            e->op_ms[e->op_kinds[i]] += ms;
    }
    e->n_pending_ops = 0;
}

sy_status sy_op_failed(sy_engine *e, int32_t kind, const char *op, sy_status st, sy_error *err)
{
    sy_error inner = *err;
    return sy_fail(err, st, "%s plugin '%s' (%s): %s failed: %s", sy_kind_name(kind), e->pd[kind]->name,
                   e->plan.slot[kind]->file, op, inner.msg[0] ? inner.msg : sy_status_name(st));
}


sy_status sy_eng_linear_parts(sy_engine *e, sy_tensor x, void *w, void *b, uint32_t parts, const uint32_t *n,
                              void *const *y, int32_t y_dtype, sy_error *err)
{
    sy_linear_args a = {0};
    a.struct_size = sizeof a;
    uint32_t columns = 0;
    for (uint32_t i = 0; i < parts; i++)
        columns += n[i];
    a.x = x;
    a.w = sy_t2(w, SY_DTYPE_BF16, columns, x.shape[1]);
    a.b = b ? sy_t1(b, SY_DTYPE_F32, columns) : sy_tnone();
    if (parts == 1)
        a.y = sy_t2(y[0], y_dtype, x.shape[0], columns);
    else {
        a.y = sy_tnone();
        a.n_y_parts = parts;
        for (uint32_t i = 0; i < parts; i++)
            a.y_parts[i] = sy_t2(y[i], y_dtype, x.shape[0], n[i]);
    }
    CALL(e, SY_KIND_LINEAR, "linear", e->lin->linear(e->ctx[SY_KIND_LINEAR], e->stream, &a, err));
    return SY_OK;
}

sy_status sy_eng_linear(sy_engine *e, sy_tensor x, void *w, void *b, uint32_t n, void *y, int32_t y_dtype,
                        sy_error *err)
{
    return sy_eng_linear_parts(e, x, w, b, 1, &n, &y, y_dtype, err);
}

sy_status sy_eng_rmsnorm(sy_engine *e, uint32_t T, void *x, int32_t x_dtype, void *residual, void *w, uint32_t pad,
                         sy_error *err)
{
    uint32_t H = e->d.hidden;
    uint32_t nout = pad > 1 ? (H + pad - 1) / pad * pad : H;
    sy_norm_args a = {0};
    a.struct_size = sizeof a;
    a.pad_to_multiple = pad > 1 ? pad : 0;
    a.x = sy_t2(x, x_dtype, T, H);
    a.residual = residual ? sy_t2(residual, SY_DTYPE_F32, T, H) : sy_tnone();
    a.residual_out = residual ? sy_t2(residual, SY_DTYPE_F32, T, H) : sy_tnone();
    a.weight = sy_t1(w, SY_DTYPE_F32, H);
    a.out = sy_t2(e->normed, e->act, T, nout);
    a.eps = e->d.rms_eps;
    CALL(e, SY_KIND_NORM, "rmsnorm", e->norm->rmsnorm(e->ctx[SY_KIND_NORM], e->stream, &a, err));
    return SY_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* creation */

static sy_status init_plugins(sy_engine *e, sy_error *err)
{
    e->host.struct_size = sizeof e->host;
    e->host.abi_major = SY_ABI_MAJOR;
    e->host.abi_minor = SY_ABI_MINOR;
    e->host.host = e;
    e->host.backend = e->be;
    e->host.backend_ctx = e->bctx;
    e->host.log = host_log;
    e->host.workspace_alloc = host_workspace_alloc;
    e->host.workspace_free = host_workspace_free;
    for (int32_t k = 1; k < SY_KIND_COUNT_; k++) {
        const sy_registry_entry *entry = e->plan.slot[k];
        if (!entry || !entry->plugin)
            return sy_fail(err, SY_E_INVALID, "no %s plugin was composed", sy_kind_name(k));
        if (strcmp(entry->plugin->backend, e->be->name) != 0)
            return sy_fail(err, SY_E_INVALID, "%s plugin '%s' runs on backend '%s', the engine runs on '%s'",
                           sy_kind_name(k), entry->plugin->name, entry->plugin->backend, e->be->name);
        e->pd[k] = entry->plugin;
        sy_status st = sy_registry_init_plugin(entry, &e->host, &e->ctx[k], err);
        if (st != SY_OK)
            return st;
    }
    e->kv = e->pd[SY_KIND_KV_LAYOUT]->ops;
    e->attn = e->pd[SY_KIND_ATTENTION]->ops;
    e->moe = e->pd[SY_KIND_MOE]->ops;
    e->norm = e->pd[SY_KIND_NORM]->ops;
    e->rope = e->pd[SY_KIND_ROPE]->ops;
    e->lin = e->pd[SY_KIND_LINEAR]->ops;
    if (e->plan.fuse_rope_kv && !e->rope->rope_kv_write)
        return sy_fail(err, SY_E_INVALID, "rope plugin '%s' has no fused rope + KV write", e->pd[SY_KIND_ROPE]->name);
    return SY_OK;
}

static sy_status geometry(sy_engine *e, uint32_t pages, sy_kv_geometry *g, sy_error *err)
{
    memset(g, 0, sizeof *g);
    g->struct_size = sizeof *g;
    g->layout = e->plan.layout;
    g->store_dtype = e->plan.kv_dtype;
    g->num_pages = pages;
    g->page_size = e->plan.page_size;
    g->kv_heads = e->d.kv_heads;
    g->head_dim = e->d.head_dim;
    sy_status st = e->kv->geometry(g, err);
    if (st != SY_OK)
        return sy_op_failed(e, SY_KIND_KV_LAYOUT, "geometry", st, err);
    return SY_OK;
}

/* A piece of a checkpoint tensor to its place on the device; synchronous, so that the piece's host
 * memory can be released as soon as this returns. */
typedef struct device_sink {
    sy_engine *e;
    uint8_t *dst;
} device_sink;

static sy_status to_device(void *user, uint64_t offset, const void *data, size_t bytes, sy_error *err)
{
    device_sink *d = user;
    sy_status st = sy_eng_copy(d->e, d->dst + offset, data, bytes, SY_MEMCPY_H2D, err);
    return st == SY_OK ? sy_eng_sync(d->e, err) : st;
}

/* A checkpoint tensor into device memory at dst. bf16 and byte tensors keep their type: synthetic
 * weights are generated there when the backend can (a large model then never passes through host
 * memory); otherwise the tensor comes from the weight source piece by piece. The small tensors the
 * plugins take in f32 (biases, norm weights, sinks) are widened on the host. */
static sy_status place(sy_engine *e, sy_weights *w, uint32_t layer, uint32_t kind, int f32, void *dst, sy_error *err)
{
    uint64_t n = sy_ckpt_numel(&e->d, layer, kind);
    if (f32) {
        uint16_t *bf = sy_xcalloc(n, sizeof *bf);
        float *f = sy_xcalloc(n, sizeof *f);
        sy_status st = sy_weights_read_host(w, layer, kind, bf, err);
        for (uint64_t i = 0; i < n; i++)
            f[i] = sy_bf16_to_f32(bf[i]);
        if (st == SY_OK)
            st = sy_eng_copy(e, dst, f, n * sizeof(float), SY_MEMCPY_H2D, err);
        if (st == SY_OK)
            st = sy_eng_sync(e, err);
        free(bf);
        free(f);
        return st;
    }
    sy_synth_spec spec;
    if (sy_weights_synth_spec(w, layer, kind, &spec) && SY_HAS_MEMBER(e->be->struct_size, sy_backend_desc, synth_fill) &&
        e->be->synth_fill) {
        sy_error inner = {{0}};
        if (e->be->synth_fill(e->bctx, e->stream, dst, n, &spec, &inner) != SY_OK) {
            char name[128];
            return sy_fail(err, SY_E_BACKEND, "%s: generating %s on the device failed: %s", e->be->name,
                           sy_ckpt_name(layer, kind, name, sizeof name), inner.msg);
        }
        return SY_OK;
    }
    device_sink sink = {e, dst};
    return sy_weights_stream(w, layer, kind, to_device, &sink, err);
}

static size_t placed_bytes(const sy_engine *e, uint32_t layer, uint32_t kind, int f32)
{
    return f32 ? (size_t)sy_ckpt_numel(&e->d, layer, kind) * sizeof(float) : sy_weights_bytes(&e->d, layer, kind);
}

/* A checkpoint tensor in a device allocation of its own (place). */
static sy_status gen(sy_engine *e, sy_weights *w, uint32_t layer, uint32_t kind, int f32, void **dst, sy_error *err)
{
    sy_status st = dalloc(e, placed_bytes(e, layer, kind, f32), dst, err);
    return st == SY_OK ? place(e, w, layer, kind, f32, *dst, err) : st;
}

/* Tensors one after another in one allocation, as the rows of one matrix (or one vector): q, k and
 * v weights for their one linear, and their biases. dst[i] gets where tensor i starts. */
static sy_status gen_stacked(sy_engine *e, sy_weights *w, uint32_t layer, const uint32_t *kinds, size_t n, int f32,
                             void **dst[], sy_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += placed_bytes(e, layer, kinds[i], f32);
    void *base = NULL;
    sy_status st = dalloc(e, total, &base, err);
    for (size_t i = 0, at = 0; st == SY_OK && i < n; at += placed_bytes(e, layer, kinds[i], f32), i++) {
        *dst[i] = (uint8_t *)base + at;
        st = place(e, w, layer, kinds[i], f32, *dst[i], err);
    }
    return st;
}

static sy_status load_layer(sy_engine *e, sy_weights *wsrc, uint32_t l, sy_error *err)
{
    const sy_model_dims *d = &e->d;
    layer_weights *w = &e->layer[l];
    sy_status st = SY_OK;
    struct {
        void **dst;
        uint32_t kind;
        int f32;
    } dense[] = {
        {&w->q_w, SY_T_Q_W, 0},           {&w->k_w, SY_T_K_W, 0},          {&w->v_w, SY_T_V_W, 0},
        {&w->q_b, SY_T_Q_B, 1},           {&w->k_b, SY_T_K_B, 1},          {&w->v_b, SY_T_V_B, 1},
        {&w->o_w, SY_T_O_W, 0},           {&w->router_w, SY_T_ROUTER_W, 0}, {&w->o_b, SY_T_O_B, 1},
        {&w->router_b, SY_T_ROUTER_B, 1}, {&w->sinks, SY_T_SINKS, 1},      {&w->attn_norm, SY_T_ATTN_NORM, 1},
        {&w->mlp_norm, SY_T_MLP_NORM, 1},
    };
    size_t first = 0;
    if (e->plan.fuse_qkv || e->plan.qkv_split_y) {
        /* One [q + 2 kv, hidden] matrix and one bias vector: the forward's single q/k/v linear. */
        static const uint32_t weights[] = {SY_T_Q_W, SY_T_K_W, SY_T_V_W}, biases[] = {SY_T_Q_B, SY_T_K_B, SY_T_V_B};
        void **wdst[] = {&w->q_w, &w->k_w, &w->v_w}, **bdst[] = {&w->q_b, &w->k_b, &w->v_b};
        st = gen_stacked(e, wsrc, l, weights, 3, 0, wdst, err);
        if (st == SY_OK)
            st = gen_stacked(e, wsrc, l, biases, 3, 1, bdst, err);
        first = 6;
    }
    for (size_t i = first; st == SY_OK && i < sizeof dense / sizeof dense[0]; i++)
        st = gen(e, wsrc, l, dense[i].kind, dense[i].f32, dense[i].dst, err);
    /* Experts go through the MoE plugin's prepare, exactly like a loaded checkpoint. */
    void *w13b = NULL, *w13s = NULL, *w13bias = NULL, *w2b = NULL, *w2s = NULL, *w2bias = NULL;
    if (st == SY_OK)
        st = gen(e, wsrc, l, SY_T_W13_BLOCKS, 0, &w13b, err);
    if (st == SY_OK)
        st = gen(e, wsrc, l, SY_T_W13_SCALES, 0, &w13s, err);
    if (st == SY_OK)
        st = gen(e, wsrc, l, SY_T_W13_BIAS, 1, &w13bias, err);
    if (st == SY_OK)
        st = gen(e, wsrc, l, SY_T_W2_BLOCKS, 0, &w2b, err);
    if (st == SY_OK)
        st = gen(e, wsrc, l, SY_T_W2_SCALES, 0, &w2s, err);
    if (st == SY_OK)
        st = gen(e, wsrc, l, SY_T_W2_BIAS, 1, &w2bias, err);
    uint64_t prepared = 0;
    if (st == SY_OK && (st = e->moe->prepared_bytes(&e->moe_shape, &prepared, err)) != SY_OK)
        st = sy_op_failed(e, SY_KIND_MOE, "prepared_bytes", st, err);
    if (st == SY_OK)
        st = dalloc(e, prepared, &w->moe, err);
    if (st == SY_OK) {
        uint32_t E = d->experts, H = d->hidden, I = d->intermediate;
        sy_moe_prepare_args a = {0};
        a.struct_size = sizeof a;
        a.shape = e->moe_shape;
        int64_t s13b[4] = {E, 2 * I, H / 32, 16}, s13s[3] = {E, 2 * I, H / 32};
        int64_t s2b[4] = {E, H, I / 32, 16}, s2s[3] = {E, H, I / 32};
        a.w13_blocks = sy_tensor_contiguous(w13b, SY_DTYPE_U8, 4, s13b);
        a.w13_scales = sy_tensor_contiguous(w13s, SY_DTYPE_U8, 3, s13s);
        a.w13_bias = sy_t2(w13bias, SY_DTYPE_F32, E, 2 * I);
        a.w2_blocks = sy_tensor_contiguous(w2b, SY_DTYPE_U8, 4, s2b);
        a.w2_scales = sy_tensor_contiguous(w2s, SY_DTYPE_U8, 3, s2s);
        a.w2_bias = sy_t2(w2bias, SY_DTYPE_F32, E, H);
        a.prepared = w->moe;
        sy_status pst = e->moe->prepare(e->ctx[SY_KIND_MOE], e->stream, &a, err);
        if (pst != SY_OK)
            st = sy_op_failed(e, SY_KIND_MOE, "prepare", pst, err);
    }
    if (st == SY_OK)
        st = sy_eng_sync(e, err);
    dfree(e, w13b);
    dfree(e, w13s);
    dfree(e, w13bias);
    dfree(e, w2b);
    dfree(e, w2s);
    dfree(e, w2bias);
    return st;
}

uint32_t sy_plan_swa_pages(const sy_plan *p)
{
    uint32_t P = p->page_size, W = p->dims.sliding_window;
    if (!W || !P)
        return 0;
    if (p->swa_pool_tokens)
        return (p->swa_pool_tokens + P - 1) / P + 1;
    uint32_t pages_per_seq = (p->input_len + p->output_len + P - 1) / P;
    /* A chunk's queries see W - 1 earlier keys: that span plus the chunk, page-aligned. */
    uint32_t chunk = sy_plan_chunk(p);
    uint32_t span = W - 1 + (chunk > 1 ? chunk : 1);
    uint32_t need = (span + P - 1) / P + 1;
    if (need > pages_per_seq)
        need = pages_per_seq;
    return p->batch * need + 1;
}

static sy_status alloc_pools(sy_engine *e, sy_error *err)
{
    const sy_plan *p = &e->plan;
    uint32_t P = p->page_size, W = e->d.sliding_window;
    uint32_t seq_tokens = p->input_len + p->output_len;
    uint32_t pages_per_seq = (seq_tokens + P - 1) / P;
    e->full_pages = p->pool_tokens ? (p->pool_tokens + P - 1) / P + 1 : p->batch * pages_per_seq + 1;
    e->swa_pages = sy_plan_swa_pages(p);
    sy_status st = sy_kv_cache_init(&e->cache, P, W, p->batch, seq_tokens, e->full_pages, e->swa_pages ? e->swa_pages : 2,
                                    err);
    if (st != SY_OK)
        return st;
    if ((st = geometry(e, e->full_pages, &e->geom_full, err)) != SY_OK)
        return st;
    if (W && (st = geometry(e, e->swa_pages, &e->geom_swa, err)) != SY_OK)
        return st;
    size_t es = sy_dtype_size(p->kv_dtype);
    for (uint32_t l = 0; l < e->d.layers; l++) {
        const sy_kv_geometry *g = sy_layer_is_sliding(&e->d, l) ? &e->geom_swa : &e->geom_full;
        if ((st = dalloc(e, g->k_elems * es, &e->layer[l].k_cache, err)) != SY_OK ||
            (st = dalloc(e, g->v_elems * es, &e->layer[l].v_cache, err)) != SY_OK)
            return sy_fail(err, st, "KV pool for layer %u (%u pages of %u tokens): %s", l, g->num_pages, P, err->msg);
        /* Freed and padding slots must read as finite values. */
        e->be->memset_async(e->bctx, e->stream, e->layer[l].k_cache, 0, g->k_elems * es, NULL);
        e->be->memset_async(e->bctx, e->stream, e->layer[l].v_cache, 0, g->v_elems * es, NULL);
    }
    return SY_OK;
}

static sy_status alloc_activations(sy_engine *e, sy_error *err)
{
    const sy_model_dims *d = &e->d;
    const sy_plan *p = &e->plan;
    uint32_t chunk = sy_plan_chunk(p);
    /* A synthetic context runs decode steps only: one token per sequence, nothing gathered; nor
     * does a later chunk that reads its prefix from the pages (prefill_paged). */
    e->t_max = p->synthetic_context ? p->batch : p->batch * (chunk > 1 ? chunk : 1);
    e->max_kv_rows = p->synthetic_context || p->prefill_paged ? 0 : p->batch * (p->input_len + 1);
    uint32_t T = e->t_max, B = p->batch;
    uint32_t align = 256;
    uint32_t hpad = (d->hidden + align - 1) / align * align;
    uint32_t qd = d->q_heads * d->head_dim, kvd = d->kv_heads * d->head_dim, qkv_row = qd + 2 * kvd;
    size_t f = sizeof(float), i4 = sizeof(int32_t), es = sy_dtype_size(p->kv_dtype), a = sy_dtype_size(e->act);
    e->index_cap = sy_index_block_entries(e, &e->tables_len);
    struct {
        void **ptr;
        size_t bytes;
    } bufs[] = {
        {&e->residual, (size_t)T * d->hidden * f},  {&e->hidden, (size_t)T * d->hidden * a},
        {&e->normed, (size_t)T * hpad * a},         {&e->q, (size_t)T * qkv_row * a},
        {&e->attn_out, (size_t)T * qd * a},         {&e->router_logits, (size_t)T * d->experts * f},
        {&e->topk_w, (size_t)T * d->top_k * f},     {&e->topk_ids, (size_t)T * d->top_k * i4},
        {&e->logits, (size_t)B * d->vocab * f},     {&e->d_next, (size_t)B * i4},
        {&e->k_lin, (size_t)e->max_kv_rows * kvd * es},
        {&e->v_lin, (size_t)e->max_kv_rows * kvd * es},
        {&e->d_index, e->index_cap * i4},
        {&e->d_slot_map, (size_t)(e->cache.slot_map ? e->full_pages * p->page_size : 1) * i4},
    };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        sy_status st = dalloc(e, bufs[i].bytes, bufs[i].ptr, err);
        if (st != SY_OK)
            return st;
    }
    /* q, k and v share each token's row (linear.fuse_qkv: one linear writes all three), or sit in
     * three packed arrays of one allocation. */
    e->q_row = p->fuse_qkv ? qkv_row : qd;
    e->kv_row = p->fuse_qkv ? qkv_row : kvd;
    e->k = (char *)e->q + (p->fuse_qkv ? qd : (size_t)T * qd) * a;
    e->v = (char *)e->k + (p->fuse_qkv ? kvd : (size_t)T * kvd) * a;
    e->h_index = sy_xcalloc(e->index_cap, i4);
    e->h_rows = sy_xcalloc((size_t)T * d->hidden, f);
    e->h_rows2 = sy_xcalloc((size_t)T * d->hidden, f);
    e->h_logits = sy_xcalloc((size_t)B * d->vocab, f);
    e->h_next = sy_xcalloc(B, sizeof *e->h_next);
    e->tokens = sy_xcalloc((size_t)B * (p->output_len ? p->output_len : 1), sizeof *e->tokens);
    e->step_ms = sy_xcalloc(p->output_len ? p->output_len : 1, sizeof *e->step_ms);
    e->h_start = sy_xcalloc(B, sizeof *e->h_start);
    e->h_count = sy_xcalloc(B, sizeof *e->h_count);
    if (p->synthetic_context) {
        size_t rows = (size_t)p->input_len * kvd, slots = (size_t)B * p->input_len;
        sy_status st;
        if ((st = dalloc(e, rows * sizeof(uint16_t), &e->ctx_stage_k, err)) != SY_OK ||
            (st = dalloc(e, rows * sizeof(uint16_t), &e->ctx_stage_v, err)) != SY_OK ||
            (st = dalloc(e, slots * i4, &e->d_ctx_slots, err)) != SY_OK)
            return st;
        e->h_ctx_slots = sy_xcalloc(slots, i4);
        if (!SY_HAS_MEMBER(e->be->struct_size, sy_backend_desc, synth_fill) || !e->be->synth_fill)
            e->h_ctx_stage = sy_xcalloc(rows, sizeof(uint16_t));
    }
    return SY_OK;
}

static sy_status create(const sy_plan *plan, sy_weights *wsrc, sy_engine **out, sy_error *err)
{
    sy_status st;
    if (!plan->backend || !plan->backend->backend)
        return sy_fail(err, SY_E_INVALID, "no backend was selected");
    if (plan->batch == 0 || plan->input_len == 0)
        return sy_fail(err, SY_E_INVALID, "workload.batch and workload.input_len must be positive");
    sy_engine *e = sy_xcalloc(1, sizeof *e);
    e->plan = *plan;
    e->d = plan->dims;
    if (e->d.attn_scale == 0)
        e->d.attn_scale = 1.0f / sqrtf((float)e->d.head_dim);
    e->be = plan->backend->backend;
    e->act = plan->act_dtype ? plan->act_dtype : SY_DTYPE_F32;
    sy_error inner = {{0}};
    if (e->be->init(plan->device, &e->bctx, &inner) != SY_OK) {
        const char *name = e->be->name;
        free(e);
        return sy_fail(err, SY_E_BACKEND, "backend %s (%s): init of device %d failed: %s", name,
                       plan->backend->file, plan->device, inner.msg);
    }
    *out = e;
    if (e->be->stream_create(e->bctx, &e->stream, &inner) != SY_OK)
        return sy_fail(err, SY_E_BACKEND, "backend %s: %s", e->be->name, inner.msg);
    if ((st = init_plugins(e, err)) != SY_OK)
        return st;
    e->moe_shape = (sy_moe_shape){.struct_size = sizeof(sy_moe_shape),
                                  .num_experts = e->d.experts,
                                  .hidden = e->d.hidden,
                                  .intermediate = e->d.intermediate,
                                  .top_k = e->d.top_k,
                                  .swiglu_alpha = e->d.swiglu_alpha,
                                  .swiglu_limit = e->d.swiglu_limit};
    e->hp = plan->pad_multiple > 1 ? (e->d.hidden + plan->pad_multiple - 1) / plan->pad_multiple * plan->pad_multiple
                                   : e->d.hidden;
    e->layer = sy_xcalloc(e->d.layers, sizeof *e->layer);
    if ((st = alloc_pools(e, err)) != SY_OK || (st = alloc_activations(e, err)) != SY_OK)
        return st;
    for (uint32_t l = 0; l < e->d.layers; l++)
        if ((st = load_layer(e, wsrc, l, err)) != SY_OK)
            return st;
    if ((st = gen(e, wsrc, SY_GLOBAL_LAYER, SY_T_FINAL_NORM, 1, &e->final_norm, err)) != SY_OK ||
        (st = gen(e, wsrc, SY_GLOBAL_LAYER, SY_T_LM_HEAD, 0, &e->lm_head, err)) != SY_OK ||
        (st = sy_eng_sync(e, err)))
        return st;
    /* Embedding rows are looked up on the host and copied per step. */
    uint64_t n_embed = sy_ckpt_numel(&e->d, SY_GLOBAL_LAYER, SY_T_EMBED);
    e->embed_host = sy_xcalloc(n_embed, sizeof *e->embed_host);
    return sy_weights_read_host(wsrc, SY_GLOBAL_LAYER, SY_T_EMBED, e->embed_host, err);
}

sy_status sy_engine_create(const sy_plan *plan, sy_engine **out, sy_error *err)
{
    *out = NULL;
    sy_weights *wsrc = NULL;
    /* The checkpoint is checked whole before anything is allocated on the device. */
    sy_status st = sy_model_dims_check(&plan->dims, err);
    if (st == SY_OK)
        st = sy_weights_open(&plan->dims, plan->weight_seed, plan->checkpoint, &wsrc, err);
    if (st == SY_OK)
        st = create(plan, wsrc, out, err);
    sy_weights_close(wsrc);
    return st;
}

void sy_engine_destroy(sy_engine *e)
{
    if (!e)
        return;
    for (int32_t k = SY_KIND_COUNT_ - 1; k >= 1; k--)
        if (e->pd[k] && e->pd[k]->fini && e->ctx[k])
            e->pd[k]->fini(e->ctx[k]);
    if (e->bctx || e->be) {
        for (size_t i = 0; i < e->n_allocs; i++)
            e->be->free(e->bctx, e->allocs[i].ptr);
        for (uint32_t i = 0; i < 2 * e->cap_pending_ops; i++)
            e->be->event_destroy(e->bctx, e->op_events[i]);
        if (e->stream)
            e->be->stream_destroy(e->bctx, e->stream);
        e->be->fini(e->bctx);
    }
    sy_kv_cache_free(&e->cache);
    void *host[] = {e->allocs,     e->layer,   e->embed_host, e->h_index,     e->h_rows,      e->h_rows2,
                    e->h_logits,   e->tokens,  e->step_ms,    e->h_start,     e->h_count,     e->op_events,
                    e->op_kinds,   e->h_ctx_stage, e->h_ctx_slots, e->h_next};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
    free(e);
}

void sy_engine_set_checkpoint(sy_engine *e, sy_checkpoint_fn fn, void *user)
{
    e->checkpoint = fn;
    e->checkpoint_user = user;
}

void sy_engine_set_progress(sy_engine *e, void (*fn)(void *, uint32_t, uint32_t, double), void *user)
{
    e->progress = fn;
    e->progress_user = user;
}

const sy_plan *sy_engine_plan(const sy_engine *e)
{
    return &e->plan;
}

uint32_t sy_workload_token(uint64_t token_seed, uint32_t vocab, uint32_t seq, uint32_t pos)
{
    return (uint32_t)(sy_synth_bits(token_seed, 0xFFFFFFFFu, ((uint64_t)seq << 32) | pos) % vocab);
}
