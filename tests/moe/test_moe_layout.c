/* The prepared MXFP4 layouts against the AITER formulas, element by element. The expected buffers
 * are built here the way the reference builds them: de-interleave and pad the checkpoint, then a
 * torch-style view + permute + contiguous with the shapes and permutations of aiter/ops/shuffle.py
 * as recorded in shared/reference/moe-mxfp4-norm.md - not through moe_layout.h's closed forms. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "moe_layout.h"
#include "moe_checkpoint.h"
#include "moe_mxfp4_cpu.h"
#include "mxfp4_decode_cpu.h"
#include "sy_test.h"

/* dst = src.view(shape).permute(perm).contiguous(), on bytes. */
static void view_permute(const uint8_t *src, int nd, const int64_t *shape, const int *perm, uint8_t *dst)
{
    int64_t stride[8], pshape[8], pstride[8], idx[8] = {0}, total = 1;
    stride[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--)
        stride[i] = stride[i + 1] * shape[i + 1];
    for (int i = 0; i < nd; i++) {
        pshape[i] = shape[perm[i]];
        pstride[i] = stride[perm[i]];
        total *= shape[i];
    }
    for (int64_t n = 0; n < total; n++) {
        int64_t off = 0;
        for (int i = 0; i < nd; i++)
            off += idx[i] * pstride[i];
        dst[n] = src[off];
        for (int i = nd - 1; i >= 0 && ++idx[i] == pshape[i]; i--)
            idx[i] = 0;
    }
}

static uint8_t *prepare(const moe_checkpoint *c, uint32_t layout, uint64_t *bytes)
{
    sy_moe_shape shape = {sizeof shape, c->E, c->H, c->I, 2, 1.702f, 7.0f, 0};
    sy_error err = {{0}};
    ck_assert_msg(sy_moe_mxfp4_prepared_bytes(&shape, bytes, &err) == SY_OK, "%s", err.msg);
    uint8_t *buf = malloc(*bytes);
    sy_poison_bytes(buf, *bytes);
    void *ctx = NULL;
    ck_assert_msg(sy_moe_mxfp4_cpu_init(NULL, layout, &ctx, &err) == SY_OK, "%s", err.msg);
    sy_moe_prepare_args a = moe_checkpoint_prepare_args(c, &shape, buf);
    ck_assert_msg(sy_moe_mxfp4_cpu_prepare(ctx, NULL, &a, &err) == SY_OK, "%s", err.msg);
    sy_moe_mxfp4_cpu_fini(ctx);
    return buf;
}

/* Padded copy of one byte matrix [E][rows][cols] -> [E][rows_p][cols_p], filled with `pad`; with
 * `interleaved`, rows are de-interleaved on the way (row g*rows_p/2 + i <- row 2i + g). */
static uint8_t *deinterleave_pad(const uint8_t *src, uint32_t E, uint32_t rows, uint32_t cols, uint32_t rows_p,
                                 uint32_t cols_p, int interleaved, uint8_t pad)
{
    uint8_t *dst = malloc((size_t)E * rows_p * cols_p);
    memset(dst, pad, (size_t)E * rows_p * cols_p);
    for (uint32_t e = 0; e < E; e++)
        for (uint32_t r = 0; r < rows; r++) {
            uint32_t to = interleaved ? (r % 2) * (rows_p / 2) + r / 2 : r;
            memcpy(dst + ((size_t)e * rows_p + to) * cols_p, src + ((size_t)e * rows + r) * cols, cols);
        }
    return dst;
}

static void expect_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *what, uint32_t layout)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            ck_abort_msg("layout %u, %s: byte %zu is 0x%02x, the reference formula gives 0x%02x", layout, what, i,
                         got[i], want[i]);
}

static void check_against_reference(const moe_checkpoint *c, uint32_t layout)
{
    uint64_t bytes;
    uint8_t *buf = prepare(c, layout, &bytes);
    sy_moe_dims d = sy_moe_dims_of(c->E, c->H, c->I);
    sy_moe_sections sec = sy_moe_sections_of(&d);
    const int64_t E = c->E, Hp = c->Hp, Ip = c->Ip, kb13 = Hp / 2, kb2 = Ip / 2, ks13 = Hp / 32, ks2 = Ip / 32;

    uint8_t *w13 = deinterleave_pad(c->w13_blocks, c->E, 2 * c->I, c->H / 2, 2 * c->Ip, (uint32_t)kb13, 1, 0);
    uint8_t *s13 = deinterleave_pad(c->w13_scales, c->E, 2 * c->I, c->H / 32, 2 * c->Ip, (uint32_t)ks13, 1, 0x7F);
    uint8_t *w2 = deinterleave_pad(c->w2_blocks, c->E, c->H, c->I / 2, c->Hp, (uint32_t)kb2, 0, 0);
    uint8_t *s2 = deinterleave_pad(c->w2_scales, c->E, c->H, c->I / 32, c->Hp, (uint32_t)ks2, 0, 0x7F);
    uint8_t *want = malloc(sec.total);

    if (layout == SY_MOE_GATE_UP_SEPARATED) {
        /* shuffle_weight(x, (16,16)): view(-1, N/16, 16, Kb/32, 2, 16).permute(0,1,3,4,2,5) */
        const int pw[6] = {0, 1, 3, 4, 2, 5};
        int64_t v13[6] = {E, 2 * Ip / 16, 16, kb13 / 32, 2, 16}, v2[6] = {E, Hp / 16, 16, kb2 / 32, 2, 16};
        view_permute(w13, 6, v13, pw, want);
        expect_bytes(buf + sec.w13_blocks, want, (size_t)E * 2 * Ip * kb13, "w13 blocks", layout);
        view_permute(w2, 6, v2, pw, want);
        expect_bytes(buf + sec.w2_blocks, want, (size_t)E * Hp * kb2, "w2 blocks", layout);
        /* e8m0_shuffle on the 2-D [E*N, K/32]: view(sm/32, 2, 16, sn/8, 2, 4).permute(0,3,5,2,4,1) */
        const int ps[6] = {0, 3, 5, 2, 4, 1};
        int64_t u13[6] = {E * 2 * Ip / 32, 2, 16, ks13 / 8, 2, 4}, u2[6] = {E * Hp / 32, 2, 16, ks2 / 8, 2, 4};
        view_permute(s13, 6, u13, ps, want);
        expect_bytes(buf + sec.w13_scales, want, (size_t)E * 2 * Ip * ks13, "w13 scales", layout);
        view_permute(s2, 6, u2, ps, want);
        expect_bytes(buf + sec.w2_scales, want, (size_t)E * Hp * ks2, "w2 scales", layout);
    } else {
        /* shuffle_weight_a16w4(w, 16, gate_up=True): view(E,2,N0,16,K0,4,16).permute(0,2,1,4,5,3,6) */
        const int p13[7] = {0, 2, 1, 4, 5, 3, 6}, p2[6] = {0, 1, 3, 4, 2, 5};
        int64_t v13[7] = {E, 2, Ip / 16, 16, kb13 / 64, 4, 16}, v2[6] = {E, Hp / 16, 16, kb2 / 64, 4, 16};
        view_permute(w13, 7, v13, p13, want);
        expect_bytes(buf + sec.w13_blocks, want, (size_t)E * 2 * Ip * kb13, "w13 blocks", layout);
        /* gate_up=False: view(E,N0,16,K0,4,16).permute(0,1,3,4,2,5) */
        view_permute(w2, 6, v2, p2, want);
        expect_bytes(buf + sec.w2_blocks, want, (size_t)E * Hp * kb2, "w2 blocks", layout);
        /* shuffle_scale_a16w4: gate_up=True view(E,2,N1,16,K1,2,4).permute(0,2,4,6,3,5,1), N1 = n/32 */
        const int q13[7] = {0, 2, 4, 6, 3, 5, 1}, q2[7] = {0, 1, 4, 6, 3, 5, 2};
        int64_t u13[7] = {E, 2, 2 * Ip / 32, 16, ks13 / 8, 2, 4}, u2[7] = {E, Hp / 32, 2, 16, ks2 / 8, 2, 4};
        view_permute(s13, 7, u13, q13, want);
        expect_bytes(buf + sec.w13_scales, want, (size_t)E * 2 * Ip * ks13, "w13 scales", layout);
        /* gate_up=False view(E,N1,2,16,K1,2,4).permute(0,1,4,6,3,5,2) */
        view_permute(s2, 7, u2, q2, want);
        expect_bytes(buf + sec.w2_scales, want, (size_t)E * Hp * ks2, "w2 scales", layout);
    }

    /* Row tops: each checkpoint row's largest scale byte but 0xFF, at its tile-order row (for
     * INTERLEAVE gate and up tiles of 16 alternate: de-interleaved row g*Ip + i at 32 (i/16) + 16 g +
     * i%16), 0x7F for padding rows. */
    for (int w13m = 0; w13m < 2; w13m++) {
        const int64_t rows_p = w13m ? 2 * Ip : Hp, ck_rows = w13m ? 2 * c->I : c->H;
        const int64_t per_row = w13m ? c->H / 32 : c->I / 32;
        const uint8_t *ck = w13m ? c->w13_scales : c->w2_scales;
        memset(want, 0x7F, (size_t)(E * rows_p));
        for (int64_t e = 0; e < E; e++)
            for (int64_t cr = 0; cr < ck_rows; cr++) {
                int top = -1;
                for (int64_t j = 0; j < per_row; j++) {
                    const int v = ck[(e * ck_rows + cr) * per_row + j];
                    if (v != 0xFF && v > top)
                        top = v;
                }
                int64_t q = cr;
                if (w13m) {
                    const int64_t g = cr % 2, i = cr / 2;
                    q = layout == SY_MOE_GATE_UP_INTERLEAVE ? 32 * (i / 16) + 16 * g + i % 16 : g * Ip + i;
                }
                want[e * rows_p + q] = (uint8_t)(top < 0 ? 0x7F : top);
            }
        expect_bytes(buf + (w13m ? sec.w13_row_top : sec.w2_row_top), want, (size_t)(E * rows_p),
                     w13m ? "w13 row tops" : "w2 row tops", layout);
    }

    /* Biases: de-interleaved, zero-padded, f32, the same for both layouts. */
    const float *b13 = (const float *)(buf + sec.w13_bias), *b2 = (const float *)(buf + sec.w2_bias);
    for (int64_t e = 0; e < E; e++) {
        for (int64_t g = 0; g < 2; g++)
            for (int64_t i = 0; i < Ip; i++) {
                float w = i < c->I ? c->w13_bias[(e * c->I + i) * 2 + g] : 0.0f;
                ck_assert_msg(b13[(e * 2 + g) * Ip + i] == w, "layout %u: b13[%lld][%lld][%lld]", layout, (long long)e,
                              (long long)g, (long long)i);
            }
        for (int64_t n = 0; n < Hp; n++)
            ck_assert(b2[e * Hp + n] == (n < c->H ? c->w2_bias[e * c->H + n] : 0.0f));
    }
    sy_moe_prepared_header h;
    memcpy(&h, buf, sizeof h);
    ck_assert_uint_eq(h.magic, SY_MOE_PREPARED_MAGIC);
    ck_assert_uint_eq(h.gate_up_layout, layout);
    ck_assert_uint_eq(h.hidden_padded, c->Hp);
    ck_assert_uint_eq(h.intermediate_padded, c->Ip);
    free(want);
    free(w13);
    free(s13);
    free(w2);
    free(s2);
    free(buf);
}

/* Several experts, K a multiple of 256 but not of 512 after padding (736 -> 768, 1056 -> 1280), row
 * counts that are not powers of two; and a shape that needs no hidden padding. */
static const uint32_t shapes[][3] = {{3, 736, 1056}, {2, 256, 288}};

START_TEST(shuffles_match_reference_formulas)
{
    sy_rng rng = {sy_test_seed()};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        moe_checkpoint c = moe_checkpoint_random(&rng, shapes[s][0], shapes[s][1], shapes[s][2], 0, 255);
        check_against_reference(&c, SY_MOE_GATE_UP_SEPARATED);
        check_against_reference(&c, SY_MOE_GATE_UP_INTERLEAVE);
        moe_checkpoint_free(&c);
    }
}
END_TEST

START_TEST(unprepare_inverts_prepare)
{
    sy_rng rng = {sy_test_seed()};
    const uint32_t layouts[2] = {SY_MOE_GATE_UP_INTERLEAVE, SY_MOE_GATE_UP_SEPARATED};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        moe_checkpoint c = moe_checkpoint_random(&rng, shapes[s][0], shapes[s][1], shapes[s][2], 0, 255);
        size_t n13 = (size_t)c.E * 2 * c.I * (c.H / 32), n2 = (size_t)c.E * c.H * (c.I / 32);
        for (int l = 0; l < 2; l++) {
            uint64_t bytes;
            uint8_t *buf = prepare(&c, layouts[l], &bytes);
            moe_checkpoint back = moe_checkpoint_random(&rng, c.E, c.H, c.I, 0, 255); /* storage, overwritten */
            sy_error err = {{0}};
            ck_assert_msg(sy_moe_mxfp4_cpu_unprepare(buf, back.w13_blocks, back.w13_scales, back.w13_bias,
                                                     back.w2_blocks, back.w2_scales, back.w2_bias, &err) == SY_OK,
                          "%s", err.msg);
            ck_assert(memcmp(back.w13_blocks, c.w13_blocks, n13 * 16) == 0);
            ck_assert(memcmp(back.w13_scales, c.w13_scales, n13) == 0);
            ck_assert(memcmp(back.w2_blocks, c.w2_blocks, n2 * 16) == 0);
            ck_assert(memcmp(back.w2_scales, c.w2_scales, n2) == 0);
            ck_assert(memcmp(back.w13_bias, c.w13_bias, sizeof(float) * c.E * 2 * c.I) == 0);
            ck_assert(memcmp(back.w2_bias, c.w2_bias, sizeof(float) * c.E * c.H) == 0);
            /* A buffer whose codes are in the CUDA prepare's order is refused, never misread. */
            sy_moe_prepared_header h;
            memcpy(&h, buf, sizeof h);
            ck_assert_uint_eq(h.code_order, SY_MOE_CODES_CHECKPOINT);
            h.code_order = SY_MOE_CODES_TENSOR_PAIRS;
            memcpy(buf, &h, sizeof h);
            ck_assert(sy_moe_mxfp4_cpu_unprepare(buf, back.w13_blocks, back.w13_scales, back.w13_bias, back.w2_blocks,
                                                 back.w2_scales, back.w2_bias, &err) == SY_E_INVALID);
            ck_assert_msg(strstr(err.msg, "tensor-core order") != NULL, "%s", err.msg);
            moe_checkpoint_free(&back);
            free(buf);
        }
        moe_checkpoint_free(&c);
    }
}
END_TEST

/* The closed-form row maps are inverse bijections onto [0, 2Ip), and GUGU really alternates. */
START_TEST(w13_row_maps_are_inverse)
{
    const uint32_t Ip = 768;
    uint8_t *seen = calloc(2 * Ip, 1);
    for (uint32_t r = 0; r < 2 * Ip; r++) {
        uint32_t q = sy_moe_w13_tile_row(SY_MOE_GATE_UP_INTERLEAVE, r, Ip);
        ck_assert_uint_lt(q, 2 * Ip);
        ck_assert_uint_eq(seen[q]++, 0);
        ck_assert_uint_eq(sy_moe_w13_row_of_tile_row(SY_MOE_GATE_UP_INTERLEAVE, q, Ip), r);
        ck_assert_uint_eq((q / 16) % 2, r / Ip); /* tile 2n is gate, 2n+1 up */
        ck_assert_uint_eq(sy_moe_w13_tile_row(SY_MOE_GATE_UP_SEPARATED, r, Ip), r);
    }
    free(seen);
}
END_TEST

/* What forward multiplies, read back through each layout, is the dequantized checkpoint, with the
 * portable decoder and with the vector ones (where the CPU has them). Scales 110..140 with random codes
 * cover every code, both signed zeros and every exponent step. */
START_TEST(decoded_rows_equal_dequantized_checkpoint)
{
    sy_rng rng = {sy_test_seed()};
    const uint32_t layouts[2] = {SY_MOE_GATE_UP_INTERLEAVE, SY_MOE_GATE_UP_SEPARATED};
    moe_checkpoint c = moe_checkpoint_random(&rng, 3, 736, 1056, 110, 140);
    float *w13 = moe_checkpoint_dequant_w13(&c), *w2 = moe_checkpoint_dequant_w2(&c);
    float *row = malloc(sizeof(float) * (c.H > c.I ? c.H : c.I));
    for (int l = 0; l < 2; l++) {
        uint64_t bytes;
        uint8_t *buf = prepare(&c, layouts[l], &bytes);
        sy_error err = {{0}};
        /* Each expert is read back with every decoder level (capped by the CPU). */
        for (uint32_t e = 0; e < c.E * 3; e++) {
            int level = (int)(e % 3);
            for (uint32_t cr = 0; cr < 2 * c.I; cr++) {
                uint32_t r = (cr % 2) * c.Ip + cr / 2;
                ck_assert_msg(
                    sy_moe_mxfp4_cpu_decode_rows_with(buf, e / 3, SY_MOE_MATRIX_W13, &r, 1, level, row, &err) == SY_OK,
                    "%s", err.msg);
                ck_assert_msg(
                    memcmp(row, w13 + ((size_t)(e / 3) * 2 * c.I + cr) * c.H, sizeof(float) * c.H) == 0,
                    "layout %u expert %u decoder level %d: w13 row %u (checkpoint row %u) decodes differently",
                    layouts[l], e / 3, level, r, cr);
            }
            for (uint32_t n = 0; n < c.H; n++) {
                ck_assert(sy_moe_mxfp4_cpu_decode_rows_with(buf, e / 3, SY_MOE_MATRIX_W2, &n, 1, level, row, &err) ==
                          SY_OK);
                ck_assert(memcmp(row, w2 + ((size_t)(e / 3) * c.H + n) * c.I, sizeof(float) * c.I) == 0);
            }
        }
        free(buf);
    }
    free(row);
    free(w13);
    free(w2);
    moe_checkpoint_free(&c);
}
END_TEST

/* The forward's tile decoder (storage order) gives what the row decoder gives, at every level. */
START_TEST(tile_decoder_equals_row_decoder)
{
    sy_rng rng = {sy_test_seed()};
    moe_checkpoint c = moe_checkpoint_random(&rng, 2, 736, 1056, 110, 140);
    sy_moe_dims d = sy_moe_dims_of(c.E, c.H, c.I);
    sy_moe_sections sec = sy_moe_sections_of(&d);
    const uint32_t kb = c.Hp / 32, used = c.H / 32, tiles[3] = {5, 0, 2 * c.Ip / 16 - 1};
    float *by_tiles = malloc(sizeof(float) * 48 * c.H), *by_rows = malloc(sizeof(float) * 48 * c.H);
    uint64_t bytes;
    uint8_t *buf = prepare(&c, SY_MOE_GATE_UP_INTERLEAVE, &bytes);
    const uint8_t *w13 = buf + sec.w13_blocks + sec.w13_expert_bytes,
                  *s13 = buf + sec.w13_scales + sec.w13_expert_scales;
    for (int level = SY_MXFP4_DECODE_TABLE; level <= SY_MXFP4_DECODE_AVX512; level++) {
        sy_mxfp4_cpu_decoder dec;
        sy_mxfp4_cpu_decoder_init(&dec, level);
        uint32_t q[48];
        for (uint32_t i = 0; i < 48; i++)
            q[i] = 16 * tiles[i / 16] + i % 16;
        sy_poison_f32(by_tiles, 48 * c.H);
        sy_mxfp4_cpu_decode_tiles(&dec, w13, s13, kb, used, tiles, 3, by_tiles);
        sy_mxfp4_cpu_decode_tile(&dec, w13, s13, kb, used, q, 48, by_rows);
        ck_assert_msg(memcmp(by_tiles, by_rows, sizeof(float) * 48 * c.H) == 0, "%s: tile and row decoders differ",
                      sy_mxfp4_cpu_decoder_name(&dec));
    }
    free(buf);
    free(by_tiles);
    free(by_rows);
    moe_checkpoint_free(&c);
}
END_TEST

/* The fused decode-and-multiply of a few tokens: against a double dot product of the dequantized
 * rows, and bit for bit the same at every decoder level. */
START_TEST(decode_dot_matches_reference_at_every_level)
{
    sy_rng rng = {sy_test_seed()};
    moe_checkpoint c = moe_checkpoint_random(&rng, 2, 736, 1056, 118, 124);
    sy_moe_dims d = sy_moe_dims_of(c.E, c.H, c.I);
    sy_moe_sections sec = sy_moe_sections_of(&d);
    enum { TE = SY_MXFP4_DOT_MAX_TOKENS, ROWS = 48 };
    const uint32_t kb = c.Hp / 32, used = c.H / 32, tiles[3] = {7, 1, 2 * c.Ip / 16 - 2};
    float *x = malloc(sizeof(float) * TE * c.H), *rows = malloc(sizeof(float) * ROWS * c.H);
    float out[3][TE * ROWS];
    sy_fill_uniform_f32(&rng, x, (size_t)TE * c.H, -1, 1);
    uint64_t bytes;
    uint8_t *buf = prepare(&c, SY_MOE_GATE_UP_SEPARATED, &bytes);
    const uint8_t *w13 = buf + sec.w13_blocks, *s13 = buf + sec.w13_scales;
    for (int level = SY_MXFP4_DECODE_TABLE; level <= SY_MXFP4_DECODE_AVX512; level++) {
        sy_mxfp4_cpu_decoder dec;
        sy_mxfp4_cpu_decoder_init(&dec, level);
        sy_poison_f32(out[level], TE * ROWS);
        sy_mxfp4_cpu_decode_dot(&dec, w13, s13, kb, used, tiles, 3, x, c.H, TE, out[level], ROWS);
        ck_assert_msg(memcmp(out[level], out[0], sizeof out[0]) == 0, "decode_dot at %s differs from the table level",
                      sy_mxfp4_cpu_decoder_name(&dec));
    }
    sy_mxfp4_cpu_decoder dec;
    sy_mxfp4_cpu_decoder_init(&dec, SY_MXFP4_DECODE_TABLE);
    uint32_t q[ROWS];
    for (uint32_t i = 0; i < ROWS; i++)
        q[i] = 16 * tiles[i / 16] + i % 16;
    sy_mxfp4_cpu_decode_tile(&dec, w13, s13, kb, used, q, ROWS, rows);
    double want[TE * ROWS];
    for (int t = 0; t < TE; t++)
        for (int r = 0; r < ROWS; r++) {
            double sum = 0;
            for (uint32_t k = 0; k < c.H; k++)
                sum += (double)rows[(size_t)r * c.H + k] * x[(size_t)t * c.H + k];
            want[t * ROWS + r] = sum;
        }
    double rel = sy_rel_l2_f32(out[0], want, TE * ROWS);
    ck_assert_msg(rel < 1e-6, "decode_dot: relative L2 %.3g against double", rel);
    free(buf);
    free(x);
    free(rows);
    moe_checkpoint_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("moe_layout");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, shuffles_match_reference_formulas);
    tcase_add_test(tc, unprepare_inverts_prepare);
    tcase_add_test(tc, w13_row_maps_are_inverse);
    tcase_add_test(tc, decoded_rows_equal_dequantized_checkpoint);
    tcase_add_test(tc, tile_decoder_equals_row_decoder);
    tcase_add_test(tc, decode_dot_matches_reference_at_every_level);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
