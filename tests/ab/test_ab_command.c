/* `switchyard ab` end to end on the tiny model: bit-exact pairs, an fp8 pool against bf16, a
 * planted plugin that drops the sinks, rows matched across different prefill chunks, the
 * same-inputs rule, usage errors and the atomic reports. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ab_json.h"
#include "ab_run.h"
#include "fixture_support.h"

/* The workload of ab_run: batch 2, 21 prompt tokens in chunks of 8, 6 generated. */
enum { BATCH = 2, INPUT_LEN = 21, OUTPUT_LEN = 6, PREFILL_STEPS = 3, LAYERS = 4 };
enum { POSITIONS = INPUT_LEN + OUTPUT_LEN - 1, STEPS = PREFILL_STEPS + OUTPUT_LEN - 1 };

#define FP8_B "--set-b", "kv_cache.dtype=fp8_e4m3", "--set-b", "kv_cache.k_scale=unit", "--set-b", "kv_cache.v_scale=unit"

typedef struct run {
    ab_result r;
    json_doc doc;
} run;

static void run_ab(run *x, const char *const *extra, int want_exit)
{
    ab_run(extra, &x->r);
    ab_expect_exit(&x->r, want_exit);
    ck_assert_msg(x->r.json != NULL, "no JSON report at %s\nstderr:\n%s", x->r.json_path, x->r.proc.err);
    json_doc_parse(&x->doc, x->r.json);
}

static void run_free(run *x)
{
    json_doc_free(&x->doc);
    ab_result_free(&x->r);
}

static void expect_text(const run *x, const char *needle)
{
    ck_assert_msg(strstr(x->r.proc.out, needle) != NULL, "the report lacks \"%s\":\n%s", needle, x->r.proc.out);
}

static void expect_every_checkpoint_compared(run *x)
{
    char path[96];
    for (int l = 0; l <= LAYERS; l++) {
        snprintf(path, sizeof path, "numerics.per_layer.%d.rows_compared", l);
        double want = l < LAYERS ? BATCH * POSITIONS : BATCH * STEPS;
        ck_assert_msg(ab_json_number(&x->doc, path) == want, "%s = %g, want %g", path, ab_json_number(&x->doc, path),
                      want);
    }
    ck_assert_uint_eq(ab_json_length(&x->doc, "numerics.checkpoints"), (size_t)STEPS * (LAYERS + 1));
}

/* Rows compared and skipped at checkpoint l (LAYERS: the logits). */
static void layer_rows(run *x, int l, double *compared, double *skipped)
{
    char path[96];
    snprintf(path, sizeof path, "numerics.per_layer.%d.rows_compared", l);
    *compared = ab_json_number(&x->doc, path);
    snprintf(path, sizeof path, "numerics.per_layer.%d.rows_skipped", l);
    *skipped = ab_json_number(&x->doc, path);
}

static void expect_bit_exact(run *x)
{
    ck_assert(ab_json_bool(&x->doc, "numerics.bit_exact"));
    ck_assert(ab_json_is_null(&x->doc, "numerics.first_difference"));
    ck_assert(ab_json_number(&x->doc, "numerics.logits_rel_l2") == 0);
    ck_assert(ab_json_bool(&x->doc, "numerics.tokens.identical"));
    ck_assert(ab_json_bool(&x->doc, "numerics.within_tolerance"));
    for (int l = 0; l <= LAYERS; l++) {
        char path[96];
        snprintf(path, sizeof path, "numerics.per_layer.%d.differing_values", l);
        ck_assert(ab_json_number(&x->doc, path) == 0);
        snprintf(path, sizeof path, "numerics.per_layer.%d.max_abs", l);
        ck_assert(ab_json_number(&x->doc, path) == 0);
    }
    expect_every_checkpoint_compared(x);
    expect_text(x, "first divergence: none\n");
    expect_text(x, "generated tokens: identical (2 sequences x 6)\n");
    expect_text(x, "result: numerics within tolerance (exit 0)\n");
}

static int row_of_slot(run *x, const char *slot)
{
    size_t n = ab_json_length(&x->doc, "plugins");
    for (size_t i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof path, "plugins.%zu.slot", i);
        if (strcmp(ab_json_text(&x->doc, path), slot) == 0)
            return (int)i;
    }
    ck_abort_msg("no plugins row for %s", slot);
    return -1;
}

START_TEST(a_against_itself_is_bit_exact)
{
    run x;
    const char *extra[] = {"--rounds", "3", NULL};
    run_ab(&x, extra, 0);
    expect_bit_exact(&x);
    expect_text(&x, "config diff: none");
    ck_assert_uint_eq(ab_json_length(&x.doc, "config_diff"), 0);
    /* The sections, in the order the issue asks for. */
    const char *out = x.r.proc.out;
    const char *at[] = {strstr(out, "config diff:"), strstr(out, "\nplugins:"), strstr(out, "\nnumerics"),
                        strstr(out, "\ntiming:"), strstr(out, "\nresult:")};
    for (int i = 0; i < 5; i++)
        ck_assert_msg(at[i] && (i == 0 || at[i] > at[i - 1]), "section %d missing or out of order:\n%s", i, out);
    /* Timing: interleaved, every row with a median per side and a verdict that matches its interval. */
    ck_assert_str_eq(ab_json_text(&x.doc, "timing.order"), "ABBAAB");
    size_t rows = ab_json_length(&x.doc, "timing.rows");
    ck_assert_uint_ge(rows, 3 + 7);
    for (size_t i = 0; i < rows; i++) {
        char path[96], name[64];
        snprintf(name, sizeof name, "timing.rows.%zu", i);
        snprintf(path, sizeof path, "%s.verdict", name);
        const char *verdict = ab_json_text(&x.doc, path);
        snprintf(path, sizeof path, "%s.summary", name);
        const char *summary = ab_json_text(&x.doc, path);
        snprintf(path, sizeof path, "%s.a.samples_ms", name);
        ck_assert_uint_eq(ab_json_length(&x.doc, path), 3);
        if (strcmp(verdict, "not_measured") == 0) {
            ck_assert_str_eq(summary, "not measured");
            continue;
        }
        snprintf(path, sizeof path, "%s.ratio_ci_low", name);
        double lo = ab_json_number(&x.doc, path);
        snprintf(path, sizeof path, "%s.ratio_ci_high", name);
        double hi = ab_json_number(&x.doc, path);
        ck_assert(lo <= hi);
        if (strcmp(verdict, "no_significant_difference") == 0)
            ck_assert(lo <= 1 && hi >= 1 && strcmp(summary, "no significant difference") == 0);
        else if (strcmp(verdict, "faster") == 0)
            ck_assert(hi < 1 && strncmp(summary, "B faster by ", 12) == 0);
        else
            ck_assert(strcmp(verdict, "slower") == 0 && lo > 1 && strncmp(summary, "B slower by ", 12) == 0);
    }
    ck_assert_str_eq(ab_json_text(&x.doc, "timing.rows.0.name"), "end-to-end");
    run_free(&x);
}
END_TEST

START_TEST(nhd_and_vectorized_5d_are_bit_exact)
{
    run x;
    const char *extra[] = {"--rounds", "0", "--set-b", "kv_cache.layout=vectorized_5d", NULL};
    run_ab(&x, extra, 0);
    expect_bit_exact(&x);
    ck_assert_str_eq(ab_json_text(&x.doc, "config_diff.0.key"), "kv_cache.layout");
    ck_assert_str_eq(ab_json_text(&x.doc, "config_diff.0.a.value"), "nhd");
    ck_assert_str_eq(ab_json_text(&x.doc, "config_diff.0.b.value"), "vectorized_5d");
    ck_assert_str_eq(ab_json_text(&x.doc, "config_diff.0.b.source"), "--set-b");
    ck_assert_msg(strstr(ab_json_text(&x.doc, "config_diff.0.a.source"), "default.yaml:"), "%s",
                  ab_json_text(&x.doc, "config_diff.0.a.source"));
    char path[64];
    int kv = row_of_slot(&x, "kv_layout");
    snprintf(path, sizeof path, "plugins.%d.same", kv);
    ck_assert(!ab_json_bool(&x.doc, path));
    snprintf(path, sizeof path, "plugins.%d.b.choice", kv);
    ck_assert_msg(strncmp(ab_json_text(&x.doc, path), "kv_vectorized_5d ", 17) == 0, "%s", ab_json_text(&x.doc, path));
    snprintf(path, sizeof path, "plugins.%d.same", row_of_slot(&x, "attention"));
    ck_assert(ab_json_bool(&x.doc, path));
    ck_assert(ab_json_is_null(&x.doc, "timing"));
    expect_text(&x, "timing: not measured (--rounds 0)");
    run_free(&x);
}
END_TEST

START_TEST(layouts_agree_on_an_fp8_pool_too)
{
    run x;
    const char *extra[] = {"--rounds", "0", "--set", "kv_cache.dtype=fp8_e4m3", "--set", "kv_cache.k_scale=unit",
                           "--set", "kv_cache.v_scale=unit", "--set-b", "kv_cache.layout=vectorized_5d", NULL};
    run_ab(&x, extra, 0);
    expect_bit_exact(&x);
    ck_assert_str_eq(ab_json_text(&x.doc, "numerics.tolerance_source"), "default for fp8_e4m3 KV on both sides");
    run_free(&x);
}
END_TEST

START_TEST(fp8_pool_differs_within_its_tolerance)
{
    run x;
    const char *extra[] = {"--rounds", "0", FP8_B, NULL};
    run_ab(&x, extra, 0);
    ck_assert(!ab_json_bool(&x.doc, "numerics.bit_exact"));
    ck_assert(ab_json_bool(&x.doc, "numerics.within_tolerance"));
    ck_assert_str_eq(ab_json_text(&x.doc, "numerics.tolerance_source"), "default for bf16 vs fp8_e4m3 KV");
    double rel = ab_json_number(&x.doc, "numerics.logits_rel_l2");
    ck_assert_msg(rel > 1e-4 && rel <= ab_json_number(&x.doc, "numerics.tolerance"), "logits rel L2 %g", rel);
    /* The first values that differ are those attention read back from the fp8 pool: layer 0, at the
     * first step with a cached prefix (the first chunk attends to its own keys before they are stored). */
    ck_assert(ab_json_number(&x.doc, "numerics.first_difference.layer") == 0);
    ck_assert(ab_json_number(&x.doc, "numerics.first_difference.step") <= 1);
    ck_assert(ab_json_number(&x.doc, "numerics.per_layer.0.rel_l2") > 0);
    expect_text(&x, "within tolerance");
    expect_text(&x, "result: numerics within tolerance (exit 0)\n");
    run_free(&x);

    const char *tight[] = {"--rounds", "0", "--tolerance", "1e-6", FP8_B, NULL};
    run_ab(&x, tight, 1);
    ck_assert(!ab_json_bool(&x.doc, "numerics.within_tolerance"));
    ck_assert_str_eq(ab_json_text(&x.doc, "numerics.tolerance_source"), "--tolerance");
    ck_assert(ab_json_number(&x.doc, "result.exit_code") == 1);
    expect_text(&x, "beyond tolerance");
    expect_text(&x, "result: numerics beyond tolerance (exit 1)\n");
    run_free(&x);
}
END_TEST

START_TEST(dropped_sinks_are_caught_at_layer_0_step_0)
{
    run x;
    const char *extra[] = {"--rounds", "0", "--set-b", "attention.plugin=attn_drop_sinks", NULL};
    run_ab(&x, extra, 1);
    ck_assert(!ab_json_bool(&x.doc, "numerics.bit_exact"));
    ck_assert(!ab_json_bool(&x.doc, "numerics.within_tolerance"));
    ck_assert_str_eq(ab_json_text(&x.doc, "numerics.first_difference.checkpoint"), "layer 0");
    ck_assert(ab_json_number(&x.doc, "numerics.first_difference.layer") == 0);
    ck_assert(ab_json_number(&x.doc, "numerics.first_difference.step") == 0);
    ck_assert(ab_json_number(&x.doc, "numerics.first_difference.row") == 0);
    ck_assert(!ab_json_bool(&x.doc, "numerics.per_layer.0.bit_exact"));
    char path[64];
    int attn = row_of_slot(&x, "attention");
    snprintf(path, sizeof path, "plugins.%d.b.choice", attn);
    ck_assert_str_eq(ab_json_text(&x.doc, path), "attn_drop_sinks 0.0.1");
    snprintf(path, sizeof path, "plugins.%d.same", attn);
    ck_assert(!ab_json_bool(&x.doc, path));
    expect_text(&x, "first divergence: layer 0 at step 0, row 0 (seq 0, position 0,");
    expect_text(&x, "result: numerics beyond tolerance (exit 1)\n");
    run_free(&x);
}
END_TEST

/* B prefills the whole prompt in one step: its rows still meet A's by position. Logits exist on A
 * at the end of every chunk, on B only at the end of the prompt and at decode positions. */
START_TEST(rows_meet_by_position_across_prefill_chunks)
{
    run x;
    const char *extra[] = {"--rounds", "0", "--tolerance", "10", "--set-b", "workload.prefill_chunk=0", NULL};
    run_ab(&x, extra, 0);
    for (int l = 0; l <= LAYERS; l++) {
        double compared, skipped;
        layer_rows(&x, l, &compared, &skipped);
        double want = l < LAYERS ? BATCH * POSITIONS : BATCH * (1 + OUTPUT_LEN - 1);
        ck_assert_msg(compared + skipped == want, "layer %d: %g + %g rows, want %g", l, compared, skipped, want);
        ck_assert(compared >= BATCH * (l < LAYERS ? INPUT_LEN : 1));
    }
    ck_assert_str_eq(ab_json_text(&x.doc, "config_diff.0.key"), "workload.prefill_chunk");
    run_free(&x);
}
END_TEST

/* After a synthetic context (seeded K/V, no prefill) the decode positions input_len .. input_len +
 * output_len - 1 are compared, and the timing has no prefill row: no prefill ran. */
START_TEST(synthetic_context_compares_the_decode_steps)
{
    run x;
    const char *extra[] = {"--rounds", "3", "--set", "workload.context=synthetic", "--set-b",
                           "kv_cache.layout=vectorized_5d", NULL};
    run_ab(&x, extra, 0);
    ck_assert_str_eq(ab_json_text(&x.doc, "numerics.context"), "synthetic");
    ck_assert(ab_json_bool(&x.doc, "numerics.bit_exact"));
    ck_assert(ab_json_bool(&x.doc, "numerics.tokens.identical"));
    for (int l = 0; l <= LAYERS; l++) {
        double compared, skipped;
        layer_rows(&x, l, &compared, &skipped);
        ck_assert_msg(compared == BATCH * OUTPUT_LEN && skipped == 0, "layer %d: %g compared, %g skipped", l, compared,
                      skipped);
    }
    ck_assert_uint_eq(ab_json_length(&x.doc, "numerics.checkpoints"), (size_t)OUTPUT_LEN * (LAYERS + 1));
    size_t rows = ab_json_length(&x.doc, "timing.rows");
    int decode_rows = 0;
    for (size_t i = 0; i < rows; i++) {
        char path[64];
        snprintf(path, sizeof path, "timing.rows.%zu.kind", i);
        const char *kind = ab_json_text(&x.doc, path);
        ck_assert_msg(strcmp(kind, "prefill") != 0, "a prefill row after a synthetic context:\n%s", x.r.proc.out);
        decode_rows += strcmp(kind, "decode_step") == 0;
    }
    ck_assert_int_eq(decode_rows, 1);
    expect_text(&x, "prefill (TTFT): not measured (synthetic context");
    ck_assert_msg(!strstr(x.r.proc.out, "nan"), "the report prints nan:\n%s", x.r.proc.out);
    run_free(&x);

    /* The planted plugin diverges at the first decode position; a sequence's rows are compared up to
     * the position fed its first differing token (the first step is fed the seeded token). */
    const char *sinks[] = {"--rounds", "0", "--set", "workload.context=synthetic", "--set-b",
                           "attention.plugin=attn_drop_sinks", NULL};
    run_ab(&x, sinks, 1);
    ck_assert_str_eq(ab_json_text(&x.doc, "numerics.first_difference.checkpoint"), "layer 0");
    ck_assert(ab_json_number(&x.doc, "numerics.first_difference.step") == 0);
    ck_assert(ab_json_number(&x.doc, "numerics.first_difference.position") == INPUT_LEN);
    double want = 0;
    for (int b = 0; b < BATCH; b++) {
        int same = 0;
        char pa[64], pb[64];
        for (; same < OUTPUT_LEN; same++) {
            snprintf(pa, sizeof pa, "numerics.tokens.a.%d.%d", b, same);
            snprintf(pb, sizeof pb, "numerics.tokens.b.%d.%d", b, same);
            if (ab_json_number(&x.doc, pa) != ab_json_number(&x.doc, pb))
                break;
        }
        want += same + 1 < OUTPUT_LEN ? same + 1 : OUTPUT_LEN;
    }
    for (int l = 0; l <= LAYERS; l++) {
        double compared, skipped;
        layer_rows(&x, l, &compared, &skipped);
        ck_assert_msg(compared == want && compared + skipped == BATCH * OUTPUT_LEN,
                      "layer %d: %g compared, %g skipped, want %g", l, compared, skipped, want);
    }
    run_free(&x);
}
END_TEST

/* B set apart from A by one identity key: refused with exit 2, naming the key, and no report. */
static void expect_refused(const char *b_setting, const char *says)
{
    ab_result r;
    const char *extra[] = {"--rounds", "0", "--set-b", b_setting, NULL};
    ab_run(extra, &r);
    ab_expect_exit(&r, 2);
    ck_assert_msg(strstr(r.proc.err, says) && strstr(r.proc.err, "both sides must run the same"), "%s", r.proc.err);
    ck_assert_msg(r.json == NULL, "a refused comparison wrote a report");
    ab_result_free(&r);
}

START_TEST(different_seeds_are_refused)
{
    char *other = sy_fixture_printf("model.seed=%llu", ab_model_seed() + 1);
    expect_refused(other, "model.seed differs: A has ");
    free(other);
    expect_refused("workload.output_len=5", "workload.output_len differs");
    expect_refused("workload.context=synthetic", "workload.context differs: A has prefill");
}
END_TEST

/* Two files: B's sources name its own file; a B file with another model shape is refused, naming
 * the key and both places. (ab_run's --set seeds apply to both files.) */
START_TEST(two_config_files)
{
    char *dir = sy_scratch_dir();
    char *b = sy_scratch_write(dir, "b.yaml", "kv_cache:\n  layout: vectorized_5d\n", 0644);
    run x;
    const char *extra[] = {b, "--rounds", "0", NULL};
    run_ab(&x, extra, 0);
    expect_bit_exact(&x);
    ck_assert_str_eq(ab_json_text(&x.doc, "config_diff.0.key"), "kv_cache.layout");
    ck_assert_msg(strstr(ab_json_text(&x.doc, "config_diff.0.b.source"), "b.yaml:2:3"), "%s",
                  ab_json_text(&x.doc, "config_diff.0.b.source"));
    run_free(&x);
    free(b);

    b = sy_scratch_write(dir, "other.yaml", "model:\n  layers: 3\n", 0644);
    ab_result r;
    const char *refused[] = {b, "--rounds", "0", NULL};
    ab_run(refused, &r);
    ab_expect_exit(&r, 2);
    ck_assert_msg(strstr(r.proc.err, "model.layers differs: A has 4 (default (preset tiny)), B has 3 (") &&
                      strstr(r.proc.err, "other.yaml:2:3"),
                  "%s", r.proc.err);
    ab_result_free(&r);
    free(b);
    sy_scratch_remove(dir);
}
END_TEST

START_TEST(usage_errors_exit_2)
{
    static const char *const cases[][5] = {
        {"--rounds", "2", NULL},
        {"--rounds", "many", NULL},
        {"--tolerance", "-1", NULL},
        {"--tolerance", "abc", NULL},
        {"--frobnicate", NULL},
        {"--set-b", "kv_cache.layout=diagonal", NULL},
        {"--set-b", "no.such.key=1", NULL},
    };
    static const char *const says[] = {"at least 3 rounds", "--rounds 'many'", "--tolerance '-1'", "--tolerance 'abc'",
                                       "unexpected argument '--frobnicate'", "kv_cache.layout", "no.such.key"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ab_result r;
        ab_run(cases[i], &r);
        ab_expect_exit(&r, 2);
        ck_assert_msg(strstr(r.proc.err, says[i]), "case %zu: stderr lacks \"%s\":\n%s", i, says[i], r.proc.err);
        ck_assert(r.json == NULL);
        ab_result_free(&r);
    }
    const char *none[] = {"ab", NULL};
    sy_process_result p;
    sy_run_switchyard(none, NULL, &p);
    ck_assert_int_eq(p.exit_code, 2);
    ck_assert_msg(strstr(p.err, "missing the config"), "%s", p.err);
    sy_process_result_free(&p);
    const char *missing[] = {"ab", "/nonexistent/a.yaml", NULL};
    sy_run_switchyard(missing, NULL, &p);
    ck_assert_int_eq(p.exit_code, 2);
    ck_assert_msg(strstr(p.err, "/nonexistent/a.yaml"), "%s", p.err);
    sy_process_result_free(&p);
}
END_TEST

/* A's checkpoints cannot be spilled: a runtime error (exit 3) that names the folder. */
START_TEST(unwritable_spill_folder_exits_3)
{
    ab_result r;
    const char *extra[] = {"--rounds", "0", NULL};
    const char *env[] = {"TMPDIR=/nonexistent/spill", NULL};
    ab_run_env(extra, env, &r);
    ab_expect_exit(&r, 3);
    ck_assert_msg(strstr(r.proc.err, "/nonexistent/spill"), "%s", r.proc.err);
    ck_assert(r.json == NULL);
    ab_result_free(&r);
}
END_TEST

/* Reports are renamed into place complete: nothing but the two reports is left beside them. */
START_TEST(reports_are_written_atomically)
{
    run x;
    const char *extra[] = {"--rounds", "0", NULL};
    run_ab(&x, extra, 0);
    DIR *d = opendir(x.r.dir);
    ck_assert(d != NULL);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        files++;
        ck_assert_msg(strcmp(e->d_name, "ab.json") == 0 || strcmp(e->d_name, "ab.html") == 0, "stray file %s",
                      e->d_name);
    }
    closedir(d);
    ck_assert_int_eq(files, 2);
    size_t n = strlen(x.r.json);
    ck_assert_msg(n > 2 && x.r.json[n - 2] == '}' && x.r.json[n - 1] == '\n', "the JSON report is not complete");
    expect_text(&x, "json report: ");
    run_free(&x);
}
END_TEST

/* A report replaces an older one by rename, never by writing through it: a second link to the old
 * file keeps the old text. A run that fails (here: no room for A's checkpoints) leaves the old report
 * as it was. */
START_TEST(an_old_report_is_replaced_whole_or_not_at_all)
{
    char *dir = sy_scratch_dir();
    const char *old_text = "{\"old\": true}\n";
    char *path = sy_scratch_write(dir, "kept.json", old_text, 0644);
    char *link_path = sy_fixture_printf("%s/kept-link.json", dir);
    ck_assert_msg(link(path, link_path) == 0, "cannot link %s", path);

    ab_result r;
    const char *extra[] = {"--rounds", "0", "--json", path, NULL};
    ab_run(extra, &r);
    ab_expect_exit(&r, 0);
    char *now = ab_slurp(path), *linked = ab_slurp(link_path);
    ck_assert_msg(now && strstr(now, "\"report\": \"ab\""), "%s is not the new report", path);
    ck_assert_msg(linked && strcmp(linked, old_text) == 0, "the old report was written through: %s", linked);
    free(now);
    free(linked);
    ab_result_free(&r);

    const char *env[] = {"TMPDIR=/nonexistent/spill", NULL};
    char *before = ab_slurp(path);
    ab_run_env(extra, env, &r);
    ab_expect_exit(&r, 3);
    now = ab_slurp(path);
    ck_assert_msg(now && strcmp(now, before) == 0, "a failed run changed %s", path);
    free(now);
    free(before);
    ab_result_free(&r);
    DIR *d = opendir(dir);
    ck_assert(d != NULL);
    for (struct dirent *e; (e = readdir(d));)
        ck_assert_msg(e->d_name[0] == '.' || strcmp(e->d_name, "kept.json") == 0 ||
                          strcmp(e->d_name, "kept-link.json") == 0,
                      "stray file %s", e->d_name);
    closedir(d);
    free(path);
    free(link_path);
    sy_scratch_remove(dir);
}
END_TEST

int main(void)
{
    ab_model_seed();
    const TTest *tests[] = {a_against_itself_is_bit_exact,
                            nhd_and_vectorized_5d_are_bit_exact,
                            layouts_agree_on_an_fp8_pool_too,
                            fp8_pool_differs_within_its_tolerance,
                            dropped_sinks_are_caught_at_layer_0_step_0,
                            rows_meet_by_position_across_prefill_chunks,
                            synthetic_context_compares_the_decode_steps,
                            different_seeds_are_refused,
                            two_config_files,
                            usage_errors_exit_2,
                            unwritable_spill_folder_exits_3,
                            reports_are_written_atomically,
                            an_old_report_is_replaced_whole_or_not_at_all};
    return sy_fixture_run_tests("ab_command", tests, sizeof tests / sizeof tests[0]);
}
