/* Decode and prefill problems for the attention suites: random tokens written to a pool through a
 * kv_layout plugin (or held linear), queries, sinks, the calls through the engine's call-boundary
 * checks into attn_paged, and double-precision references over the original values and over the
 * values the pool holds. */
#ifndef SY_TEST_ATTN_CASE_H
#define SY_TEST_ATTN_CASE_H

#include <stdint.h>

#include "kv_pool.h"
#include "switchyard/plugin.h"
#include "sy_test.h"

/* The attn_paged plugin, initialized once with a counting host API. */
const sy_plugin_desc *attn_plugin(void);
void *attn_ctx(void);
const sy_test_host *attn_host(void);
const sy_plugin_desc *kv_plugin_for(uint32_t layout);

typedef struct decode_case {
    uint32_t layout;
    int32_t dtype;  /* store dtype */
    int32_t q_dtype;
    uint32_t P, H, group, Hq, D, B;
    sy_test_seqs seqs;
    sy_test_pool pool;
    float *k, *v;         /* original tokens, f32 [total][H][D] */
    float *k_deq, *v_deq; /* what the pool holds, read back by gather and dequantized */
    float *q;             /* [B][Hq][D], exactly representable in q_dtype */
    float *sinks;         /* [Hq], NULL for none */
    float scale;
    int32_t window;
} decode_case;

/* Random problem; the same seed gives the same tokens, tables and queries for any layout. */
void decode_case_make(decode_case *c, uint64_t seed, uint32_t layout, int32_t dtype, uint32_t P, uint32_t H,
                      uint32_t group, uint32_t D, uint32_t B, const int32_t *lens);
void decode_case_free(decode_case *c);

/* The args of decode_paged over the case, out [B][Hq][D] in q_dtype. */
sy_attn_decode_args decode_case_args(const decode_case *c, void *q_in, void *out, int32_t num_splits);

/* Runs decode_paged (checks included) into out_f32 [B][Hq][D]; out poisoned first. */
void decode_case_run(const decode_case *c, int32_t num_splits, float *out_f32);

/* Reference [B][Hq][D] over the original tokens (stored = 0) or the pool's values (stored = 1). */
void decode_case_reference(const decode_case *c, int stored, double *ref);

/* Relative L2 bounds of attention outputs, measured over 40 seeds of the decode and prefill suites
 * (largest seen in brackets) with about 2x to spare:
 * - against the original f32 tokens, for a KV pool of `kv_dtype`: the pool's rounding
 *   (bf16 [1.7e-3], fp8 e4m3 with its scale [3.0e-2]);
 * - bf16 queries and output: the output rounded to bf16 once, about 2^-8 / sqrt(12) of each value
 *   (against the stored values [1.7e-3], against the original tokens [2.3e-3]). */
double attn_storage_tolerance(int32_t kv_dtype);
#define ATTN_BF16_OUT_VS_STORED 3e-3
#define ATTN_BF16_OUT_VS_ORIGINAL 4e-3

/* Encodes f32 values to dtype (f32, bf16, fp8 with x / scale) and back (fp8 * scale). */
void encode_values(const float *x, size_t n, int32_t dtype, float scale, void *out);
void decode_values(const void *in, size_t n, int32_t dtype, float scale, float *x);

#endif
