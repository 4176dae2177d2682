/* `switchyard checkpoint synth`: the synthetic weights of a model written as an HF gpt-oss
 * checkpoint folder (config.json, model.safetensors or N shards with their index), tensor by
 * tensor, each file written under a temporary name and renamed when complete. Loading it gives the
 * engine the very bytes the synthetic generator would have made. config.json is removed first and
 * written last: a write that fails leaves a folder without it, which check and run refuse. */
#ifndef SY_CHECKPOINT_SYNTH_WRITE_H
#define SY_CHECKPOINT_SYNTH_WRITE_H

#include "model/model.h"

typedef struct sy_synth_write_result {
    uint32_t files;      /* safetensors files written */
    uint64_t bytes;      /* tensor bytes written */
    size_t tensors;
} sy_synth_write_result;

/* `label` (e.g. the preset) goes into each file's __metadata__ with the seed; may be NULL. */
sy_status sy_checkpoint_write_synth(const sy_model_dims *d, uint64_t seed, uint32_t shards, const char *dir,
                                    const char *label, sy_synth_write_result *out, sy_error *err);

#endif
