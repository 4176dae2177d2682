#include "mxfp4_decode_cpu.h"

#include <string.h>

#include "moe_layout.h"
#include "sy_mxfp4.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SY_MXFP4_X86 1
#include <immintrin.h>
#else
#define SY_MXFP4_X86 0
#endif

void sy_mxfp4_cpu_decoder_init(sy_mxfp4_cpu_decoder *d, int max_level)
{
    for (uint32_t b = 0; b < 256; b++) {
        d->byte_value[b][0] = sy_e2m1_to_f32(b & 0xFu);
        d->byte_value[b][1] = sy_e2m1_to_f32(b >> 4);
    }
    d->level = SY_MXFP4_DECODE_TABLE;
#if SY_MXFP4_X86
    __builtin_cpu_init();
    if (max_level >= SY_MXFP4_DECODE_AVX2 && __builtin_cpu_supports("avx2"))
        d->level = SY_MXFP4_DECODE_AVX2;
    if (max_level >= SY_MXFP4_DECODE_AVX512 && __builtin_cpu_supports("avx512f"))
        d->level = SY_MXFP4_DECODE_AVX512;
#else
    (void)max_level;
#endif
}

const char *sy_mxfp4_cpu_decoder_name(const sy_mxfp4_cpu_decoder *d)
{
    static const char *const names[] = {"table", "avx2", "avx512"};
    return names[d->level];
}

static inline __attribute__((always_inline)) void block_table(const sy_mxfp4_cpu_decoder *d, const uint8_t *block,
                                                              uint8_t scale_byte, float *out)
{
    float s = sy_e8m0_to_f32(scale_byte);
    for (uint32_t i = 0; i < SY_MXFP4_BLOCK_BYTES; i++) {
        out[2 * i] = d->byte_value[block[i]][0] * s;
        out[2 * i + 1] = d->byte_value[block[i]][1] * s;
    }
}

/* The 16 partial sums of a dot product, added pairwise in a fixed order. */
static inline __attribute__((always_inline)) float sum_lanes(const float *v)
{
    float a = (v[0] + v[8]) + (v[4] + v[12]), b = (v[2] + v[10]) + (v[6] + v[14]);
    float c = (v[1] + v[9]) + (v[5] + v[13]), e = (v[3] + v[11]) + (v[7] + v[15]);
    return (a + b) + (c + e);
}

/* The loops, generic in the block decoder so that each instantiation inlines its own. */
#define DEFINE_DECODERS(suffix, attrs, block_fn)                                                                       \
    attrs static void decode_tile_##suffix(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks,                       \
                                           const uint8_t *scales, uint32_t kblocks, uint32_t kblocks_used,             \
                                           const uint32_t *q, uint32_t n, float *dst)                                  \
    {                                                                                                                  \
        for (uint32_t r = 0; r < n; r++) {                                                                             \
            float *out = dst + (uint64_t)r * kblocks_used * SY_MXFP4_BLOCK;                                            \
            for (uint32_t j = 0; j < kblocks_used; j++, out += SY_MXFP4_BLOCK)                                         \
                block_fn(d, blocks + sy_moe_block_offset(q[r], j, kblocks),                                            \
                         scales[sy_moe_scale_offset(q[r], j, kblocks)], out);                                          \
        }                                                                                                              \
    }                                                                                                                  \
    /* Storage order: each tile's 16 rows, block column by block column, 256 contiguous bytes each. */                 \
    attrs static void decode_tiles_##suffix(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks,                      \
                                            const uint8_t *scales, uint32_t kblocks, uint32_t kblocks_used,            \
                                            const uint32_t *tiles, uint32_t n, float *dst)                             \
    {                                                                                                                  \
        const uint64_t row_floats = (uint64_t)kblocks_used * SY_MXFP4_BLOCK;                                           \
        for (uint32_t t = 0; t < n; t++) {                                                                             \
            float *tile_out = dst + (uint64_t)t * 16u * row_floats;                                                    \
            for (uint32_t j = 0; j < kblocks_used; j++) {                                                              \
                const uint8_t *b = blocks + sy_moe_block_offset(16u * tiles[t], j, kblocks);                           \
                const uint8_t *s = scales + sy_moe_scale_offset(16u * tiles[t], j, kblocks);                           \
                for (uint32_t r = 0; r < 16u; r++)                                                                     \
                    block_fn(d, b + r * SY_MXFP4_BLOCK_BYTES, s[4u * r],                                               \
                             tile_out + r * row_floats + (uint64_t)j * SY_MXFP4_BLOCK);                                \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    /* Tiles times up to SY_MXFP4_DOT_MAX_TOKENS tokens without storing the decoded tile: each block                   \
     * column of a tile is decoded into L1 and multiplied at once. Lane l of a (token, row) sum takes                  \
     * the products of columns k = 32j + l and 32j + 16 + l, j ascending; the 16 lanes are then added                  \
     * pairwise. A fixed order, whichever decoder ran. */                                                              \
    attrs static void decode_dot_##suffix(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks, const uint8_t *scales, \
                                          uint32_t kblocks, uint32_t kblocks_used, const uint32_t *tiles, uint32_t n,  \
                                          const float *x, uint64_t ldx, uint32_t te, float *out, uint64_t ldo)         \
    {                                                                                                                  \
        float col[16][SY_MXFP4_BLOCK], acc[SY_MXFP4_DOT_MAX_TOKENS][16][16];                                           \
        for (uint32_t i = 0; i < n; i++) {                                                                             \
            memset(acc, 0, sizeof acc);                                                                                \
            for (uint32_t j = 0; j < kblocks_used; j++) {                                                              \
                const uint8_t *b = blocks + sy_moe_block_offset(16u * tiles[i], j, kblocks);                           \
                const uint8_t *s = scales + sy_moe_scale_offset(16u * tiles[i], j, kblocks);                           \
                for (uint32_t r = 0; r < 16u; r++)                                                                     \
                    block_fn(d, b + r * SY_MXFP4_BLOCK_BYTES, s[4u * r], col[r]);                                      \
                for (uint32_t t = 0; t < te; t++) {                                                                    \
                    const float *xv = x + t * ldx + (uint64_t)j * SY_MXFP4_BLOCK;                                      \
                    for (uint32_t r = 0; r < 16u; r++)                                                                 \
                        for (uint32_t l = 0; l < 16u; l++)                                                             \
                            acc[t][r][l] += col[r][l] * xv[l] + col[r][l + 16u] * xv[l + 16u];                         \
                }                                                                                                      \
            }                                                                                                          \
            for (uint32_t t = 0; t < te; t++)                                                                          \
                for (uint32_t r = 0; r < 16u; r++)                                                                     \
                    out[t * ldo + 16u * i + r] = sum_lanes(acc[t][r]);                                                 \
        }                                                                                                              \
    }                                                                                                                  \
    attrs static void decode_run_##suffix(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks, const uint8_t *scales, \
                                          uint64_t n, float *dst)                                                      \
    {                                                                                                                  \
        for (uint64_t i = 0; i < n; i++)                                                                               \
            block_fn(d, blocks + i * SY_MXFP4_BLOCK_BYTES, scales[i], dst + i * SY_MXFP4_BLOCK);                       \
    }

DEFINE_DECODERS(table, , block_table)

#if SY_MXFP4_X86
/* The 16 bytes of a block as 32 codes in element order: elements 0..15, then 16..31. */
#define SPLIT_CODES(block, codes0, codes1)                                                                             \
    __m128i bytes_ = _mm_loadu_si128((const __m128i *)(block));                                                        \
    __m128i lo_ = _mm_and_si128(bytes_, _mm_set1_epi8(0x0F));                                                          \
    __m128i hi_ = _mm_and_si128(_mm_srli_epi16(bytes_, 4), _mm_set1_epi8(0x0F));                                       \
    __m128i codes0 = _mm_unpacklo_epi8(lo_, hi_), codes1 = _mm_unpackhi_epi8(lo_, hi_)

/* AVX2: vpermps looks up 8 entries, so the magnitude comes from the low three bits and the sign
 * bit (code bit 3, shifted to bit 31) is ORed in afterwards: code 8 gives -0 as the table does. */
__attribute__((target("avx2"))) static inline __m256 avx2_lanes(__m128i codes8, __m256 scaled_magnitudes)
{
    __m256i codes = _mm256_cvtepu8_epi32(codes8);
    __m256 v = _mm256_permutevar8x32_ps(scaled_magnitudes, codes);
    __m256i sign = _mm256_and_si256(_mm256_slli_epi32(codes, 28), _mm256_set1_epi32((int)0x80000000u));
    return _mm256_or_ps(v, _mm256_castsi256_ps(sign));
}

__attribute__((target("avx2"))) static inline __attribute__((always_inline)) void
block_avx2(const sy_mxfp4_cpu_decoder *d, const uint8_t *block, uint8_t scale_byte, float *out)
{
    (void)d;
    const __m256 magnitudes = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
    const __m256 scaled = _mm256_mul_ps(magnitudes, _mm256_set1_ps(sy_e8m0_to_f32(scale_byte)));
    SPLIT_CODES(block, codes0, codes1);
    _mm256_storeu_ps(out, avx2_lanes(codes0, scaled));
    _mm256_storeu_ps(out + 8, avx2_lanes(_mm_srli_si128(codes0, 8), scaled));
    _mm256_storeu_ps(out + 16, avx2_lanes(codes1, scaled));
    _mm256_storeu_ps(out + 24, avx2_lanes(_mm_srli_si128(codes1, 8), scaled));
}

DEFINE_DECODERS(avx2, __attribute__((target("avx2"))), block_avx2)

/* AVX-512: vpermps looks up all 16 codes, signs (and -0) included, from the scaled table. */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) void
block_avx512(const sy_mxfp4_cpu_decoder *d, const uint8_t *block, uint8_t scale_byte, float *out)
{
    (void)d;
    const __m512 values = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f,
                                         -2.0f, -3.0f, -4.0f, -6.0f);
    const __m512 scaled = _mm512_mul_ps(values, _mm512_set1_ps(sy_e8m0_to_f32(scale_byte)));
    SPLIT_CODES(block, codes0, codes1);
    _mm512_storeu_ps(out, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(codes0), scaled));
    _mm512_storeu_ps(out + 16, _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(codes1), scaled));
}

DEFINE_DECODERS(avx512, __attribute__((target("avx512f"))), block_avx512)
#endif

/* Runs the instantiation of `name` for the decoder's level. */
#if SY_MXFP4_X86
#define DISPATCH(name, ...)                                                                                            \
    do {                                                                                                               \
        if (d->level == SY_MXFP4_DECODE_AVX512)                                                                        \
            name##_avx512(__VA_ARGS__);                                                                                \
        else if (d->level == SY_MXFP4_DECODE_AVX2)                                                                     \
            name##_avx2(__VA_ARGS__);                                                                                  \
        else                                                                                                           \
            name##_table(__VA_ARGS__);                                                                                 \
    } while (0)
#else
#define DISPATCH(name, ...) name##_table(__VA_ARGS__)
#endif

void sy_mxfp4_cpu_decode_tile(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks, const uint8_t *scales,
                              uint32_t kblocks, uint32_t kblocks_used, const uint32_t *q, uint32_t n, float *dst)
{
    DISPATCH(decode_tile, d, blocks, scales, kblocks, kblocks_used, q, n, dst);
}

void sy_mxfp4_cpu_decode_tiles(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks, const uint8_t *scales,
                               uint32_t kblocks, uint32_t kblocks_used, const uint32_t *tiles, uint32_t n, float *dst)
{
    DISPATCH(decode_tiles, d, blocks, scales, kblocks, kblocks_used, tiles, n, dst);
}

void sy_mxfp4_cpu_decode_dot(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks, const uint8_t *scales,
                             uint32_t kblocks, uint32_t kblocks_used, const uint32_t *tiles, uint32_t n, const float *x,
                             uint64_t ldx, uint32_t te, float *out, uint64_t ldo)
{
    DISPATCH(decode_dot, d, blocks, scales, kblocks, kblocks_used, tiles, n, x, ldx, te, out, ldo);
}

void sy_mxfp4_cpu_decode_run(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks, const uint8_t *scales, uint64_t n,
                             float *dst)
{
    DISPATCH(decode_run, d, blocks, scales, n, dst);
}
