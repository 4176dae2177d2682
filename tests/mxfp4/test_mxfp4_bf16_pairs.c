/* The e2m1 -> bf16 bit moves of the tensor-core MoE product (plugins/common/mxfp4_bf16_pairs.h),
 * run on the host: every code in every position of a word (in the checkpoint's order, put in the
 * tensor-core order as the CUDA prepare does), the other seven random, against the
 * E2M1 table of the OCP MX specification written out here (each value times 2^-126, what the bit
 * moves spell); and the activations' slots that go with them. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mxfp4_bf16_pairs.h"
#include "sy_test.h"

/* E2M1 by code: OCP MX v1.0 table 5. */
static const float e2m1[16] = {+0.0f, 0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                               -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

/* bf16 half h (0 low, 1 high) of a pair as the f32 with the same bits above bit 15. */
static uint32_t half_as_f32_bits(uint32_t pair, uint32_t h)
{
    return (pair >> 16 * h & 0xFFFFu) << 16;
}

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

START_TEST(every_code_in_every_position)
{
    const uint64_t seed = sy_test_seed();
    sy_rng rng = {seed};
    for (uint32_t pos = 0; pos < 8; pos++)
        for (uint32_t code = 0; code < 16; code++)
            for (int trial = 0; trial < 64; trial++) {
                uint32_t w = (uint32_t)sy_rng_next(&rng);
                w = (w & ~(0xFu << 4 * pos)) | code << 4 * pos;
                uint32_t r[4] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
                /* w is in the checkpoint's order; the CUDA prepare stores it in the pair order. */
                sy_e2m1x8_to_bf16_pairs_tiny(sy_e2m1x8_to_pair_order(w), r);
                /* Code n of the word is half n / 4 of pair n % 4: pairs (0, 4), (1, 5), (2, 6), (3, 7). */
                for (uint32_t n = 0; n < 8; n++) {
                    const uint32_t c = w >> 4 * n & 0xFu, got = half_as_f32_bits(r[n % 4], n / 4);
                    /* Exact in f32 (down to 2^-149), so the bf16 bits are the top half of its bits. */
                    const float want = ldexpf(e2m1[c], -126);
                    ck_assert_msg(got == f32_bits(want),
                                  "seed %llu word %08x: code %u at position %u gave bf16 %04x, expected %g * 2^-126 (%08x)",
                                  (unsigned long long)seed, w, c, n, got >> 16, (double)e2m1[c], f32_bits(want));
                }
            }
}
END_TEST

START_TEST(pair_order_moves_every_bit_once)
{
    /* A permutation of the word's bits: each single bit lands on one bit, no two on the same. */
    uint32_t seen = 0;
    for (uint32_t b = 0; b < 32; b++) {
        const uint32_t moved = sy_e2m1x8_to_pair_order(1u << b);
        ck_assert_msg(moved != 0 && (moved & (moved - 1u)) == 0, "bit %u became %08x", b, moved);
        ck_assert_msg((seen & moved) == 0, "bit %u lands on %08x, taken by an earlier bit", b, moved);
        seen |= moved;
    }
    ck_assert_uint_eq(seen, 0xFFFFFFFFu);
}
END_TEST

START_TEST(activation_slots_follow_the_code_order)
{
    /* Eight bf16 written at their slots, then read as four words (little-endian pairs): word j must
     * hold elements j and j + 4, as code j and j + 4 of a weight word sit in pair j. */
    const uint64_t seed = sy_test_seed();
    sy_rng rng = {seed};
    uint32_t seen = 0;
    for (uint32_t i = 0; i < 8; i++)
        seen |= 1u << sy_e2m1_pair_slot(i);
    ck_assert_msg(seen == 0xFFu, "the slots of 0 .. 7 are not a permutation (%02x)", seen);
    for (int trial = 0; trial < 1000; trial++) {
        uint16_t k[8], slots[8];
        for (uint32_t i = 0; i < 8; i++) {
            k[i] = (uint16_t)sy_rng_next(&rng);
            slots[sy_e2m1_pair_slot(i)] = k[i];
        }
        for (int j = 0; j < 4; j++) {
            const uint32_t word = (uint32_t)slots[2 * j + 1] << 16 | slots[2 * j];
            ck_assert_msg(word == ((uint32_t)k[j + 4] << 16 | k[j]), "seed %llu: pair %d is %08x, expected (%04x, %04x)",
                          (unsigned long long)seed, j, word, k[j], k[j + 4]);
        }
    }
}
END_TEST

START_TEST(warpgroup_slots_follow_the_fragments)
{
    /* 32 bf16 of a block written at their warpgroup slots, then read as wgmma's B columns: column q
     * of k-step s at slot 16 s + q. Lane c's A registers hold columns (2c, 2c + 1) and (2c + 8,
     * 2c + 9) of step s, which must be the pairs 2s and 2s + 1 of its word c: k = 8c + p and
     * 8c + p + 4. */
    uint32_t seen = 0;
    for (uint32_t i = 0; i < 32; i++)
        seen |= 1u << sy_e2m1_warpgroup_slot(i);
    ck_assert_msg(seen == 0xFFFFFFFFu, "the slots of 0 .. 31 are not a permutation (%08x)", seen);
    uint32_t k_at[32];
    for (uint32_t i = 0; i < 32; i++)
        k_at[sy_e2m1_warpgroup_slot(i)] = i;
    for (uint32_t c = 0; c < 4; c++)
        for (uint32_t s = 0; s < 2; s++)
            for (uint32_t half = 0; half < 2; half++) {
                const uint32_t p = 2u * s + half, col = 2u * c + 8u * half;
                ck_assert_msg(k_at[16 * s + col] == 8 * c + p && k_at[16 * s + col + 1] == 8 * c + p + 4,
                              "lane %u step %u columns %u, %u hold k %u, %u, expected %u, %u", c, s, col, col + 1,
                              k_at[16 * s + col], k_at[16 * s + col + 1], 8 * c + p, 8 * c + p + 4);
            }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mxfp4_bf16_pairs");
    TCase *tc = tcase_create("bit_moves");
    tcase_add_test(tc, every_code_in_every_position);
    tcase_add_test(tc, pair_order_moves_every_bit_once);
    tcase_add_test(tc, activation_slots_follow_the_code_order);
    tcase_add_test(tc, warpgroup_slots_follow_the_fragments);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
