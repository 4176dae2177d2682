/* Device-to-device copy bandwidth: the memory ceiling every memory-bound kernel is held against in
 * the same run (`switchyard bench`'s copy.d2d, and bench/gpu_copy). The source holds random bytes
 * made on the device; the copies are timed like any case (timing.h); afterwards a sample of the
 * destination is compared with the source, so that a copy that did nothing cannot pass for a fast
 * one. Bandwidth counts bytes read plus bytes written (traffic.h). */
#ifndef SY_BENCH_COPY_H
#define SY_BENCH_COPY_H

#include <stdint.h>

#include "bench/timing.h"

typedef struct sy_bench_copy {
    uint64_t size;   /* bytes of one copy */
    uint32_t copies; /* source / destination pairs used in turn */
    sy_bench_stats stats;
    int verified;    /* 1: the last destination's sample equals its source */
} sy_bench_copy;

/* Measures on the side's stream; SY_E_INTERNAL when the sample does not match (out is filled). */
sy_status sy_bench_measure_copy(sy_conf_side *side, uint64_t size, uint32_t copies, int warmup, int runs,
                                uint64_t seed, sy_bench_copy *out, sy_error *err);

#endif
