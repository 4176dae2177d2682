/* Tile layouts of prepared MXFP4 MoE weights: where each 16-byte block, each scale byte and each
 * bias of an expert lands after `prepare`, for host and device code alike. The INTERLEAVE and
 * SEPARATED plugins differ only in the gate_up_layout they pass to these functions.
 *
 * Sources: AITER aiter/ops/shuffle.py (shuffle_weight with layout (16,16), shuffle_weight_a16w4,
 * shuffle_scale_a16w4) and aiter/utility/fp4_utils.py (e8m0_shuffle), summarized with their
 * reshape/permute formulas in shared/reference/moe-mxfp4-norm.md. Notation: a matrix of R rows and
 * K columns, Kb = K/2 packed bytes a row, C = K/32 scale bytes a row.
 *
 * Rows of w13 are first de-interleaved (row g*Ip + i <- checkpoint row 2i + g, g = 0 gate, 1 up),
 * weights, scales and biases alike, then every matrix is padded: hidden H to Hp and intermediate I
 * to Ip, both multiples of 256 (2880 -> 3072), with zero weights, the neutral scale 0x7F (2^0;
 * the value shuffle_scale_a16w4 pads with) and zero biases. Ip must be padded as well as Hp: the
 * a16w4 weight shuffle tiles K in 64-byte units and w2's K is the intermediate.
 *
 * Why one formula serves both layouts. Expanding the permutes:
 *   shuffle_weight (16,16): view(-1, R/16, 16, Kb/32, 2, 16).permute(0,1,3,4,2,5), with
 *     row = 16n0 + nl, byte kb = 32k0 + 16k1 + k2: dst = (((n0*(Kb/32) + k0)*2 + k1)*16 + nl)*16 + k2
 *   shuffle_weight_a16w4, w2: view(E, R/16, 16, Kb/64, 4, 16).permute(0,1,3,4,2,5), with
 *     kb = 64k0 + 16kl + kp: dst = (((n0*(Kb/64) + k0)*4 + kl)*16 + nl)*16 + kp
 * are the same map, dst = ((n0*(K/32) + kb/16)*16 + nl)*16 + kb%16: a 16-byte run is one MXFP4
 * block (32 values of one row) and 16-row tiles are stored block-column by block-column. Likewise
 *   e8m0_shuffle: view(R/32, 2, 16, C/8, 2, 4).permute(0,3,5,2,4,1)
 *   shuffle_scale_a16w4, w2: view(E, R/32, 2, 16, C/8, 2, 4).permute(0,1,4,6,3,5,2)
 * are both dst = ((((q/32)*(C/8) + c/8)*4 + c%4)*16 + q%16)*2 + (c/4)%2)*2 + (q/16)%2 for row q,
 * column c (e8m0_shuffle pads rows to 256 and columns to 8; with Hp, Ip multiples of 256 that is
 * a no-op, and its 32-row groups never straddle two experts, so it acts per expert).
 * The a16w4 forms for w13 (gate_up=True) split rows as (2, R/32, 16) = (g, n, nl) and put g
 * beside the tile index: that is the w2 formula applied to rows reordered so that 16-row tiles
 * alternate gate, up (GUGU): q = 32*(i/16) + 16*g + i%16. SEPARATED keeps q = r (GGUU).
 * So a layout is a row order of w13 (sy_moe_w13_tile_row) and everything else is shared. */
#ifndef SY_MOE_LAYOUT_H
#define SY_MOE_LAYOUT_H

#include <stdint.h>

#include "switchyard/caps.h"
#include "sy_mxfp4.h"
#include "sy_portable.h"

enum {
    SY_MOE_PAD_MULTIPLE = 256,           /* hidden and intermediate padding; also the input alignment */
    SY_MOE_SECTION_ALIGN = 256,          /* byte alignment of every section of the prepared buffer */
    SY_MOE_PREPARED_MAGIC = 0x344D5953u, /* "SYM4" little-endian */
    SY_MOE_PREPARED_VERSION = 3u
};

/* The bit order of the E2M1 codes inside each 4-byte group of a block (sy_moe_prepared_header's
 * code_order). The host and HIP keep the checkpoint's; the CUDA prepare writes the order its
 * tensor-core product decodes with fewer instructions (mxfp4_bf16_pairs.h). */
enum {
    SY_MOE_CODES_CHECKPOINT = 0u,   /* code i of a group at bits 4i .. 4i+3 (low nibble first) */
    SY_MOE_CODES_TENSOR_PAIRS = 1u  /* sy_e2m1x8_to_pair_order of each little-endian 32-bit group */
};

/* Padded dims of one MoE layer. */
typedef struct sy_moe_dims {
    uint32_t experts;
    uint32_t hidden, intermediate;               /* H, I: unpadded, multiples of 32 */
    uint32_t hidden_padded, intermediate_padded; /* Hp, Ip: multiples of 256 */
} sy_moe_dims;

SY_HD uint32_t sy_moe_round_up(uint32_t x, uint32_t m)
{
    return (x + m - 1u) / m * m;
}

SY_HD sy_moe_dims sy_moe_dims_of(uint32_t experts, uint32_t hidden, uint32_t intermediate)
{
    sy_moe_dims d;
    d.experts = experts;
    d.hidden = hidden;
    d.intermediate = intermediate;
    d.hidden_padded = sy_moe_round_up(hidden, SY_MOE_PAD_MULTIPLE);
    d.intermediate_padded = sy_moe_round_up(intermediate, SY_MOE_PAD_MULTIPLE);
    return d;
}

/* Tile-order row q of de-interleaved w13 row r = g*Ip + i (see the header comment). */
SY_HD uint32_t sy_moe_w13_tile_row(uint32_t gate_up_layout, uint32_t r, uint32_t inter_padded)
{
    if (gate_up_layout != SY_MOE_GATE_UP_INTERLEAVE)
        return r;
    uint32_t g = r / inter_padded, i = r % inter_padded;
    return 32u * (i / 16u) + 16u * g + i % 16u;
}

/* Inverse of sy_moe_w13_tile_row. */
SY_HD uint32_t sy_moe_w13_row_of_tile_row(uint32_t gate_up_layout, uint32_t q, uint32_t inter_padded)
{
    if (gate_up_layout != SY_MOE_GATE_UP_INTERLEAVE)
        return q;
    uint32_t g = (q / 16u) % 2u, i = 16u * (q / 32u) + q % 16u;
    return g * inter_padded + i;
}

/* Byte offset, within one expert's shuffled matrix of `kblocks` = K/32 blocks a row, of block j of
 * tile-order row q. Its 16 bytes are contiguous; the codes of each 4-byte group are in the
 * header's code order (the checkpoint's on the host). */
SY_HD uint64_t sy_moe_block_offset(uint32_t q, uint32_t j, uint32_t kblocks)
{
    return (((uint64_t)(q / 16u) * kblocks + j) * 16u + q % 16u) * SY_MXFP4_BLOCK_BYTES;
}

/* Index, within one expert's shuffled scales of `kblocks` = C columns (a multiple of 8), of the
 * scale of block j of tile-order row q (q runs over a multiple of 32 rows). */
SY_HD uint64_t sy_moe_scale_offset(uint32_t q, uint32_t j, uint32_t kblocks)
{
    uint64_t n1 = q / 32u, np = (q / 16u) % 2u, nl = q % 16u;
    uint64_t k1 = j / 8u, kp = (j / 4u) % 2u, kl = j % 4u;
    return ((((n1 * (kblocks / 8u) + k1) * 4u + kl) * 16u + nl) * 2u + kp) * 2u + np;
}

/* A row's top scale: the largest of its `n` E8M0 scale bytes other than the NaN byte 0xFF, or the
 * neutral 0x7F where it has no other (and for padding rows). The CUDA product multiplies each block
 * of the row by 2^(scale - top) in bf16 and the row's sums by 2^(top - 127) (moe_mxfp4_gpu_mma.cuh,
 * "Exactness"), which keeps every block within 2^-132 of the row's largest exact. */
SY_HD uint8_t sy_moe_row_top(const uint8_t *scales, uint32_t n)
{
    int top = -1;
    for (uint32_t j = 0; j < n; j++)
        if (scales[j] != 0xFFu && (int)scales[j] > top)
            top = scales[j];
    return top < 0 ? (uint8_t)SY_E8M0_ONE : (uint8_t)top;
}

/* Byte offsets of the sections of the prepared buffer, each aligned to SY_MOE_SECTION_ALIGN.
 *   header     sy_moe_prepared_header
 *   w13_blocks [E][2Ip rows in tile order][Hp/32 blocks] shuffled (sy_moe_block_offset)
 *   w13_scales [E][2Ip * Hp/32] shuffled (sy_moe_scale_offset)
 *   w13_bias   f32 [E][2Ip], de-interleaved row order g*Ip + i (not tile order)
 *   w2_blocks  [E][Hp rows][Ip/32 blocks] shuffled
 *   w2_scales  [E][Hp * Ip/32] shuffled
 *   w2_bias    f32 [E][Hp]
 *   w13_row_top [E][2Ip] and w2_row_top [E][Hp]: each tile-order row's largest scale byte
 *              (sy_moe_row_top), which the CUDA product scales the row's blocks against */
typedef struct sy_moe_sections {
    uint64_t header, w13_blocks, w13_scales, w13_bias, w2_blocks, w2_scales, w2_bias, w13_row_top, w2_row_top;
    uint64_t total;
    /* bytes of one expert in each weight section */
    uint64_t w13_expert_bytes, w13_expert_scales, w2_expert_bytes, w2_expert_scales;
} sy_moe_sections;

/* Stored at offset 0 so that a buffer prepared for one layout or shape is refused by another. */
typedef struct sy_moe_prepared_header {
    uint32_t magic;   /* SY_MOE_PREPARED_MAGIC */
    uint32_t version; /* SY_MOE_PREPARED_VERSION */
    uint32_t gate_up_layout;
    uint32_t experts, hidden, intermediate, hidden_padded, intermediate_padded;
    uint32_t code_order; /* SY_MOE_CODES_*: a buffer prepared for another backend's decode is refused */
} sy_moe_prepared_header;

SY_HD uint64_t sy_moe_align_section(uint64_t bytes)
{
    return (bytes + SY_MOE_SECTION_ALIGN - 1u) / SY_MOE_SECTION_ALIGN * SY_MOE_SECTION_ALIGN;
}

SY_HD sy_moe_sections sy_moe_sections_of(const sy_moe_dims *d)
{
    sy_moe_sections s;
    uint64_t E = d->experts, Hp = d->hidden_padded, Ip = d->intermediate_padded;
    s.w13_expert_bytes = 2u * Ip * (Hp / 2u);
    s.w13_expert_scales = 2u * Ip * (Hp / SY_MXFP4_BLOCK);
    s.w2_expert_bytes = Hp * (Ip / 2u);
    s.w2_expert_scales = Hp * (Ip / SY_MXFP4_BLOCK);
    s.header = 0;
    s.w13_blocks = s.header + sy_moe_align_section(sizeof(sy_moe_prepared_header));
    s.w13_scales = s.w13_blocks + sy_moe_align_section(E * s.w13_expert_bytes);
    s.w13_bias = s.w13_scales + sy_moe_align_section(E * s.w13_expert_scales);
    s.w2_blocks = s.w13_bias + sy_moe_align_section(E * 2u * Ip * sizeof(float));
    s.w2_scales = s.w2_blocks + sy_moe_align_section(E * s.w2_expert_bytes);
    s.w2_bias = s.w2_scales + sy_moe_align_section(E * s.w2_expert_scales);
    s.w13_row_top = s.w2_bias + sy_moe_align_section(E * Hp * sizeof(float));
    s.w2_row_top = s.w13_row_top + sy_moe_align_section(E * 2u * Ip);
    s.total = s.w2_row_top + sy_moe_align_section(E * Hp);
    return s;
}

#endif
