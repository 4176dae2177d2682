/* sy_fast_div.h against C's own division: every divisor below 2^16 and the divisors around every
 * power of two up to 2^31, each with the numerators where a quotient changes (multiples of the
 * divisor and their neighbours), the largest allowed numerator, and fresh random ones. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>

#include "sy_fast_div.h"
#include "sy_test.h"

static void check_numerator(sy_fast_div f, uint32_t n)
{
    if (n >= SY_FAST_DIV_NUMERATOR_LIMIT)
        return;
    const uint32_t q = sy_fast_div_quot(f, n), r = sy_fast_div_rem(f, n);
    if (q != n / f.divisor || r != n % f.divisor)
        ck_abort_msg("%u / %u: got %u rem %u, want %u rem %u", n, f.divisor, q, r, n / f.divisor, n % f.divisor);
}

static void check_divisor(sy_rng *rng, uint32_t d, int random_numerators)
{
    const sy_fast_div f = sy_fast_div_of(d);
    ck_assert_uint_eq(f.divisor, d);
    const uint32_t last = SY_FAST_DIV_NUMERATOR_LIMIT - 1u;
    check_numerator(f, 0u);
    check_numerator(f, last);
    /* the quotient's steps near 0, near the limit, and at random multiples */
    const uint32_t top = last / d;
    for (uint32_t k = 0; k < 4; k++) {
        const uint32_t multiples[3] = {k, top - (k < top ? k : top), sy_rng_below(rng, top + 1u)};
        for (int i = 0; i < 3; i++) {
            const uint64_t m = (uint64_t)multiples[i] * d;
            for (int delta = -1; delta <= 1; delta++)
                if ((int64_t)m + delta >= 0 && (uint64_t)((int64_t)m + delta) <= last)
                    check_numerator(f, (uint32_t)((int64_t)m + delta));
        }
    }
    for (int i = 0; i < random_numerators; i++)
        check_numerator(f, sy_rng_below(rng, SY_FAST_DIV_NUMERATOR_LIMIT));
}

START_TEST(every_small_divisor)
{
    const uint64_t seed = sy_test_seed();
    sy_rng rng = {seed};
    printf("fast_div small divisors: seed %llu\n", (unsigned long long)seed);
    for (uint32_t d = 1; d < 65536; d++) {
        check_divisor(&rng, d, 64);
        /* the numerators a kernel divides most: row and tile indices */
        const sy_fast_div f = sy_fast_div_of(d);
        for (uint32_t n = 0; n < 512; n++)
            check_numerator(f, n);
    }
}
END_TEST

START_TEST(divisors_around_powers_of_two)
{
    const uint64_t seed = sy_test_seed();
    sy_rng rng = {seed};
    printf("fast_div powers of two: seed %llu\n", (unsigned long long)seed);
    for (uint32_t l = 1; l <= 31; l++) {
        const uint32_t p = 1u << l;
        for (int delta = -3; delta <= 3; delta++) {
            const int64_t d = (int64_t)p + delta;
            if (d >= 1 && d <= (int64_t)1 << 31)
                check_divisor(&rng, (uint32_t)d, 4096);
        }
    }
    for (int i = 0; i < 4096; i++)
        check_divisor(&rng, 1u + sy_rng_below(&rng, 1u << 31), 16);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fast_div");
    TCase *tc = tcase_create("fast_div");
    tcase_add_test(tc, every_small_divisor);
    tcase_add_test(tc, divisors_around_powers_of_two);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
