/* attn_paged on the GPU: decode_paged over nhd and vectorized_5d pools and prefill_linear over ragged
 * contiguous K/V, the kernels of plugins/common/attn_decode_gpu.cuh and attn_prefill_gpu.cuh.
 *
 * Context: the device's multiprocessor count (for the split-K choice) and the split-K partials,
 * device memory from the host API's workspace_alloc, reserved at init for a common decode shape and
 * grown when a call needs more. Ops only enqueue on the given stream.
 *
 * num_splits = 0: enough splits that the grid has at least SPLIT_BLOCKS_PER_SM blocks per
 * multiprocessor, with at least SPLIT_MIN_KEYS keys per split (of the longest context the block
 * tables can hold, or of the window), at most SY_ATTN_MAX_SPLITS. */
#include <math.h>
#include <stdlib.h>

#include "attn_decode_gpu.cuh"
#include "attn_prefill_gpu.cuh"
#include "gpu_runtime.h"

extern "C" {
#include "sy_op_check.h"
}

enum {
    SPLIT_BLOCKS_PER_SM = 8, /* resident decode blocks a multiprocessor is meant to have */
    SPLIT_MIN_KEYS = 256,    /* fewer keys per split than this cost more in the combine than they save */
    /* A warp that streams fewer keys than this spends most of its time filling its ring. */
    WARP_SPLIT_MIN_KEYS = 512,
    /* The warp-streaming kernel's wave for the split choice: the warps of 2 blocks an SM, which
     * keep the memory busy once they all stream (128 x 8192 at the DRAM ceiling). The fp8 shape
     * holds 4 blocks an SM, but filling them with splits was slower (413 against 287 us at
     * 128 x 8192: the partials and the combine cost more than the extra warps bring). */
    WARP_SLOTS_PER_SM = 8,
    /* Reserved at init: 128 sequences x 64 q heads x 4 splits of head dim 64. */
    INIT_PARTIAL_FLOATS = 128 * 64 * 4 * (64 + 2)
};

typedef struct attn_paged_gpu_ctx {
    const sy_host_api *host;
    uint32_t multiprocessors;
    bool prefill_warpgroup; /* the prefill's warpgroup products run on this device */
    void *partials;
    size_t partial_bytes;
} attn_paged_gpu_ctx;

static sy_status reserve_partials(attn_paged_gpu_ctx *ctx, size_t bytes, sy_error *err)
{
    if (bytes <= ctx->partial_bytes)
        return SY_OK;
    if (ctx->partials)
        ctx->host->workspace_free(ctx->host->host, ctx->partials);
    ctx->partials = NULL;
    ctx->partial_bytes = 0;
    sy_status st = ctx->host->workspace_alloc(ctx->host->host, bytes, &ctx->partials, err);
    if (st != SY_OK)
        return st;
    ctx->partial_bytes = bytes;
    return SY_OK;
}

extern "C" sy_status sy_attn_paged_gpu_init(const sy_host_api *host, void **out, sy_error *err)
{
    static const char op[] = "attn_paged (" SY_GPU_BACKEND_NAME ") init";
    if (!host || host->struct_size < sizeof(sy_host_api) || !host->workspace_alloc || !host->workspace_free ||
        !host->backend || !host->backend->device_info)
        return sy_op_fail(err, SY_E_INVALID, "%s: the host API must provide workspace_alloc, workspace_free and the "
                          "backend's device_info", op);
    sy_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    sy_status st = host->backend->device_info(host->backend_ctx, &info, err);
    if (st != SY_OK)
        return st;
    attn_paged_gpu_ctx *ctx = (attn_paged_gpu_ctx *)calloc(1, sizeof *ctx);
    if (!ctx)
        return sy_op_fail(err, SY_E_NOMEM, "%s: out of host memory for the context", op);
    ctx->host = host;
    ctx->multiprocessors = info.multiprocessors ? info.multiprocessors : 1;
#if defined(SY_VENDOR_CUDA) || defined(SY_EMU_TENSOR_CORES)
    ctx->prefill_warpgroup = sy_wgmma_runs_on(info.cc_major, info.cc_minor);
#endif
#if SY_ATTN_DECODE_WARP_KERNEL
    if ((st = sy_attn_gpu_decode_warp_opt_in(err)) != SY_OK) {
        free(ctx);
        return st;
    }
#endif
    if ((st = reserve_partials(ctx, (size_t)INIT_PARTIAL_FLOATS * sizeof(float), err)) != SY_OK) {
        free(ctx);
        return st;
    }
    *out = ctx;
    return SY_OK;
}

extern "C" void sy_attn_paged_gpu_fini(void *vctx)
{
    attn_paged_gpu_ctx *ctx = (attn_paged_gpu_ctx *)vctx;
    if (!ctx)
        return;
    if (ctx->partials)
        ctx->host->workspace_free(ctx->host->host, ctx->partials);
    free(ctx);
}

static bool io_dtype(int32_t dt)
{
    return dt == SY_DTYPE_F32 || dt == SY_DTYPE_BF16;
}

static bool kv_dtype(int32_t dt)
{
    return io_dtype(dt) || dt == SY_DTYPE_FP8_E4M3;
}

/* Head dim bucket of the kernels' tiles: 64 or 128. */
static int dim_bucket(uint32_t D)
{
    return D <= 64 ? 64 : 128;
}

/* q [rows, Hq, D] and out like q, f32 or bf16, unit stride along D, Hq a positive multiple of kv_heads. */
static sy_status check_q_out(const char *op, const sy_tensor *q, const sy_tensor *out, uint32_t kv_heads, uint32_t D,
                             sy_error *err)
{
    if (!io_dtype(q->dtype) || out->dtype != q->dtype)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: q and out must both be f32 or bf16 (got %s and %s)", op,
                          sy_op_dtype_name(q->dtype), sy_op_dtype_name(out->dtype));
    if (q->ndim != 3 || q->shape[2] != D || q->shape[1] <= 0 || kv_heads == 0 || q->shape[1] % kv_heads != 0)
        return sy_op_fail(err, SY_E_INVALID, "%s: q must be [rows, Hq, %u] with Hq a multiple of %u KV heads", op, D,
                          kv_heads);
    if (out->ndim != 3 || out->shape[0] != q->shape[0] || out->shape[1] != q->shape[1] || out->shape[2] != D)
        return sy_op_fail(err, SY_E_INVALID, "%s: out must have q's shape [%lld, %lld, %u]", op, (long long)q->shape[0],
                          (long long)q->shape[1], D);
    if (D > 1 && (q->stride[2] != 1 || out->stride[2] != 1))
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: q and out need unit stride along head_dim", op);
    if (D == 0 || D > SY_ATTN_GPU_HEAD_DIM_MAX)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: head_dim %u is outside 1..%d", op, D, SY_ATTN_GPU_HEAD_DIM_MAX);
    return SY_OK;
}

static sy_status check_sinks(const char *op, const sy_tensor *sinks, int64_t hq, sy_error *err)
{
    if (sinks->data && (sinks->dtype != SY_DTYPE_F32 || sinks->ndim != 1 || sinks->shape[0] != hq))
        return sy_op_fail(err, SY_E_INVALID, "%s: sinks must be f32 [%lld] (got %s, ndim %d)", op, (long long)hq,
                          sy_op_dtype_name(sinks->dtype), sinks->ndim);
    return SY_OK;
}

/* What the ops over the pool check first: its layout, store dtype and geometry (dims: its
 * addressing), q / out / sinks against it, the page tables and context lengths of B sequences. */
static sy_status check_pool_call(const char *op, const sy_kv_geometry *g, const sy_tensor *q, const sy_tensor *out,
                                 const sy_tensor *sinks, const sy_tensor *block_tables, const sy_tensor *context_lens,
                                 int64_t B, const void *k_cache, const void *v_cache, sy_kv_dims *dims, sy_error *err)
{
    *dims = sy_kv_dims_of(g);
    dims->vec = sy_kv_vec_for(g->layout, g->store_dtype);
    if ((g->layout != SY_LAYOUT_NHD && g->layout != SY_LAYOUT_VECTORIZED_5D) || !kv_dtype(g->store_dtype))
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: layout %u with store %s is not read here (nhd or vectorized_5d; "
                          "f32, bf16, fp8_e4m3)", op, g->layout, sy_op_dtype_name(g->store_dtype));
    if (g->page_size == 0 || g->kv_heads == 0 || dims->vec == 0 || g->page_size % dims->vec || g->head_dim % dims->vec)
        return sy_op_fail(err, SY_E_INVALID, "%s: page_size %u, kv_heads %u, head_dim %u: positive, P and D multiples "
                          "of X = %u", op, g->page_size, g->kv_heads, g->head_dim, dims->vec);
    sy_status st = check_q_out(op, q, out, g->kv_heads, g->head_dim, err);
    if (st != SY_OK || (st = check_sinks(op, sinks, q->shape[1], err)) != SY_OK)
        return st;
    if (block_tables->dtype != SY_DTYPE_I32 || block_tables->ndim != 2 || block_tables->shape[0] != B ||
        (block_tables->shape[1] > 1 && block_tables->stride[1] != 1) || context_lens->dtype != SY_DTYPE_I32 ||
        context_lens->ndim != 1)
        return sy_op_fail(err, SY_E_INVALID, "%s: block_tables must be int32 [%lld, max_blocks] (unit column stride) and "
                          "context_lens int32 [%lld]", op, (long long)B, (long long)B);
    if (!k_cache || !v_cache)
        return sy_op_fail(err, SY_E_INVALID, "%s: k_cache or v_cache is NULL", op);
    return SY_OK;
}

/* The keys a split may have to cover: the longest context the block tables can hold, or the window
 * (and the tile it may start inside). */
static int64_t longest_keys(const sy_attn_decode_args *a)
{
    const int64_t keys = a->block_tables.shape[1] * (int64_t)a->geom.page_size;
    return a->window > 0 && keys > (int64_t)a->window + SY_ATTN_DECODE_TILE ? (int64_t)a->window + SY_ATTN_DECODE_TILE
                                                                            : keys;
}

/* The most splits worth taking: min_keys keys each, of longest_keys, at most SY_ATTN_MAX_SPLITS. */
static uint64_t max_splits(const sy_attn_decode_args *a, int64_t min_keys)
{
    const uint64_t by_keys = (uint64_t)((longest_keys(a) + min_keys - 1) / min_keys);
    return by_keys < 1 ? 1 : by_keys > (uint64_t)SY_ATTN_MAX_SPLITS ? (uint64_t)SY_ATTN_MAX_SPLITS : by_keys;
}

/* The block-wide kernel: enough splits for SPLIT_BLOCKS_PER_SM blocks a multiprocessor. */
static uint32_t choose_splits(const attn_paged_gpu_ctx *ctx, const sy_attn_decode_args *a, uint64_t blocks)
{
    if (a->num_splits > 0)
        return (uint32_t)a->num_splits;
    const uint64_t want = (uint64_t)ctx->multiprocessors * SPLIT_BLOCKS_PER_SM, most = max_splits(a, SPLIT_MIN_KEYS);
    const uint64_t splits = blocks ? (want + blocks - 1) / blocks : 1;
    return (uint32_t)(splits > most ? most : splits < 1 ? 1 : splits);
}

/* The warp-streaming kernel: the split count that minimizes the time of the longest item, counted
 * in tiles, waves(items x splits) x the tiles of a split, with WARP_SLOTS_PER_SM warps a
 * multiprocessor as a wave; the fewest splits among near ties (5%), since each split costs a
 * partial and its combine. Splits span whole tiles (sy_attn_gpu_split_range), so s splits of T
 * tiles take ceil(T / s) each and only ceil(T / that) of them get any: that many are launched, so
 * that no warp streams nothing. H200, 1 x 32768: 57 splits of 9 tiles (61 launched) -> 64 of 8. */
[[maybe_unused]] static uint32_t choose_warp_splits(const attn_paged_gpu_ctx *ctx, const sy_attn_decode_args *a,
                                                    uint64_t items)
{
    if (a->num_splits > 0)
        return (uint32_t)a->num_splits;
    const uint64_t slots = (uint64_t)ctx->multiprocessors * WARP_SLOTS_PER_SM, most = max_splits(a, WARP_SPLIT_MIN_KEYS);
    const uint64_t tiles = (uint64_t)(longest_keys(a) + SY_ATTN_DECODE_TILE - 1) / SY_ATTN_DECODE_TILE;
    uint64_t best = 1, best_cost = 0;
    for (uint64_t s = 1; s <= most; s++) {
        const uint64_t span = tiles ? (tiles + s - 1) / s : 1, used = tiles ? (tiles + span - 1) / span : 1;
        const uint64_t cost = (items * used + slots - 1) / slots * span;
        if (s == 1 || (double)cost < (double)best_cost * 0.95) {
            best = used;
            best_cost = cost;
        }
    }
    return (uint32_t)best;
}

[[maybe_unused]] static sy_status decode_paged(void *vctx, sy_stream stream, const sy_attn_decode_args *a, sy_error *err)
{
    static const char op[] = "attn_paged.decode_paged (" SY_GPU_BACKEND_NAME ")";
    attn_paged_gpu_ctx *ctx = (attn_paged_gpu_ctx *)vctx;
    if (!ctx)
        return sy_op_fail(err, SY_E_INVALID, "%s: the plugin was not initialized (init gives the context)", op);
    if (!a || a->struct_size < sizeof(sy_attn_decode_args))
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_attn_decode_args (%zu)", op,
                          a ? a->struct_size : 0u, sizeof(sy_attn_decode_args));
    const sy_kv_geometry *g = &a->geom;
    const int64_t B = a->context_lens.shape[0];
    sy_kv_dims dims;
    sy_status st = check_pool_call(op, g, &a->q, &a->out, &a->sinks, &a->block_tables, &a->context_lens, B, a->k_cache,
                                   a->v_cache, &dims, err);
    if (st != SY_OK)
        return st;
    const uint32_t D = g->head_dim, H = g->kv_heads;
    if (a->q.shape[0] != B)
        return sy_op_fail(err, SY_E_INVALID, "%s: q has %lld rows for %lld sequences (one query each)", op,
                          (long long)a->q.shape[0], (long long)B);
    if (a->num_splits < 0 || a->num_splits > SY_ATTN_MAX_SPLITS)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: num_splits %d is outside 0..%d", op, a->num_splits,
                          SY_ATTN_MAX_SPLITS);
    if (B == 0)
        return SY_OK;
    const uint32_t group = (uint32_t)(a->q.shape[1] / H);
    const uint32_t chunks = (group + SY_ATTN_DECODE_HEADS - 1) / SY_ATTN_DECODE_HEADS;
    if (B > 65535 || (uint64_t)H * chunks > 65535)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %lld sequences x %u KV heads x %u head chunks exceed the grid "
                          "(65535 each)", op, (long long)B, H, chunks);
    sy_attn_gpu_decode p;
    memset(&p, 0, sizeof p);
    p.c = sy_attn_gpu_call_of(&a->q, &a->out, &a->sinks, a->scale, a->window, g->store_dtype, a->k_scale, a->v_scale);
    p.k_cache = a->k_cache;
    p.v_cache = a->v_cache;
    p.dims = dims;
    p.block_tables = (const int32_t *)a->block_tables.data;
    p.bt_s0 = a->block_tables.stride[0];
    p.context_lens = (const int32_t *)a->context_lens.data;
    p.cl_s0 = a->context_lens.stride[0];
    p.batch = (uint32_t)B;
    p.group = group;
    p.head_chunks = chunks;
    p.row_aligned = g->layout == SY_LAYOUT_VECTORIZED_5D || (D * sy_dtype_size(g->store_dtype)) % 16 == 0;
    p.tiles_in_page = g->page_size % SY_ATTN_DECODE_TILE == 0;
    const uint64_t rows = (uint64_t)B * H * chunks;
#if SY_ATTN_DECODE_WARP_KERNEL
    const bool warp_kernel = sy_attn_gpu_decode_warp_takes(p, g->store_dtype);
    const uint32_t splits = warp_kernel ? choose_warp_splits(ctx, a, rows) : choose_splits(ctx, a, rows);
#else
    const uint32_t splits = choose_splits(ctx, a, rows);
#endif
    p.num_splits = splits;
    if (splits > 1) {
        const size_t parts = (size_t)B * a->q.shape[1] * splits;
        if ((st = reserve_partials(ctx, parts * (D + 2) * sizeof(float), err)) != SY_OK)
            return st;
        p.part_ml = (float *)ctx->partials;
        p.part_acc = p.part_ml + 2 * parts;
    }
    const gpuStream_t s = sy_gpu_stream(stream);
    const dim3 grid(splits, H * chunks, (unsigned)B);
#if SY_ATTN_DECODE_WARP_KERNEL
    if (warp_kernel) {
        /* The kernel numbers its items in 32 bits (64-bit divisions were a third of a short call). */
        const uint64_t items = (uint64_t)rows * splits, warp_blocks = (items + SY_ATTN_DECODE_WARPS - 1) / SY_ATTN_DECODE_WARPS;
        if (items > 0xFFFFFFFFu)
            return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %llu decode items (sequences x KV heads x head chunks x splits) exceed 2^32",
                              op, (unsigned long long)items);
        if ((st = sy_attn_gpu_decode_warp_launch(p, g->store_dtype, dim3((unsigned)warp_blocks), s)) != SY_OK)
            return st;
        SY_GPU_CHECK_LAUNCH(err, "sy_attn_gpu_decode_warp_kernel");
    } else
#endif
    {
        sy_attn_gpu_decode_launch(p, g->store_dtype, dim_bucket(D), grid, s);
        SY_GPU_CHECK_LAUNCH(err, "sy_attn_gpu_decode_kernel");
    }
    if (splits > 1) {
        SY_GPU_LAUNCH_CHAINED(dim3((unsigned)a->q.shape[1], (unsigned)B), SY_ATTN_GPU_THREADS, 0, s,
                              sy_attn_gpu_combine_kernel)(p);
        SY_GPU_CHECK_LAUNCH(err, "sy_attn_gpu_combine_kernel");
    }
    return SY_OK;
}

#if defined(SY_VENDOR_CUDA) || defined(SY_EMU_TENSOR_CORES)
/* The keys a query row sees on average, as if the B sequences had equal lengths: causal rows (the
 * prefix convention) see the prefix and half their own chunk, a window caps them. */
static double mean_keys(int64_t B, int64_t Tq, int64_t Tk, int32_t causal, int32_t window)
{
    const double lq = (double)Tq / (double)B, lk = (double)Tk / (double)B;
    double keys = causal || window > 0 ? lk - lq + (lq + 1.0) / 2.0 : lk;
    if (window > 0 && keys > window)
        keys = window;
    return keys;
}
#endif

/* Grid and launch of a prefill whose K/V source p already names (linear rows or pages): the
 * tensor-core kernel where it takes the call, else the CUDA-core one. key_rows: the keys of the
 * whole batch of linear rows, for the row-length estimate (0 for pages). */
static sy_status prefill_launch(const attn_paged_gpu_ctx *ctx, const char *op, sy_attn_gpu_prefill &p,
                                const sy_tensor &q, const sy_tensor &out, const sy_tensor &sinks, float scale,
                                int32_t causal, int32_t window, int32_t kv_dt, float k_scale, float v_scale,
                                const sy_tensor &cu_seqlens_q, int64_t key_rows, sy_stream stream, sy_error *err)
{
    if (cu_seqlens_q.dtype != SY_DTYPE_I32 || cu_seqlens_q.ndim != 1 || cu_seqlens_q.shape[0] < 1 ||
        (cu_seqlens_q.shape[0] > 1 && cu_seqlens_q.stride[0] != 1))
        return sy_op_fail(err, SY_E_INVALID, "%s: cu_seqlens_q must be a contiguous int32 [B + 1]", op);
    const int64_t B = cu_seqlens_q.shape[0] - 1, Tq = q.shape[0];
    if (B == 0 || Tq == 0)
        return SY_OK;
    const uint32_t D = p.head_dim, H = p.kv_heads;
    const int dmax = dim_bucket(D);
    const size_t io_es = sy_dtype_size(q.dtype);
    p.q_vec = sy_gpu_aligned16(q.data, io_es, q.stride[0], q.stride[1]);
    p.out_pairs = sy_gpu_aligned_to(2 * io_es, out.data, io_es, out.stride[0], out.stride[1]);
#if defined(SY_VENDOR_CUDA) || defined(SY_EMU_TENSOR_CORES)
    const bool mma = sy_attn_gpu_prefill_mma_takes(p, kv_dt);
    /* pages never take LONG (sy_attn_gpu_prefill_mma_launch_as) */
    const bool long_rows = !p.block_tables &&
                           sy_attn_gpu_prefill_mma_long(dmax, q.dtype, mean_keys(B, Tq, key_rows, causal, window),
                                                        (double)Tq * (double)q.shape[1], ctx->multiprocessors,
                                                        ctx->prefill_warpgroup);
    const uint32_t rows = mma ? sy_attn_gpu_prefill_mma_rows(dmax, q.dtype, long_rows) : sy_attn_gpu_prefill_rows(dmax);
#else
    (void)ctx, (void)key_rows;
    const uint32_t rows = sy_attn_gpu_prefill_rows(dmax);
#endif
    const uint32_t group = (uint32_t)(q.shape[1] / H);
    const uint32_t gc = group < rows ? group : rows, bq = rows / gc, chunks = (group + gc - 1) / gc;
    const int64_t tiles = (Tq + bq - 1) / bq + B;
    if (tiles > 0x7FFFFFFF || (uint64_t)H * chunks > 65535 || B > 0x7FFFFFFF)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: %lld query tiles x %u KV heads x %u head chunks exceed the grid",
                          op, (long long)tiles, H, chunks);
    p.c = sy_attn_gpu_call_of(&q, &out, &sinks, scale, window, kv_dt, k_scale, v_scale);
    p.cu_q = (const int32_t *)cu_seqlens_q.data;
    p.batch = (uint32_t)B;
    p.causal = causal;
    p.group = group;
    p.heads_per_block = sy_fast_div_of(gc);
    p.queries_per_block = sy_fast_div_of(bq);
    p.head_chunks = sy_fast_div_of(chunks);
    const dim3 grid((unsigned)tiles, H * chunks);
#if defined(SY_VENDOR_CUDA) || defined(SY_EMU_TENSOR_CORES)
    if (mma) {
        sy_status st = sy_attn_gpu_prefill_mma_launch(p, dmax, long_rows, ctx->prefill_warpgroup, grid,
                                                      sy_gpu_stream(stream), err);
        if (st != SY_OK)
            return st;
        SY_GPU_CHECK_LAUNCH(err, "sy_attn_gpu_prefill_mma_kernel");
        return SY_OK;
    }
#endif
    sy_attn_gpu_prefill_launch(p, kv_dt, dmax, grid, sy_gpu_stream(stream));
    SY_GPU_CHECK_LAUNCH(err, "sy_attn_gpu_prefill_kernel");
    return SY_OK;
}

[[maybe_unused]] static sy_status prefill_linear(void *vctx, sy_stream stream, const sy_attn_prefill_args *a, sy_error *err)
{
    static const char op[] = "attn_paged.prefill_linear (" SY_GPU_BACKEND_NAME ")";
    const attn_paged_gpu_ctx *ctx = (const attn_paged_gpu_ctx *)vctx;
    if (!vctx)
        return sy_op_fail(err, SY_E_INVALID, "%s: the plugin was not initialized (init gives the context)", op);
    if (!a || a->struct_size < sizeof(sy_attn_prefill_args))
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_attn_prefill_args (%zu)", op,
                          a ? a->struct_size : 0u, sizeof(sy_attn_prefill_args));
    if (!kv_dtype(a->k.dtype) || a->v.dtype != a->k.dtype || a->k.ndim != 3 || a->v.ndim != 3)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: k and v must be [T, Hkv, D] f32, bf16 or fp8_e4m3 (got %s, %s)",
                          op, sy_op_dtype_name(a->k.dtype), sy_op_dtype_name(a->v.dtype));
    const uint32_t D = (uint32_t)a->k.shape[2], H = (uint32_t)a->k.shape[1];
    sy_status st = check_q_out(op, &a->q, &a->out, H, D, err);
    if (st != SY_OK || (st = check_sinks(op, &a->sinks, a->q.shape[1], err)) != SY_OK)
        return st;
    if (a->v.shape[0] != a->k.shape[0] || a->v.shape[1] != H || a->v.shape[2] != D ||
        (D > 1 && (a->k.stride[2] != 1 || a->v.stride[2] != 1)))
        return sy_op_fail(err, SY_E_INVALID, "%s: v must have k's shape and both unit stride along head_dim", op);
    if (a->cu_seqlens_k.dtype != SY_DTYPE_I32 || a->cu_seqlens_k.ndim != 1 ||
        a->cu_seqlens_k.shape[0] != a->cu_seqlens_q.shape[0] ||
        (a->cu_seqlens_k.shape[0] > 1 && a->cu_seqlens_k.stride[0] != 1))
        return sy_op_fail(err, SY_E_INVALID, "%s: cu_seqlens_q and cu_seqlens_k must be contiguous int32 [B + 1] of one "
                          "length", op);
    const size_t es = sy_dtype_size(a->k.dtype);
    sy_attn_gpu_prefill p;
    memset(&p, 0, sizeof p);
    p.k_aligned = sy_gpu_aligned16(a->k.data, es, a->k.stride[0], a->k.stride[1]) && (D * es) % 16 == 0;
    p.v_aligned = sy_gpu_aligned16(a->v.data, es, a->v.stride[0], a->v.stride[1]) && (D * es) % 16 == 0;
    p.k = a->k.data;
    p.v = a->v.data;
    p.k_s0 = a->k.stride[0];
    p.k_s1 = a->k.stride[1];
    p.v_s0 = a->v.stride[0];
    p.v_s1 = a->v.stride[1];
    p.cu_k = (const int32_t *)a->cu_seqlens_k.data;
    p.k_rows = a->k.shape[0];
    p.kv_heads = H;
    p.head_dim = D;
    return prefill_launch(ctx, op, p, a->q, a->out, a->sinks, a->scale, a->causal, a->window, a->k.dtype, a->k_scale,
                          a->v_scale, a->cu_seqlens_q, a->k.shape[0], stream, err);
}

[[maybe_unused]] static sy_status prefill_paged(void *vctx, sy_stream stream, const sy_attn_prefill_paged_args *a,
                                                sy_error *err)
{
    static const char op[] = "attn_paged.prefill_paged (" SY_GPU_BACKEND_NAME ")";
    const attn_paged_gpu_ctx *ctx = (const attn_paged_gpu_ctx *)vctx;
    if (!vctx)
        return sy_op_fail(err, SY_E_INVALID, "%s: the plugin was not initialized (init gives the context)", op);
    if (!a || a->struct_size < sizeof(sy_attn_prefill_paged_args))
        return sy_op_fail(err, SY_E_INVALID, "%s: args struct_size %u is smaller than sy_attn_prefill_paged_args (%zu)",
                          op, a ? a->struct_size : 0u, sizeof(sy_attn_prefill_paged_args));
    const sy_kv_geometry *g = &a->geom;
    const int64_t B = a->cu_seqlens_q.shape[0] - 1;
    sy_kv_dims dims;
    sy_status st = check_pool_call(op, g, &a->q, &a->out, &a->sinks, &a->block_tables, &a->context_lens, B, a->k_cache,
                                   a->v_cache, &dims, err);
    if (st != SY_OK)
        return st;
    if (a->context_lens.shape[0] != B || (B > 1 && a->context_lens.stride[0] != 1))
        return sy_op_fail(err, SY_E_INVALID, "%s: context_lens must be a contiguous int32 [%lld], one a sequence of "
                          "cu_seqlens_q", op, (long long)B);
    if (g->page_size >= SY_FAST_DIV_NUMERATOR_LIMIT)
        return sy_op_fail(err, SY_E_UNSUPPORTED, "%s: page_size %u is too large", op, g->page_size);
    const uint32_t D = g->head_dim, H = g->kv_heads;
    const size_t es = sy_dtype_size(g->store_dtype);
    sy_attn_gpu_prefill p;
    memset(&p, 0, sizeof p);
    /* 16-byte pieces: vectorized_5d's vectors always, nhd's where a token's head is whole pieces */
    const bool pieces = g->layout == SY_LAYOUT_VECTORIZED_5D || (D * es) % 16 == 0;
    p.k_aligned = pieces && ((uintptr_t)a->k_cache % 16) == 0;
    p.v_aligned = pieces && ((uintptr_t)a->v_cache % 16) == 0;
    p.k = a->k_cache;
    p.v = a->v_cache;
    p.block_tables = (const int32_t *)a->block_tables.data;
    p.bt_s0 = a->block_tables.stride[0];
    p.context_lens = (const int32_t *)a->context_lens.data;
    p.dims = dims;
    p.page_div = sy_fast_div_of(g->page_size);
    p.k_rows = (int64_t)g->num_pages * g->page_size; /* the pool's slots: nhd's rows for TMA */
    p.kv_heads = H;
    p.head_dim = D;
    /* no key rows for the launch: only LONG's choice reads them, which pages never take */
    return prefill_launch(ctx, op, p, a->q, a->out, a->sinks, a->scale, a->causal, a->window, g->store_dtype,
                          a->k_scale, a->v_scale, a->cu_seqlens_q, 0, stream, err);
}

#if defined(SY_EMU_TENSOR_CORES)
/* For tests/gpu's emulated checks, which run the prefill cases that take the warpgroup products
 * again without them, as devices other than sm_90 run them. */
extern "C" void sy_attn_paged_gpu_emu_prefill_warpgroup(void *vctx, int on)
{
    ((attn_paged_gpu_ctx *)vctx)->prefill_warpgroup = on != 0;
}
#endif

SY_GPU_HOST_TABLE(extern "C" const sy_attention_ops sy_attn_paged_gpu_ops = {
                      sizeof(sy_attention_ops), 0, decode_paged, prefill_linear, prefill_paged});
