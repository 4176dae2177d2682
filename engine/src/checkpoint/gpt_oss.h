/* The tensors of an HF gpt-oss checkpoint for given dimensions: names (sy_ckpt_name), dtypes (BF16
 * for dense tensors, U8 for the MXFP4 expert blocks and e8m0 scales) and shapes, and the check that
 * a checkpoint holds exactly these. */
#ifndef SY_CHECKPOINT_GPT_OSS_H
#define SY_CHECKPOINT_GPT_OSS_H

#include "checkpoint/checkpoint.h"
#include "model/model.h"

/* One tensor of the model: layer (SY_GLOBAL_LAYER for the embedding, final norm, lm_head) and kind. */
typedef struct sy_gpt_oss_tensor {
    uint32_t layer, kind;
    int32_t dtype; /* sy_st_dtype */
    uint32_t rank;
    uint64_t shape[4];
} sy_gpt_oss_tensor;

sy_gpt_oss_tensor sy_gpt_oss_tensor_of(const sy_model_dims *d, uint32_t layer, uint32_t kind);
/* Every tensor, in checkpoint order: the embedding, then layer by layer, then final norm and lm_head. */
size_t sy_gpt_oss_tensor_count(const sy_model_dims *d);
sy_gpt_oss_tensor sy_gpt_oss_tensor_at(const sy_model_dims *d, size_t i);

/* Every tensor present with its dtype and shape, and nothing else in the checkpoint; the error names
 * the tensor, the file and what was expected. */
sy_status sy_gpt_oss_check(const sy_checkpoint *c, const sy_model_dims *d, sy_error *err);

#endif
