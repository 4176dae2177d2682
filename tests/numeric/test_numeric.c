/* sy_numeric.h against references computed here from the format definitions (OCP OFP8 rev 1.0 for
 * e4m3fn, IEEE binary32 truncated to 16 bits for bf16, IEEE 754-2008 binary16 for f16) in double
 * arithmetic, never through the header's bit tricks: every bf16, f16 and fp8 code, every f32 input
 * of both narrowing conversions, every rounding midpoint, saturation, NaN. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sy_numeric.h"
#include "sy_test.h"

static float f32_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* ---- bf16 ------------------------------------------------------------------------------- */

/* The value of a non-NaN bf16 code in double; exponent field 255 (infinity) counts as 2^128, the
 * value it would have with an unbounded exponent, which is what round-to-nearest compares with. */
static double bf16_value_unbounded(uint16_t h)
{
    int sign = h >> 15, e = (h >> 7) & 0xFF, m = h & 0x7F;
    double mag = e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
    return sign ? -mag : mag;
}

/* Round-to-nearest-even of a finite f32 to bf16 by comparing distances to the two neighbours. */
static uint16_t bf16_reference(float x)
{
    uint32_t u = bits_of(x);
    uint16_t lo = (uint16_t)(u >> 16);        /* toward zero */
    uint16_t hi = (uint16_t)(lo + 1u);        /* away from zero (same sign) */
    if ((u & 0xFFFFu) == 0)
        return lo;
    double dl = fabs((double)x - bf16_value_unbounded(lo)), dh = fabs(bf16_value_unbounded(hi) - (double)x);
    if (dl < dh)
        return lo;
    if (dh < dl)
        return hi;
    return (lo & 1u) ? hi : lo;
}

START_TEST(bf16_every_code_round_trips)
{
    for (uint32_t c = 0; c < 65536; c++) {
        uint16_t h = (uint16_t)c;
        float x = sy_bf16_to_f32(h);
        ck_assert_uint_eq(bits_of(x), (uint32_t)h << 16);
        int is_nan = ((h >> 7) & 0xFF) == 0xFF && (h & 0x7F) != 0;
        if (is_nan) {
            uint16_t back = sy_f32_to_bf16(x);
            ck_assert_msg(((back >> 7) & 0xFF) == 0xFF && (back & 0x7F) != 0, "NaN 0x%04x became 0x%04x", h, back);
            ck_assert_msg((back & 0x8000) == (h & 0x8000), "NaN 0x%04x lost its sign", h);
            ck_assert_msg(back & 0x40, "NaN 0x%04x did not come back quiet", h);
        } else {
            ck_assert_msg(sy_f32_to_bf16(x) == h, "0x%04x -> %a -> 0x%04x", h, (double)x, sy_f32_to_bf16(x));
        }
    }
}
END_TEST

START_TEST(bf16_rounds_to_nearest_even)
{
    sy_rng rng = {sy_test_seed()};
    /* Every high half with the low halves that decide rounding: exact, just above zero, just below,
     * at, just above the midpoint, the largest, plus random ones. */
    const uint32_t fixed_low[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
    for (uint32_t hi = 0; hi < 65536; hi++) {
        if (((hi >> 7) & 0xFF) == 0xFF)
            continue; /* infinities and NaNs: below */
        uint32_t lows[10];
        memcpy(lows, fixed_low, sizeof fixed_low);
        for (int i = 6; i < 10; i++)
            lows[i] = (uint32_t)sy_rng_below(&rng, 65536);
        for (int i = 0; i < 10; i++) {
            float x = f32_of(hi << 16 | lows[i]);
            uint16_t got = sy_f32_to_bf16(x), want = bf16_reference(x);
            ck_assert_msg(got == want, "f32 0x%08x (%a): got bf16 0x%04x, want 0x%04x", hi << 16 | lows[i], (double)x,
                          got, want);
        }
    }
    /* The overflow boundary: below the midpoint to the largest finite, at and above it. */
    ck_assert_uint_eq(sy_f32_to_bf16(f32_of(0x7F7F7FFFu)), 0x7F7F);
    ck_assert_uint_eq(sy_f32_to_bf16(f32_of(0x7F7F8000u)), 0x7F80);
    ck_assert_uint_eq(sy_f32_to_bf16(f32_of(0xFF7F8000u)), 0xFF80);
    ck_assert_uint_eq(sy_f32_to_bf16(INFINITY), 0x7F80);
    ck_assert_uint_eq(sy_f32_to_bf16(-INFINITY), 0xFF80);
}
END_TEST

START_TEST(bf16_nan_stays_nan)
{
    /* Payloads only in the low half would round to infinity with a plain add-and-truncate. */
    const uint32_t nans[] = {0x7F800001u, 0x7F807FFFu, 0x7F808000u, 0x7FBFFFFFu, 0x7FC00000u, 0x7FFFFFFFu,
                             0xFF800001u, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = sy_f32_to_bf16(f32_of(nans[i]));
        ck_assert_msg(((h >> 7) & 0xFF) == 0xFF && (h & 0x7F) != 0, "NaN 0x%08x became 0x%04x", nans[i], h);
        ck_assert_uint_eq(h & 0x8000u, (nans[i] >> 16) & 0x8000u);
        ck_assert(isnan(sy_round_bf16(f32_of(nans[i]))));
    }
}
END_TEST

/* ---- fp8 e4m3fn --------------------------------------------------------------------------- */

static int fp8_is_nan(uint8_t c)
{
    return (c & 0x7F) == 0x7F;
}

/* Value from the definition: bias 7, subnormals m/8 * 2^-6, no infinities. */
static double fp8_value(uint8_t c)
{
    int e = (c >> 3) & 0xF, m = c & 7;
    double mag = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
    return (c & 0x80) ? -mag : mag;
}

/* Nearest finite magnitude code (0 .. 0x7E) to |x|, ties to the even code, saturating at 448; sign
 * from x. By exhaustive comparison. */
static uint8_t fp8_reference(float x)
{
    uint8_t sign = (bits_of(x) >> 24) & 0x80;
    if (isnan(x))
        return (uint8_t)(sign | 0x7F);
    double a = fabs((double)x);
    if (a >= 448.0)
        return (uint8_t)(sign | 0x7E);
    uint8_t best = 0;
    double best_d = INFINITY;
    for (uint8_t c = 0; c <= 0x7E; c++) {
        double d = fabs(fp8_value(c) - a);
        if (d < best_d || (d == best_d && (c & 1) == 0)) {
            best = c;
            best_d = d;
        }
    }
    return (uint8_t)(sign | best);
}

START_TEST(fp8_every_code_decodes_and_round_trips)
{
    int nans = 0;
    for (uint32_t c = 0; c < 256; c++) {
        float x = sy_fp8e4m3_to_f32((uint8_t)c);
        if (fp8_is_nan((uint8_t)c)) {
            nans++;
            ck_assert_msg(isnan(x), "code 0x%02x must decode to NaN", c);
            ck_assert_msg(fp8_is_nan(sy_f32_to_fp8e4m3(x)), "NaN code 0x%02x did not come back NaN", c);
            ck_assert_uint_eq(sy_f32_to_fp8e4m3(x) & 0x80u, c & 0x80u);
            continue;
        }
        ck_assert_msg((double)x == fp8_value((uint8_t)c), "code 0x%02x decodes to %a, want %a", c, (double)x,
                      fp8_value((uint8_t)c));
        ck_assert_uint_eq(bits_of(x) >> 31, c >> 7); /* -0 included */
        ck_assert_msg(sy_f32_to_fp8e4m3(x) == c, "code 0x%02x -> %a -> 0x%02x", c, (double)x, sy_f32_to_fp8e4m3(x));
    }
    ck_assert_int_eq(nans, 2);
    ck_assert_float_eq(sy_fp8e4m3_to_f32(0x7E), 448.0f);
    ck_assert_float_eq(sy_fp8e4m3_to_f32(0x01), 0.001953125f);
}
END_TEST

START_TEST(fp8_midpoints_round_to_even)
{
    for (uint8_t c = 0; c < 0x7E; c++) {
        double lo = fp8_value(c), hi = fp8_value((uint8_t)(c + 1));
        float mid = (float)((lo + hi) / 2); /* exact in f32 */
        ck_assert((double)mid == (lo + hi) / 2);
        uint8_t even = (c & 1) ? (uint8_t)(c + 1) : c;
        for (int s = 0; s < 2; s++) {
            float m = s ? -mid : mid;
            uint8_t sign = s ? 0x80 : 0;
            ck_assert_msg(sy_f32_to_fp8e4m3(m) == (sign | even), "midpoint %a: got 0x%02x, want 0x%02x", (double)m,
                          sy_f32_to_fp8e4m3(m), sign | even);
            ck_assert_uint_eq(sy_f32_to_fp8e4m3(nextafterf(m, 0.0f)), sign | c);
            ck_assert_uint_eq(sy_f32_to_fp8e4m3(nextafterf(m, s ? -INFINITY : INFINITY)), sign | (c + 1));
        }
    }
}
END_TEST

START_TEST(fp8_saturates_and_keeps_nan)
{
    const float big[] = {448.0f, 449.0f, 463.99f, 464.0f, 480.0f, 1e6f, 3.4e38f, INFINITY};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        ck_assert_msg(sy_f32_to_fp8e4m3(big[i]) == 0x7E, "%g must saturate to 448", (double)big[i]);
        ck_assert_msg(sy_f32_to_fp8e4m3(-big[i]) == 0xFE, "-%g must saturate to -448", (double)big[i]);
    }
    ck_assert_uint_eq(sy_f32_to_fp8e4m3(nextafterf(448.0f, 0.0f)), 0x7E);
    const uint32_t nans[] = {0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu, 0xFF800001u, 0xFFC00000u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint8_t c = sy_f32_to_fp8e4m3(f32_of(nans[i]));
        ck_assert_msg(fp8_is_nan(c), "NaN 0x%08x became 0x%02x", nans[i], c);
    }
    /* Below half the smallest subnormal (2^-10) everything is zero; 2^-10 itself ties to 0. */
    ck_assert_uint_eq(sy_f32_to_fp8e4m3(ldexpf(1.0f, -10)), 0x00);
    ck_assert_uint_eq(sy_f32_to_fp8e4m3(nextafterf(ldexpf(1.0f, -10), 1.0f)), 0x01);
    ck_assert_uint_eq(sy_f32_to_fp8e4m3(-ldexpf(1.0f, -20)), 0x80);
    ck_assert_uint_eq(sy_f32_to_fp8e4m3(f32_of(1u)), 0x00);
}
END_TEST

START_TEST(fp8_matches_reference_across_f32)
{
    sy_rng rng = {sy_test_seed()};
    /* A dense sweep of the f32 magnitudes that land in fp8's range (2^-11 .. 2^10), an odd stride
     * so that every mantissa pattern class is hit, plus random bit patterns anywhere. */
    uint32_t first = bits_of(ldexpf(1.0f, -11)), last = bits_of(1024.0f);
    for (uint32_t u = first; u < last; u += 4093u) {
        for (int s = 0; s < 2; s++) {
            float x = f32_of(u | (s ? 0x80000000u : 0));
            uint8_t got = sy_f32_to_fp8e4m3(x), want = fp8_reference(x);
            ck_assert_msg(got == want, "%a (0x%08x): got 0x%02x, want 0x%02x", (double)x, bits_of(x), got, want);
        }
    }
    for (int i = 0; i < 200000; i++) {
        float x = f32_of((uint32_t)sy_rng_next(&rng));
        uint8_t got = sy_f32_to_fp8e4m3(x), want = fp8_reference(x);
        if (isnan(x))
            ck_assert_msg(fp8_is_nan(got), "NaN 0x%08x became 0x%02x", bits_of(x), got);
        else
            ck_assert_msg(got == want, "%a (0x%08x): got 0x%02x, want 0x%02x", (double)x, bits_of(x), got, want);
    }
}
END_TEST

/* ---- bf16 -> f32 by value ------------------------------------------------------------------ */

START_TEST(bf16_every_code_decodes_to_its_value)
{
    /* bf16_every_code_round_trips checks the bits (h << 16); this checks the value against the
     * definition (bias 127, 7 fraction bits, subnormals m 2^-133), so that a decode that put the
     * bits somewhere else would fail even if it round-tripped. */
    for (uint32_t c = 0; c < 65536; c++) {
        uint16_t h = (uint16_t)c;
        int e = (h >> 7) & 0xFF, m = h & 0x7F;
        float x = sy_bf16_to_f32(h);
        /* if + ck_abort_msg: ck_assert marks a point per call, slow in a 65536-step loop. */
        if (e == 0xFF) {
            if (m ? !isnan(x) : (!isinf(x) || !!signbit(x) != (h >> 15)))
                ck_abort_msg("bf16 0x%04x decodes to %a", h, (double)x);
            continue;
        }
        if ((double)x != bf16_value_unbounded(h) || !!signbit(x) != (h >> 15)) /* -0 included */
            ck_abort_msg("bf16 0x%04x decodes to %a, want %a", h, (double)x, bf16_value_unbounded(h));
    }
    ck_assert_float_eq(sy_bf16_to_f32(0x3F80), 1.0f);
    ck_assert_float_eq(sy_bf16_to_f32(0xC040), -3.0f);
    ck_assert_double_eq((double)sy_bf16_to_f32(0x0001), ldexp(1.0, -133));
}
END_TEST

/* ---- f16 (IEEE binary16) -> f32 ------------------------------------------------------------ */

/* Value of a non-NaN binary16 code from IEEE 754-2008 3.6 / 3.4: 1 sign, 5 exponent bits (bias 15),
 * 10 fraction bits; exponent 0: subnormal m 2^-24 (= 0.m 2^-14); exponent 31: infinity (m == 0). */
static double f16_value(uint16_t h)
{
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double mag = e == 0x1F ? INFINITY : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -mag : mag;
}

START_TEST(f16_every_code_decodes_to_its_value)
{
    /* sy_f16_to_f32 documents only "exact" (every f16 value is an f32 value), nothing about NaN
     * payloads or the quiet bit: NaN codes are checked for NaN-ness only. */
    int nans = 0, subnormals = 0;
    for (uint32_t c = 0; c < 65536; c++) {
        uint16_t h = (uint16_t)c;
        int e = (h >> 10) & 0x1F, m = h & 0x3FF;
        float x = sy_f16_to_f32(h);
        if (e == 0x1F && m) {
            nans++;
            if (!isnan(x))
                ck_abort_msg("f16 NaN 0x%04x decodes to %a", h, (double)x);
            continue;
        }
        subnormals += e == 0 && m;
        double want = f16_value(h);
        if ((double)x != want || !!signbit(x) != (h >> 15)) /* the sign for -0 */
            ck_abort_msg("f16 0x%04x decodes to %a, want %a", h, (double)x, want);
#if defined(__FLT16_MANT_DIG__)
        /* Second oracle where the compiler has _Float16 (GCC >= 12 on x86-64): its widening. */
        _Float16 hf;
        memcpy(&hf, &h, sizeof hf);
        if (bits_of((float)hf) != bits_of(x))
            ck_abort_msg("f16 0x%04x: 0x%08x, the compiler gives 0x%08x", h, bits_of(x), bits_of((float)hf));
#endif
    }
    ck_assert_int_eq(nans, 2 * 1023);
    ck_assert_int_eq(subnormals, 2 * 1023);
    /* Anchors independent of f16_value, so a slip shared by it and the header still fails. */
    ck_assert_float_eq(sy_f16_to_f32(0x3C00), 1.0f);
    ck_assert_float_eq(sy_f16_to_f32(0xC000), -2.0f);
    ck_assert_float_eq(sy_f16_to_f32(0x3555), 0.333251953125f);
    /* Largest finite; smallest normal 2^-14; largest subnormal 1023 2^-24; smallest subnormal 2^-24. */
    ck_assert_float_eq(sy_f16_to_f32(0x7BFF), 65504.0f);
    ck_assert_float_eq(sy_f16_to_f32(0x0400), 6.103515625e-05f);
    ck_assert_float_eq(sy_f16_to_f32(0x03FF), 6.0975551605224609375e-05f);
    ck_assert_float_eq(sy_f16_to_f32(0x0001), 5.9604644775390625e-08f);
    ck_assert_float_eq(sy_f16_to_f32(0x8001), -5.9604644775390625e-08f);
    ck_assert_uint_eq(bits_of(sy_f16_to_f32(0x8000)), 0x80000000u);
    ck_assert_uint_eq(bits_of(sy_f16_to_f32(0x7C00)), 0x7F800000u);
    ck_assert_uint_eq(bits_of(sy_f16_to_f32(0xFC00)), 0xFF800000u);
}
END_TEST

/* ---- every f32 input of the narrowing conversions ----------------------------------------- */

/* For a non-negative interval [lo, hi) between two adjacent target values, every f32 in it must go
 * to lo below the midpoint, to hi above it, to the even code at it (round to nearest even), and
 * its negation to the same code with the sign bit. Endpoints and midpoints are target values or
 * halfway between two, computed in double from the definitions; all of them are exact f32 values
 * (bf16 has 8 and fp8 4 significant bits), and f32 bit patterns of non-negative numbers order as
 * their values, so each interval is a range of patterns. Returns the first failing pattern or 0. */
typedef struct span {
    uint32_t u0, u_mid, u1;    /* [u0, u1), the midpoint's bits */
    uint32_t below, at, above; /* expected codes, without sign */
} span;

/* A sanitizer build runs these loops some 30 times slower (minutes for 2^32 inputs): it takes every
 * INPUT_STEP-th input of a span, plus both ends and the three around the midpoint, where rounding
 * turns; the ordinary build takes every input. */
#ifdef SY_SANITIZED_BUILD
enum { INPUT_STEP = 61 };
#else
enum { INPUT_STEP = 1 };
#endif

static int bf16_converts(span s, uint32_t u)
{
    uint32_t want = u < s.u_mid ? s.below : u > s.u_mid ? s.above : s.at;
    float x = f32_of(u), nx = f32_of(u | 0x80000000u);
    return sy_f32_to_bf16(x) == want && sy_f32_to_bf16(nx) == (want | 0x8000u) &&
           bits_of(sy_round_bf16(x)) == want << 16;
}

static int fp8_converts(span s, uint32_t u)
{
    uint32_t want = u < s.u_mid ? s.below : u > s.u_mid ? s.above : s.at;
    return sy_f32_to_fp8e4m3(f32_of(u)) == want && sy_f32_to_fp8e4m3(f32_of(u | 0x80000000u)) == (want | 0x80u);
}

static uint32_t check_span(span s, int (*converts)(span, uint32_t))
{
    const uint32_t turning[] = {s.u0, s.u_mid - 1, s.u_mid, s.u_mid + 1, s.u1 - 1};
    for (size_t i = 0; i < sizeof turning / sizeof turning[0]; i++)
        if (turning[i] >= s.u0 && turning[i] < s.u1 && !converts(s, turning[i]))
            return turning[i] ? turning[i] : 0x80000000u;
    for (uint64_t u = s.u0; u < s.u1; u += INPUT_STEP)
        if (!converts(s, (uint32_t)u))
            return u ? (uint32_t)u : 0x80000000u;
    return 0;
}

static uint32_t bf16_check_span(span s)
{
    return check_span(s, bf16_converts);
}

static uint32_t fp8_check_span(span s)
{
    return check_span(s, fp8_converts);
}

static span make_span(double lo, double hi, uint32_t c)
{
    double mid = (lo + hi) / 2;
    ck_assert((double)(float)lo == lo && (double)(float)mid == mid);
    span s = {bits_of((float)lo), bits_of((float)mid), 0, c, (c & 1) ? c + 1 : c, c + 1};
    /* hi = 2^128 (bf16's infinity, unbounded) is no f32: the interval then runs to +inf. */
    s.u1 = hi >= 0x1p128 ? 0x7F800000u : bits_of((float)hi);
    ck_assert(hi >= 0x1p128 || (double)(float)hi == hi);
    return s;
}

START_TEST(bf16_every_f32_rounds_to_nearest_even)
{
    /* All 2^32 inputs: the 0x7F80 intervals below infinity, both signs (the top one rounds to
     * infinity from its midpoint 0x7F7F8000 on, as IEEE overflow under round-to-nearest does),
     * then infinities and every NaN. */
    for (uint32_t c = 0; c < 0x7F80u; c++) {
        span s = make_span(bf16_value_unbounded((uint16_t)c), bf16_value_unbounded((uint16_t)(c + 1)), c);
        uint32_t bad = bf16_check_span(s);
        ck_assert_msg(!bad, "f32 0x%08x (%a) (or its negation): got bf16 0x%04x / 0x%04x, interval of 0x%04x", bad,
                      (double)f32_of(bad), sy_f32_to_bf16(f32_of(bad)), sy_f32_to_bf16(-f32_of(bad)), c);
    }
    ck_assert_uint_eq(sy_f32_to_bf16(INFINITY), 0x7F80);
    ck_assert_uint_eq(sy_f32_to_bf16(-INFINITY), 0xFF80);
    /* NaN stays NaN and quiet (documented), with its sign (as bf16_nan_stays_nan expects). */
    for (uint32_t u = 0x7F800001u; u <= 0x7FFFFFFFu; u += INPUT_STEP)
        for (int s = 0; s < 2; s++) {
            uint32_t n = s ? u | 0x80000000u : u;
            uint16_t h = sy_f32_to_bf16(f32_of(n));
            if (((h >> 7) & 0xFF) != 0xFF || !(h & 0x40) || (h & 0x8000u) != ((n >> 16) & 0x8000u))
                ck_abort_msg("NaN 0x%08x became 0x%04x (want a quiet NaN of the same sign)", n, h);
            if (!isnan(sy_round_bf16(f32_of(n))))
                ck_abort_msg("sy_round_bf16(NaN 0x%08x) is not NaN", n);
        }
}
END_TEST

START_TEST(fp8_every_f32_rounds_to_nearest_even)
{
    /* All 2^32 inputs: 0x7E intervals between finite codes, then [448, +inf] saturating to 0x7E
     * (infinity included, as documented), both signs; then every NaN. */
    for (uint32_t c = 0; c < 0x7Eu; c++) {
        span s = make_span(fp8_value((uint8_t)c), fp8_value((uint8_t)(c + 1)), c);
        uint32_t bad = fp8_check_span(s);
        ck_assert_msg(!bad, "f32 0x%08x (%a) (or its negation): got fp8 0x%02x / 0x%02x, interval of 0x%02x", bad,
                      (double)f32_of(bad), sy_f32_to_fp8e4m3(f32_of(bad)), sy_f32_to_fp8e4m3(-f32_of(bad)), c);
    }
    span sat = {bits_of(448.0f), 0xFFFFFFFFu, 0x7F800001u, 0x7E, 0x7E, 0x7E};
    uint32_t bad = fp8_check_span(sat);
    ck_assert_msg(!bad, "f32 0x%08x (%a) (or its negation) must saturate to 448: got 0x%02x / 0x%02x", bad,
                  (double)f32_of(bad), sy_f32_to_fp8e4m3(f32_of(bad)), sy_f32_to_fp8e4m3(-f32_of(bad)));
    for (uint32_t u = 0x7F800001u; u <= 0x7FFFFFFFu; u += INPUT_STEP)
        if (!fp8_is_nan(sy_f32_to_fp8e4m3(f32_of(u))) || !fp8_is_nan(sy_f32_to_fp8e4m3(f32_of(u | 0x80000000u))))
            ck_abort_msg("NaN 0x%08x (or its negation) became 0x%02x / 0x%02x", u, sy_f32_to_fp8e4m3(f32_of(u)),
                         sy_f32_to_fp8e4m3(f32_of(u | 0x80000000u)));
}
END_TEST

/* ---- f32 <-> bits ------------------------------------------------------------------------- */

START_TEST(f32_bit_casts_are_exact)
{
    /* Known encodings (IEEE binary32), then round trips that must keep every bit, signalling NaNs
     * included (a cast through an x87 register would quiet them). */
    ck_assert_uint_eq(sy_f32_bits(1.0f), 0x3F800000u);
    ck_assert_uint_eq(sy_f32_bits(-0.0f), 0x80000000u);
    ck_assert_uint_eq(sy_f32_bits(-2.5f), 0xC0200000u);
    ck_assert_uint_eq(sy_f32_bits(INFINITY), 0x7F800000u);
    ck_assert_float_eq(sy_f32_from_bits(0x3F800000u), 1.0f);
    ck_assert_float_eq(sy_f32_from_bits(0x7F7FFFFFu), 3.40282346638528859812e+38f);
    ck_assert_double_eq((double)sy_f32_from_bits(0x00000001u), ldexp(1.0, -149));
    ck_assert(isnan(sy_f32_from_bits(0x7F800001u)));
    const uint32_t fixed[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu,
                              0x7F800000u, 0xFF800000u, 0x7F800001u, 0x7FBFFFFFu, 0x7FC00000u, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        ck_assert_uint_eq(sy_f32_bits(sy_f32_from_bits(fixed[i])), fixed[i]);
    sy_rng rng = {sy_test_seed()};
    for (int i = 0; i < 1000000; i++) {
        uint32_t u = (uint32_t)sy_rng_next(&rng);
        if (sy_f32_bits(sy_f32_from_bits(u)) != u || bits_of(sy_f32_from_bits(u)) != u || sy_f32_bits(f32_of(u)) != u)
            ck_abort_msg("bits 0x%08x do not survive the casts", u);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("numeric");
    TCase *bf16 = tcase_create("bf16");
    tcase_add_test(bf16, bf16_every_code_round_trips);
    tcase_add_test(bf16, bf16_rounds_to_nearest_even);
    tcase_add_test(bf16, bf16_nan_stays_nan);
    tcase_add_test(bf16, bf16_every_code_decodes_to_its_value);
    suite_add_tcase(s, bf16);
    TCase *fp8 = tcase_create("fp8_e4m3");
    tcase_add_test(fp8, fp8_every_code_decodes_and_round_trips);
    tcase_add_test(fp8, fp8_midpoints_round_to_even);
    tcase_add_test(fp8, fp8_saturates_and_keeps_nan);
    tcase_add_test(fp8, fp8_matches_reference_across_f32);
    suite_add_tcase(s, fp8);
    TCase *f16 = tcase_create("f16");
    tcase_add_test(f16, f16_every_code_decodes_to_its_value);
    suite_add_tcase(s, f16);
    TCase *bits = tcase_create("f32_bits");
    tcase_add_test(bits, f32_bit_casts_are_exact);
    suite_add_tcase(s, bits);
    /* Every f32 input, 2^32 conversions per test: 2 to 3 s of CPU each, over Check's default 4 s
     * when the machine is busy (ctest sets CK_DEFAULT_TIMEOUT=300; this is for direct runs). */
    TCase *every = tcase_create("every_f32");
    tcase_set_timeout(every, 120);
    tcase_add_test(every, bf16_every_f32_rounds_to_nearest_even);
    tcase_add_test(every, fp8_every_f32_rounds_to_nearest_even);
    suite_add_tcase(s, every);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
