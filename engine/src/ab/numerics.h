/* The numerics pass: A's run spills its checkpoints, B's run is compared against them row by row
 * as it streams; the summary per (layer, sequence, position) is folded into the report once both
 * sides' generated tokens are known (rows after a sequence's first differing token are skipped). */
#ifndef SY_AB_NUMERICS_H
#define SY_AB_NUMERICS_H

#include "ab/ab.h"

/* The engines run one repetition each (their plans have warmup 0, repeat 1); their checkpoint
 * callbacks are cleared again before returning. */
sy_status sy_ab_numerics_run(sy_engine *const engines[SY_AB_SIDES], const sy_ab_side sides[SY_AB_SIDES],
                             const sy_ab_options *opts, sy_ab_numerics *out, sy_error *err);
void sy_ab_numerics_free(sy_ab_numerics *n);

/* Differences of n values of x against the reference: accumulated into d; *first_col is the first
 * index whose bits differ (left alone when none do). Bit-exact means identical bits, so -0 and +0
 * differ and identical NaNs do not. */
void sy_ab_compare_values(const float *ref, const float *x, uint32_t n, sy_ab_diff *d, uint32_t *first_col);

#endif
