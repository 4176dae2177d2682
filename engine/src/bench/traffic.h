/* Byte and FLOP accounting of the benchmarked ops. Bytes are compulsory traffic: every input the op
 * must read counted once, every output it must write counted once; nothing for re-reads, padding
 * or scratch, which are the implementation's own cost. FLOPs count 2 per multiply-add. The formula
 * of each op is written beside its function in traffic.c; bench/peers/torch_peers.py uses the same
 * ones for the PyTorch peers, so rates compare directly. */
#ifndef SY_BENCH_TRAFFIC_H
#define SY_BENCH_TRAFFIC_H

#include <stddef.h>
#include <stdint.h>

typedef struct sy_bench_traffic {
    uint64_t bytes;
    uint64_t flops;
} sy_bench_traffic;

typedef struct sy_bench_heads {
    uint32_t q_heads, kv_heads, head_dim;
} sy_bench_heads;

/* Keys one decode query attends to: the context, or its last `window` keys. */
uint32_t sy_bench_decode_keys(uint32_t context, int32_t window);
/* Pages a decode query reads: those holding its (windowed) keys. */
uint32_t sy_bench_decode_pages(uint32_t context, int32_t window, uint32_t page_size);
/* (query, key) pairs of one sequence of lq queries over lk keys (queries last, as after a prefix). */
uint64_t sy_bench_attention_pairs(uint32_t lq, uint32_t lk, int causal, int32_t window);

sy_bench_traffic sy_bench_decode_traffic(const sy_bench_heads *h, uint32_t batch, uint32_t context, int32_t window,
                                         uint32_t page_size, size_t kv_elem, size_t q_elem, int sinks);
sy_bench_traffic sy_bench_prefill_traffic(const sy_bench_heads *h, uint32_t batch, uint32_t lq, uint32_t lk,
                                          int causal, int32_t window, size_t kv_elem, size_t q_elem, int sinks);
sy_bench_traffic sy_bench_kv_gather_traffic(const sy_bench_heads *h, uint32_t tokens, size_t store_elem);
sy_bench_traffic sy_bench_kv_write_traffic(const sy_bench_heads *h, uint32_t tokens, size_t src_elem,
                                           size_t store_elem);
sy_bench_traffic sy_bench_rope_traffic(const sy_bench_heads *h, uint32_t tokens, size_t elem);
sy_bench_traffic sy_bench_rope_kv_write_traffic(const sy_bench_heads *h, uint32_t tokens, size_t elem,
                                                size_t store_elem);
sy_bench_traffic sy_bench_norm_traffic(uint32_t rows, uint32_t cols, uint32_t out_cols, size_t elem,
                                       size_t weight_elem);
/* Checkpoint-format MXFP4 bytes of one expert: w13 and w2 blocks, e8m0 scales and biases. */
uint64_t sy_bench_moe_expert_bytes(uint32_t hidden, uint32_t intermediate, size_t bias_elem);
sy_bench_traffic sy_bench_moe_traffic(uint32_t tokens, uint32_t top_k, uint32_t used_experts, uint32_t hidden,
                                      uint32_t x_cols, uint32_t intermediate, size_t act_elem, size_t bias_elem);
sy_bench_traffic sy_bench_linear_traffic(uint32_t rows, uint32_t in_features, uint32_t out_features, size_t x_elem,
                                         size_t w_elem, size_t bias_elem, size_t y_elem);
sy_bench_traffic sy_bench_copy_traffic(uint64_t bytes);

#endif
