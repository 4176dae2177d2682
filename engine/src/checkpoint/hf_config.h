/* config.json of a Hugging Face gpt-oss checkpoint, read into the model's dimensions and written
 * from them. Keys read (each maps to one model.* config key): num_hidden_layers, hidden_size,
 * num_attention_heads, num_key_value_heads, head_dim, num_local_experts, num_experts_per_tok,
 * intermediate_size, vocab_size, sliding_window, layer_types, rope_theta, rope_scaling {factor,
 * beta_fast, beta_slow, original_max_position_embeddings}, rms_norm_eps, swiglu_limit. Other keys
 * are not used. */
#ifndef SY_CHECKPOINT_HF_CONFIG_H
#define SY_CHECKPOINT_HF_CONFIG_H

#include "config/config.h"
#include "model/model.h"

typedef struct sy_hf_config {
    sy_model_dims dims; /* the fields config.json gives; others 0 */
    uint64_t present;   /* bit i: field i of the table in hf_config.c was given */
} sy_hf_config;

sy_status sy_hf_config_parse(const char *origin, const char *text, size_t len, sy_hf_config *out, sy_error *err);
sy_status sy_hf_config_read(const char *path, sy_hf_config *out, sy_error *err);

/* Every dimension config.json gives must equal the model's. With cfg, the message names the
 * config key, its value and where it came from; the plugins were chosen for the configured
 * dimensions, so a default that differs is an error as well as an explicit value. */
sy_status sy_hf_config_agree(const sy_hf_config *hf, const char *path, const sy_model_dims *dims,
                             const sy_config *cfg, sy_error *err);

/* config.json for these dimensions (malloc'd). */
char *sy_hf_config_text(const sy_model_dims *d);

#endif
