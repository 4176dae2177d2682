/* Random gpt-oss-format MXFP4 expert weights for the MoE suites, and their exact dequantization,
 * written from the format's definition (not through the plugin's decoder). */
#ifndef SY_TEST_MOE_CHECKPOINT_H
#define SY_TEST_MOE_CHECKPOINT_H

#include <stdint.h>

#include "switchyard/plugin.h"
#include "sy_test.h"

typedef struct moe_checkpoint {
    uint32_t E, H, I, Hp, Ip;
    uint8_t *w13_blocks, *w13_scales; /* [E][2I][H/32][16], [E][2I][H/32]; rows 2i gate, 2i+1 up */
    uint8_t *w2_blocks, *w2_scales;   /* [E][H][I/32][16], [E][H][I/32] */
    float *w13_bias, *w2_bias;        /* [E][2I], [E][H] */
} moe_checkpoint;

/* Random bytes for the blocks (every E2M1 code), scale bytes uniform in [scale_lo, scale_hi]. */
moe_checkpoint moe_checkpoint_random(sy_rng *rng, uint32_t E, uint32_t H, uint32_t I, uint8_t scale_lo,
                                     uint8_t scale_hi);
void moe_checkpoint_free(moe_checkpoint *c);

/* prepare args over the checkpoint's tensors (biases f32) writing into `prepared`. */
sy_moe_prepare_args moe_checkpoint_prepare_args(const moe_checkpoint *c, const sy_moe_shape *shape, void *prepared);

/* Dequantized rows, exact in f32: w13 [E][2I][H] (checkpoint row order) and w2 [E][H][I]. Malloc'd. */
float *moe_checkpoint_dequant_w13(const moe_checkpoint *c);
float *moe_checkpoint_dequant_w2(const moe_checkpoint *c);

sy_tensor moe_tensor(void *data, int32_t dtype, int32_t ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3);

#endif
