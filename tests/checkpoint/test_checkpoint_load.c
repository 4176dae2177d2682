/* Checkpoints into the engine: a synthetic model written as an HF checkpoint (one file or shards)
 * runs to the very tokens and logits of the synthetic run; a checkpoint with a missing, extra,
 * mistyped or misshapen tensor is refused naming it; config.json must agree with the configured
 * model; the CLI writes, checks and runs checkpoints. A failed write leaves no checkpoint to run;
 * config.json's dimensions are held to the model limits; synth reports --seed and --preset as typed. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/gpt_oss.h"
#include "checkpoint/hf_config.h"
#include "checkpoint/st_write.h"
#include "checkpoint/synth_write.h"
#include "fixture_support.h"
#include "model/engine.h"
#include "model/presets.h"
#include "model/weights.h"
#include "run_process.h"
#include "sy_test.h"

static sy_registry *reg;

static void open_registry(void)
{
    sy_registry_options o = {0};
    o.struct_size = sizeof o;
    o.skip_environment = 1;
    sy_error err = {{0}};
    ck_assert_int_eq(sy_registry_open(&o, &reg, &err), SY_OK);
}

static void close_registry(void)
{
    sy_registry_close(reg);
    reg = NULL;
}

/* tiny, with a vocabulary and layer count that are not powers of two. */
static sy_model_dims dims(void)
{
    sy_model_dims d = sy_model_preset_find("tiny")->dims;
    d.layers = 3;
    d.vocab = 333;
    return d;
}

static const sy_registry_entry *need(int32_t kind, const char *name)
{
    const sy_registry_entry *e = sy_registry_find(reg, kind, name, "cpu");
    ck_assert_msg(e != NULL, "plugin %s/%s not found in the build tree", sy_kind_name(kind), name);
    return e;
}

static sy_plan make_plan(uint64_t seed, const char *checkpoint)
{
    sy_plan p = {0};
    p.dims = dims();
    p.weight_seed = seed;
    snprintf(p.checkpoint, sizeof p.checkpoint, "%s", checkpoint ? checkpoint : "");
    p.backend = sy_registry_find_backend(reg, "cpu");
    ck_assert_ptr_nonnull(p.backend);
    p.slot[SY_KIND_KV_LAYOUT] = need(SY_KIND_KV_LAYOUT, "kv_nhd");
    p.slot[SY_KIND_ATTENTION] = need(SY_KIND_ATTENTION, "attn_paged");
    p.slot[SY_KIND_MOE] = need(SY_KIND_MOE, "moe_mxfp4_interleave");
    p.slot[SY_KIND_NORM] = need(SY_KIND_NORM, "norm_rmsnorm");
    p.slot[SY_KIND_ROPE] = need(SY_KIND_ROPE, "rope_yarn");
    p.slot[SY_KIND_LINEAR] = need(SY_KIND_LINEAR, "linear");
    p.layout = SY_LAYOUT_NHD;
    p.kv_dtype = SY_DTYPE_BF16;
    p.page_size = 16;
    p.k_scale = p.v_scale = 1.0f;
    p.batch = 2;
    p.input_len = 21;
    p.output_len = 5;
    p.prefill_chunk = 8;
    p.repeat = 1;
    p.token_seed = seed ^ 0x5EED;
    return p;
}

typedef struct capture {
    size_t n;
    float *logits; /* every forward's logits, in order */
} capture;

static void on_checkpoint(void *user, uint32_t step, uint32_t layer, const float *data, uint32_t rows, uint32_t cols)
{
    capture *c = user;
    (void)step;
    if (layer != dims().layers)
        return;
    c->logits = realloc(c->logits, (c->n + (size_t)rows * cols) * sizeof(float));
    memcpy(c->logits + c->n, data, (size_t)rows * cols * sizeof(float));
    c->n += (size_t)rows * cols;
}

static uint64_t run(const sy_plan *p, capture *c)
{
    sy_engine *e = NULL;
    sy_error err = {{0}};
    ck_assert_msg(sy_engine_create(p, &e, &err) == SY_OK, "%s", err.msg);
    sy_engine_set_checkpoint(e, on_checkpoint, c);
    sy_run_metrics m;
    ck_assert_msg(sy_engine_run(e, &m, &err) == SY_OK, "%s", err.msg);
    uint64_t sum = m.checksum;
    sy_engine_destroy(e);
    return sum;
}

static void write_synth(uint64_t seed, uint32_t shards, const char *dir)
{
    sy_model_dims d = dims();
    sy_synth_write_result r;
    sy_error err = {{0}};
    ck_assert_msg(sy_checkpoint_write_synth(&d, seed, shards, dir, "tiny", &r, &err) == SY_OK, "%s", err.msg);
    ck_assert_uint_eq(r.files, shards);
    ck_assert_uint_eq(r.tensors, sy_gpt_oss_tensor_count(&d));
}

START_TEST(checkpoint_run_matches_synthetic_run)
{
    static const uint32_t shards[] = {1, 3};
    uint64_t seed = sy_test_seed();
    printf("checkpoint_run_matches_synthetic_run(%u shards): seed %llu\n", shards[_i], (unsigned long long)seed);
    char *dir = sy_scratch_dir();
    /* A write over an earlier one with another shard count must leave a folder that opens. */
    write_synth(seed + 1, shards[_i] == 1 ? 2 : 1, dir);
    write_synth(seed, shards[_i], dir);
    capture synth = {0}, loaded = {0}, other = {0};
    sy_plan ps = make_plan(seed, NULL), pc = make_plan(seed, dir);
    uint64_t sum_synth = run(&ps, &synth);
    uint64_t sum_loaded = run(&pc, &loaded);
    ck_assert_uint_eq(sum_loaded, sum_synth);
    ck_assert_uint_gt(synth.n, 0);
    ck_assert_uint_eq(loaded.n, synth.n);
    ck_assert_msg(memcmp(loaded.logits, synth.logits, synth.n * sizeof(float)) == 0,
                  "logits from the checkpoint differ from the synthetic run");
    /* The comparison can fail: weights of another seed give other logits. */
    char *dir2 = sy_scratch_dir();
    write_synth(seed + 1, 1, dir2);
    sy_plan po = make_plan(seed, dir2);
    run(&po, &other);
    ck_assert_msg(memcmp(other.logits, synth.logits, synth.n * sizeof(float)) != 0,
                  "another seed's checkpoint gave the same logits");
    free(synth.logits);
    free(loaded.logits);
    free(other.logits);
    sy_scratch_remove(dir);
    sy_scratch_remove(dir2);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */

typedef enum change { DROP, ADD, RETYPE, RESHAPE } change;

/* dst/model.safetensors = src's tensors with one change; config.json copied. */
static void rewrite(const char *src, const char *dst, change what, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", src, SY_CKPT_SINGLE_FILE);
    sy_st_file f;
    sy_error err = {{0}};
    ck_assert_msg(sy_st_open(path, &f, &err) == SY_OK, "%s", err.msg);
    sy_st_entry *e = calloc(f.n_tensors + 1, sizeof *e);
    const sy_st_tensor **from = calloc(f.n_tensors + 1, sizeof *from);
    size_t n = 0;
    for (size_t i = 0; i < f.n_tensors; i++) {
        const sy_st_tensor *t = &f.tensors[i];
        int target = strcmp(t->name, name) == 0;
        if (target && what == DROP)
            continue;
        e[n] = (sy_st_entry){t->name, t->dtype, t->rank, {0}};
        memcpy(e[n].shape, t->shape, sizeof t->shape);
        if (target && what == RETYPE)
            e[n].dtype = SY_ST_F32;
        if (target && what == RESHAPE)
            e[n].shape[t->rank - 1]++;
        from[n++] = target ? NULL : t;
    }
    if (what == ADD) {
        e[n] = (sy_st_entry){name, SY_ST_BF16, 1, {5}};
        from[n++] = NULL;
    }
    snprintf(path, sizeof path, "%s/%s", dst, SY_CKPT_SINGLE_FILE);
    sy_st_writer w;
    ck_assert_int_eq(sy_st_writer_begin(&w, path, e, n, NULL, 0, &err), SY_OK);
    for (size_t i = 0; i < n; i++) {
        uint64_t bytes = sy_st_entry_bytes(&e[i]);
        void *zeros = calloc(bytes + 1, 1);
        ck_assert_int_eq(sy_st_writer_append(&w, from[i] ? sy_st_data(&f, from[i]) : zeros, bytes, &err), SY_OK);
        free(zeros);
    }
    ck_assert_msg(sy_st_writer_commit(&w, &err) == SY_OK, "%s", err.msg);
    sy_st_close(&f);
    free(e);
    free(from);
    char *text;
    size_t len;
    snprintf(path, sizeof path, "%s/%s", src, SY_CKPT_CONFIG_FILE);
    ck_assert_int_eq(sy_read_small_file(path, 1 << 20, &text, &len, &err), SY_OK);
    snprintf(path, sizeof path, "%s/%s", dst, SY_CKPT_CONFIG_FILE);
    ck_assert_int_eq(sy_write_file_atomic(path, text, len, &err), SY_OK);
    free(text);
}

static const struct broken {
    change what;
    const char *name;
    const char *parts[3];
} broken[] = {
    {DROP, "model.layers.1.mlp.router.bias", {"is missing", "expected BF16 [8]"}},
    {DROP, "lm_head.weight", {"is missing", "expected BF16 [333, 128]"}},
    {ADD, "model.layers.0.self_attn.rotary.inv_freq", {"model.safetensors", "not part of gpt-oss with 3 layers"}},
    {ADD, "model.layers.3.self_attn.sinks", {"model.safetensors", "not part of gpt-oss with 3 layers"}},
    {RETYPE, "model.layers.2.self_attn.sinks", {"model.safetensors", "is F32 [4], expected BF16 [4]"}},
    {RETYPE, "model.layers.0.mlp.experts.down_proj_blocks", {"model.safetensors", "expected U8 [8, 128, 4, 16]"}},
    {RESHAPE, "model.layers.0.mlp.experts.gate_up_proj_scales", {"is U8 [8, 256, 5], expected U8 [8, 256, 4]"}},
    {RESHAPE, "model.embed_tokens.weight", {"is BF16 [333, 129], expected BF16 [333, 128]"}},
};

START_TEST(broken_checkpoints_are_refused_naming_the_tensor)
{
    const struct broken *b = &broken[_i];
    char *good = sy_scratch_dir(), *bad = sy_scratch_dir();
    write_synth(1, 1, good);
    rewrite(good, bad, b->what, b->name);
    sy_model_dims d = dims();
    sy_weights *w = NULL;
    sy_error err = {{0}};
    ck_assert_int_ne(sy_weights_open(&d, 1, bad, &w, &err), SY_OK);
    ck_assert_msg(strstr(err.msg, b->name) != NULL, "message does not name %s: %s", b->name, err.msg);
    ck_assert_msg(strstr(err.msg, bad) != NULL, "message does not name the checkpoint: %s", err.msg);
    for (size_t i = 0; b->parts[i]; i++)
        ck_assert_msg(strstr(err.msg, b->parts[i]) != NULL, "message lacks '%s': %s", b->parts[i], err.msg);
    /* The unchanged checkpoint opens: the failure is the change's. */
    ck_assert_msg(sy_weights_open(&d, 1, good, &w, &err) == SY_OK, "%s", err.msg);
    sy_weights_close(w);
    sy_scratch_remove(good);
    sy_scratch_remove(bad);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */

/* openai/gpt-oss-20b's config.json (values as published; a few unused keys left out). */
static const char gpt_oss_20b_config[] =
    "{\"architectures\": [\"GptOssForCausalLM\"], \"attention_bias\": true, \"attention_dropout\": 0.0,\n"
    " \"eos_token_id\": 200002, \"experts_per_token\": 4, \"head_dim\": 64, \"hidden_act\": \"silu\",\n"
    " \"hidden_size\": 2880, \"initial_context_length\": 4096, \"initializer_range\": 0.02,\n"
    " \"intermediate_size\": 2880, \"layer_types\": [\"sliding_attention\", \"full_attention\", "
    "\"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\", "
    "\"full_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\", "
    "\"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\", "
    "\"full_attention\", \"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\", "
    "\"sliding_attention\", \"full_attention\"],\n"
    " \"max_position_embeddings\": 131072, \"model_type\": \"gpt_oss\", \"num_attention_heads\": 64,\n"
    " \"num_experts_per_tok\": 4, \"num_hidden_layers\": 24, \"num_key_value_heads\": 8, \"num_local_experts\": 32,\n"
    " \"output_router_logits\": false, \"pad_token_id\": 199999,\n"
    " \"quantization_config\": {\"modules_to_not_convert\": [\"model.layers.*.self_attn\", \"model.layers.*.mlp.router\", "
    "\"model.embed_tokens\", \"lm_head\"], \"quant_method\": \"mxfp4\"},\n"
    " \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"beta_fast\": 32.0, \"beta_slow\": 1.0, \"factor\": 32.0,\n"
    " \"original_max_position_embeddings\": 4096, \"rope_type\": \"yarn\", \"truncate\": false},\n"
    " \"rope_theta\": 150000, \"router_aux_loss_coef\": 0.9, \"sliding_window\": 128, \"swiglu_limit\": 7.0,\n"
    " \"tie_word_embeddings\": false, \"transformers_version\": \"4.55.0.dev0\", \"use_cache\": true,\n"
    " \"vocab_size\": 201088}\n";

static sy_config *config_with(const char *const *sets, size_t n, sy_model_dims *d)
{
    sy_diags diags = {0};
    sy_config_options o = {.sets = sets, .n_sets = n};
    sy_config *cfg = sy_config_load_defaults(&o, &diags);
    ck_assert_msg(cfg && sy_diags_count(&diags, SY_SEV_ERROR) == 0, "bad test config");
    sy_diags_free(&diags);
    sy_model_dims_from_config(cfg, d);
    return cfg;
}

static void expect_disagreement(const sy_hf_config *hf, const char *const *sets, size_t n, const char *const *parts)
{
    sy_model_dims d;
    sy_config *cfg = config_with(sets, n, &d);
    sy_error err = {{0}};
    ck_assert_int_ne(sy_hf_config_agree(hf, "ckpt/config.json", &d, cfg, &err), SY_OK);
    for (size_t i = 0; parts[i]; i++)
        ck_assert_msg(strstr(err.msg, parts[i]) != NULL, "message lacks '%s': %s", parts[i], err.msg);
    sy_config_free(cfg);
}

START_TEST(config_json_must_agree_with_the_configured_model)
{
    sy_hf_config hf;
    sy_error err = {{0}};
    ck_assert_msg(sy_hf_config_parse("c.json", gpt_oss_20b_config, strlen(gpt_oss_20b_config), &hf, &err) == SY_OK,
                  "%s", err.msg);
    sy_model_dims d;
    sy_config *cfg = config_with((const char *const[]){"model.preset=gpt-oss-20b"}, 1, &d);
    ck_assert_msg(sy_hf_config_agree(&hf, "c.json", &d, cfg, &err) == SY_OK, "%s", err.msg);
    sy_config_free(cfg);
    /* Every dimension that config.json gives was read: each changed one is reported. */
    static const char *const changes[][3] = {
        {"model.layers=12", "model.layers = 12 (--set)", "num_hidden_layers = 24"},
        {"model.hidden=2816", "model.hidden = 2816 (--set)", "hidden_size = 2880"},
        {"model.q_heads=32", "model.q_heads = 32", "num_attention_heads = 64"},
        {"model.kv_heads=4", "model.kv_heads = 4", "num_key_value_heads = 8"},
        {"model.head_dim=32", "model.head_dim = 32", "head_dim = 64"},
        {"model.experts=16", "model.experts = 16", "num_local_experts = 32"},
        {"model.top_k=2", "model.top_k = 2", "num_experts_per_tok = 4"},
        {"model.intermediate=2048", "model.intermediate = 2048", "intermediate_size = 2880"},
        {"model.vocab=1000", "model.vocab = 1000", "vocab_size = 201088"},
        {"model.sliding_window=64", "model.sliding_window = 64", "sliding_window = 128"},
        {"model.sliding_layers=all", "model.sliding_layers = all", "layer_types (sliding layers) = even"},
        {"model.rope_theta=10000", "model.rope_theta = 10000", "rope_theta = 150000"},
        {"model.yarn_factor=16", "model.yarn_factor = 16", "rope_scaling.factor = 32"},
        {"model.yarn_beta_fast=16", "model.yarn_beta_fast = 16", "rope_scaling.beta_fast = 32"},
        {"model.yarn_beta_slow=2", "model.yarn_beta_slow = 2", "rope_scaling.beta_slow = 1"},
        {"model.yarn_original_max_position=2048", "model.yarn_original_max_position = 2048",
         "rope_scaling.original_max_position_embeddings = 4096"},
        {"model.rms_eps=1e-6", "model.rms_eps = 1e-06", "rms_norm_eps = 1e-05"},
        {"model.swiglu_limit=8", "model.swiglu_limit = 8", "swiglu_limit = 7"},
    };
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++)
        expect_disagreement(&hf, (const char *const[]){"model.preset=gpt-oss-20b", changes[i][0]}, 2,
                            (const char *const[]){changes[i][1], changes[i][2], "ckpt/config.json", NULL});
    /* A default that differs is named with its source too. */
    expect_disagreement(&hf, (const char *const[]){"model.preset=tiny"}, 1,
                        (const char *const[]){"default (preset tiny)", "model.preset", NULL});
    /* What config.json gives is checked before use. */
    static const char *const bad[][2] = {
        {"{\"model_type\": \"llama\"}", "only gpt_oss"},
        {"{\"num_hidden_layers\": 2}", "hidden_size is missing"},
        {"{\"num_hidden_layers\": 2.5}", "num_hidden_layers must be an integer"},
        {"{\"num_hidden_layers\": 2, \"hidden_size\": 64, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, "
         "\"num_local_experts\": 2, \"num_experts_per_tok\": 1, \"intermediate_size\": 64, \"vocab_size\": 9, "
         "\"layer_types\": [\"full_attention\", \"sliding_attention\"]}",
         "not supported"},
        {"{\"num_hidden_layers\": 2, \"hidden_size\": 64, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, "
         "\"num_local_experts\": 2, \"num_experts_per_tok\": 1, \"intermediate_size\": 64, \"vocab_size\": 9, "
         "\"layer_types\": [\"full_attention\"]}",
         "layer_types has 1 entries"},
        {"{\"rope_scaling\": {\"rope_type\": \"linear\"}}", "must be \"yarn\""},
        {"{\"num_hidden_layers\": 2, \"hidden_size\": 64, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, "
         "\"num_local_experts\": 2, \"num_experts_per_tok\": 1, \"intermediate_size\": 64, \"vocab_size\": 9, "
         "\"rms_norm_eps\": 1e999}",
         "rms_norm_eps must be a finite number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(sy_hf_config_parse("c.json", bad[i][0], strlen(bad[i][0]), &hf, &err) != SY_OK,
                      "accepted %s", bad[i][0]);
        ck_assert_msg(strstr(err.msg, bad[i][1]) && strstr(err.msg, "c.json"), "message lacks '%s': %s", bad[i][1],
                      err.msg);
    }
    /* What the writer writes reads back as the same model. */
    const char *presets[] = {"tiny", "gpt-oss-20b", "gpt-oss-120b"};
    for (size_t i = 0; i < 3; i++) {
        sy_model_dims pd = sy_model_preset_find(presets[i])->dims;
        char *text = sy_hf_config_text(&pd);
        ck_assert_msg(sy_hf_config_parse("w.json", text, strlen(text), &hf, &err) == SY_OK, "%s", err.msg);
        ck_assert_msg(sy_hf_config_agree(&hf, "w.json", &pd, NULL, &err) == SY_OK, "%s", err.msg);
        free(text);
    }
    sy_model_dims plain = dims();
    plain.yarn_factor = 1.0f;
    plain.sliding_window = 0;
    char *text = sy_hf_config_text(&plain);
    ck_assert_msg(sy_hf_config_parse("w.json", text, strlen(text), &hf, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(sy_hf_config_agree(&hf, "w.json", &plain, NULL, &err) == SY_OK, "%s", err.msg);
    plain.yarn_factor = 2.0f;
    ck_assert_int_ne(sy_hf_config_agree(&hf, "w.json", &plain, NULL, &err), SY_OK);
    free(text);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */

static void cli(const char *const *args, int want, const char *expect_in_output, sy_process_result *r)
{
    sy_run_switchyard(args, NULL, r);
    ck_assert_msg(r->exit_code == want, "switchyard %s %s exited %d, expected %d; stderr:\n%s", args[0],
                  args[1] ? args[1] : "", r->exit_code, want, r->err);
    if (expect_in_output)
        ck_assert_msg(strstr(r->out, expect_in_output) || strstr(r->err, expect_in_output),
                      "output lacks '%s':\nstdout:\n%s\nstderr:\n%s", expect_in_output, r->out, r->err);
}

static char *json_field(const char *path, const char *key)
{
    char *text;
    size_t len;
    sy_error err = {{0}};
    ck_assert_msg(sy_read_small_file(path, 1 << 24, &text, &len, &err) == SY_OK, "%s", err.msg);
    const char *at = strstr(text, key);
    ck_assert_msg(at != NULL, "%s lacks %s", path, key);
    char *value = strndup(at, strcspn(at, "\n"));
    free(text);
    return value;
}

START_TEST(cli_writes_checks_and_runs_checkpoints)
{
    char *dir = sy_scratch_dir();
    char ckpt[600], cfg[600], a[600], b[600];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
    snprintf(a, sizeof a, "%s/synthetic.json", dir);
    snprintf(b, sizeof b, "%s/checkpoint.json", dir);
    free(sy_scratch_write(dir, "run.yaml",
                          "backend: cpu\nmodel:\n  preset: tiny\n  seed: 7\nworkload:\n  batch: 2\n  input_len: 19\n"
                          "  output_len: 6\n  prefill_chunk: 8\n  warmup: 0\n  repeat: 1\n",
                          0644));
    snprintf(cfg, sizeof cfg, "%s/run.yaml", dir);
    sy_process_result r;
    cli((const char *const[]){"checkpoint", "synth", "--preset", "tiny", "--seed", "7", "--shards", "2", ckpt, NULL}, 0,
        "in 2 safetensors files", &r);
    sy_process_result_free(&r);
    cli((const char *const[]){"checkpoint", "check", ckpt, NULL}, 0, "all present with the expected dtype and shape",
        &r);
    sy_process_result_free(&r);
    char weights[700];
    snprintf(weights, sizeof weights, "model.weights=%s", ckpt);
    cli((const char *const[]){"run", cfg, "--json", a, "--quiet", NULL}, 0, NULL, &r);
    sy_process_result_free(&r);
    cli((const char *const[]){"run", cfg, "--set", weights, "--json", b, "--quiet", NULL}, 0, NULL, &r);
    sy_process_result_free(&r);
    char *sa = json_field(a, "\"token_checksum\""), *sb = json_field(b, "\"token_checksum\"");
    ck_assert_str_eq(sa, sb);
    free(sa);
    free(sb);
    /* A dimension set against the checkpoint's config.json: a config error naming both. */
    cli((const char *const[]){"run", cfg, "--set", weights, "--set", "model.vocab=500", "--quiet", NULL}, 2,
        "model.vocab = 500 (--set) disagrees with vocab_size = 512", &r);
    sy_process_result_free(&r);
    cli((const char *const[]){"checkpoint", "synth", "--shards", "0", ckpt, NULL}, 2, "--shards 0", &r);
    sy_process_result_free(&r);
    cli((const char *const[]){"checkpoint", "check", dir, NULL}, 3, "config.json", &r);
    sy_process_result_free(&r);
    sy_scratch_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */

static char *path_in(const char *dir, const char *file)
{
    char *p = malloc(strlen(dir) + strlen(file) + 2);
    sprintf(p, "%s/%s", dir, file);
    return p;
}

static int exists(const char *dir, const char *file)
{
    char *p = path_in(dir, file);
    struct stat sb;
    int there = lstat(p, &sb) == 0;
    free(p);
    return there;
}

static off_t file_size(const char *dir, const char *file)
{
    char *p = path_in(dir, file);
    struct stat sb;
    ck_assert_int_eq(stat(p, &sb), 0);
    free(p);
    return sb.st_size;
}

/* The review's case: a write of seed 2 over a 3-shard checkpoint of seed 1 fails on its largest
 * shard (a file size limit, with SIGXFSZ ignored as `ulimit -f` in a shell that traps it). The
 * other shards were renamed into place by then; before the fix they stayed under seed 1's index
 * and config.json, and the folder checked and ran as a mix of two seeds. Now config.json goes
 * first and comes back last: the folder is refused, and this write's shards are gone. Check runs
 * each test in a child process, so the limit ends with the test. */
START_TEST(failed_synth_leaves_no_checkpoint_to_run)
{
    char *dir = sy_scratch_dir();
    write_synth(1, 3, dir);
    char shards[3][64];
    off_t largest = 0;
    int failing = 0;
    for (int s = 0; s < 3; s++) {
        snprintf(shards[s], sizeof shards[s], "model-%05d-of-00003.safetensors", s + 1);
        off_t size = file_size(dir, shards[s]);
        failing = size > largest ? s : failing;
        largest = size > largest ? size : largest;
    }
    for (int s = 0; s < 3; s++)
        ck_assert_msg(s == failing || file_size(dir, shards[s]) < largest, "shards of equal size: no shard would "
                      "be written before the failure");
    struct rlimit unlimited, limit;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &unlimited), 0);
    limit = unlimited;
    limit.rlim_cur = (rlim_t)largest - 1;
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &limit), 0);
    sy_model_dims d = dims();
    sy_synth_write_result r;
    sy_error err = {{0}};
    sy_status st = sy_checkpoint_write_synth(&d, 2, 3, dir, "tiny", &r, &err);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &unlimited), 0);
    ck_assert_int_eq(st, SY_E_IO);
    ck_assert_msg(strstr(err.msg, shards[failing]) && strstr(err.msg, "File too large"), "%s", err.msg);
    ck_assert_msg(!exists(dir, SY_CKPT_CONFIG_FILE), "a failed write left config.json");
    ck_assert_msg(!exists(dir, SY_CKPT_INDEX_FILE), "a failed write left the index");
    for (int s = 0; s < 3; s++)
        ck_assert_msg(s == failing || !exists(dir, shards[s]), "a failed write left its shard %s", shards[s]);
    sy_weights *w = NULL;
    ck_assert_int_ne(sy_weights_open(&d, 2, dir, &w, &err), SY_OK);
    ck_assert_int_ne(sy_weights_open(&d, 1, dir, &w, &err), SY_OK);
    sy_process_result pr;
    sy_run_switchyard((const char *const[]){"checkpoint", "check", dir, NULL}, NULL, &pr);
    ck_assert_msg(pr.exit_code == 3 && strstr(pr.err, SY_CKPT_CONFIG_FILE), "checkpoint check exited %d: %s",
                  pr.exit_code, pr.err);
    sy_process_result_free(&pr);
    /* Writing again without the limit gives a whole checkpoint. */
    write_synth(2, 3, dir);
    ck_assert_msg(sy_weights_open(&d, 2, dir, &w, &err) == SY_OK, "%s", err.msg);
    sy_weights_close(w);
    sy_scratch_remove(dir);
}
END_TEST

/* config.json's dimensions are held to the limits of their Switchyard keys before anything is sized
 * by them: 2^32 - 1 layers once made `checkpoint check` ask for layers x 19 tensor names and abort
 * out of host memory. */
START_TEST(config_json_dimensions_are_held_to_the_model_limits)
{
    sy_model_dims d = dims();
    char *text = sy_hf_config_text(&d);
    /* 2^32 - 1 layers, without the layer_types that would have to list them. */
    char *layers = strstr(text, "\"num_hidden_layers\": 3,"), *types = strstr(text, "  \"layer_types\"");
    ck_assert_ptr_nonnull(layers);
    ck_assert_ptr_nonnull(types);
    char *huge = sy_fixture_printf("%.*s\"num_hidden_layers\": 4294967295,%.*s%s", (int)(layers - text), text,
                                   (int)(types - layers - strlen("\"num_hidden_layers\": 3,")),
                                   layers + strlen("\"num_hidden_layers\": 3,"), strchr(types, '\n') + 1);
    sy_hf_config hf;
    sy_error err = {{0}};
    ck_assert_int_ne(sy_hf_config_parse("c.json", huge, strlen(huge), &hf, &err), SY_OK);
    ck_assert_msg(strstr(err.msg, "c.json: num_hidden_layers = 4294967295 is out of range 1..1024") &&
                      strstr(err.msg, "model.layers"),
                  "%s", err.msg);
    static const char *const out_of_range[][3] = {
        {"\"vocab_size\": 333,", "\"vocab_size\": 0,", "vocab_size = 0 is out of range 1..4194304"},
        {"\"num_local_experts\": 8,", "\"num_local_experts\": 100000,", "num_local_experts = 100000"},
        {"\"rms_norm_eps\": 1e-05,", "\"rms_norm_eps\": 2,", "rms_norm_eps = 2 is out of range"},
    };
    for (size_t i = 0; i < sizeof out_of_range / sizeof out_of_range[0]; i++) {
        char *at = strstr(text, out_of_range[i][0]);
        ck_assert_msg(at != NULL, "the writer's config.json lacks %s", out_of_range[i][0]);
        char *bad = sy_fixture_printf("%.*s%s%s", (int)(at - text), text, out_of_range[i][1],
                                      at + strlen(out_of_range[i][0]));
        ck_assert_int_ne(sy_hf_config_parse("c.json", bad, strlen(bad), &hf, &err), SY_OK);
        ck_assert_msg(strstr(err.msg, out_of_range[i][2]), "message lacks '%s': %s", out_of_range[i][2], err.msg);
        free(bad);
    }
    /* The CLI on a folder whose config.json says so: an error, not an abort. */
    char *dir = sy_scratch_dir();
    write_synth(1, 1, dir);
    free(sy_scratch_write(dir, SY_CKPT_CONFIG_FILE, huge, 0644));
    sy_process_result r;
    cli((const char *const[]){"checkpoint", "check", dir, NULL}, 1, "num_hidden_layers = 4294967295 is out of range",
        &r);
    ck_assert_int_eq(r.term_signal, 0);
    sy_process_result_free(&r);
    /* Within every limit, but no model: the cross-dimension rules of a config apply too. */
    char *heads = strstr(text, "\"num_key_value_heads\": ");
    ck_assert_ptr_nonnull(heads);
    char *odd = sy_fixture_printf("%.*s\"num_key_value_heads\": 3%s", (int)(heads - text), text, strchr(heads, ','));
    free(sy_scratch_write(dir, SY_CKPT_CONFIG_FILE, odd, 0644));
    cli((const char *const[]){"checkpoint", "check", dir, NULL}, 1, "must be a multiple of model.kv_heads (3)", &r);
    ck_assert_msg(strstr(r.err, SY_CKPT_CONFIG_FILE), "%s", r.err);
    sy_process_result_free(&r);
    free(odd);
    free(huge);
    free(text);
    sy_scratch_remove(dir);
}
END_TEST

/* --seed and --preset are reported as themselves. A repeated --seed once freed the text an earlier
 * one had left in the --set list ("--set:2:1: error: unknown key '.V'"); the last one counts now.
 * Errors in them said "--set:2:12: error: model.seed ..." though no --set was given, and the
 * user's own --set entries were numbered from 2. */
START_TEST(synth_options_are_reported_as_typed)
{
    char *dir = sy_scratch_dir();
    char *out = path_in(dir, "ckpt");
    sy_process_result r;
    cli((const char *const[]){"checkpoint", "synth", "--seed", "123456789012", "--seed", "2", out, NULL}, 0,
        "(seed 2)", &r);
    sy_process_result_free(&r);
    static const struct {
        const char *args[6];
        const char *expect;
    } bad[] = {
        {{"--seed", "12x"}, "--seed: error: model.seed: expected an integer, got '12x'"},
        {{"--seed", "-1"}, "--seed: error: model.seed: -1 is out of range"},
        {{"--preset", "huge"}, "--preset: error: model.preset: 'huge' is not one of"},
        {{"--seed", "3", "--set", "model.seed=4"}, "--seed: error: model.seed is also given by --set 1"},
        {{"--preset", "tiny", "--set", "model.layers=0"}, "--set:1:14: error: model.layers: 0 is out of range"},
        {{"--set", "model.preset=gpt-oss-20b", "--set", "model.layers=0"}, "--set:2:14: error: model.layers"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[10] = {"checkpoint", "synth"};
        size_t n = 2;
        for (size_t k = 0; k < 6 && bad[i].args[k]; k++)
            args[n++] = bad[i].args[k];
        args[n++] = out;
        args[n] = NULL;
        cli(args, 2, bad[i].expect, &r);
        ck_assert_msg(strstr(r.err, "duplicate") == NULL, "%s", r.err);
        ck_assert_msg(strstr(bad[i].expect, "--set") || strstr(r.err, "--set") == NULL ||
                          strstr(r.err, "given by --set"),
                      "an error about an option is reported as a --set: %s", r.err);
        sy_process_result_free(&r);
    }
    free(out);
    sy_scratch_remove(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("checkpoint_load");
    TCase *t = tcase_create("load");
    tcase_set_timeout(t, 300);
    tcase_add_unchecked_fixture(t, open_registry, close_registry);
    tcase_add_loop_test(t, checkpoint_run_matches_synthetic_run, 0, 2);
    tcase_add_loop_test(t, broken_checkpoints_are_refused_naming_the_tensor, 0,
                        (int)(sizeof broken / sizeof broken[0]));
    tcase_add_test(t, config_json_must_agree_with_the_configured_model);
    tcase_add_test(t, cli_writes_checks_and_runs_checkpoints);
    tcase_add_test(t, failed_synth_leaves_no_checkpoint_to_run);
    tcase_add_test(t, config_json_dimensions_are_held_to_the_model_limits);
    tcase_add_test(t, synth_options_are_reported_as_typed);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
