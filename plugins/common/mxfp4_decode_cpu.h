/* MXFP4 blocks to f32 on the host, fast: a portable table decoder and, where the CPU has them, AVX2
 * and AVX-512 ones (an in-register lookup of the E2M1 codes, already multiplied by the block's
 * scale). All give the values of sy_mxfp4.h bit for bit, signed zeros and the infinities of
 * extreme scales included (a NaN scale gives NaN in all, its sign bit unspecified), so a result
 * never depends on which one ran. */
#ifndef SY_MXFP4_DECODE_CPU_H
#define SY_MXFP4_DECODE_CPU_H

#include <stdint.h>

/* Decoder levels, each used only where the CPU supports it. */
enum { SY_MXFP4_DECODE_TABLE = 0, SY_MXFP4_DECODE_AVX2 = 1, SY_MXFP4_DECODE_AVX512 = 2 };

typedef struct sy_mxfp4_cpu_decoder {
    int level;                /* SY_MXFP4_DECODE_* in use */
    float byte_value[256][2]; /* the portable path: every byte's two values, low nibble first */
} sy_mxfp4_cpu_decoder;

/* The best level up to max_level that this CPU runs (tests force each one). */
void sy_mxfp4_cpu_decoder_init(sy_mxfp4_cpu_decoder *d, int max_level);
const char *sy_mxfp4_cpu_decoder_name(const sy_mxfp4_cpu_decoder *d);

/* Rows q[0..n) (tile-order rows of a matrix shuffled as moe_layout.h describes, kblocks blocks a row
 * stored), blocks [0, kblocks_used) of each, into dst[n][32 * kblocks_used]. */
void sy_mxfp4_cpu_decode_tile(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks, const uint8_t *scales,
                              uint32_t kblocks, uint32_t kblocks_used, const uint32_t *q, uint32_t n, float *dst);

/* Whole 16-row tiles (tile t = tile-order rows 16t .. 16t+15), read in storage order, which is
 * sequential: every row of tiles[i] lands at dst row 16i + its place in the tile. What forward uses;
 * the same values as decode_tile over those rows. */
void sy_mxfp4_cpu_decode_tiles(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks, const uint8_t *scales,
                               uint32_t kblocks, uint32_t kblocks_used, const uint32_t *tiles, uint32_t n, float *dst);

/* Most tokens decode_dot takes. Its partial sums live in L1, not in registers, so each extra token
 * costs about what the decode does: at 2 tokens and more, decoding a tile once for sgemm was faster
 * (bench/moe_cpu, 2-core x86_64). */
enum { SY_MXFP4_DOT_MAX_TOKENS = 1 };

/* out[t][16i + r] = sum over k < 32 * kblocks_used of W[row r of tiles[i]][k] * x[t][k] for te <=
 * SY_MXFP4_DOT_MAX_TOKENS tokens (rows of x ldx apart, of out ldo apart), decoding each block once,
 * straight into the products: the weights are read once and no decoded tile is stored. The order of
 * the sums is fixed (see the definition), the same at every decoder level. */
void sy_mxfp4_cpu_decode_dot(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks, const uint8_t *scales,
                             uint32_t kblocks, uint32_t kblocks_used, const uint32_t *tiles, uint32_t n, const float *x,
                             uint64_t ldx, uint32_t te, float *out, uint64_t ldo);

/* n consecutive blocks with n consecutive scales into dst[32 * n]: the same work with no layout. */
void sy_mxfp4_cpu_decode_run(const sy_mxfp4_cpu_decoder *d, const uint8_t *blocks, const uint8_t *scales, uint64_t n,
                             float *dst);

#endif
