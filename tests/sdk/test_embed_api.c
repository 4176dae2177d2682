/* The embedding API of switchyard.h: an engine opened from config text or a file reports the
 * composition the config asked for, its single steps reproduce the workload's tokens exactly, a
 * prompt prefilled in pieces gives what one prefill gives, and every misuse is refused with one
 * line that names the argument and the values. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/engine.h"
#include "sy_test.h"
#include "switchyard/switchyard.h"

/* The tiny model: 3 sequences (not a power of two), prompts longer than the sliding window (16)
 * and than one prefill chunk, so that steps cross chunks and free window pages. */
static const char CONFIG[] = "backend: cpu\n"
                             "model:\n"
                             "  preset: tiny\n"
                             "  dtype: f32\n"
                             "workload:\n"
                             "  batch: 3\n"
                             "  input_len: 21\n"
                             "  output_len: 7\n"
                             "  prefill_chunk: 8\n"
                             "  warmup: 0\n"
                             "  repeat: 1\n";

typedef struct opened {
    sy_engine_handle *h;
    char model_seed[48], token_seed[48];
    const char *sets[2];
    uint64_t token_seed_value;
} opened;

/* Fresh weights and prompts every run, from the printed seed. */
static void open_tiny(opened *o, const char *kv_layout)
{
    uint64_t seed = sy_test_seed();
    o->token_seed_value = seed % 1000003u;
    snprintf(o->model_seed, sizeof o->model_seed, "model.seed=%llu", (unsigned long long)(seed % 999983u));
    snprintf(o->token_seed, sizeof o->token_seed, "workload.seed=%llu", (unsigned long long)o->token_seed_value);
    o->sets[0] = o->model_seed;
    o->sets[1] = o->token_seed;
    char text[1024];
    snprintf(text, sizeof text, "%skv_cache:\n  layout: %s\n", CONFIG, kv_layout);
    sy_engine_open_options opts;
    memset(&opts, 0, sizeof opts);
    opts.struct_size = sizeof opts;
    opts.sets = o->sets;
    opts.n_sets = 2;
    sy_error err = {{0}};
    sy_status st = sy_engine_open_string(text, strlen(text), SY_CONFIG_TEXT_YAML, "tiny.yaml", &opts, &o->h, &err);
    ck_assert_msg(st == SY_OK, "open: %s", err.msg);
}

static void setup(void)
{
    /* The build tree's plugins folder only: a user's SWITCHYARD_PLUGIN_PATH must not change the test. */
    unsetenv("SWITCHYARD_PLUGIN_PATH");
}

START_TEST(info_lists_the_composition)
{
    opened o;
    open_tiny(&o, "vectorized_5d");
    const sy_engine_info *info = sy_engine_get_info(o.h);
    ck_assert_ptr_nonnull(info);
    ck_assert_uint_eq(info->struct_size, sizeof(sy_engine_info));
    ck_assert_str_eq(info->backend, "cpu");
    ck_assert_ptr_nonnull(strstr(info->backend_file, "libsy_backend_cpu.so"));
    ck_assert_uint_eq(info->kv_layout, SY_LAYOUT_VECTORIZED_5D);
    ck_assert_uint_eq(info->page_size, 64); /* vectorized_5d's default when the config leaves it unset */
    ck_assert_uint_eq(info->batch, 3);
    ck_assert_uint_eq(info->vocab, 512);
    ck_assert_uint_eq(info->max_prompt_tokens, 21);
    ck_assert_uint_eq(info->max_tokens, 28);
    ck_assert_uint_eq(info->fused_qkv, 1); /* linear.fuse_qkv auto: the in-tree plugins declare what it needs */
    ck_assert_int_eq(info->act_dtype, SY_DTYPE_F32);
    static const int32_t kinds[] = {SY_KIND_KV_LAYOUT, SY_KIND_ATTENTION, SY_KIND_ROPE,
                                    SY_KIND_NORM,      SY_KIND_MOE,       SY_KIND_LINEAR};
    static const char *const plugins[] = {"kv_vectorized_5d", "attn_paged", "rope_yarn",
                                          "norm_rmsnorm",     "moe_mxfp4_interleave", "linear"};
    ck_assert_uint_eq(info->n_slots, 6);
    for (uint32_t i = 0; i < info->n_slots; i++) {
        const sy_engine_slot *s = &info->slots[i];
        ck_assert_int_eq(s->kind, kinds[i]);
        ck_assert_str_eq(s->plugin, plugins[i]);
        ck_assert_str_eq(s->version, "1.0.0");
        char want[64];
        snprintf(want, sizeof want, "/libsy_%s.so", plugins[i]);
        ck_assert_msg(strstr(s->file, want), "slot %u: file %s does not end in %s", i, s->file, want);
        ck_assert_int_eq(s->file[0], '/');
    }
    sy_engine_close(o.h);
}
END_TEST

/* Prefill the workload's own prompt and decode greedily: the ids must equal what the workload
 * generated, position for position. */
static void steps_match_workload(const char *kv_layout)
{
    opened o;
    open_tiny(&o, kv_layout);
    sy_error err = {{0}};
    const sy_engine_info *info = sy_engine_get_info(o.h);
    ck_assert_msg(sy_engine_run_workload(o.h, &err) == SY_OK, "%s", err.msg);
    sy_engine_metrics m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    ck_assert_msg(sy_engine_get_metrics(o.h, &m, &err) == SY_OK, "%s", err.msg);
    ck_assert_uint_eq(m.batch, 3);
    ck_assert_uint_eq(m.output_len, 7);
    ck_assert_uint_eq(m.n_steps, 6);
    ck_assert(m.ttft_ms > 0 && m.total_ms >= m.ttft_ms);
    ck_assert_uint_gt(m.op_calls[SY_KIND_ATTENTION], 0);
    uint32_t B = info->batch, L = info->max_prompt_tokens, out_len = m.output_len;
    uint32_t *want = malloc((size_t)B * out_len * sizeof *want);
    memcpy(want, m.tokens, (size_t)B * out_len * sizeof *want);

    uint32_t *prompt = malloc((size_t)B * L * sizeof *prompt), next[3], got[3 * 7];
    for (uint32_t b = 0; b < B; b++)
        for (uint32_t i = 0; i < L; i++)
            prompt[(size_t)b * L + i] = sy_workload_token(o.token_seed_value, info->vocab, b, i);
    memset(next, 0xFF, sizeof next);
    ck_assert_msg(sy_engine_prefill(o.h, prompt, L, next, &err) == SY_OK, "%s", err.msg);
    for (uint32_t t = 0; t < out_len; t++) {
        for (uint32_t b = 0; b < B; b++)
            got[b * out_len + t] = next[b];
        if (t + 1 < out_len)
            ck_assert_msg(sy_engine_decode(o.h, next, next, &err) == SY_OK, "step %u: %s", t, err.msg);
    }
    ck_assert_uint_eq(sy_engine_sequence_length(o.h), L + out_len - 1);
    for (size_t i = 0; i < (size_t)B * out_len; i++)
        ck_assert_msg(got[i] == want[i], "%s: sequence %zu token %zu: steps gave %u, the workload %u", kv_layout,
                      i / out_len, i % out_len, got[i], want[i]);
    /* The metrics of the workload stay what they were. */
    sy_engine_metrics again;
    memset(&again, 0, sizeof again);
    again.struct_size = sizeof again;
    ck_assert_int_eq(sy_engine_get_metrics(o.h, &again, &err), SY_OK);
    ck_assert_uint_eq(again.checksum, m.checksum);
    free(prompt);
    free(want);
    sy_engine_close(o.h);
}

START_TEST(steps_match_workload_nhd)
{
    steps_match_workload("nhd");
}
END_TEST

START_TEST(steps_match_workload_vectorized_5d)
{
    steps_match_workload("vectorized_5d");
}
END_TEST

/* A prompt in three uneven pieces, then a decode step, gives the tokens of one prefill of it all
 * followed by the same decode: positions continue across calls, and a reset starts afresh. The two
 * paths are not bit-identical (their calls have other row counts, and a later piece's attention
 * reads gathered K/V): the logits differ by about 1e-5, and once in 120 runs (model seed
 * 1796393955772549986, prompts from 1796393955746476899) sequence 2's differed by 6e-3 after the
 * pieces, most likely a near tie in a router's top-k, and its decode token changed. A position or
 * reset error changes every sequence's tokens (a piece fed one token early: 3 of 3 differ), so one
 * sequence of the three may differ, not two. */
START_TEST(prefill_in_pieces)
{
    opened o;
    open_tiny(&o, "nhd");
    sy_error err = {{0}};
    sy_rng rng = {sy_test_seed()};
    enum { B = 3, L = 19 };
    uint32_t prompt[B * L], piece[B * L], whole[B], split[B], after_whole[B], after_split[B];
    for (size_t i = 0; i < B * L; i++)
        prompt[i] = sy_rng_below(&rng, 512);
    ck_assert_msg(sy_engine_prefill(o.h, prompt, L, whole, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(sy_engine_decode(o.h, whole, after_whole, &err) == SY_OK, "%s", err.msg);

    ck_assert_int_eq(sy_engine_reset(o.h, &err), SY_OK);
    ck_assert_uint_eq(sy_engine_sequence_length(o.h), 0);
    static const uint32_t cuts[] = {0, 5, 6, L};
    for (int k = 0; k < 3; k++) {
        uint32_t n = cuts[k + 1] - cuts[k];
        for (uint32_t b = 0; b < B; b++)
            memcpy(piece + b * n, prompt + b * L + cuts[k], n * sizeof *prompt);
        ck_assert_msg(sy_engine_prefill(o.h, piece, n, split, &err) == SY_OK, "piece %d: %s", k, err.msg);
        ck_assert_uint_eq(sy_engine_sequence_length(o.h), cuts[k + 1]);
    }
    ck_assert_msg(sy_engine_decode(o.h, split, after_split, &err) == SY_OK, "%s", err.msg);
    int differing = 0;
    for (int b = 0; b < B; b++)
        if (split[b] != whole[b] || after_split[b] != after_whole[b]) {
            differing++;
            fprintf(stderr, "sequence %d: pieces gave %u then %u, one prefill %u then %u\n", b, split[b],
                    after_split[b], whole[b], after_whole[b]);
        }
    ck_assert_msg(differing <= 1, "%d of %d sequences differ between the pieces and one prefill", differing, B);
    sy_engine_close(o.h);
}
END_TEST

START_TEST(limits_are_refused)
{
    opened o;
    open_tiny(&o, "nhd");
    sy_error err = {{0}};
    uint32_t ids[3 * 22] = {0}, next[3];
    ck_assert_int_eq(sy_engine_prefill(o.h, ids, 22, next, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "22 more exceed the 21"));
    ck_assert_int_eq(sy_engine_prefill(o.h, ids, 0, next, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "n_tokens is 0"));
    ids[4] = 512;
    ck_assert_int_eq(sy_engine_prefill(o.h, ids, 2, next, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "token_ids[4] = 512 is not below the vocabulary size 512"));
    ids[4] = 0;
    ck_assert_int_eq(sy_engine_prefill(o.h, ids, 21, next, &err), SY_OK);
    for (int i = 0; i < 7; i++)
        ck_assert_msg(sy_engine_decode(o.h, next, next, &err) == SY_OK, "%s", err.msg);
    ck_assert_int_eq(sy_engine_decode(o.h, next, next, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "hold 28 tokens"));
    ck_assert_uint_eq(sy_engine_sequence_length(o.h), 28);
    ck_assert_int_eq(sy_engine_prefill(o.h, ids, 1, next, &err), SY_E_INVALID);
    /* No workload has run: no metrics; a metrics struct that does not say its size is refused. */
    sy_engine_metrics m;
    memset(&m, 0, sizeof m);
    ck_assert_int_eq(sy_engine_get_metrics(o.h, &m, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "struct_size 0"));
    m.struct_size = sizeof m;
    ck_assert_int_eq(sy_engine_get_metrics(o.h, &m, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "no workload has run"));
    ck_assert_int_eq(sy_engine_decode(o.h, NULL, next, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "token_ids is NULL"));
    sy_engine_close(o.h);
    sy_engine_close(NULL);
}
END_TEST

typedef struct collected {
    char lines[8][SY_ERROR_MSG_LEN];
    int n;
} collected;

static void collect(void *user, const char *line)
{
    collected *c = user;
    if (c->n < 8)
        snprintf(c->lines[c->n], sizeof c->lines[0], "%s", line);
    c->n++;
}

/* Config errors come back with file:line:col, every one through the callback, the first in err. */
START_TEST(config_errors_are_reported)
{
    static const char bad[] = "backend: cpu\nmodel:\n  preset: tiny\nworkload:\n  batch: 0\n  inptu_len: 4\n";
    collected c = {0};
    sy_engine_open_options opts;
    memset(&opts, 0, sizeof opts);
    opts.struct_size = sizeof opts;
    opts.diag = collect;
    opts.diag_user = &c;
    sy_engine_handle *h = (sy_engine_handle *)&c; /* must come back NULL */
    sy_error err = {{0}};
    ck_assert_int_eq(sy_engine_open_string(bad, strlen(bad), SY_CONFIG_TEXT_YAML, "bad.yaml", &opts, &h, &err),
                     SY_E_INVALID);
    ck_assert_ptr_null(h);
    ck_assert_int_ge(c.n, 2);
    ck_assert_msg(strncmp(err.msg, "bad.yaml:5:", 11) == 0, "err: %s", err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, "and 1 more error"));
    ck_assert_msg(strncmp(c.lines[0], "bad.yaml:5:10: error: workload.batch", 36) == 0, "%s", c.lines[0]);
    ck_assert_ptr_nonnull(strstr(c.lines[1], "bad.yaml:6:3: error:"));
    ck_assert_ptr_nonnull(strstr(c.lines[1], "input_len"));

    /* Composition errors too: a plugin that does not exist. */
    static const char no_plugin[] = "backend: cpu\nmodel:\n  preset: tiny\nnorm:\n  plugin: norm_nowhere\n";
    c.n = 0;
    ck_assert_int_eq(sy_engine_open_string(no_plugin, strlen(no_plugin), SY_CONFIG_TEXT_YAML, NULL, &opts, &h, &err),
                     SY_E_INVALID);
    ck_assert_msg(strncmp(err.msg, "<embedded>:5:11: error:", 23) == 0, "err: %s", err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, "norm_nowhere"));

    ck_assert_int_eq(sy_engine_open_file("/nonexistent/switchyard.yaml", NULL, &h, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/switchyard.yaml"));
    ck_assert_int_eq(sy_engine_open_string("x", 1, 7, NULL, NULL, &h, &err), SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "syntax 7"));
    opts.struct_size = 8;
    ck_assert_int_eq(sy_engine_open_string(CONFIG, strlen(CONFIG), SY_CONFIG_TEXT_YAML, NULL, &opts, &h, &err),
                     SY_E_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "struct_size 8"));
}
END_TEST

/* The same engine from an INI file on disk, with --set style overrides. */
START_TEST(open_file_with_overrides)
{
    char dir[] = "/tmp/sy_embed_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/tiny.ini", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("backend = cpu\n[model]\npreset = tiny\n[workload]\nbatch = 1\ninput_len = 9\noutput_len = 2\n", f);
    fclose(f);
    const char *sets[] = {"workload.batch=2", "kv_cache.layout=vectorized_5d"};
    sy_engine_open_options opts;
    memset(&opts, 0, sizeof opts);
    opts.struct_size = sizeof opts;
    opts.sets = sets;
    opts.n_sets = 2;
    sy_engine_handle *h = NULL;
    sy_error err = {{0}};
    ck_assert_msg(sy_engine_open_file(path, &opts, &h, &err) == SY_OK, "%s", err.msg);
    const sy_engine_info *info = sy_engine_get_info(h);
    ck_assert_uint_eq(info->batch, 2);
    ck_assert_uint_eq(info->max_prompt_tokens, 9);
    ck_assert_str_eq(info->slots[0].plugin, "kv_vectorized_5d");
    sy_engine_close(h);
    unlink(path);
    rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("embed_api");
    TCase *tc = tcase_create("embed_api");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, info_lists_the_composition);
    tcase_add_test(tc, steps_match_workload_nhd);
    tcase_add_test(tc, steps_match_workload_vectorized_5d);
    tcase_add_test(tc, prefill_in_pieces);
    tcase_add_test(tc, limits_are_refused);
    tcase_add_test(tc, config_errors_are_reported);
    tcase_add_test(tc, open_file_with_overrides);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
