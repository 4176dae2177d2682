#include "bench/traffic.h"

enum { INDEX_BYTES = 4, F32_BYTES = 4, MXFP4_BLOCK = 32, MXFP4_BLOCK_BYTES = 16 };

uint32_t sy_bench_decode_keys(uint32_t context, int32_t window)
{
    return window > 0 && (uint32_t)window < context ? (uint32_t)window : context;
}

uint32_t sy_bench_decode_pages(uint32_t context, int32_t window, uint32_t page_size)
{
    if (context == 0 || page_size == 0)
        return 0;
    uint32_t first = (context - sy_bench_decode_keys(context, window)) / page_size;
    return (context - 1) / page_size - first + 1;
}

/* Query i sits at position p = lk - lq + i; it sees keys 0 .. p when causal (all lk otherwise),
 * and of those only the last `window` when a window is set. */
uint64_t sy_bench_attention_pairs(uint32_t lq, uint32_t lk, int causal, int32_t window)
{
    uint64_t pairs = 0;
    for (uint32_t i = 0; i < lq; i++) {
        uint64_t visible = causal ? (uint64_t)(lk - lq + i) + 1 : lk;
        if (window > 0 && visible > (uint64_t)window)
            visible = (uint64_t)window;
        pairs += visible;
    }
    return pairs;
}

/* decode_paged, B sequences of S = keys read (the context or its window):
 *   bytes = 2 B S Hkv D e_kv              K and V of every key read
 *         + 2 B Hq D e_q                  q read, out written
 *         + B pages 4 + B 4               block-table entries of the pages read, context lengths
 *         + Hq 4                          sinks (f32)
 *   flops = 4 B Hq S D                    q.k and p.v: D multiply-adds each per (head, key) */
sy_bench_traffic sy_bench_decode_traffic(const sy_bench_heads *h, uint32_t batch, uint32_t context, int32_t window,
                                         uint32_t page_size, size_t kv_elem, size_t q_elem, int sinks)
{
    const uint64_t B = batch, S = sy_bench_decode_keys(context, window), D = h->head_dim;
    sy_bench_traffic t;
    t.bytes = 2 * B * S * h->kv_heads * D * kv_elem + 2 * B * h->q_heads * D * q_elem +
              B * sy_bench_decode_pages(context, window, page_size) * INDEX_BYTES + B * INDEX_BYTES +
              (sinks ? (uint64_t)h->q_heads * F32_BYTES : 0);
    t.flops = 4 * B * h->q_heads * S * D;
    return t;
}

/* prefill_linear, B sequences of Lq queries over Lk keys:
 *   bytes = 2 B Lq Hq D e_q               q read, out written
 *         + 2 B Lk Hkv D e_kv             K and V read
 *         + 2 (B + 1) 4 + Hq 4            cu_seqlens_q and _k, sinks (f32)
 *   flops = 4 Hq D B pairs                pairs = visible (query, key) pairs of one sequence: causal
 *                                         halves the square, a window keeps W keys a query */
sy_bench_traffic sy_bench_prefill_traffic(const sy_bench_heads *h, uint32_t batch, uint32_t lq, uint32_t lk,
                                          int causal, int32_t window, size_t kv_elem, size_t q_elem, int sinks)
{
    const uint64_t B = batch, D = h->head_dim;
    sy_bench_traffic t;
    t.bytes = 2 * B * lq * h->q_heads * D * q_elem + 2 * B * lk * h->kv_heads * D * kv_elem +
              2 * (B + 1) * INDEX_BYTES + (sinks ? (uint64_t)h->q_heads * F32_BYTES : 0);
    t.flops = 4 * (uint64_t)h->q_heads * D * B * sy_bench_attention_pairs(lq, lk, causal, window);
    return t;
}

/* kv_layout.gather of T slots:
 *   bytes = 2 T Hkv D e_store (pool read) + 2 T Hkv D e_store (linear K/V written) + T 4 (slots) */
sy_bench_traffic sy_bench_kv_gather_traffic(const sy_bench_heads *h, uint32_t tokens, size_t store_elem)
{
    const uint64_t kv = (uint64_t)tokens * h->kv_heads * h->head_dim;
    sy_bench_traffic t = {4 * kv * store_elem + (uint64_t)tokens * INDEX_BYTES, 0};
    return t;
}

/* kv_layout.write of T tokens:
 *   bytes = 2 T Hkv D e_src (K, V read) + 2 T Hkv D e_store (pool written) + T 4 (slots) */
sy_bench_traffic sy_bench_kv_write_traffic(const sy_bench_heads *h, uint32_t tokens, size_t src_elem,
                                           size_t store_elem)
{
    const uint64_t kv = (uint64_t)tokens * h->kv_heads * h->head_dim;
    sy_bench_traffic t = {2 * kv * src_elem + 2 * kv * store_elem + (uint64_t)tokens * INDEX_BYTES, 0};
    return t;
}

/* rope of T tokens, q and k rotated in place:
 *   bytes = 2 T (Hq + Hkv) D e            q and k read and written back
 *         + T 4                           positions
 *   flops = 3 T (Hq + Hkv) D              x1 cos - x2 sin: one multiply and one multiply-add an
 *                                         element (the angles, a function of position and
 *                                         frequency only, are not counted) */
sy_bench_traffic sy_bench_rope_traffic(const sy_bench_heads *h, uint32_t tokens, size_t elem)
{
    const uint64_t elems = (uint64_t)tokens * (h->q_heads + h->kv_heads) * h->head_dim;
    sy_bench_traffic t = {2 * elems * elem + (uint64_t)tokens * INDEX_BYTES, 3 * elems};
    return t;
}

/* rope_kv_write of T tokens: rope as above, then the rotated k and v into the pool:
 *   bytes = rope bytes + T Hkv D e (v read) + 2 T Hkv D e_store (pool written) + T 4 (slots)
 *   flops = rope flops */
sy_bench_traffic sy_bench_rope_kv_write_traffic(const sy_bench_heads *h, uint32_t tokens, size_t elem,
                                                size_t store_elem)
{
    const uint64_t kv = (uint64_t)tokens * h->kv_heads * h->head_dim;
    sy_bench_traffic t = sy_bench_rope_traffic(h, tokens, elem);
    t.bytes += kv * elem + 2 * kv * store_elem + (uint64_t)tokens * INDEX_BYTES;
    return t;
}

/* add + rmsnorm + pad of M rows of N columns to Nout:
 *   bytes = 2 M N e (x, residual read) + N e_w (weight) + M Nout e (out written)
 *         + M N e (residual_out written)
 *   flops = 5 M N                         the add, the square-accumulate (a multiply-add), the
 *                                         two scalings; memory-bound, counted for completeness */
sy_bench_traffic sy_bench_norm_traffic(uint32_t rows, uint32_t cols, uint32_t out_cols, size_t elem,
                                       size_t weight_elem)
{
    const uint64_t M = rows, N = cols;
    sy_bench_traffic t = {3 * M * N * elem + N * weight_elem + M * out_cols * elem, 5 * M * N};
    return t;
}

/* y [M, N] = x [M, K] W [N, K]^T + b [N]: each operand once (bias_elem 0 without a bias).
 *   bytes = N K e_w + M K e_x + N e_b + M N e_y,  FLOPs = 2 M N K */
sy_bench_traffic sy_bench_linear_traffic(uint32_t rows, uint32_t in_features, uint32_t out_features, size_t x_elem,
                                         size_t w_elem, size_t bias_elem, size_t y_elem)
{
    const uint64_t M = rows, K = in_features, N = out_features;
    sy_bench_traffic t = {N * K * w_elem + M * K * x_elem + N * bias_elem + M * N * y_elem, 2 * M * N * K};
    return t;
}

/* One expert in the checkpoint's MXFP4 form (the padding of a plugin's tile layout is not
 * compulsory): w13 [2I, H] and w2 [H, I] as 16-byte blocks of 32 values plus one e8m0 scale byte
 * each, biases of 2I + H elements:
 *   bytes = (2 I H + H I) (16 + 1) / 32 + (2 I + H) e_bias */
uint64_t sy_bench_moe_expert_bytes(uint32_t hidden, uint32_t intermediate, size_t bias_elem)
{
    const uint64_t H = hidden, I = intermediate, weights = 2 * I * H + H * I;
    return weights / MXFP4_BLOCK * (MXFP4_BLOCK_BYTES + 1) + (2 * I + H) * bias_elem;
}

/* moe.forward of T tokens, top k, over the experts selected at least once (U of them):
 *   bytes = U expert_bytes                every selected expert's weights read once
 *         + T Hx e (x read, Hx = the columns passed: H or H padded) + T H e (out written)
 *         + 2 T k 4                       topk_ids and topk_weights
 *   flops = 2 T k (2 I H + H I)           gate_up and down products of every (token, expert) pair */
sy_bench_traffic sy_bench_moe_traffic(uint32_t tokens, uint32_t top_k, uint32_t used_experts, uint32_t hidden,
                                      uint32_t x_cols, uint32_t intermediate, size_t act_elem, size_t bias_elem)
{
    const uint64_t T = tokens, pairs = T * top_k, H = hidden, I = intermediate;
    sy_bench_traffic t;
    t.bytes = used_experts * sy_bench_moe_expert_bytes(hidden, intermediate, bias_elem) + T * x_cols * act_elem +
              T * H * act_elem + 2 * pairs * INDEX_BYTES;
    t.flops = 2 * pairs * (2 * I * H + H * I);
    return t;
}

/* A device-to-device copy reads and writes every byte: bytes = 2 size. */
sy_bench_traffic sy_bench_copy_traffic(uint64_t bytes)
{
    sy_bench_traffic t = {2 * bytes, 0};
    return t;
}
