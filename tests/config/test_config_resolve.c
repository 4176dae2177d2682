/* Resolution: precedence and sources, the environment table, --set, derived defaults and presets,
 * YAML and INI resolving identically for every key, and show's output loading back. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg_test.h"
#include "config/schema.h"
#include "model/presets.h"
#include "util/strbuf.h"

static void expect_same_values(const sy_config *a, const sy_config *b)
{
    for (size_t i = 0; i < sy_config_key_count(); i++) {
        const char *key = sy_config_key_name(i);
        if (strcmp(sy_config_text(a, key), sy_config_text(b, key)) != 0)
            ck_abort_msg("%s: '%s' (from %s) vs '%s' (from %s)", key, sy_config_text(a, key), sy_config_source(a, key),
                         sy_config_text(b, key), sy_config_source(b, key));
    }
}

START_TEST(defaults_and_derived_sources)
{
    sy_diags d = {0};
    sy_config *c = sy_config_load_defaults(NULL, &d);
    expect_count(&d, 0);
    ck_assert_str_eq(sy_config_str(c, "backend"), "cpu");
    ck_assert_str_eq(sy_config_source(c, "backend"), "default");
    ck_assert_int_eq(sy_config_int(c, "model.layers"), 4);
    ck_assert_str_eq(sy_config_source(c, "model.layers"), "default (preset tiny)");
    ck_assert(fabs(sy_config_float(c, "model.attn_scale") - 1.0 / sqrt(32.0)) < 1e-15);
    ck_assert_str_eq(sy_config_source(c, "model.attn_scale"), "default (1/sqrt(model.head_dim))");
    ck_assert(!sy_config_has(c, "kv_cache.page_size"));
    ck_assert_str_eq(sy_config_text(c, "kv_cache.page_size"), "(unset)");
    ck_assert(!sy_config_has(c, "kv_cache.k_scale"));
    ck_assert(sy_config_is_default(c, "model.layers"));
    sy_config_free(c);
}
END_TEST

START_TEST(presets_match_the_models)
{
    const sy_model_preset *tiny = sy_model_preset_find("tiny");
    const sy_model_preset *b20 = sy_model_preset_find("gpt-oss-20b");
    const sy_model_preset *b120 = sy_model_preset_find("gpt-oss-120b");
    ck_assert_ptr_nonnull(tiny);
    ck_assert_ptr_nonnull(b20);
    ck_assert_ptr_nonnull(b120);
    ck_assert_ptr_null(sy_model_preset_find("gpt-oss-7b"));
    const sy_model_dims *t = &tiny->dims;
    ck_assert_uint_eq(t->layers, 4);
    ck_assert_uint_eq(t->hidden, 128);
    ck_assert_uint_eq(t->q_heads, 4);
    ck_assert_uint_eq(t->kv_heads, 2);
    ck_assert_uint_eq(t->head_dim, 32);
    ck_assert_uint_eq(t->experts, 8);
    ck_assert_uint_eq(t->top_k, 2);
    ck_assert_uint_eq(t->intermediate, 128);
    ck_assert_uint_eq(t->sliding_window, 16);
    ck_assert_uint_eq(t->swa_even_layers, 1);
    ck_assert_uint_eq(t->vocab, 512);
    for (int i = 0; i < 2; i++) {
        const sy_model_dims *g = i ? &b120->dims : &b20->dims;
        ck_assert_uint_eq(g->layers, i ? 36 : 24);
        ck_assert_uint_eq(g->experts, i ? 128 : 32);
        ck_assert_uint_eq(g->hidden, 2880);
        ck_assert_uint_eq(g->q_heads, 64);
        ck_assert_uint_eq(g->kv_heads, 8);
        ck_assert_uint_eq(g->head_dim, 64);
        ck_assert_uint_eq(g->top_k, 4);
        ck_assert_uint_eq(g->intermediate, 2880);
        ck_assert_uint_eq(g->sliding_window, 128);
        ck_assert_uint_eq(g->swa_even_layers, 1);
        ck_assert_uint_eq(g->has_sinks, 1);
        ck_assert_uint_eq(g->vocab, 201088);
        ck_assert(g->rope_theta == 150000.0f && g->yarn_factor == 32.0f && g->yarn_beta_fast == 32.0f &&
                  g->yarn_beta_slow == 1.0f && g->yarn_original_max_position == 4096);
    }
}
END_TEST

START_TEST(preset_overrides_and_model_dims)
{
    sy_diags d = {0};
    sy_config *c = cfg_load("p.yaml", "model:\n  preset: gpt-oss-120b\n  layers: 2\n  sliding_layers: all\n", NULL, &d);
    expect_count(&d, 0);
    sy_model_dims m;
    sy_model_dims_from_config(c, &m);
    ck_assert_uint_eq(m.layers, 2);
    ck_assert_str_eq(sy_config_source(c, "model.layers"), "p.yaml:3:3");
    ck_assert_uint_eq(m.experts, 128);
    ck_assert_str_eq(sy_config_source(c, "model.experts"), "default (preset gpt-oss-120b)");
    ck_assert_uint_eq(m.swa_even_layers, 0);
    ck_assert_uint_eq(m.has_sinks, 1);
    ck_assert(m.attn_scale == 0.125f);
    ck_assert(m.rms_eps == 1e-5f);
    ck_assert(m.swiglu_alpha == 1.702f);
    ck_assert(m.yarn_factor == 32.0f);
    /* A derived default points diagnostics at the key it came from. */
    sy_mark at = sy_config_mark(c, "model.experts");
    ck_assert_str_eq(at.origin, "p.yaml");
    ck_assert_uint_eq(at.line, 2);
    ck_assert_uint_eq(at.col, 11);
    sy_config_free(c);
}
END_TEST

static const char *const env_layout[] = {"SGLANG_AITER_KV_CACHE_LAYOUT=vectorized_5d", "PATH=/usr/bin", NULL};

START_TEST(precedence_default_file_env_set)
{
    const char *sets[] = {"kv_cache.layout=nhd"};
    const char *text = "kv_cache:\n  layout: nhd\n  dtype: bf16\n";
    sy_diags d = {0};

    sy_config_options o = {0};
    o.envp = env_layout;
    sy_config *c = cfg_load("f.yaml", text, &o, &d);
    sy_diags_sort(&d);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_WARNING, "environment", 0, 0,
                "SGLANG_AITER_KV_CACHE_LAYOUT=vectorized_5d is set but not imported: it means kv_cache.layout = "
                "vectorized_5d; pass --import-env to apply it, or set kv_cache.layout in the config");
    ck_assert_str_eq(sy_config_str(c, "kv_cache.layout"), "nhd");
    ck_assert_str_eq(sy_config_source(c, "kv_cache.layout"), "f.yaml:2:3");
    sy_config_free(c);
    sy_diags_free(&d);

    o.import_env = 1;
    c = cfg_load("f.yaml", text, &o, &d);
    expect_count(&d, 0);
    ck_assert_str_eq(sy_config_str(c, "kv_cache.layout"), "vectorized_5d");
    ck_assert_str_eq(sy_config_source(c, "kv_cache.layout"), "env SGLANG_AITER_KV_CACHE_LAYOUT");
    ck_assert_str_eq(sy_config_source(c, "kv_cache.dtype"), "f.yaml:3:3");
    sy_config_free(c);

    o.sets = sets;
    o.n_sets = 1;
    c = cfg_load("f.yaml", text, &o, &d);
    expect_count(&d, 0);
    ck_assert_str_eq(sy_config_str(c, "kv_cache.layout"), "nhd");
    ck_assert_str_eq(sy_config_source(c, "kv_cache.layout"), "--set");
    sy_mark at = sy_config_mark(c, "kv_cache.layout");
    ck_assert_str_eq(at.origin, "--set");
    ck_assert_uint_eq(at.line, 1);
    ck_assert_uint_eq(at.col, 17);
    sy_config_free(c);
}
END_TEST

START_TEST(environment_table)
{
    static const char *const all[] = {"SGLANG_KV_CACHE_LAYOUT=VECTORIZED_5D", "SGLANG_USE_AITER_MOE_GU_ITLV=0",
                                      "SGLANG_FUSE_RMSNORM_PAD=true", NULL};
    sy_config_options o = {0};
    o.envp = all;
    o.import_env = 1;
    sy_diags d = {0};
    sy_config *c = sy_config_load_defaults(&o, &d);
    expect_count(&d, 0);
    ck_assert_str_eq(sy_config_str(c, "kv_cache.layout"), "vectorized_5d");
    ck_assert_str_eq(sy_config_str(c, "moe.gate_up_layout"), "separated");
    ck_assert_str_eq(sy_config_source(c, "moe.gate_up_layout"), "env SGLANG_USE_AITER_MOE_GU_ITLV");
    ck_assert_str_eq(sy_config_str(c, "norm.fuse_pad"), "on");
    ck_assert_str_eq(sy_config_source(c, "norm.fuse_pad"), "env SGLANG_FUSE_RMSNORM_PAD");
    sy_config_free(c);

    static const char *const one[] = {"SGLANG_USE_AITER_MOE_GU_ITLV=1", NULL};
    o.envp = one;
    c = sy_config_load_defaults(&o, &d);
    ck_assert_str_eq(sy_config_str(c, "moe.gate_up_layout"), "interleave");
    sy_config_free(c);

    static const char *const bad[] = {"SGLANG_USE_AITER_MOE_GU_ITLV=maybe", "SGLANG_AITER_FUSE_RMSNORM_PAD=1",
                                      "SGLANG_FUSE_RMSNORM_PAD=0", NULL};
    o.envp = bad;
    c = sy_config_load_defaults(&o, &d);
    sy_diags_sort(&d);
    expect_count(&d, 2);
    expect_diag(&d, 0, SY_SEV_ERROR, "environment", 0, 0,
                "SGLANG_USE_AITER_MOE_GU_ITLV=maybe: 'maybe' is not one of: 1, true, 0, false (it maps to "
                "moe.gate_up_layout)");
    expect_diag(&d, 1, SY_SEV_ERROR, "environment", 0, 0,
                "SGLANG_FUSE_RMSNORM_PAD=0 conflicts with SGLANG_AITER_FUSE_RMSNORM_PAD, which already set "
                "norm.fuse_pad = on");
    ck_assert_str_eq(sy_config_str(c, "moe.gate_up_layout"), "interleave");
    sy_config_free(c);
    sy_diags_free(&d);

    /* Not imported: one warning per variable, naming the key; an invalid value says so too. */
    o.import_env = 0;
    c = sy_config_load_defaults(&o, &d);
    sy_diags_sort(&d);
    expect_count(&d, 3);
    expect_diag(&d, 0, SY_SEV_WARNING, "environment", 0, 0,
                "SGLANG_USE_AITER_MOE_GU_ITLV=maybe is set but not imported (it maps to moe.gate_up_layout, and "
                "'maybe' is not one of: 1, true, 0, false)");
    expect_diag(&d, 2, SY_SEV_WARNING, "environment", 0, 0,
                "SGLANG_FUSE_RMSNORM_PAD=0 is set but not imported: it means norm.fuse_pad = off; pass --import-env "
                "to apply it, or set norm.fuse_pad in the config");
    sy_config_free(c);
    sy_diags_free(&d);
}
END_TEST

START_TEST(import_env_writes_equivalent_yaml)
{
    static const char *const env[] = {"SGLANG_AITER_KV_CACHE_LAYOUT=vectorized_5d", "SGLANG_KV_CACHE_LAYOUT=vectorized_5d",
                                      "SGLANG_USE_AITER_MOE_GU_ITLV=false", "SGLANG_AITER_FUSE_RMSNORM_PAD=1", NULL};
    char *text = NULL;
    size_t len = 0;
    sy_diags d = {0};
    FILE *f = open_memstream(&text, &len);
    ck_assert_uint_eq(sy_config_env_write_yaml(env, f, &d), 3);
    fclose(f);
    expect_count(&d, 0);
    sy_config *from_yaml = sy_config_load_string("env.yaml", text, len, SY_SYNTAX_AUTO, NULL, &d);
    expect_count(&d, 0);
    sy_config_options o = {0};
    o.envp = env;
    o.import_env = 1;
    sy_config *imported = sy_config_load_defaults(&o, &d);
    expect_count(&d, 0);
    expect_same_values(from_yaml, imported);
    ck_assert_str_eq(sy_config_str(from_yaml, "norm.fuse_pad"), "on");
    sy_config_free(from_yaml);
    sy_config_free(imported);
    free(text);

    static const char *const none[] = {"HOME=/root", NULL};
    f = open_memstream(&text, &len);
    ck_assert_uint_eq(sy_config_env_write_yaml(none, f, &d), 0);
    fclose(f);
    ck_assert_str_eq(text, "# switchyard config equivalent of the SGLang environment variables set here\n"
                           "# (none of them is set)\n");
    free(text);

    /* One is set, with a value that is not accepted: an error, and no claim that none is set. */
    static const char *const invalid[] = {"SGLANG_KV_CACHE_LAYOUT=bogus", NULL};
    f = open_memstream(&text, &len);
    ck_assert_uint_eq(sy_config_env_write_yaml(invalid, f, &d), 0);
    fclose(f);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "environment", 0, 0,
                "SGLANG_KV_CACHE_LAYOUT=bogus: 'bogus' is not one of: nhd, vectorized_5d (it maps to kv_cache.layout)");
    ck_assert_str_eq(text, "# switchyard config equivalent of the SGLang environment variables set here\n");
    free(text);
    sy_diags_free(&d);
}
END_TEST

START_TEST(set_is_validated_like_the_file)
{
    const char *sets[] = {"kv_cache.layuot=nhd", "parallel.tp", "parallel.tp=x", "model.layers=8",
                          "model.layers=9", "backend=", "plugin_path=/x, /y"};
    sy_config_options o = {0};
    o.sets = sets;
    o.n_sets = 7;
    sy_diags d = {0};
    sy_config *c = sy_config_load_defaults(&o, &d);
    sy_diags_sort(&d);
    expect_count(&d, 5);
    expect_diag(&d, 0, SY_SEV_ERROR, "--set", 1, 1, "unknown key 'kv_cache.layuot'; did you mean 'kv_cache.layout'?");
    expect_diag(&d, 1, SY_SEV_ERROR, "--set", 2, 1, "expected key=value, got 'parallel.tp'");
    expect_diag(&d, 2, SY_SEV_ERROR, "--set", 3, 13, "parallel.tp: expected an integer, got 'x'");
    expect_diag(&d, 3, SY_SEV_ERROR, "--set", 5, 1, "duplicate key 'model.layers' (first given by --set 4)");
    expect_diag(&d, 4, SY_SEV_ERROR, "--set", 6, 9, "backend: '' is not a name (lower-case letters, digits and '_')");
    ck_assert_int_eq(sy_config_int(c, "model.layers"), 8);
    ck_assert_str_eq(sy_config_source(c, "model.layers"), "--set");
    ck_assert_uint_eq(sy_config_list_len(c, "plugin_path"), 2);
    ck_assert_str_eq(sy_config_list_item(c, "plugin_path", 1), "/y");
    sy_config_free(c);
    sy_diags_free(&d);
}
END_TEST

START_TEST(config_rules_point_at_keys)
{
    sy_diags d = {0};
    sy_config *c = cfg_load("r.yaml",
                            "model:\n  q_heads: 6\n  kv_heads: 4\n  top_k: 9\n  hidden: 100\n"
                            "kv_cache:\n  k_scale: 0.5\n  pool_tokens: 10\nparallel:\n  tp: 4\n",
                            NULL, &d);
    sy_diags_sort(&d);
    expect_count(&d, 6);
    expect_diag(&d, 0, SY_SEV_ERROR, "r.yaml", 2, 12, "model.q_heads 6 is not a multiple of model.kv_heads 4");
    expect_diag(&d, 1, SY_SEV_ERROR, "r.yaml", 4, 10, "model.top_k 9 is more than model.experts 8");
    expect_diag(&d, 2, SY_SEV_ERROR, "r.yaml", 5, 11, "model.hidden 100 is not a multiple of 32 (MXFP4 stores blocks of 32 values)");
    expect_diag(&d, 3, SY_SEV_WARNING, "r.yaml", 7, 12, "kv_cache.k_scale is ignored: kv_cache.dtype is bf16 (scales apply to fp8_e4m3)");
    expect_diag(&d, 4, SY_SEV_ERROR, "r.yaml", 8, 16,
                "kv_cache.pool_tokens 10 cannot hold the workload: workload.batch x (workload.input_len + "
                "workload.output_len) = 160 tokens");
    expect_diag(&d, 5, SY_SEV_ERROR, "r.yaml", 10, 7, "parallel.tp 4 does not divide model.q_heads 6");
    sy_config_free(c);
    sy_diags_free(&d);
}
END_TEST

START_TEST(relative_paths_are_relative_to_the_file)
{
    sy_diags d = {0};
    sy_config *c = cfg_load("/etc/sy/c.yaml", "plugin_path: [plugins, /abs]\n", NULL, &d);
    expect_count(&d, 0);
    ck_assert_str_eq(sy_config_list_item(c, "plugin_path", 0), "/etc/sy/plugins");
    ck_assert_str_eq(sy_config_list_item(c, "plugin_path", 1), "/abs");
    ck_assert_str_eq(sy_config_str(c, "model.weights"), "synthetic");
    sy_config_free(c);
}
END_TEST

/* Float keys are used as 32-bit floats: a number the double range check accepts but a float cannot
 * hold (0 or a subnormal after conversion) used to be explained as written and used as 0. */
START_TEST(float_values_must_fit_a_float)
{
    const char *sets[] = {"model.attn_scale=1e-50", "kv_cache.k_scale=1e-45", "model.yarn_beta_fast=1e-40",
                          "model.yarn_beta_slow=0", "kv_cache.v_scale=1.2e-38", "model.rms_eps=1e-12",
                          "kv_cache.dtype=fp8_e4m3"};
    sy_config_options o = {0};
    o.sets = sets;
    o.n_sets = 7;
    sy_diags d = {0};
    sy_config *c = sy_config_load_defaults(&o, &d);
    sy_diags_sort(&d);
    expect_count(&d, 3);
    static const char range[] = " is outside float range: the key is used as a 32-bit float, so a value other than 0 "
                                "must be between 1.17549435e-38 and 3.40282347e+38 in magnitude";
    char want[256];
    snprintf(want, sizeof want, "model.attn_scale: 1e-50%s", range);
    expect_diag(&d, 0, SY_SEV_ERROR, "--set", 1, 18, want);
    snprintf(want, sizeof want, "kv_cache.k_scale: 1e-45%s", range);
    expect_diag(&d, 1, SY_SEV_ERROR, "--set", 2, 18, want);
    snprintf(want, sizeof want, "model.yarn_beta_fast: 1e-40%s", range);
    expect_diag(&d, 2, SY_SEV_ERROR, "--set", 3, 22, want);
    /* Refused values keep their defaults; 0 and the smallest normal floats are fine. */
    ck_assert_str_eq(sy_config_source(c, "model.attn_scale"), "default (1/sqrt(model.head_dim))");
    ck_assert(!sy_config_has(c, "kv_cache.k_scale"));
    ck_assert(sy_config_float(c, "model.yarn_beta_slow") == 0);
    sy_model_dims m;
    sy_model_dims_from_config(c, &m);
    ck_assert(m.attn_scale > 0);
    ck_assert(m.yarn_beta_slow == 0.0f);
    ck_assert((float)sy_config_float(c, "kv_cache.v_scale") >= FLT_MIN);
    ck_assert(m.rms_eps == 1e-12f);
    sy_config_free(c);
    sy_diags_free(&d);

    /* The same rule in a file. */
    c = cfg_load("f.yaml", "model:\n  attn_scale: 1e-50\n", NULL, &d);
    expect_count(&d, 1);
    snprintf(want, sizeof want, "model.attn_scale: 1e-50%s", range);
    expect_diag(&d, 0, SY_SEV_ERROR, "f.yaml", 2, 15, want);
    sy_config_free(c);
    sy_diags_free(&d);
}
END_TEST

/* `config show` writes paths that mean the same from any folder: a config read through a relative
 * name (sub/w.yaml) used to print "sub/../ck1", which the printed file then resolved against its
 * own folder. */
START_TEST(shown_relative_paths_load_back_from_anywhere)
{
    char dir[64], real[PATH_MAX], path[PATH_MAX + 64], want[PATH_MAX + 64], cwd[PATH_MAX];
    temp_dir(dir, sizeof dir);
    ck_assert_ptr_nonnull(realpath(dir, real));
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    static const char *const subdirs[] = {"sub", "ck1", "other"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, subdirs[i]);
        ck_assert_int_eq(mkdir(path, 0755), 0);
    }
    snprintf(path, sizeof path, "%s/sub/w.yaml", dir);
    const char *text = "model:\n  weights: ../ck1\nplugin_path: [plugins, /abs]\n";
    write_file(path, text, strlen(text));

    ck_assert_int_eq(chdir(dir), 0);
    sy_diags d = {0};
    sy_config *c = sy_config_load_file("sub/w.yaml", NULL, &d);
    ck_assert_ptr_nonnull(c);
    expect_count(&d, 0);
    snprintf(want, sizeof want, "%s/sub/../ck1", real);
    ck_assert_str_eq(sy_config_str(c, "model.weights"), want);
    snprintf(want, sizeof want, "%s/sub/plugins", real);
    ck_assert_str_eq(sy_config_list_item(c, "plugin_path", 0), want);
    ck_assert_str_eq(sy_config_list_item(c, "plugin_path", 1), "/abs");

    /* Shown into another folder, loaded back from a third. */
    snprintf(path, sizeof path, "%s/other/shown.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    sy_error err = {{0}};
    ck_assert_int_eq(sy_config_write(c, SY_FORMAT_YAML, f, &err), SY_OK);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chdir("/"), 0);
    sy_config *back = sy_config_load_file(path, NULL, &d);
    ck_assert_ptr_nonnull(back);
    expect_count(&d, 0);
    expect_same_values(c, back);
    sy_config_free(back);
    sy_config_free(c);

    /* A name that is no file (load_string) is relative to the current folder. */
    ck_assert_int_eq(chdir(dir), 0);
    c = cfg_load("w.yaml", "plugin_path: [plugins]\n", NULL, &d);
    snprintf(want, sizeof want, "%s/plugins", real);
    ck_assert_str_eq(sy_config_list_item(c, "plugin_path", 0), want);
    sy_config_free(c);
    c = cfg_load("nowhere/w.yaml", "plugin_path: [plugins]\n", NULL, &d);
    snprintf(want, sizeof want, "%s/nowhere/plugins", real);
    ck_assert_str_eq(sy_config_list_item(c, "plugin_path", 0), want);
    sy_config_free(c);
    sy_diags_free(&d);

    ck_assert_int_eq(chdir(cwd), 0);
    unlink(path);
    snprintf(path, sizeof path, "%s/sub/w.yaml", dir);
    unlink(path);
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, subdirs[i]);
        rmdir(path);
    }
    rmdir(dir);
}
END_TEST

/* A non-default value for every key, by type: the config that "covers every key". */
static void every_key_value(const sy_cfg_key *k, char *buf, size_t len)
{
    char def[64] = "";
    if (k->def)
        snprintf(def, sizeof def, "%s", k->def);
    switch (k->type) {
    case SY_CFG_ENUM: {
        /* The last choice, or the one before when the last is the default (or the preset's). */
        size_t n = 0;
        while (k->choices[n])
            n++;
        const char *pick = k->choices[n - 1];
        if (strcmp(pick, def) == 0 || (!k->def && strcmp(pick, "even") == 0))
            pick = k->choices[n - 2];
        snprintf(buf, len, "%s", pick);
        break;
    }
    case SY_CFG_INT:
        snprintf(buf, len, "%.0f", k->min + 2 <= k->max ? k->min + 2 : k->max);
        break;
    case SY_CFG_FLOAT:
        if (k->word && strcmp(k->name, "kv_cache.k_scale") == 0)
            snprintf(buf, len, "%s", k->word);
        else
            snprintf(buf, len, "%s", (k->flags & SY_CFG_POSITIVE) ? "0.375" : k->max >= 3 ? "2.5" : "0.625");
        break;
    case SY_CFG_BOOL:
        snprintf(buf, len, "%s", strcmp(def, "true") == 0 ? "false" : "true");
        break;
    case SY_CFG_STRING:
        snprintf(buf, len, "%s", (k->flags & SY_CFG_IDENTIFIER) ? "some_plugin" : "out/file.json");
        break;
    case SY_CFG_LIST:
        snprintf(buf, len, "dir_a, /dir/b");
        break;
    }
}

/* The same keys written as nested YAML and as INI sections. */
static void every_key_texts(sy_str *yaml, sy_str *ini)
{
    size_t n;
    const sy_cfg_key *keys = sy_schema_keys(&n);
    char value[128], section[64] = "";
    for (size_t i = 0; i < n; i++) {
        const char *dot = strchr(keys[i].name, '.');
        char sec[64];
        snprintf(sec, sizeof sec, "%.*s", dot ? (int)(dot - keys[i].name) : 0, keys[i].name);
        every_key_value(&keys[i], value, sizeof value);
        if (strcmp(sec, section) != 0) {
            sy_str_appendf(yaml, "%s:\n", sec);
            sy_str_appendf(ini, "[%s]\n", sec);
            snprintf(section, sizeof section, "%s", sec);
        }
        const char *leaf = dot ? dot + 1 : keys[i].name;
        if (keys[i].type == SY_CFG_LIST)
            sy_str_appendf(yaml, "%s%s: [%s]\n", sec[0] ? "  " : "", leaf, value);
        else
            sy_str_appendf(yaml, "%s%s: %s\n", sec[0] ? "  " : "", leaf, value);
        sy_str_appendf(ini, "%s = %s\n", leaf, value);
    }
}

START_TEST(yaml_and_ini_resolve_identically_for_every_key)
{
    sy_str yaml = {0}, ini = {0};
    every_key_texts(&yaml, &ini);
    sy_diags dy = {0}, di = {0};
    sy_config *a = cfg_load("/work/cfg/every.yaml", yaml.data, NULL, &dy);
    sy_config *b = cfg_load("/work/cfg/every.ini", ini.data, NULL, &di);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    /* Every key came from the file: nothing fell back to a default. */
    for (size_t i = 0; i < sy_config_key_count(); i++) {
        const char *key = sy_config_key_name(i);
        ck_assert_msg(!sy_config_is_default(a, key), "%s not set by the YAML (%s)", key, sy_config_source(a, key));
        ck_assert_msg(!sy_config_is_default(b, key), "%s not set by the INI (%s)", key, sy_config_source(b, key));
    }
    expect_same_values(a, b);
    ck_assert_str_eq(sy_config_list_item(a, "plugin_path", 0), "/work/cfg/dir_a");
    ck_assert(sy_config_is_word(b, "kv_cache.k_scale"));
    /* The same rules fire on both (the values are deliberately odd: tiny heads, unreadable weights). */
    ck_assert_uint_eq(dy.n, di.n);
    for (size_t i = 0; i < dy.n; i++)
        ck_assert_str_eq(dy.items[i].message, di.items[i].message);
    sy_config_free(a);
    sy_config_free(b);
    sy_diags_free(&dy);
    sy_diags_free(&di);
    sy_str_free(&yaml);
    sy_str_free(&ini);
}
END_TEST

static sy_config *reload(const sy_config *c, sy_config_format format, const char *name)
{
    char *text = NULL;
    size_t len = 0;
    sy_error err = {{0}};
    FILE *f = open_memstream(&text, &len);
    ck_assert_msg(sy_config_write(c, format, f, &err) == SY_OK, "%s", err.msg);
    fclose(f);
    sy_diags d = {0};
    /* The odd values of the every-key config break model rules; only the values matter here. */
    sy_config *back = sy_config_load_string(name, text, len, SY_SYNTAX_AUTO, NULL, &d);
    ck_assert_msg(back != NULL, "%s did not load back:\n%s", name, text);
    sy_diags_free(&d);
    free(text);
    return back;
}

START_TEST(show_round_trips_in_every_format)
{
    sy_str yaml = {0}, ini = {0};
    every_key_texts(&yaml, &ini);
    sy_diags d = {0};
    sy_config *every = cfg_load("/work/cfg/every.yaml", yaml.data, NULL, &d);
    sy_config *defaults = sy_config_load_defaults(NULL, &d);
    const sy_config *cases[] = {every, defaults};
    static const struct {
        sy_config_format format;
        const char *name;
    } formats[] = {{SY_FORMAT_YAML, "/other/shown.yaml"}, {SY_FORMAT_INI, "/other/shown.ini"},
                   {SY_FORMAT_JSON, "/other/shown.json"}};
    for (size_t i = 0; i < 2; i++)
        for (size_t f = 0; f < 3; f++) {
            sy_config *back = reload(cases[i], formats[f].format, formats[f].name);
            expect_same_values(cases[i], back);
            sy_config_free(back);
        }
    sy_config_free(every);
    sy_config_free(defaults);
    sy_diags_free(&d);
    sy_str_free(&yaml);
    sy_str_free(&ini);
}
END_TEST

START_TEST(show_refuses_what_ini_cannot_hold)
{
    sy_diags d = {0};
    sy_config *c = cfg_load("w.yaml", "report:\n  json: \"a ;b\"\n", NULL, &d);
    char *text = NULL;
    size_t len = 0;
    sy_error err = {{0}};
    FILE *f = open_memstream(&text, &len);
    ck_assert_int_eq(sy_config_write(c, SY_FORMAT_INI, f, &err), SY_E_INVALID);
    fclose(f);
    ck_assert_str_eq(err.msg, "report.json = 'a ;b' cannot be written as INI (a newline or ' ;' in it)");
    ck_assert_uint_eq(len, 0);
    free(text);
    sy_config_free(c);
}
END_TEST

START_TEST(default_yaml_is_the_built_in_default)
{
    char path[1024];
    const char *files[] = {"configs/default.yaml", "configs/default.ini"};
    sy_diags d = {0};
    sy_config *builtin = sy_config_load_defaults(NULL, &d);
    for (size_t i = 0; i < 2; i++) {
        sy_config *c = sy_config_load_file(source_path(files[i], path, sizeof path), NULL, &d);
        expect_count(&d, 0);
        expect_same_values(builtin, c);
        sy_config_free(c);
    }
    sy_config_free(builtin);
}
END_TEST

START_TEST(schema_is_well_formed)
{
    size_t n;
    const sy_cfg_key *keys = sy_schema_keys(&n);
    char seen[64][64];
    size_t n_seen = 0;
    for (size_t i = 0; i < n; i++) {
        for (const char *p = keys[i].name; *p; p++)
            ck_assert_msg((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '.', "%s",
                          keys[i].name);
        ck_assert_msg(keys[i].doc && keys[i].doc[0], "%s has no doc", keys[i].name);
        ck_assert_msg(keys[i].def || keys[i].derive || keys[i].def_doc, "%s has no default and no rule", keys[i].name);
        ck_assert_int_eq(sy_schema_index(keys[i].name), (long)i);
        /* Float keys are used as floats: their bounds must be float numbers too. */
        if (keys[i].type == SY_CFG_FLOAT)
            ck_assert_msg(keys[i].max <= FLT_MAX && (keys[i].min == 0 || fabs(keys[i].min) >= FLT_MIN),
                          "%s: bounds outside float range", keys[i].name);
        /* Sections are contiguous: show and the docs group by them. */
        const char *dot = strchr(keys[i].name, '.');
        char sec[64];
        snprintf(sec, sizeof sec, "%.*s", dot ? (int)(dot - keys[i].name) : 0, keys[i].name);
        int known = 0;
        for (size_t j = 0; j < n_seen; j++)
            known |= strcmp(seen[j], sec) == 0;
        if (i > 0 && known) {
            const char *pd = strchr(keys[i - 1].name, '.');
            char prev[64];
            snprintf(prev, sizeof prev, "%.*s", pd ? (int)(pd - keys[i - 1].name) : 0, keys[i - 1].name);
            ck_assert_msg(strcmp(prev, sec) == 0, "section %s of %s is not contiguous", sec, keys[i].name);
        } else if (!known)
            snprintf(seen[n_seen++], sizeof seen[0], "%s", sec);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("config_resolve");
    TCase *t = tcase_create("resolve");
    tcase_add_test(t, defaults_and_derived_sources);
    tcase_add_test(t, presets_match_the_models);
    tcase_add_test(t, preset_overrides_and_model_dims);
    tcase_add_test(t, precedence_default_file_env_set);
    tcase_add_test(t, environment_table);
    tcase_add_test(t, import_env_writes_equivalent_yaml);
    tcase_add_test(t, set_is_validated_like_the_file);
    tcase_add_test(t, config_rules_point_at_keys);
    tcase_add_test(t, relative_paths_are_relative_to_the_file);
    tcase_add_test(t, float_values_must_fit_a_float);
    tcase_add_test(t, shown_relative_paths_load_back_from_anywhere);
    tcase_add_test(t, yaml_and_ini_resolve_identically_for_every_key);
    tcase_add_test(t, show_round_trips_in_every_format);
    tcase_add_test(t, show_refuses_what_ini_cannot_hold);
    tcase_add_test(t, default_yaml_is_the_built_in_default);
    tcase_add_test(t, schema_is_well_formed);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
