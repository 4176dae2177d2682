/* MXFP4 decoding (plugins/common/sy_mxfp4.h) against the format's definition, exhaustively: every
 * byte under every scale byte. The expected values are written out here from the OCP MX
 * specification, not derived from the code under test. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "mxfp4_decode_cpu.h"
#include "sy_mxfp4.h"

/* E2M1 by code: OCP MX v1.0 table 5 (and gpt-oss weights.py FP4_VALUES). */
static const double e2m1[16] = {+0.0, 0.5,  1.0,  1.5,  2.0,  3.0,  4.0,  6.0,
                                -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

START_TEST(every_code)
{
    for (uint32_t code = 0; code < 16; code++) {
        float v = sy_e2m1_to_f32(code);
        ck_assert_msg((double)v == e2m1[code], "code %u: %g, expected %g", code, (double)v, e2m1[code]);
        ck_assert_msg(!!signbit(v) == (code >= 8), "code %u: sign bit %d", code, signbit(v) != 0);
    }
}
END_TEST

START_TEST(every_scale)
{
    for (uint32_t e = 0; e < 255; e++) {
        float s = sy_e8m0_to_f32((uint8_t)e);
        ck_assert_msg((double)s == ldexp(1.0, (int)e - 127), "scale byte %u: %a, expected 2^%d", e, (double)s,
                      (int)e - 127);
    }
    ck_assert_msg(isnan(sy_e8m0_to_f32(255)), "scale byte 255 must decode to NaN (OCP MX E8M0)");
    ck_assert_uint_eq(bits(sy_e8m0_to_f32(SY_E8M0_ONE)), bits(1.0f));
}
END_TEST

/* Every byte in both nibble positions under every scale: 65536 blocks' worth of elements. */
START_TEST(every_byte_under_every_scale)
{
    uint8_t block[SY_MXFP4_BLOCK_BYTES];
    float out[SY_MXFP4_BLOCK];
    for (uint32_t e = 0; e < 256; e++)
        for (uint32_t b = 0; b < 256; b++) {
            /* The byte under test sits at a different position each time so all 16 slots are covered. */
            uint32_t slot = (b + e) % SY_MXFP4_BLOCK_BYTES;
            memset(block, 0, sizeof block);
            block[slot] = (uint8_t)b;
            sy_mxfp4_decode_block(block, (uint8_t)e, out);
            double scale = ldexp(1.0, (int)e - 127);
            for (uint32_t j = 0; j < SY_MXFP4_BLOCK; j++) {
                uint32_t byte = block[j / 2];
                double want = e2m1[(j % 2 ? byte >> 4 : byte) & 0xF] * scale;
                float got = sy_mxfp4_element(block, (uint8_t)e, j);
                /* (float)want: the true value rounded to f32, +-inf past its range (scale bytes 253, 254).
                 * Plain ifs: a ck_assert per element would cost a pipe write each under fork mode. */
                if (e == 255) {
                    if (!isnan(got) || !isnan(out[j]))
                        ck_abort_msg("byte %u scale 255 element %u: %g, expected NaN", b, j, (double)got);
                    continue;
                }
                if (bits(got) != bits((float)want) || bits(got) != bits(out[j]) || !!signbit(got) != !!signbit(want))
                    ck_abort_msg("byte 0x%02x at %u, scale %u, element %u: element %a, block %a, expected %a", b, slot,
                                 e, j, (double)got, (double)out[j], want);
            }
        }
}
END_TEST

/* Low nibble = even element: the byte 0x71 holds 0.5 (code 1) first and 6 (code 7) second. */
START_TEST(nibble_order)
{
    uint8_t block[SY_MXFP4_BLOCK_BYTES] = {0x71};
    ck_assert(sy_mxfp4_element(block, SY_E8M0_ONE, 0) == 0.5f);
    ck_assert(sy_mxfp4_element(block, SY_E8M0_ONE, 1) == 6.0f);
    ck_assert(sy_mxfp4_element(block, SY_E8M0_ONE + 3, 1) == 48.0f);
}
END_TEST

/* The host decoders (table and, where the CPU has them, AVX2 and AVX-512) against sy_mxfp4.h: all 256 bytes at every
 * position of a block, under all 256 scales, bit for bit (NaN for the NaN scale). */
START_TEST(host_decoders_match_exhaustively)
{
    enum { N = 256 * 16 };
    static uint8_t blocks[N * SY_MXFP4_BLOCK_BYTES], scales[N];
    static float out[N * SY_MXFP4_BLOCK];
    for (int level = SY_MXFP4_DECODE_TABLE; level <= SY_MXFP4_DECODE_AVX512; level++) {
        sy_mxfp4_cpu_decoder d;
        sy_mxfp4_cpu_decoder_init(&d, level);
        if (d.level != level)
            fprintf(stderr, "decoder level %d is not supported here; %s checked instead\n", level,
                    sy_mxfp4_cpu_decoder_name(&d));
        for (uint32_t e = 0; e < 256; e++) {
            /* Block i holds byte (i + 17 k) % 256 at position k: every byte lands in every slot. */
            for (uint32_t i = 0; i < N; i++) {
                scales[i] = (uint8_t)e;
                for (uint32_t k = 0; k < SY_MXFP4_BLOCK_BYTES; k++)
                    blocks[i * SY_MXFP4_BLOCK_BYTES + k] = (uint8_t)((i + 17 * k) % 256);
            }
            sy_mxfp4_cpu_decode_run(&d, blocks, scales, N, out);
            for (uint32_t i = 0; i < N; i++)
                for (uint32_t j = 0; j < SY_MXFP4_BLOCK; j++) {
                    float want = sy_mxfp4_element(blocks + i * SY_MXFP4_BLOCK_BYTES, (uint8_t)e, j);
                    float got = out[i * SY_MXFP4_BLOCK + j];
                    if (e == 255 ? !isnan(got) : bits(got) != bits(want))
                        ck_abort_msg("%s decoder: block %u scale %u element %u: %a, expected %a",
                                     sy_mxfp4_cpu_decoder_name(&d), i, e, j, (double)got, (double)want);
                }
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mxfp4_decode");
    TCase *tc = tcase_create("decode");
    tcase_add_test(tc, every_code);
    tcase_add_test(tc, every_scale);
    tcase_add_test(tc, every_byte_under_every_scale);
    tcase_add_test(tc, nibble_order);
    tcase_add_test(tc, host_decoders_match_exhaustively);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
