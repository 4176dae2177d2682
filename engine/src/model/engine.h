/* The engine: a gpt-oss decoder built from the composed plugins on one backend, with its KV cache,
 * run as chunked prefill then greedy decode. */
#ifndef SY_ENGINE_H
#define SY_ENGINE_H

#include <stdint.h>

#include "model/kv_cache.h"
#include "model/model.h"
#include "switchyard/switchyard.h"

/* Time by slot, plus the engine's own work between plugin calls. */
enum { SY_OPSLOT_ENGINE = 0 }; /* index 0; kinds 1..SY_KIND_COUNT_-1 are the plugin slots */

/* Everything the config and the composition decided: the engine takes no other input. */
#define SY_PLAN_PATH_MAX 4096

typedef struct sy_plan {
    sy_model_dims dims;
    uint64_t weight_seed;
    char checkpoint[SY_PLAN_PATH_MAX]; /* model.weights folder; "" = synthetic weights of weight_seed */
    const sy_registry_entry *backend;
    int32_t device;
    const sy_registry_entry *slot[SY_KIND_COUNT_]; /* indexed by sy_kind */
    uint32_t layout;          /* sy_kv_layout_id of slot[SY_KIND_KV_LAYOUT] */
    int32_t kv_dtype;
    uint32_t page_size;
    float k_scale, v_scale;
    int fuse_rope_kv;         /* 1: rope.rope_kv_write; 0: rope then kv_layout.write */
    uint32_t pad_multiple;    /* > 1: post-attention norm padded to this multiple for the MoE */
    int fuse_qkv;             /* 1: one linear for q, k and v over concatenated weights, its rows' slices read
                                 downstream (forward.c) */
    int qkv_split_y;          /* 1 (unfused): that one linear writes q, k and v to arrays of their own */
    int prefill_paged;        /* 1: a later prefill chunk reads its prefix with attention.prefill_paged;
                                 0: kv_layout.gather to contiguous rows, then prefill_linear */
    int32_t act_dtype;        /* activations between ops (model.dtype): f32 or bf16; 0 = f32 */
    int32_t attn_num_splits;  /* 0: the plugin chooses */
    uint32_t pool_tokens;     /* full-attention pool capacity; 0 = exactly what the workload needs */
    uint32_t swa_pool_tokens; /* sliding-window pool capacity; 0 = the window plus one chunk per sequence */
    /* workload */
    uint32_t batch, input_len, output_len, prefill_chunk;
    uint32_t warmup, repeat;
    uint64_t token_seed;
    int synthetic_context;    /* 1: seeded K/V in the pools instead of a prefill (model/context.h) */
    int per_op_timing;
} sy_plan;

typedef struct sy_engine sy_engine;

/* Called after each layer and for the logits with the tensor's host copy (f32, rows x cols).
 * layer == dims.layers means the logits. Used by A/B to compare numerics at every checkpoint. */
typedef void (*sy_checkpoint_fn)(void *user, uint32_t step, uint32_t layer, const float *data, uint32_t rows,
                                 uint32_t cols);

/* What the engine moved between host and device and how often it waited for the device. */
typedef struct sy_transfer_counts {
    uint64_t h2d_copies, h2d_bytes;
    uint64_t d2h_copies, d2h_bytes;
    uint64_t syncs; /* stream and event synchronizations */
} sy_transfer_counts;

typedef struct sy_run_metrics {
    /* Prefill of the whole batch through the first generated token. NaN (not measured) for a
     * synthetic context, which runs no prefill; so is prefill_tok_per_s. */
    double ttft_ms;
    double tpot_median_ms, tpot_p90_ms;
    double prefill_tok_per_s, decode_tok_per_s;
    double total_ms;
    double op_ms[SY_KIND_COUNT_]; /* summed over the measured run; [0] = engine's own time */
    uint32_t op_calls[SY_KIND_COUNT_];
    uint32_t peak_full_pages, full_pages;
    uint32_t peak_swa_pages, swa_pages;
    uint64_t pool_bytes;
    uint64_t checksum;           /* FNV-1a over the generated token ids of every sequence, in order */
    uint32_t *tokens;            /* batch x output_len generated ids (owned by the engine) */
    uint32_t n_steps;
    double *step_ms;             /* decode step times of the last repetition (owned by the engine) */
    sy_transfer_counts decode_transfers; /* summed over the measured decode steps */
    uint32_t decode_steps_measured;      /* steps those counts cover */
} sy_run_metrics;

sy_status sy_engine_create(const sy_plan *plan, sy_engine **out, sy_error *err);
void sy_engine_destroy(sy_engine *e);
void sy_engine_set_checkpoint(sy_engine *e, sy_checkpoint_fn fn, void *user);
/* Tokens per prefill forward: prefill_chunk, or the whole prompt when it is 0 or larger. */
uint32_t sy_plan_chunk(const sy_plan *p);
/* Pages of the sliding-window pool, padding page included (0 without sliding layers): from
 * kv_cache.swa_pool_tokens, else the window plus one prefill chunk per sequence. */
uint32_t sy_plan_swa_pages(const sy_plan *p);
/* Progress callback: called after each forward of a repetition with (done, total) forwards. */
void sy_engine_set_progress(sy_engine *e, void (*fn)(void *user, uint32_t done, uint32_t total, double elapsed_ms),
                            void *user);
/* Runs warmup + repeat repetitions of the workload; metrics are those of the measured repetitions
 * (times: medians across repetitions for ttft; TPOT over all measured steps). */
sy_status sy_engine_run(sy_engine *e, sy_run_metrics *out, sy_error *err);
/* The prompt token ids the workload uses (batch x input_len), a pure function of token_seed. */
uint32_t sy_workload_token(uint64_t token_seed, uint32_t vocab, uint32_t seq, uint32_t pos);
const sy_plan *sy_engine_plan(const sy_engine *e);

#endif
