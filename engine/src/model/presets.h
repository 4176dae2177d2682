/* Built-in model presets (model.preset) and the bridge from a resolved config to the model's
 * dimensions. A preset only supplies defaults: every dimension is a config key of its own
 * (model.layers, model.hidden, ...) and overrides the preset. */
#ifndef SY_MODEL_PRESETS_H
#define SY_MODEL_PRESETS_H

#include <stddef.h>

#include "config/config.h"
#include "model/model.h"

typedef struct sy_model_preset {
    const char *name;        /* the model.preset value */
    const char *description; /* one line, for docs/config.md */
    sy_model_dims dims;      /* attn_scale 0 = 1 / sqrt(head_dim) */
} sy_model_preset;

size_t sy_model_preset_count(void);
const sy_model_preset *sy_model_preset_get(size_t i);
const sy_model_preset *sy_model_preset_find(const char *name); /* NULL when unknown */

/* The model dimensions of a resolved config: every model.* key that maps to a field of
 * sy_model_dims (the schema records which), attn_scale resolved (never 0). */
void sy_model_dims_from_config(const sy_config *c, sy_model_dims *out);

#endif
