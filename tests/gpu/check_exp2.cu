/* The softmax's exponential on the FMA pipe (plugins/common/exp2_gpu.cuh) against exp2 in double:
 * fresh random x over [-140, 0] and the edges of its range (0, half-integers where the rounding to
 * j turns, -126 where the hold starts, below it, a NaN), outputs poisoned before the kernel runs.
 * Within 1e-4 relative of 2^x down to -126 (the fit's 7.5e-5 plus the float steps), 2^-126 below,
 * and NaN for NaN. Prints one line a check and exits non-zero on a failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp2_gpu.cuh"

extern "C" {
#include "sy_test.h"
}

static __global__ void exp2_fma_kernel(const float *x, float *y, int n)
{
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n)
        y[i] = sy_exp2_fma(x[i]);
}

int main(void)
{
    enum { RANDOM = 100003, EDGES = 12, THREADS = 128 };
    const int n = RANDOM + EDGES;
    float *x = (float *)malloc(sizeof(float) * (size_t)n), *y = (float *)malloc(sizeof(float) * (size_t)n);
    if (!x || !y)
        return 1;
    const uint64_t seed = sy_test_seed();
    sy_rng rng = {seed};
    sy_fill_uniform_f32(&rng, x, RANDOM, -140.0f, 0.0f);
    const float edges[EDGES] = {0.0f, -0.0f, -0.5f, -0.49999997f, -0.50000006f, -1.5f, -64.5f, -125.5f, -126.0f,
                                -126.5f, -200.0f, NAN};
    memcpy(x + RANDOM, edges, sizeof edges);
    sy_poison_f32(y, (size_t)n);
    SY_GPU_LAUNCH((n + THREADS - 1) / THREADS, THREADS, 0, NULL, exp2_fma_kernel)(x, y, n);
    double worst = 0.0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (isnan(x[i])) {
            bad += !isnan(y[i]);
            continue;
        }
        const double want = exp2((double)(x[i] < -126.0f ? -126.0f : x[i]));
        const double rel = fabs((double)y[i] - want) / want; /* a NaN y fails the comparison below */
        if (!(rel <= 1e-4)) {
            if (bad < 5)
                fprintf(stderr, "  x %.9g: got %.9g, want %.9g (rel %.3g)\n", x[i], y[i], want, rel);
            bad++;
        } else if (rel > worst) {
            worst = rel;
        }
    }
    printf("%s  exp2_fma  %d inputs over [-140, 0] and its edges: %d wrong, largest relative error %.3g <= 1e-4 "
           "(seed %llu; SY_TEST_SEED reproduces)\n",
           bad ? "FAIL" : "PASS", n, bad, worst, (unsigned long long)seed);
    free(x);
    free(y);
    return bad ? 1 : 0;
}
