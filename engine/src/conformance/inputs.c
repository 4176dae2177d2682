#include "conformance/inputs.h"

#include <math.h>
#include <string.h>

#include "switchyard/tensor.h"
#include "sy_numeric.h"
#include "sy_synth.h"

/* FNV-1a (Fowler, Noll, Vo) of the case name: distinct names give unrelated streams. */
static uint64_t name_hash(const char *s)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001B3ull;
    return h;
}

sy_conf_rng sy_conf_rng_for(uint64_t run_seed, const char *case_name)
{
    sy_conf_rng r = {sy_synth_mix(run_seed ^ name_hash(case_name)), 0};
    return r;
}

uint64_t sy_conf_rng_bits(sy_conf_rng *r)
{
    return sy_synth_bits(r->seed, 0, r->counter++);
}

double sy_conf_rng_uniform(sy_conf_rng *r)
{
    return (double)(sy_conf_rng_bits(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Box-Muller; the first uniform is kept away from 0 so the logarithm stays finite. */
double sy_conf_rng_normal(sy_conf_rng *r)
{
    double u1 = sy_conf_rng_uniform(r), u2 = sy_conf_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint32_t sy_conf_rng_below(sy_conf_rng *r, uint32_t n)
{
    return n ? (uint32_t)(sy_conf_rng_bits(r) % n) : 0;
}

void sy_conf_fill_normal(sy_conf_rng *r, float *x, size_t n, double std)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(sy_conf_rng_normal(r) * std);
}

void sy_conf_fill_uniform(sy_conf_rng *r, float *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(lo + (hi - lo) * sy_conf_rng_uniform(r));
}

void sy_conf_fill_bytes(sy_conf_rng *r, uint8_t *x, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t b = sy_conf_rng_bits(r);
        memcpy(x + i, &b, 8);
    }
    if (i < n) {
        uint64_t b = sy_conf_rng_bits(r);
        memcpy(x + i, &b, n - i);
    }
}

void sy_conf_shuffle_u32(sy_conf_rng *r, uint32_t *x, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        x[i] = i;
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = sy_conf_rng_below(r, i), t = x[i - 1];
        x[i - 1] = x[j];
        x[j] = t;
    }
}

void sy_conf_plant_conversion_probes(sy_conf_rng *r, float *x, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) {
        if (sy_conf_rng_below(r, 16) != 0)
            continue;
        float sign = sy_conf_rng_below(r, 2) ? -1.0f : 1.0f;
        switch (sy_conf_rng_below(r, 3)) {
        case 0: { /* exactly halfway between two bf16 values: bit 15 set, bits 0..14 clear */
            uint32_t u = sy_f32_bits(x[i]);
            x[i] = sy_f32_from_bits((u & 0xFFFF0000u) | 0x8000u);
            break;
        }
        case 1: /* beyond fp8's largest finite value once divided by the scale */
            x[i] = sign * scale * (448.0f + (float)sy_conf_rng_uniform(r) * 600.0f);
            break;
        default: /* fp8 subnormal range and below: 2^-6 .. 2^-11 times the scale */
            x[i] = sign * scale * ldexpf(1.0f + (float)sy_conf_rng_uniform(r), -6 - (int)sy_conf_rng_below(r, 6));
            break;
        }
    }
}

void sy_conf_store(int32_t dtype, void *dst, const float *src, size_t n)
{
    if (dtype == SY_DTYPE_BF16) {
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = sy_f32_to_bf16(src[i]);
    } else {
        memcpy(dst, src, n * sizeof(float));
    }
}

/* IEEE binary16 to double: the conformance suite only reads it (no plugin of the tree writes f16). */
static double f16_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
    return (h & 0x8000) ? -v : v;
}

double sy_conf_load(int32_t dtype, const void *p, size_t i)
{
    switch (dtype) {
    case SY_DTYPE_F32: return ((const float *)p)[i];
    case SY_DTYPE_BF16: return sy_bf16_to_f32(((const uint16_t *)p)[i]);
    case SY_DTYPE_F16: return f16_to_double(((const uint16_t *)p)[i]);
    case SY_DTYPE_FP8_E4M3: return sy_fp8e4m3_to_f32(((const uint8_t *)p)[i]);
    default: return NAN;
    }
}

const char *sy_conf_dtype_tag(int32_t dtype)
{
    switch (dtype) {
    case SY_DTYPE_F32: return "f32";
    case SY_DTYPE_BF16: return "bf16";
    case SY_DTYPE_F16: return "f16";
    case SY_DTYPE_FP8_E4M3: return "fp8";
    default: return "invalid";
    }
}
