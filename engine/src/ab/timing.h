/* Timing rounds: one workload repetition per side per round, without checkpoints, in the order
 * A B, B A, A B, ... (so neither side always runs first after the other), after each side's
 * configured warm-up repetitions. */
#ifndef SY_AB_TIMING_H
#define SY_AB_TIMING_H

#include "ab/ab.h"

/* The side that runs at position i of the order (0-based, 2 x rounds positions). */
static inline int sy_ab_round_side(uint32_t i)
{
    return ((i + 1) / 2) % 2; /* A B B A A B B A ... */
}

sy_status sy_ab_timing_run(sy_engine *const engines[SY_AB_SIDES], const sy_ab_side sides[SY_AB_SIDES],
                           const sy_ab_options *opts, sy_ab_timing *out, sy_error *err);
void sy_ab_timing_free(sy_ab_timing *t);

#endif
