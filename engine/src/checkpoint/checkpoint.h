/* A checkpoint folder in the Hugging Face layout: config.json, and either one model.safetensors or
 * shards listed by model.safetensors.index.json ({"metadata": {...}, "weight_map": {tensor: file}}).
 * Every shard the index names is opened and checked; a tensor must be in the shard the index says
 * and nowhere else. */
#ifndef SY_CHECKPOINT_CHECKPOINT_H
#define SY_CHECKPOINT_CHECKPOINT_H

#include "checkpoint/safetensors.h"

#define SY_CKPT_SINGLE_FILE "model.safetensors"
#define SY_CKPT_INDEX_FILE "model.safetensors.index.json"
#define SY_CKPT_CONFIG_FILE "config.json"
#define SY_CKPT_MAX_JSON_BYTES (64u << 20) /* config.json and the index */
#define SY_CKPT_MAX_SHARDS 65536

typedef struct sy_ckpt_ref {
    const char *name; /* the tensor's name (owned by its shard) */
    uint32_t shard;
    const sy_st_tensor *tensor;
} sy_ckpt_ref;

typedef struct sy_checkpoint {
    char *dir;
    sy_st_file *shards;
    size_t n_shards;
    sy_ckpt_ref *refs; /* every tensor, sorted by name */
    size_t n_refs;
} sy_checkpoint;

sy_status sy_checkpoint_open(const char *dir, sy_checkpoint **out, sy_error *err);
void sy_checkpoint_close(sy_checkpoint *c);
const sy_ckpt_ref *sy_checkpoint_find(const sy_checkpoint *c, const char *name);

/* A whole small file (config.json, the index), at most `limit` bytes; NUL-terminated. */
sy_status sy_read_small_file(const char *path, size_t limit, char **text, size_t *len, sy_error *err);

#endif
