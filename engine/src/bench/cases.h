/* The case table of `switchyard bench`: every case's name, op, layout and its shapes at full size
 * (gpt-oss-120b: 64 q heads, 8 KV heads, head dim 64, page 64, hidden and intermediate 2880, 128
 * experts top 4) and at --quick size (the same case small enough for a 2-core CPU in seconds).
 * Names carry the full shape and stay the same under --quick; the report's `shape` says what ran. */
#ifndef SY_BENCH_CASES_H
#define SY_BENCH_CASES_H

#include <stddef.h>
#include <stdint.h>

/* Tokens per KV page of every paged case, nhd and vectorized_5d alike. */
enum { SY_BENCH_PAGE_SIZE = 64 };

typedef enum sy_bench_op {
    SY_BENCH_OP_COPY = 1,
    SY_BENCH_OP_DECODE,
    SY_BENCH_OP_PREFILL,
    SY_BENCH_OP_EXTEND_GATHER,  /* the gather of an extend call alone */
    SY_BENCH_OP_EXTEND_PREFILL, /* its prefill_linear alone */
    SY_BENCH_OP_EXTEND_TOTAL,   /* gather then prefill_linear, timed as one call */
    SY_BENCH_OP_EXTEND_PAGED,   /* the same call as prefill_paged over the pool, nothing gathered */
    SY_BENCH_OP_KV_WRITE,
    SY_BENCH_OP_ROPE,
    SY_BENCH_OP_ROPE_KV_WRITE,
    SY_BENCH_OP_NORM,
    SY_BENCH_OP_MOE,
    SY_BENCH_OP_LINEAR
} sy_bench_op;

typedef struct sy_bench_shape {
    uint32_t batch;   /* decode and prefill sequences (extend: 1) */
    uint32_t context; /* decode: keys a sequence holds; prefill: its tokens; extend: the cached prefix */
    uint32_t chunk;   /* extend: new tokens after the prefix */
    uint32_t tokens;  /* kv_write, rope, moe tokens; norm rows */
    int32_t window;   /* 0 = full context */
    int32_t kv_dtype; /* pool dtype of decode; bf16 elsewhere */
    uint32_t cols, pad_multiple;                  /* norm: N and the multiple N is padded to */
    uint32_t experts, top_k, hidden, intermediate; /* moe */
    uint32_t in_features, out_features;           /* linear: K and N (tokens is M) */
    int32_t act_dtype, out_dtype;                  /* linear: x's dtype and y's */
    uint32_t bias;                                 /* linear: 1 with an f32 bias */
    uint32_t y_parts;                              /* linear: y as q, k and v's three column parts (8 : 1 : 1;
                                                      the unfused forward's split_y call); 0: one y */
    uint64_t bytes;   /* copy: size of one copy */
} sy_bench_shape;

typedef struct sy_bench_case {
    char name[96];
    int32_t op;      /* sy_bench_op */
    uint32_t layout; /* KV layout id (decode, extend, kv_write, rope_kv_write), MoE gate_up layout, or 0 */
    sy_bench_shape full, quick;
} sy_bench_case;

/* The table, in run order (the copy first: every ratio needs its bandwidth). */
size_t sy_bench_cases(const sy_bench_case **cases);

/* "attention.decode_paged", "kv_layout.gather", ... (the JSON `op`). */
const char *sy_bench_op_name(int32_t op);
/* The case's layout as its name spells it ("nhd", "vectorized_5d", "interleave", "separated"), or NULL. */
const char *sy_bench_layout_tag(const sy_bench_case *c);

#endif
