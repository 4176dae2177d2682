#include "ab/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sy_synth.h"
#include "util/strbuf.h"

static int cmp_double(const void *pa, const void *pb)
{
    double x = *(const double *)pa, y = *(const double *)pb;
    return (x > y) - (x < y);
}

double sy_ab_sorted_quantile(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return 0;
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - (double)lo);
}

double sy_ab_median(const double *x, size_t n)
{
    if (n == 0)
        return 0;
    double *v = sy_xcalloc(n, sizeof *v);
    memcpy(v, x, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_double);
    double m = sy_ab_sorted_quantile(v, n, 0.5);
    free(v);
    return m;
}

/* splitmix64 (Steele, Lea, Flood 2014): a Weyl sequence through the mixer of the synthetic weights,
 * so the resamples are the same on every machine. */
static uint64_t splitmix64(uint64_t *state)
{
    return sy_synth_mix(*state += 0x9E3779B97F4A7C15ull);
}

/* Index in [0, n) from the high 32 bits by multiply-shift (Lemire), without modulo bias worth
 * mentioning at round counts. */
static size_t draw(uint64_t *state, size_t n)
{
    return (size_t)(((splitmix64(state) >> 32) * (uint64_t)n) >> 32);
}

static double ratio_of(double b, double a)
{
    return a > 0 ? b / a : (b > 0 ? INFINITY : 1.0);
}

void sy_ab_bootstrap(const double *a, const double *b, size_t n, uint32_t resamples, uint64_t seed,
                     double confidence, sy_ab_side_stats *sa, sy_ab_side_stats *sb, double *ratio_low,
                     double *ratio_high)
{
    sa->median = sy_ab_median(a, n);
    sb->median = sy_ab_median(b, n);
    if (n == 0 || resamples == 0) {
        sa->ci_low = sa->ci_high = sa->median;
        sb->ci_low = sb->ci_high = sb->median;
        *ratio_low = *ratio_high = ratio_of(sb->median, sa->median);
        return;
    }
    double *ra = sy_xcalloc(n, sizeof *ra), *rb = sy_xcalloc(n, sizeof *rb);
    double *med_a = sy_xcalloc(resamples, sizeof *med_a), *med_b = sy_xcalloc(resamples, sizeof *med_b);
    double *ratio = sy_xcalloc(resamples, sizeof *ratio);
    uint64_t state = seed;
    for (uint32_t r = 0; r < resamples; r++) {
        for (size_t i = 0; i < n; i++) {
            size_t k = draw(&state, n);
            ra[i] = a[k];
            rb[i] = b[k];
        }
        qsort(ra, n, sizeof *ra, cmp_double);
        qsort(rb, n, sizeof *rb, cmp_double);
        med_a[r] = sy_ab_sorted_quantile(ra, n, 0.5);
        med_b[r] = sy_ab_sorted_quantile(rb, n, 0.5);
        ratio[r] = ratio_of(med_b[r], med_a[r]);
    }
    double tail = (1 - confidence) / 2;
    qsort(med_a, resamples, sizeof *med_a, cmp_double);
    qsort(med_b, resamples, sizeof *med_b, cmp_double);
    qsort(ratio, resamples, sizeof *ratio, cmp_double);
    sa->ci_low = sy_ab_sorted_quantile(med_a, resamples, tail);
    sa->ci_high = sy_ab_sorted_quantile(med_a, resamples, 1 - tail);
    sb->ci_low = sy_ab_sorted_quantile(med_b, resamples, tail);
    sb->ci_high = sy_ab_sorted_quantile(med_b, resamples, 1 - tail);
    *ratio_low = sy_ab_sorted_quantile(ratio, resamples, tail);
    *ratio_high = sy_ab_sorted_quantile(ratio, resamples, 1 - tail);
    free(ra);
    free(rb);
    free(med_a);
    free(med_b);
    free(ratio);
}

int32_t sy_ab_verdict_of(int measured, double ratio, double low, double high, char *summary, size_t len)
{
    if (!measured || !isfinite(ratio) || !isfinite(low) || !isfinite(high)) {
        snprintf(summary, len, "not measured");
        return SY_AB_NOT_MEASURED;
    }
    if (low <= 1 && high >= 1) {
        snprintf(summary, len, "no significant difference");
        return SY_AB_NO_DIFFERENCE;
    }
    /* "faster by p%": B's median time is p% below A's; the interval maps the same way. A difference
     * that is real but tiny (two identical kernels a few ns apart) gets the decimals that keep its
     * interval's near end from reading 0.0%. */
    const int faster = high < 1;
    const double effect = 100 * (faster ? 1 - ratio : ratio - 1), near = 100 * (faster ? 1 - high : low - 1);
    const double far = 100 * (faster ? 1 - low : high - 1);
    int decimals = 1;
    while (decimals < 4 && near * pow(10, decimals) < 0.5)
        decimals++;
    snprintf(summary, len, "B %s by %.*f%% (%.*f\u2013%.*f%%)", faster ? "faster" : "slower", decimals, effect,
             decimals, near, decimals, far);
    return faster ? SY_AB_B_FASTER : SY_AB_B_SLOWER;
}

const char *sy_ab_verdict_name(int32_t verdict)
{
    switch (verdict) {
    case SY_AB_NO_DIFFERENCE: return "no_significant_difference";
    case SY_AB_B_FASTER: return "faster";
    case SY_AB_B_SLOWER: return "slower";
    default: return "not_measured";
    }
}

const char *sy_ab_row_kind_name(int32_t kind)
{
    switch (kind) {
    case SY_AB_ROW_END_TO_END: return "end_to_end";
    case SY_AB_ROW_PREFILL: return "prefill";
    case SY_AB_ROW_DECODE_STEP: return "decode_step";
    default: return "op";
    }
}
