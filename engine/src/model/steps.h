/* Single steps of the engine for embedders (engine/src/api): the workload's prefill and decode,
 * driven by token ids the caller gives instead of the seeded prompt. */
#ifndef SY_STEPS_H
#define SY_STEPS_H

#include <stdint.h>

#include "model/engine.h"

/* Limits the engine was sized for: a sequence holds at most max_prompt tokens after a prefill and
 * max_tokens after a decode step; one forward takes at most chunk tokens per sequence. */
typedef struct sy_step_limits {
    uint32_t batch, vocab;
    uint32_t max_prompt, max_tokens;
    uint32_t chunk;
} sy_step_limits;

void sy_steps_limits(const sy_engine *e, sy_step_limits *out);

/* Frees every sequence's KV pages; sequences restart at position 0. */
sy_status sy_steps_reset(sy_engine *e, sy_error *err);

/* One forward of n tokens for every sequence, at positions start .. start + n - 1 (the same for
 * all); ids holds batch rows of n. decode = 1 for n == 1 against the paged cache, 0 for a prefill
 * chunk. next[b] receives the greedy next token of sequence b. The caller keeps n within
 * sy_steps_limits. */
sy_status sy_steps_forward(sy_engine *e, uint32_t start, uint32_t n, const uint32_t *ids, int decode, uint32_t *next,
                           sy_error *err);

#endif
