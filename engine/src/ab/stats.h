/* Timing statistics of the comparison: medians, the paired bootstrap and the verdict text. */
#ifndef SY_AB_STATS_H
#define SY_AB_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "ab/ab.h"

/* Median of n values (the mean of the middle two when n is even); 0 when n is 0. */
double sy_ab_median(const double *x, size_t n);
/* Quantile q in [0, 1] of sorted values, interpolating linearly between neighbours. */
double sy_ab_sorted_quantile(const double *sorted, size_t n, double q);

/* Paired percentile bootstrap over rounds: each resample draws n round indices with replacement
 * and takes the same indices from both sides, so a slow round (a noisy neighbour, a frequency
 * change) weighs on A and B alike. Fills each side's median and interval and the interval of
 * median(B) / median(A). `resamples` draws from a splitmix64 stream seeded with `seed`. */
void sy_ab_bootstrap(const double *a, const double *b, size_t n, uint32_t resamples, uint64_t seed,
                     double confidence, sy_ab_side_stats *sa, sy_ab_side_stats *sb, double *ratio_low,
                     double *ratio_high);

/* The verdict of a ratio interval and its sentence ("B faster by 12.3% (10.9–13.8%)",
 * "B slower by ...", "no significant difference"); `measured` 0 gives "not measured". */
int32_t sy_ab_verdict_of(int measured, double ratio, double low, double high, char *summary, size_t len);

#endif
