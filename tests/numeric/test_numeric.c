/* sy_numeric.h against references computed here from the format definitions (OCP OFP8 rev 1.0 for
 * e4m3fn, IEEE binary32 truncated to 16 bits for bf16) in double arithmetic, never through the
 * header's bit tricks: every bf16 and every fp8 code, every rounding midpoint, saturation, NaN. */
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

int main(void)
{
    Suite *s = suite_create("numeric");
    TCase *bf16 = tcase_create("bf16");
    tcase_add_test(bf16, bf16_every_code_round_trips);
    tcase_add_test(bf16, bf16_rounds_to_nearest_even);
    tcase_add_test(bf16, bf16_nan_stays_nan);
    suite_add_tcase(s, bf16);
    TCase *fp8 = tcase_create("fp8_e4m3");
    tcase_add_test(fp8, fp8_every_code_decodes_and_round_trips);
    tcase_add_test(fp8, fp8_midpoints_round_to_even);
    tcase_add_test(fp8, fp8_saturates_and_keeps_nan);
    tcase_add_test(fp8, fp8_matches_reference_across_f32);
    suite_add_tcase(s, fp8);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
