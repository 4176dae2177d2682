/* The presets. gpt-oss numbers: HF openai/gpt-oss-20b and -120b config.json (hidden 2880, 64 q / 8
 * KV heads of 64, 32 or 128 experts top-4, intermediate 2880, window 128 on even layers, sinks,
 * vocab 201088, RoPE theta 150000 with YaRN factor 32, beta_fast 32, beta_slow 1, original max
 * position 4096, rms eps 1e-5, SwiGLU alpha 1.702 and limit 7), summarized in
 * shared/reference/kv5d-attention.md. tiny is the same architecture shrunk to run in
 * milliseconds on a CPU: every feature of the big models (windowed even layers, sinks, YaRN,
 * top-k routing, MXFP4-compatible multiples of 32) at a size a unit test can afford. */
#include <string.h>

#include "config/schema.h"
#include "model/presets.h"

#define GPT_OSS_COMMON                                                                                        \
    .hidden = 2880, .q_heads = 64, .kv_heads = 8, .head_dim = 64, .top_k = 4, .intermediate = 2880,            \
    .vocab = 201088, .sliding_window = 128, .swa_even_layers = 1, .has_sinks = 1, .rope_theta = 150000.0f,     \
    .yarn_factor = 32.0f, .yarn_beta_fast = 32.0f, .yarn_beta_slow = 1.0f, .yarn_original_max_position = 4096, \
    .rms_eps = 1e-5f, .swiglu_alpha = 1.702f, .swiglu_limit = 7.0f, .attn_scale = 0.0f

static const sy_model_preset presets[] = {
    {"tiny", "gpt-oss in miniature for CPU tests: 4 layers, hidden 128, 8 experts top-2",
     {.layers = 4, .hidden = 128, .q_heads = 4, .kv_heads = 2, .head_dim = 32, .experts = 8, .top_k = 2,
      .intermediate = 128, .vocab = 512, .sliding_window = 16, .swa_even_layers = 1, .has_sinks = 1,
      .rope_theta = 150000.0f, .yarn_factor = 32.0f, .yarn_beta_fast = 32.0f, .yarn_beta_slow = 1.0f,
      .yarn_original_max_position = 4096, .rms_eps = 1e-5f, .swiglu_alpha = 1.702f, .swiglu_limit = 7.0f,
      .attn_scale = 0.0f}},
    {"gpt-oss-20b", "openai/gpt-oss-20b: 24 layers, 32 experts top-4", {.layers = 24, .experts = 32, GPT_OSS_COMMON}},
    {"gpt-oss-120b", "openai/gpt-oss-120b: 36 layers, 128 experts top-4",
     {.layers = 36, .experts = 128, GPT_OSS_COMMON}},
};

size_t sy_model_preset_count(void)
{
    return sizeof presets / sizeof presets[0];
}

const sy_model_preset *sy_model_preset_get(size_t i)
{
    return i < sy_model_preset_count() ? &presets[i] : NULL;
}

const sy_model_preset *sy_model_preset_find(const char *name)
{
    for (size_t i = 0; i < sy_model_preset_count(); i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

void sy_model_dims_from_config(const sy_config *c, sy_model_dims *out)
{
    size_t n;
    const sy_cfg_key *keys = sy_schema_keys(&n);
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++)
        if (keys[i].dims_field)
            sy_schema_store_dims_field(&keys[i], c, out);
}
