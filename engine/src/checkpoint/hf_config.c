#include "checkpoint/hf_config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/json_value.h"
#include "config/schema.h"
#include "util/strbuf.h"

typedef enum field_type { FIELD_U32, FIELD_F32, FIELD_LAYER_TYPES } field_type;

/* config.json key (under `parent` when set) <-> Switchyard config key <-> sy_model_dims member. */
static const struct field {
    const char *hf, *parent, *key;
    size_t offset;
    field_type type;
    int required;
} fields[] = {
    {"num_hidden_layers", NULL, "model.layers", offsetof(sy_model_dims, layers), FIELD_U32, 1},
    {"hidden_size", NULL, "model.hidden", offsetof(sy_model_dims, hidden), FIELD_U32, 1},
    {"num_attention_heads", NULL, "model.q_heads", offsetof(sy_model_dims, q_heads), FIELD_U32, 1},
    {"num_key_value_heads", NULL, "model.kv_heads", offsetof(sy_model_dims, kv_heads), FIELD_U32, 1},
    {"head_dim", NULL, "model.head_dim", offsetof(sy_model_dims, head_dim), FIELD_U32, 0},
    {"num_local_experts", NULL, "model.experts", offsetof(sy_model_dims, experts), FIELD_U32, 1},
    {"num_experts_per_tok", NULL, "model.top_k", offsetof(sy_model_dims, top_k), FIELD_U32, 1},
    {"intermediate_size", NULL, "model.intermediate", offsetof(sy_model_dims, intermediate), FIELD_U32, 1},
    {"vocab_size", NULL, "model.vocab", offsetof(sy_model_dims, vocab), FIELD_U32, 1},
    {"sliding_window", NULL, "model.sliding_window", offsetof(sy_model_dims, sliding_window), FIELD_U32, 0},
    {"layer_types", NULL, "model.sliding_layers", offsetof(sy_model_dims, swa_even_layers), FIELD_LAYER_TYPES, 0},
    {"rope_theta", NULL, "model.rope_theta", offsetof(sy_model_dims, rope_theta), FIELD_F32, 0},
    {"factor", "rope_scaling", "model.yarn_factor", offsetof(sy_model_dims, yarn_factor), FIELD_F32, 0},
    {"beta_fast", "rope_scaling", "model.yarn_beta_fast", offsetof(sy_model_dims, yarn_beta_fast), FIELD_F32, 0},
    {"beta_slow", "rope_scaling", "model.yarn_beta_slow", offsetof(sy_model_dims, yarn_beta_slow), FIELD_F32, 0},
    {"original_max_position_embeddings", "rope_scaling", "model.yarn_original_max_position",
     offsetof(sy_model_dims, yarn_original_max_position), FIELD_U32, 0},
    {"rms_norm_eps", NULL, "model.rms_eps", offsetof(sy_model_dims, rms_eps), FIELD_F32, 0},
    {"swiglu_limit", NULL, "model.swiglu_limit", offsetof(sy_model_dims, swiglu_limit), FIELD_F32, 0},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

/* Indices into fields[]; layer_types comes after sliding_window, whose value it may override. */
enum { F_HEAD_DIM = 4, F_WINDOW = 9, F_LAYER_TYPES = 10, F_FACTOR = 12 };

static uint32_t *u32_at(sy_model_dims *d, size_t i)
{
    return (uint32_t *)((char *)d + fields[i].offset);
}

static float *f32_at(sy_model_dims *d, size_t i)
{
    return (float *)((char *)d + fields[i].offset);
}

static void set_u32(sy_hf_config *h, size_t i, uint32_t v)
{
    *u32_at(&h->dims, i) = v;
    h->present |= 1ull << i;
}

/* "sliding_attention" on every layer, on even layers only, or on none (then no window at all). */
static sy_status read_layer_types(const char *origin, const sy_jvalue *v, sy_hf_config *h, sy_error *err)
{
    if (v->type != SY_J_ARRAY)
        return sy_fail(err, SY_E_INVALID, "%s: layer_types must be an array of \"sliding_attention\" / "
                       "\"full_attention\"", origin);
    if (v->n != h->dims.layers)
        return sy_fail(err, SY_E_INVALID, "%s: layer_types has %zu entries but num_hidden_layers is %u", origin, v->n,
                       h->dims.layers);
    int all = 1, even = 1, none = 1;
    for (size_t l = 0; l < v->n; l++) {
        const char *s = v->items[l].type == SY_J_STRING ? v->items[l].text : "";
        int sliding = strcmp(s, "sliding_attention") == 0;
        if (!sliding && strcmp(s, "full_attention") != 0)
            return sy_fail(err, SY_E_INVALID, "%s: layer_types[%zu] is not \"sliding_attention\" or \"full_attention\"",
                           origin, l);
        all &= sliding;
        none &= !sliding;
        even &= sliding == (l % 2 == 0);
    }
    if (none) {
        set_u32(h, F_WINDOW, 0);
        return SY_OK;
    }
    if (!all && !even)
        return sy_fail(err, SY_E_UNSUPPORTED, "%s: layer_types: sliding-window attention on layers other than all "
                       "or the even ones is not supported (model.sliding_layers: all | even)", origin);
    set_u32(h, F_LAYER_TYPES, all ? 0 : 1);
    return SY_OK;
}

static void field_text(const sy_model_dims *d, size_t i, char *buf, size_t len);

/* Each dimension within the range of its Switchyard key (schema.c), as a config would have to be:
 * config.json beyond them describes a model no command can build, and whatever is sized per layer
 * or per expert (the tensor names `checkpoint check` expects) must not trust it. */
static sy_status check_limits(const char *origin, const sy_hf_config *h, sy_error *err)
{
    size_t n_keys = 0;
    const sy_cfg_key *keys = sy_schema_keys(&n_keys);
    for (size_t i = 0; i < N_FIELDS; i++) {
        long k = sy_schema_index(fields[i].key);
        if (!(h->present >> i & 1) || fields[i].type == FIELD_LAYER_TYPES || k < 0)
            continue;
        const sy_cfg_key *key = &keys[k];
        sy_model_dims d = h->dims;
        double v = fields[i].type == FIELD_F32 ? (double)*f32_at(&d, i) : (double)*u32_at(&d, i);
        int low = key->flags & SY_CFG_POSITIVE ? v <= 0 : v < key->min;
        if (!low && v <= key->max)
            continue;
        char value[48], allowed[96];
        field_text(&d, i, value, sizeof value);
        sy_schema_allowed(key, allowed, sizeof allowed);
        return sy_fail(err, SY_E_INVALID, "%s: %s%s%s = %s is out of range %s (the limits of %s)", origin,
                       fields[i].parent ? fields[i].parent : "", fields[i].parent ? "." : "", fields[i].hf, value,
                       allowed, fields[i].key);
    }
    return SY_OK;
}

sy_status sy_hf_config_parse(const char *origin, const char *text, size_t len, sy_hf_config *h, sy_error *err)
{
    memset(h, 0, sizeof *h);
    sy_jvalue root;
    sy_status st = sy_jvalue_parse(origin, text, len, 1u << 20, &root, err);
    if (st != SY_OK)
        return st;
    if (root.type != SY_J_OBJECT)
        st = sy_fail(err, SY_E_INVALID, "%s: expected a JSON object", origin);
    const sy_jvalue *type = sy_jvalue_get(&root, "model_type");
    if (st == SY_OK && type && (type->type != SY_J_STRING || strcmp(type->text, "gpt_oss") != 0))
        st = sy_fail(err, SY_E_UNSUPPORTED, "%s: model_type is %s%s%s; only gpt_oss checkpoints are supported",
                     origin, type->type == SY_J_STRING ? "\"" : "",
                     type->type == SY_J_STRING ? type->text : sy_jtype_name(type->type),
                     type->type == SY_J_STRING ? "\"" : "");
    const sy_jvalue *rope = sy_jvalue_get(&root, "rope_scaling");
    if (st == SY_OK && rope && rope->type != SY_J_NULL) {
        const sy_jvalue *rt = sy_jvalue_get(rope, "rope_type");
        if (rope->type != SY_J_OBJECT)
            st = sy_fail(err, SY_E_INVALID, "%s: rope_scaling must be an object or null", origin);
        else if (rt && (rt->type != SY_J_STRING || strcmp(rt->text, "yarn") != 0))
            st = sy_fail(err, SY_E_UNSUPPORTED, "%s: rope_scaling.rope_type must be \"yarn\" (gpt-oss)", origin);
    } else if (st == SY_OK) {
        *f32_at(&h->dims, F_FACTOR) = 1.0f; /* no rope_scaling: plain RoPE */
        h->present |= 1ull << F_FACTOR;
    }
    for (size_t i = 0; st == SY_OK && i < N_FIELDS; i++) {
        const sy_jvalue *parent = fields[i].parent ? sy_jvalue_get(&root, fields[i].parent) : &root;
        const sy_jvalue *v = parent && parent->type == SY_J_OBJECT ? sy_jvalue_get(parent, fields[i].hf) : NULL;
        char where[96];
        snprintf(where, sizeof where, "%s%s%s", fields[i].parent ? fields[i].parent : "", fields[i].parent ? "." : "",
                 fields[i].hf);
        if (!v || (v->type == SY_J_NULL && i != F_WINDOW)) {
            if (fields[i].required)
                st = sy_fail(err, SY_E_INVALID, "%s: %s is missing", origin, where);
            continue;
        }
        uint64_t u = 0;
        double f = 0;
        if (fields[i].type == FIELD_LAYER_TYPES) {
            st = read_layer_types(origin, v, h, err);
        } else if (i == F_WINDOW && v->type == SY_J_NULL) {
            set_u32(h, i, 0);
        } else if (fields[i].type == FIELD_U32) {
            if (!sy_jvalue_u64(v, &u) || u > UINT32_MAX)
                st = sy_fail(err, SY_E_INVALID, "%s: %s must be an integer from 0 to 2^32 - 1, not %s", origin, where,
                             v->type == SY_J_NUMBER ? v->text : sy_jtype_name(v->type));
            else
                set_u32(h, i, (uint32_t)u);
        } else {
            if (!sy_jvalue_f64(v, &f) || !isfinite(f) || !isfinite((float)f))
                st = sy_fail(err, SY_E_INVALID, "%s: %s must be a finite number, not %s", origin, where,
                             v->type == SY_J_NUMBER ? v->text : sy_jtype_name(v->type));
            else {
                *f32_at(&h->dims, i) = (float)f;
                h->present |= 1ull << i;
            }
        }
    }
    /* HF's default head_dim is hidden_size / num_attention_heads. */
    if (st == SY_OK && !(h->present >> F_HEAD_DIM & 1) && h->dims.q_heads)
        set_u32(h, F_HEAD_DIM, h->dims.hidden / h->dims.q_heads);
    if (st == SY_OK)
        st = check_limits(origin, h, err);
    sy_jvalue_free(&root);
    return st;
}

sy_status sy_hf_config_read(const char *path, sy_hf_config *out, sy_error *err)
{
    char *text = NULL;
    size_t len = 0;
    memset(out, 0, sizeof *out);
    sy_status st = sy_read_small_file(path, SY_CKPT_MAX_JSON_BYTES, &text, &len, err);
    if (st == SY_OK)
        st = sy_hf_config_parse(path, text, len, out, err);
    free(text);
    return st;
}

/* The shortest decimal that reads back as the same float. */
static void float_text(float v, char *buf, size_t len)
{
    if (v == (float)(int64_t)v && fabsf(v) < 1e15f) {
        snprintf(buf, len, "%.0f", (double)v);
        return;
    }
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, len, "%.*g", prec, (double)v);
        if ((float)strtod(buf, NULL) == v)
            return;
    }
}

static void field_text(const sy_model_dims *d, size_t i, char *buf, size_t len)
{
    sy_model_dims copy = *d;
    if (fields[i].type == FIELD_F32)
        float_text(*f32_at(&copy, i), buf, len);
    else if (fields[i].type == FIELD_LAYER_TYPES)
        snprintf(buf, len, "%s", *u32_at(&copy, i) ? "even" : "all");
    else
        snprintf(buf, len, "%u", *u32_at(&copy, i));
}

sy_status sy_hf_config_agree(const sy_hf_config *hf, const char *path, const sy_model_dims *dims,
                             const sy_config *cfg, sy_error *err)
{
    sy_model_dims want = hf->dims, have = *dims;
    for (size_t i = 0; i < N_FIELDS; i++) {
        if (!(hf->present >> i & 1))
            continue;
        /* Which layers slide does not matter without a window. */
        if (fields[i].type == FIELD_LAYER_TYPES && (have.sliding_window == 0 || want.sliding_window == 0))
            continue;
        int same = fields[i].type == FIELD_F32 ? *f32_at(&want, i) == *f32_at(&have, i)
                                               : *u32_at(&want, i) == *u32_at(&have, i);
        if (same)
            continue;
        char mine[48], theirs[48];
        field_text(&have, i, mine, sizeof mine);
        field_text(&want, i, theirs, sizeof theirs);
        const char *hf_name = fields[i].type == FIELD_LAYER_TYPES ? "layer_types (sliding layers)" : fields[i].hf;
        if (cfg)
            return sy_fail(err, SY_E_INVALID,
                           "%s = %s (%s) disagrees with %s%s%s = %s in %s; set %s to the checkpoint's value (plugins "
                           "are chosen for the configured model)",
                           fields[i].key, mine, sy_config_source(cfg, fields[i].key),
                           fields[i].parent ? fields[i].parent : "", fields[i].parent ? "." : "", hf_name, theirs,
                           path, sy_config_is_default(cfg, fields[i].key) ? "model.preset or the key" : "it");
        return sy_fail(err, SY_E_INVALID, "%s = %s disagrees with %s%s%s = %s in %s", fields[i].key, mine,
                       fields[i].parent ? fields[i].parent : "", fields[i].parent ? "." : "", hf_name, theirs, path);
    }
    return SY_OK;
}

char *sy_hf_config_text(const sy_model_dims *d)
{
    char theta[32], factor[32], fast[32], slow[32], eps[32], limit[32];
    float_text(d->rope_theta, theta, sizeof theta);
    float_text(d->yarn_factor, factor, sizeof factor);
    float_text(d->yarn_beta_fast, fast, sizeof fast);
    float_text(d->yarn_beta_slow, slow, sizeof slow);
    float_text(d->rms_eps, eps, sizeof eps);
    float_text(d->swiglu_limit, limit, sizeof limit);
    sy_str s = {0};
    sy_str_appendf(&s,
                   "{\n  \"architectures\": [\"GptOssForCausalLM\"],\n  \"model_type\": \"gpt_oss\",\n"
                   "  \"attention_bias\": true,\n  \"tie_word_embeddings\": false,\n"
                   "  \"hidden_act\": \"silu\",\n"
                   "  \"num_hidden_layers\": %u,\n  \"hidden_size\": %u,\n  \"num_attention_heads\": %u,\n"
                   "  \"num_key_value_heads\": %u,\n  \"head_dim\": %u,\n  \"num_local_experts\": %u,\n"
                   "  \"num_experts_per_tok\": %u,\n  \"experts_per_token\": %u,\n  \"intermediate_size\": %u,\n"
                   "  \"vocab_size\": %u,\n  \"sliding_window\": %u,\n  \"layer_types\": [",
                   d->layers, d->hidden, d->q_heads, d->kv_heads, d->head_dim, d->experts, d->top_k, d->top_k,
                   d->intermediate, d->vocab, d->sliding_window);
    for (uint32_t l = 0; l < d->layers; l++)
        sy_str_appendf(&s, "%s\"%s\"", l ? ", " : "", sy_layer_is_sliding(d, l) ? "sliding_attention" : "full_attention");
    sy_str_appendf(&s, "],\n  \"rope_theta\": %s,\n", theta);
    if (d->yarn_factor != 1.0f)
        sy_str_appendf(&s,
                       "  \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": %s, \"beta_fast\": %s, "
                       "\"beta_slow\": %s, \"original_max_position_embeddings\": %u, \"truncate\": false},\n",
                       factor, fast, slow, d->yarn_original_max_position);
    else
        sy_str_appendf(&s, "  \"rope_scaling\": null,\n");
    sy_str_appendf(&s,
                   "  \"rms_norm_eps\": %s,\n  \"swiglu_limit\": %s,\n"
                   "  \"quantization_config\": {\"quant_method\": \"mxfp4\", \"modules_to_not_convert\": "
                   "[\"model.layers.*.self_attn\", \"model.layers.*.mlp.router\", \"model.embed_tokens\", "
                   "\"lm_head\"]}\n}\n",
                   eps, limit);
    return s.data;
}
