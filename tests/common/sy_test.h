/* Test helpers shared by every suite: seeded random inputs, output poisoning, error norms. */
#ifndef SY_TEST_H
#define SY_TEST_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64: a fresh stream per test from a seed printed on failure. */
typedef struct sy_rng {
    uint64_t state;
} sy_rng;

/* Seed from SY_TEST_SEED when set (to reproduce a failure), else from the clock. */
uint64_t sy_test_seed(void);
uint64_t sy_rng_next(sy_rng *r);
double sy_rng_uniform(sy_rng *r);                 /* [0, 1) */
double sy_rng_range(sy_rng *r, double lo, double hi);
double sy_rng_normal(sy_rng *r);
uint32_t sy_rng_below(sy_rng *r, uint32_t n);     /* [0, n) */
void sy_fill_uniform_f32(sy_rng *r, float *x, size_t n, float lo, float hi);

/* Fill with a NaN pattern so that unwritten outputs are caught: sy_poison_bytes writes 0xFF bytes,
 * NaN in f32, bf16 and fp8_e4m3 alike (and -1 in int32), as the conformance suite's poison. */
void sy_poison_f32(float *x, size_t n);
void sy_poison_bytes(void *x, size_t n);

/* ||a - b|| / ||b|| in double; returns +inf when a has a NaN. */
double sy_rel_l2_f32(const float *a, const double *ref, size_t n);
double sy_max_abs_diff(const float *a, const double *ref, size_t n);

#endif
