/* Timing of one benchmark case: warm-up calls, then each timed call between two device events of
 * its own on the case's stream, and the order statistics of those times. Inputs are rotated among several
 * copies when one copy would stay in the device's last-level cache between calls, so that every
 * timed call reads cold memory (METHOD.md's "rotate among several input sets"). */
#ifndef SY_BENCH_TIMING_H
#define SY_BENCH_TIMING_H

#include <stddef.h>
#include <stdint.h>

#include "conformance/side.h"

typedef struct sy_bench_stats {
    double median_us, p10_us, p90_us, min_us, max_us;
    uint32_t runs;
} sy_bench_stats;

/* One call of the op under test on input copy `copy` (0 .. copies-1), enqueued on the side's stream. */
typedef sy_status (*sy_bench_call_fn)(void *user, uint32_t copy, sy_error *err);

/* `warmup` calls, then `runs` calls each between two events of its own, with no wait between calls
 * (the stream stays busy, as in the engine); copies are used in turn across both. Fails with the
 * call's own status and message when a call fails. */
sy_status sy_bench_time_calls(sy_conf_side *side, sy_bench_call_fn call, void *user, uint32_t copies, int warmup,
                              int runs, sy_bench_stats *out, sy_error *err);

/* Percentile q (0..1) of n sorted values, linearly interpolated between the closest ranks (the
 * convention of numpy's default and of bench/peers/torch_peers.py). */
double sy_bench_percentile(const double *sorted, size_t n, double q);
/* Sorts us[0..n) in place and fills the statistics (n >= 1). */
void sy_bench_stats_of(double *us, size_t n, sy_bench_stats *out);

/* Copies of an input set of `set_bytes` so that the copies together span at least `target_bytes`
 * (1 when one set does), at most `max_copies`. */
uint32_t sy_bench_rotation_copies(uint64_t set_bytes, uint64_t target_bytes, uint32_t max_copies);

/* The span the copies of one case must reach: ROTATION_L2_MULTIPLE times the L2 size (the device's,
 * or SY_BENCH_ASSUMED_L2_BYTES when it reports none); --quick caps it at SY_BENCH_QUICK_ROTATION_BYTES,
 * a smoke run's budget. */
enum { SY_BENCH_ROTATION_L2_MULTIPLE = 4, SY_BENCH_MAX_COPIES = 256 };
#define SY_BENCH_ASSUMED_L2_BYTES ((uint64_t)50 << 20) /* H200: 50 MiB */
#define SY_BENCH_QUICK_ROTATION_BYTES ((uint64_t)16 << 20)
uint64_t sy_bench_rotation_target(uint64_t l2_bytes, int quick);

#endif
