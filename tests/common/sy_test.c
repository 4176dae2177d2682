#include "sy_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t sy_test_seed(void)
{
    const char *s = getenv("SY_TEST_SEED");
    if (s && *s)
        return strtoull(s, NULL, 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
    fprintf(stderr, "test seed: SY_TEST_SEED=%llu\n", (unsigned long long)seed);
    return seed;
}

uint64_t sy_rng_next(sy_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double sy_rng_uniform(sy_rng *r)
{
    return (double)(sy_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

double sy_rng_range(sy_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * sy_rng_uniform(r);
}

double sy_rng_normal(sy_rng *r)
{
    double u1 = sy_rng_uniform(r), u2 = sy_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint32_t sy_rng_below(sy_rng *r, uint32_t n)
{
    return n ? (uint32_t)(sy_rng_next(r) % n) : 0;
}

void sy_fill_uniform_f32(sy_rng *r, float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)sy_rng_range(r, lo, hi);
}

void sy_poison_f32(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = nanf("");
}

void sy_poison_bytes(void *x, size_t n)
{
    memset(x, 0xFF, n);
}

double sy_rel_l2_f32(const float *a, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]))
            return INFINITY;
        double d = (double)a[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

double sy_max_abs_diff(const float *a, const double *ref, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - ref[i]);
        if (isnan(d))
            return INFINITY;
        if (d > m)
            m = d;
    }
    return m;
}
