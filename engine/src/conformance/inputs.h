/* Random inputs of conformance cases and the element conversions around them. The generator is the
 * counter-based one of plugins/common/sy_synth.h, so a case's inputs are a pure function of
 * (run seed, case name) whatever else runs before it. */
#ifndef SY_CONF_INPUTS_H
#define SY_CONF_INPUTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct sy_conf_rng {
    uint64_t seed;
    uint64_t counter;
} sy_conf_rng;

sy_conf_rng sy_conf_rng_for(uint64_t run_seed, const char *case_name);
uint64_t sy_conf_rng_bits(sy_conf_rng *r);
double sy_conf_rng_uniform(sy_conf_rng *r); /* [0, 1) */
double sy_conf_rng_normal(sy_conf_rng *r);
uint32_t sy_conf_rng_below(sy_conf_rng *r, uint32_t n); /* [0, n); 0 when n == 0 */

void sy_conf_fill_normal(sy_conf_rng *r, float *x, size_t n, double std);
void sy_conf_fill_uniform(sy_conf_rng *r, float *x, size_t n, double lo, double hi);
void sy_conf_fill_bytes(sy_conf_rng *r, uint8_t *x, size_t n);
/* A random permutation of 0 .. n-1. */
void sy_conf_shuffle_u32(sy_conf_rng *r, uint32_t *x, uint32_t n);

/* Values that probe conversions, planted among normal ones: f32 halfway between two bf16 values
 * (round-half-even), magnitudes past fp8's 448 after the scale (saturation) and below its smallest
 * subnormal (flush and subnormal rounding). `scale` is the fp8 scale the values will meet (1 for
 * none). About one element in 16 is replaced. */
void sy_conf_plant_conversion_probes(sy_conf_rng *r, float *x, size_t n, float scale);

/* f32 values stored as `dtype` (f32 or bf16, rounded to nearest even). */
void sy_conf_store(int32_t dtype, void *dst, const float *src, size_t n);
/* Element i of an f32, bf16, f16 or fp8_e4m3 array, as double. */
double sy_conf_load(int32_t dtype, const void *p, size_t i);

/* Name of a dtype in case names: "f32", "bf16", "fp8". */
const char *sy_conf_dtype_tag(int32_t dtype);

#endif
