/* The schema table: the only place config keys are defined. Keys of one section are contiguous
 * (show and the docs group by section in this order). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/schema.h"
#include "model/presets.h"

/* offsetof + 1 so that 0 can mean "not a model dimension" although layers sits at offset 0. */
#define DIMS(member) (offsetof(sy_model_dims, member) + 1)
#define INT_MAX_EXACT 9007199254740991.0 /* 2^53 - 1: every integer up to here survives a double */

static const char *const presets[] = {"tiny", "gpt-oss-20b", "gpt-oss-120b", NULL};
static const char *const act_dtypes[] = {"bf16", "f32", NULL};
static const char *const layouts[] = {"nhd", "vectorized_5d", NULL};
static const char *const kv_dtypes[] = {"bf16", "fp8_e4m3", NULL};
static const char *const tristate[] = {"auto", "on", "off", NULL};
static const char *const gate_up_layouts[] = {"interleave", "separated", NULL};
static const char *const weight_formats[] = {"mxfp4", "bf16", NULL};
/* Index = sy_model_dims.swa_even_layers. */
static const char *const sliding_layers[] = {"all", "even", NULL};
static const char *const contexts[] = {"prefill", "synthetic", NULL};

/* Model dimensions default to the preset's. */
static int from_preset(const sy_config *c, const sy_cfg_key *k, char *text, size_t len, char *why, size_t why_len,
                       const char **from_key)
{
    const sy_model_preset *p = sy_model_preset_find(sy_config_str(c, "model.preset"));
    if (!p)
        return 0;
    sy_schema_dims_field_text(k, &p->dims, text, len);
    snprintf(why, why_len, "preset %s", p->name);
    *from_key = "model.preset";
    return 1;
}

/* 1 / sqrt(head_dim), the standard softmax scale (0.125 for gpt-oss's 64). */
static int inverse_sqrt_head_dim(const sy_config *c, const sy_cfg_key *k, char *text, size_t len, char *why,
                                 size_t why_len, const char **from_key)
{
    (void)k;
    sy_cfg_format_double(1.0 / sqrt((double)sy_config_int(c, "model.head_dim")), text, len);
    snprintf(why, why_len, "1/sqrt(model.head_dim)");
    *from_key = "model.head_dim";
    return 1;
}

#define PRESET_INT(key, member, lo, hi, what)                                                            \
    {.name = key, .type = SY_CFG_INT, .min = lo, .max = hi, .derive = from_preset, .dims_field = DIMS(member), \
     .def_doc = "from model.preset", .doc = what}
#define PRESET_FLOAT(key, member, lo, hi, what)                                                            \
    {.name = key, .type = SY_CFG_FLOAT, .min = lo, .max = hi, .derive = from_preset, .dims_field = DIMS(member), \
     .def_doc = "from model.preset", .doc = what}
#define PLUGIN_CHOICE(key, kind)                                                                         \
    {.name = key, .type = SY_CFG_STRING, .def = "auto", .flags = SY_CFG_IDENTIFIER,                      \
     .doc = "the " kind " plugin: auto (compatible plugins by rank, then name) or a plugin name; an "    \
            "explicit name that does not fit the config is an error"}

static const sy_cfg_key keys[] = {
    {.name = "backend", .type = SY_CFG_STRING, .def = "cpu", .flags = SY_CFG_IDENTIFIER,
     .doc = "device backend the plugins run on: cpu, cuda, hip, or auto (the usable backend with the highest "
            "probe score)"},
    {.name = "device", .type = SY_CFG_INT, .min = 0, .max = 1023, .def = "0", .doc = "device index on the backend"},
    {.name = "plugin_path", .type = SY_CFG_LIST, .def = "", .flags = SY_CFG_RELATIVE_PATH,
     .doc = "folders searched for plugins after --plugin-path and before $SWITCHYARD_PLUGIN_PATH"},

    {.name = "model.preset", .type = SY_CFG_ENUM, .choices = presets, .def = "tiny",
     .doc = "model whose dimensions are the defaults of the model.* keys below"},
    {.name = "model.weights", .type = SY_CFG_STRING, .def = "synthetic", .flags = SY_CFG_RELATIVE_PATH,
     .doc = "synthetic (seeded weights in the checkpoint format) or the path of a safetensors checkpoint"},
    {.name = "model.seed", .type = SY_CFG_INT, .min = 0, .max = INT_MAX_EXACT, .def = "0",
     .doc = "seed of the synthetic weights"},
    {.name = "model.dtype", .type = SY_CFG_ENUM, .choices = act_dtypes, .def = "f32",
     .doc = "activation dtype between ops: normed rows, q, k, v, attention and MoE outputs (the residual stream, "
            "router logits and output logits stay f32; weights and KV keep their own dtypes)"},
    PRESET_INT("model.layers", layers, 1, 1024, "decoder layers"),
    PRESET_INT("model.hidden", hidden, 1, 65536, "hidden size (unpadded)"),
    PRESET_INT("model.q_heads", q_heads, 1, 1024, "query heads"),
    PRESET_INT("model.kv_heads", kv_heads, 1, 1024, "key/value heads (grouped-query attention)"),
    PRESET_INT("model.head_dim", head_dim, 1, 1024, "dimension of one attention head, K and V alike"),
    PRESET_INT("model.experts", experts, 1, 4096, "MoE experts per layer"),
    PRESET_INT("model.top_k", top_k, 1, 64, "experts each token is routed to"),
    PRESET_INT("model.intermediate", intermediate, 1, 262144, "MoE expert intermediate size"),
    PRESET_INT("model.vocab", vocab, 1, 4194304, "vocabulary size"),
    PRESET_INT("model.sliding_window", sliding_window, 0, 16777216,
               "keys a sliding-window layer attends to, the current one included; 0 = no sliding window"),
    {.name = "model.sliding_layers", .type = SY_CFG_ENUM, .choices = sliding_layers, .derive = from_preset,
     .dims_field = DIMS(swa_even_layers), .def_doc = "from model.preset",
     .doc = "layers that use the window: even (0, 2, 4, ... as in gpt-oss) or all"},
    {.name = "model.sinks", .type = SY_CFG_BOOL, .derive = from_preset, .dims_field = DIMS(has_sinks),
     .def_doc = "from model.preset", .doc = "attention sinks: one learned logit per query head in the softmax"},
    PRESET_FLOAT("model.rope_theta", rope_theta, 1, 1e9, "RoPE base"),
    PRESET_FLOAT("model.yarn_factor", yarn_factor, 1, 1024, "YaRN context-extension factor; 1 = plain RoPE"),
    PRESET_FLOAT("model.yarn_beta_fast", yarn_beta_fast, 0, 1024, "YaRN beta_fast"),
    PRESET_FLOAT("model.yarn_beta_slow", yarn_beta_slow, 0, 1024, "YaRN beta_slow"),
    PRESET_INT("model.yarn_original_max_position", yarn_original_max_position, 1, 16777216,
               "YaRN original maximum position"),
    PRESET_FLOAT("model.rms_eps", rms_eps, 1e-12, 1, "RMSNorm epsilon"),
    PRESET_FLOAT("model.swiglu_alpha", swiglu_alpha, 0, 100, "SwiGLU: a = g * sigmoid(alpha * g) * (u + 1)"),
    PRESET_FLOAT("model.swiglu_limit", swiglu_limit, 0, 1e6, "SwiGLU clamp: g = min(g, limit), u in [-limit, limit]"),
    {.name = "model.attn_scale", .type = SY_CFG_FLOAT, .max = 100, .flags = SY_CFG_POSITIVE,
     .derive = inverse_sqrt_head_dim, .dims_field = DIMS(attn_scale), .def_doc = "1/sqrt(model.head_dim)",
     .doc = "softmax scale applied to q.k"},

    {.name = "kv_cache.layout", .type = SY_CFG_ENUM, .choices = layouts, .def = "nhd",
     .doc = "KV pool layout: nhd (pages*P, H, D) or vectorized_5d (K (pages, H, D/X, P, X), V (pages, H, P/X, D, X))"},
    PLUGIN_CHOICE("kv_cache.plugin", "kv_layout"),
    {.name = "kv_cache.dtype", .type = SY_CFG_ENUM, .choices = kv_dtypes, .def = "bf16",
     .doc = "KV pool element type; fp8_e4m3 needs kv_cache.k_scale and kv_cache.v_scale"},
    {.name = "kv_cache.page_size", .type = SY_CFG_INT, .min = 1, .max = 65536, .flags = SY_CFG_FROM_PLUGIN,
     .def_doc = "the kv_layout plugin's default_page_size (64 for vectorized_5d)",
     .doc = "tokens per KV page (P)"},
    {.name = "kv_cache.k_scale", .type = SY_CFG_FLOAT, .max = 1e30, .word = "unit", .word_value = 1.0,
     .flags = SY_CFG_POSITIVE, .def_doc = "none",
     .doc = "fp8 K dequantization scale (stored = fp8(k / scale)); unit = 1, said explicitly"},
    {.name = "kv_cache.v_scale", .type = SY_CFG_FLOAT, .max = 1e30, .word = "unit", .word_value = 1.0,
     .flags = SY_CFG_POSITIVE, .def_doc = "none",
     .doc = "fp8 V dequantization scale (stored = fp8(v / scale)); unit = 1, said explicitly"},
    {.name = "kv_cache.pool_tokens", .type = SY_CFG_INT, .min = 0, .max = 2147483647, .def = "0",
     .doc = "tokens the KV pool holds; 0 = enough for the workload"},
    {.name = "kv_cache.swa_pool_tokens", .type = SY_CFG_INT, .min = 0, .max = 2147483647, .def = "0",
     .doc = "tokens the sliding-window pool holds; 0 = what the window and the prefill chunk need"},
    {.name = "kv_cache.memory_budget_mib", .type = SY_CFG_INT, .min = 0, .max = 1073741824, .def = "0",
     .doc = "upper bound on the memory of both KV pools together in MiB (the sliding-window pool first, the "
            "full-attention pool gets the rest); used when pool_tokens is 0; 0 = no bound"},

    PLUGIN_CHOICE("attention.plugin", "attention"),
    {.name = "attention.num_splits", .type = SY_CFG_INT, .min = 0, .max = 256, .def = "0",
     .doc = "split-K partitions of decode attention; 0 = the plugin chooses; more than 1 needs split_k"},
    {.name = "attention.prefill_paged", .type = SY_CFG_ENUM, .choices = tristate, .def = "auto",
     .doc = "a later prefill chunk reads its prefix from the pool's pages (attention.prefill_paged): on = required "
            "(error if the attention plugin lacks it), auto = when the plugin declares prefill_paged, off = "
            "kv_layout.gather to contiguous rows, then prefill_linear"},

    PLUGIN_CHOICE("rope.plugin", "rope"),
    {.name = "rope.fuse_kv_write", .type = SY_CFG_ENUM, .choices = tristate, .def = "auto",
     .doc = "fused RoPE + KV write: on = required (error if the rope plugin cannot write the layout), auto = "
            "when supported, else RoPE then kv_layout.write, off = never"},

    PLUGIN_CHOICE("norm.plugin", "norm"),
    {.name = "norm.fuse_pad", .type = SY_CFG_ENUM, .choices = tristate, .def = "off",
     .doc = "fused add + RMSNorm + pad to the MoE input alignment: needs norm pad_to_multiple, an MoE that "
            "accepts padded input, parallel.tp 1; on = required, auto = when all hold"},

    PLUGIN_CHOICE("moe.plugin", "moe"),
    {.name = "moe.gate_up_layout", .type = SY_CFG_ENUM, .choices = gate_up_layouts, .def = "interleave",
     .doc = "expert gate/up tile layout the MoE plugin prepares and reads: interleave or separated"},
    {.name = "moe.weight_format", .type = SY_CFG_ENUM, .choices = weight_formats, .def = "mxfp4",
     .doc = "expert weight format of the checkpoint"},

    PLUGIN_CHOICE("linear.plugin", "linear"),
    {.name = "linear.fuse_qkv", .type = SY_CFG_ENUM, .choices = tristate, .def = "auto",
     .doc = "q, k and v projected by one linear over their concatenated weights, read as slices of its rows: "
            "needs an attention plugin with row_stride and a kv_layout that writes any token stride; on = "
            "required, auto = when both hold, off = q, k and v in arrays of their own (one linear where the "
            "linear plugin declares split_y, else three)"},

    {.name = "parallel.tp", .type = SY_CFG_INT, .min = 1, .max = 64, .def = "1",
     .doc = "tensor-parallel degree; bounded by every chosen plugin's max_tp"},

    {.name = "workload.batch", .type = SY_CFG_INT, .min = 1, .max = 65536, .def = "2",
     .doc = "sequences decoded together"},
    {.name = "workload.input_len", .type = SY_CFG_INT, .min = 1, .max = 16777216, .def = "64",
     .doc = "prompt tokens per sequence"},
    {.name = "workload.output_len", .type = SY_CFG_INT, .min = 1, .max = 16777216, .def = "16",
     .doc = "tokens generated per sequence (greedy)"},
    {.name = "workload.prefill_chunk", .type = SY_CFG_INT, .min = 0, .max = 16777216, .def = "32",
     .doc = "prompt tokens per prefill step (chunked prefill); 0 = the whole prompt in one step"},
    {.name = "workload.context", .type = SY_CFG_ENUM, .choices = contexts, .def = "prefill",
     .doc = "how each sequence's input_len tokens of context are made: prefill = the seeded prompt run through "
            "the model (TTFT measured), synthetic = seeded K/V written into the pools through kv_layout.write, pages "
            "as a prefill in chunks of prefill_chunk leaves them, no prefill run (decode steps only; TTFT not "
            "measured)"},
    {.name = "workload.warmup", .type = SY_CFG_INT, .min = 0, .max = 10000, .def = "1",
     .doc = "untimed repetitions before measuring"},
    {.name = "workload.repeat", .type = SY_CFG_INT, .min = 1, .max = 100000, .def = "3",
     .doc = "timed repetitions"},
    {.name = "workload.seed", .type = SY_CFG_INT, .min = 0, .max = INT_MAX_EXACT, .def = "0",
     .doc = "seed of the prompt tokens"},

    {.name = "report.json", .type = SY_CFG_STRING, .def = "",
     .doc = "write the run report as JSON to this file (relative to the current folder); empty = none"},
    {.name = "report.per_op", .type = SY_CFG_BOOL, .def = "true",
     .doc = "time each op (plugin call) and report per-op totals; the two events around each call cost time of their own "
            "(H200, gpt-oss-120b decode at batch 128: about 2 ms of a 33 ms step, since they also keep GPU launches from "
            "overlapping), so time TPOT with it off"},
};

const sy_cfg_key *sy_schema_keys(size_t *n)
{
    *n = sizeof keys / sizeof keys[0];
    return keys;
}

long sy_schema_index(const char *name)
{
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(keys[i].name, name) == 0)
            return (long)i;
    return -1;
}

size_t sy_config_key_count(void)
{
    return sizeof keys / sizeof keys[0];
}

const char *sy_config_key_name(size_t i)
{
    return i < sizeof keys / sizeof keys[0] ? keys[i].name : NULL;
}

const char *sy_cfg_type_name(sy_cfg_type t)
{
    switch (t) {
    case SY_CFG_ENUM: return "enum";
    case SY_CFG_INT: return "int";
    case SY_CFG_FLOAT: return "float";
    case SY_CFG_BOOL: return "bool";
    case SY_CFG_STRING: return "string";
    case SY_CFG_LIST: return "list";
    default: return "invalid";
    }
}

void sy_schema_allowed(const sy_cfg_key *k, char *buf, size_t len)
{
    char lo[32], hi[32];
    size_t used = 0;
    buf[0] = '\0';
    switch (k->type) {
    case SY_CFG_ENUM:
        for (size_t i = 0; k->choices[i] && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", k->choices[i]);
        break;
    case SY_CFG_INT:
        snprintf(buf, len, "%.0f..%.0f", k->min, k->max);
        break;
    case SY_CFG_FLOAT:
        sy_cfg_format_double(k->min, lo, sizeof lo);
        sy_cfg_format_double(k->max, hi, sizeof hi);
        if (k->flags & SY_CFG_POSITIVE)
            snprintf(buf, len, "> 0 and <= %s%s%s", hi, k->word ? ", or " : "", k->word ? k->word : "");
        else
            snprintf(buf, len, "%s..%s%s%s", lo, hi, k->word ? ", or " : "", k->word ? k->word : "");
        break;
    case SY_CFG_BOOL:
        snprintf(buf, len, "true, false");
        break;
    case SY_CFG_STRING:
        snprintf(buf, len, "%s", (k->flags & SY_CFG_IDENTIFIER) ? "a name: [a-z0-9_]+" : "text");
        break;
    case SY_CFG_LIST:
        snprintf(buf, len, "list of %s", (k->flags & SY_CFG_RELATIVE_PATH) ? "paths" : "text");
        break;
    }
}

void sy_schema_dims_field_text(const sy_cfg_key *k, const sy_model_dims *dims, char *text, size_t len)
{
    const char *field = (const char *)dims + (k->dims_field - 1);
    if (k->type == SY_CFG_FLOAT) {
        float v;
        memcpy(&v, field, sizeof v);
        sy_cfg_format_shortest(v, true, text, len);
        return;
    }
    uint32_t v;
    memcpy(&v, field, sizeof v);
    if (k->type == SY_CFG_ENUM)
        snprintf(text, len, "%s", k->choices[v]);
    else if (k->type == SY_CFG_BOOL)
        snprintf(text, len, "%s", v ? "true" : "false");
    else
        snprintf(text, len, "%u", v);
}

void sy_schema_store_dims_field(const sy_cfg_key *k, const sy_config *c, sy_model_dims *dims)
{
    char *field = (char *)dims + (k->dims_field - 1);
    if (k->type == SY_CFG_FLOAT) {
        float v = (float)sy_config_float(c, k->name);
        memcpy(field, &v, sizeof v);
        return;
    }
    uint32_t v;
    if (k->type == SY_CFG_ENUM) {
        const char *word = sy_config_str(c, k->name);
        for (v = 0; k->choices[v] && strcmp(k->choices[v], word) != 0; v++)
            ;
    } else if (k->type == SY_CFG_BOOL)
        v = (uint32_t)sy_config_bool(c, k->name);
    else
        v = (uint32_t)sy_config_int(c, k->name);
    memcpy(field, &v, sizeof v);
}
