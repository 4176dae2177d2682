/* Synthetic contexts (workload.context = synthetic): each sequence starts with input_len tokens whose
 * K/V no prefill computed. Seeded values are written into the pools through kv_layout.write, and
 * the pages are reserved and released exactly as a prefill in chunks of the plan's chunk does, so
 * that the page tables, the sliding-window pool and the full-to-SWA slot map are those a prefill
 * leaves and the decode steps after it read the context like any other. A gpt-oss-120b decode step
 * at batch 128 over 8192-token contexts can then be measured without the minutes of prefill.
 *
 * Why kv_layout.write and not synth_fill straight into the pools: the values are then a function of
 * the token's logical place (layer, sequence, position, head, dim), not of its address in a layout,
 * so nhd and vectorized_5d, bf16 and fp8 pools hold the same context and an A/B between them compares
 * like with like; the write quantizes fp8 stores with the plan's scales (uniform bytes would include
 * NaN codes); and nothing lands on the padding page or on pages no sequence owns. */
#ifndef SY_MODEL_CONTEXT_H
#define SY_MODEL_CONTEXT_H

#include <stdint.h>

#include "switchyard/backend.h"

typedef struct sy_engine sy_engine;

/* K (is_v 0) or V (is_v 1) of sequence `seq` in layer `layer`, for every context position: element
 * (pos * kv_heads + h) * head_dim + d is bf16(sqrt(3) * u), u uniform in [-1, 1) from
 * sy_synth_uniform (unit variance, like the model's own k and v projections). */
sy_synth_spec sy_context_synth_spec(uint64_t seed, uint32_t layer, int is_v, uint32_t seq);

/* Empties the cache and makes the synthetic context of every sequence; the K/V are on the device
 * when this returns. Uses the plan's workload seed. */
sy_status sy_context_fill(sy_engine *e, sy_error *err);

#endif
