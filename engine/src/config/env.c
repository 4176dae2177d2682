/* The table of SGLang variables (names and values as SGLang reads them: environ.py and the AITER
 * backend; shared/reference/kv5d-attention.md and moe-mxfp4-norm.md). */
#include "config/env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

static const sy_env_value layout_values[] = {{"nhd", "nhd"}, {"vectorized_5d", "vectorized_5d"}, {NULL, NULL}};
static const sy_env_value gate_up_values[] = {
    {"1", "interleave"}, {"true", "interleave"}, {"0", "separated"}, {"false", "separated"}, {NULL, NULL}};
static const sy_env_value pad_values[] = {{"1", "on"}, {"true", "on"}, {"0", "off"}, {"false", "off"}, {NULL, NULL}};

static const sy_env_var vars[] = {
    {"SGLANG_AITER_KV_CACHE_LAYOUT", "kv_cache.layout", layout_values, "KV cache layout of the AITER backend"},
    {"SGLANG_KV_CACHE_LAYOUT", "kv_cache.layout", layout_values, "the same, other spelling"},
    {"SGLANG_USE_AITER_MOE_GU_ITLV", "moe.gate_up_layout", gate_up_values,
     "AITER MoE gate/up tiles: 1 interleave, 0 separated"},
    {"SGLANG_AITER_FUSE_RMSNORM_PAD", "norm.fuse_pad", pad_values, "fused add + RMSNorm + pad: 1 on, 0 off"},
    {"SGLANG_FUSE_RMSNORM_PAD", "norm.fuse_pad", pad_values, "the same, other spelling"},
};

size_t sy_env_var_count(void)
{
    return sizeof vars / sizeof vars[0];
}

const sy_env_var *sy_env_var_get(size_t i)
{
    return i < sy_env_var_count() ? &vars[i] : NULL;
}

const char *sy_env_lookup(const char *const *envp, const char *name)
{
    if (!envp)
        envp = (const char *const *)environ;
    size_t n = strlen(name);
    for (size_t i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
            return envp[i] + n + 1;
    return NULL;
}

int sy_env_next_set(const char *const *envp, size_t *cursor, const sy_env_var **var, const char **value,
                    const char **mapped)
{
    while (*cursor < sy_env_var_count()) {
        *var = &vars[(*cursor)++];
        *value = sy_env_lookup(envp, (*var)->name);
        if (*value) {
            *mapped = sy_env_map(*var, *value);
            return 1;
        }
    }
    return 0;
}

const char *sy_env_map(const sy_env_var *v, const char *value)
{
    for (const sy_env_value *e = v->values; e->env; e++)
        if (strcasecmp(e->env, value) == 0)
            return e->key;
    return NULL;
}

void sy_env_report_invalid(const sy_env_var *v, const char *value, sy_diags *d)
{
    char accepted[256];
    sy_env_accepted(v, accepted, sizeof accepted);
    sy_diags_add(d, SY_SEV_ERROR, SY_ORIGIN_ENV, 0, 0, "%s=%s: '%s' is not one of: %s (it maps to %s)", v->name, value,
                 value, accepted, v->key);
}

void sy_env_report_conflict(const sy_env_var *v, const char *value, const char *first_var, const char *first_mapped,
                            sy_diags *d)
{
    sy_diags_add(d, SY_SEV_ERROR, SY_ORIGIN_ENV, 0, 0, "%s=%s conflicts with %s, which already set %s = %s", v->name,
                 value, first_var, v->key, first_mapped);
}

void sy_env_accepted(const sy_env_var *v, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const sy_env_value *e = v->values; e->env && used < len; e++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", e == v->values ? "" : ", ", e->env);
}
