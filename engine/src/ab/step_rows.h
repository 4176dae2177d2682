/* Which token position each checkpoint row holds. The engine's checkpoint callback names only the
 * step and the row; the workload (engine/src/model/workload.c, docs/config.md) fixes the rest:
 * prefill steps of `chunk` prompt tokens per sequence (rows sequence-major), then one decode step
 * per generated token after the first (one row per sequence). After a synthetic context
 * (workload.context: synthetic) no prefill runs: every generated token comes from a decode step,
 * the first at position input_len. The logits of a step have one row per sequence: its last new
 * token. */
#ifndef SY_AB_STEP_ROWS_H
#define SY_AB_STEP_ROWS_H

#include <stdint.h>

#include "model/engine.h"

typedef struct sy_ab_shape {
    uint32_t batch, input_len, output_len;
    uint32_t chunk;          /* prompt tokens per prefill step */
    uint32_t prefill_steps;
    uint32_t steps;          /* prefill steps + decode steps */
    uint32_t first_pos;      /* the first position a sequence computes: 0, or input_len after a synthetic context */
    uint32_t positions;      /* positions a sequence computes from first_pos: input_len + output_len - 1, or
                              * output_len after a synthetic context */
    uint32_t first_fed;      /* the position fed generated token 0 (input_len, or input_len + 1 after a synthetic
                              * context, whose first decode step is fed a seeded token) */
} sy_ab_shape;

/* The tokens one step computes for every sequence: positions first .. first + len - 1. */
typedef struct sy_ab_step {
    uint32_t first, len;
} sy_ab_step;

void sy_ab_shape_of(const sy_plan *p, sy_ab_shape *s);
/* 0 when `step` is not a step of the workload. */
int sy_ab_step_of(const sy_ab_shape *s, uint32_t step, sy_ab_step *out);
/* Rows the engine emits for a step: batch x len for a layer output, batch for the logits. */
static inline uint32_t sy_ab_step_rows(const sy_ab_shape *s, const sy_ab_step *st, int logits)
{
    return logits ? s->batch : s->batch * st->len;
}
/* Index of an absolute position among the positions a sequence computes (pos >= first_pos). */
static inline uint32_t sy_ab_position_index(const sy_ab_shape *s, uint32_t pos)
{
    return pos - s->first_pos;
}
/* Sequence and position of a row of a step. */
static inline void sy_ab_row_place(const sy_ab_step *st, int logits, uint32_t row, uint32_t *seq, uint32_t *pos)
{
    *seq = logits ? row : row / st->len;
    *pos = logits ? st->first + st->len - 1 : st->first + row % st->len;
}

#endif
