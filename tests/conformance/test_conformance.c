/* The conformance suite itself: the cpu plugins pass against themselves with no difference at all;
 * fixture plugins with a planted defect fail with the case's name and the numbers; a plugin whose
 * caps do not cover a case gets not-supported, never pass; plugins with the lower precision a GPU
 * kernel picks still pass; and the `switchyard conformance` command keeps its exit codes, seed and
 * atomic JSON report. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance/case.h"
#include "conformance/conformance.h"
#include "fixture_support.h"
#include "json_doc.h"
#include "run_process.h"
#include "sy_test.h"

static const char *const IN_TREE[] = {"kv_nhd", "kv_vectorized_5d", "attn_paged", "moe_mxfp4_interleave",
                                      "moe_mxfp4_separated", "norm_rmsnorm", "rope_yarn", "linear"};

/* The build's plugin folder, with or without this suite's fixtures. */
static sy_registry *open_registry(int with_fixtures)
{
    const char *dirs[1] = {SY_CONF_FIXTURE_DIR};
    sy_registry_options o = {0};
    o.struct_size = sizeof o;
    o.plugin_paths = with_fixtures ? dirs : NULL;
    o.n_plugin_paths = with_fixtures ? 1 : 0;
    o.skip_environment = 1;
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    ck_assert_msg(sy_registry_open(&o, &reg, &err) == SY_OK, "registry: %s", err.msg);
    return reg;
}

/* One quick run over `plugin` (NULL: all of the cpu backend), cases whose name contains `filter`. */
static void run_quick(sy_registry *reg, const char *plugin, const char *filter, uint64_t seed, sy_conf_report *rep)
{
    sy_conf_options o;
    memset(&o, 0, sizeof o);
    o.plugin = plugin;
    o.case_filter = filter;
    o.seed = seed;
    o.quick = 1;
    sy_error err = {{0}};
    ck_assert_msg(sy_conformance_run(reg, &o, rep, &err) == SY_OK, "conformance run: %s", err.msg);
    ck_assert_msg(rep->n_results > 0, "no cases ran for %s", plugin ? plugin : "the cpu backend");
}

/* A quick run of one fixture plugin, over a registry that also holds the build's plugins. */
typedef struct fixture_run {
    sy_registry *reg;
    sy_conf_report rep;
} fixture_run;

static void fixture_run_start(fixture_run *f, const char *plugin)
{
    f->reg = open_registry(1);
    run_quick(f->reg, plugin, NULL, sy_test_seed(), &f->rep);
}

static void fixture_run_end(fixture_run *f)
{
    sy_conf_report_free(&f->rep);
    sy_registry_close(f->reg);
}

static const char *plugin_of(const sy_conf_report *rep, const sy_conf_result *r)
{
    return rep->plugins[r->plugin].name;
}

static char *line_of(const sy_conf_report *rep, const sy_conf_result *r)
{
    static char line[1024];
    sy_conf_format_result(rep, r, line, sizeof line);
    return line;
}

static void expect_status(const sy_conf_report *rep, const sy_conf_result *r, int32_t want)
{
    ck_assert_msg(r->status == want, "%s: expected %s, got:\n%s", r->name, sy_conf_status_name(want),
                  line_of(rep, r));
}

/* The check named `what`, which must exist. */
static const sy_conf_check *check_of(const sy_conf_result *r, const char *what)
{
    for (size_t i = 0; i < r->n_checks; i++)
        if (strcmp(r->checks[i].what, what) == 0)
            return &r->checks[i];
    ck_abort_msg("%s has no check '%s' (%s)", r->name, what, r->message);
    return NULL;
}

/* Both output buffers start as NaN poison: an element the reference leaves unwritten must fail the
 * case, or a region that neither side writes would pass (a plugin compared with itself, say). */
START_TEST(an_element_the_reference_leaves_unwritten_fails_the_case)
{
    const float written[5] = {1.0f, -2.0f, 3.0f, 0.5f, 4.0f};
    float test[5], ref[5];
    memcpy(test, written, sizeof test);
    memcpy(ref, written, sizeof ref);
    sy_conf_case c;
    memset(&c, 0, sizeof c);
    sy_conf_check_close(&c, "out", SY_DTYPE_F32, test, ref, 5, 1e-6, NULL);
    ck_assert_msg(sy_conf_case_ok(&c), "identical finite outputs failed: %s", c.result.message);

    test[3] = ref[3] = NAN;
    memset(&c, 0, sizeof c);
    sy_conf_check_close(&c, "out", SY_DTYPE_F32, test, ref, 5, 1e-6, NULL);
    ck_assert_msg(!sy_conf_case_ok(&c), "NaN on both sides passed");
    ck_assert_msg(strstr(c.result.message, "the reference left 1 of 5 elements NaN"), "%s", c.result.message);

    ref[3] = written[3];
    memset(&c, 0, sizeof c);
    sy_conf_check_close(&c, "out", SY_DTYPE_F32, test, ref, 5, 1e-6, NULL);
    ck_assert_msg(!sy_conf_case_ok(&c) && strstr(c.result.message, "NaN or infinite where the reference is not"),
                  "an unwritten test element passed: %s", c.result.message);
}
END_TEST

START_TEST(cpu_plugins_conform_to_themselves)
{
    sy_registry *reg = open_registry(0);
    sy_conf_report rep;
    run_quick(reg, NULL, NULL, sy_test_seed(), &rep);
    size_t cases_of[sizeof IN_TREE / sizeof IN_TREE[0]] = {0};
    for (size_t i = 0; i < rep.n_results; i++) {
        const sy_conf_result *r = &rep.results[i];
        expect_status(&rep, r, SY_CONF_PASS);
        ck_assert_msg(r->n_checks > 0, "%s passed without a comparison", r->name);
        /* Identical code on identical inputs: nothing may differ, or the two sides saw different data. */
        for (size_t k = 0; k < r->n_checks; k++)
            ck_assert_msg(r->checks[k].error == 0.0, "%s: %s differs by %g between two runs of one plugin", r->name,
                          r->checks[k].what, r->checks[k].error);
        for (size_t p = 0; p < sizeof IN_TREE / sizeof IN_TREE[0]; p++)
            cases_of[p] += strcmp(plugin_of(&rep, r), IN_TREE[p]) == 0;
    }
    for (size_t p = 0; p < sizeof IN_TREE / sizeof IN_TREE[0]; p++)
        ck_assert_msg(cases_of[p] >= 4, "plugin %s ran %zu cases, expected its whole quick list", IN_TREE[p],
                      cases_of[p]);
    for (size_t i = 0; i < rep.n_plugins; i++)
        ck_assert_msg(rep.plugins[i].reference && strcmp(rep.plugins[i].reference, rep.plugins[i].name) == 0,
                      "cpu plugin %s was held against %s, not itself", rep.plugins[i].name,
                      rep.plugins[i].reference ? rep.plugins[i].reference : "nothing");
    ck_assert_uint_eq(rep.failed, 0);
    ck_assert_uint_eq(rep.passed, rep.n_results);
    sy_conf_report_free(&rep);
    sy_registry_close(reg);
}
END_TEST

/* A planted defect: the cases of `plugin` whose name contains `clean` do not meet it and pass; every
 * other one fails, with each of `parts` in its message, and passes `extra` (when given). Returns the
 * number that failed. */
static size_t expect_defect(const char *plugin, const char *clean, const char *const *parts,
                            void (*extra)(const sy_conf_report *rep, const sy_conf_result *r))
{
    fixture_run f;
    fixture_run_start(&f, plugin);
    const sy_conf_report *rep = &f.rep;
    size_t failed = 0, passed = 0;
    for (size_t i = 0; i < rep->n_results; i++) {
        const sy_conf_result *r = &rep->results[i];
        if (strstr(r->name, clean)) {
            expect_status(rep, r, SY_CONF_PASS);
            passed++;
            continue;
        }
        expect_status(rep, r, SY_CONF_FAIL);
        for (size_t k = 0; parts[k]; k++)
            ck_assert_msg(strstr(r->message, parts[k]), "%s: the message lacks '%s': %s", r->name, parts[k], r->message);
        char *line = line_of(rep, r);
        ck_assert_msg(strstr(line, "FAIL") && strstr(line, r->name) && strstr(line, plugin),
                      "the text line names neither the case nor the plugin: %s", line);
        if (extra)
            extra(rep, r);
        failed++;
    }
    ck_assert_msg(passed >= 1 && failed >= 1, "%s: %zu cases passed, %zu failed; the list must have both", plugin,
                  passed, failed);
    ck_assert_uint_eq(rep->failed, failed);
    fixture_run_end(&f);
    return failed;
}

static void far_beyond_tolerance(const sy_conf_report *rep, const sy_conf_result *r)
{
    (void)rep;
    const sy_conf_check *out = check_of(r, "out");
    ck_assert_msg(out->error > 5 * out->tolerance, "%s: error %g is too close to the tolerance %g", r->name, out->error,
                  out->tolerance);
}

START_TEST(attention_that_drops_sinks_fails_its_sinks_cases)
{
    static const char *const parts[] = {"out: rel_l2 ", "exceeds the tolerance", "reference", NULL};
    ck_assert_uint_gt(expect_defect("conf_attn_no_sinks", "/nosinks", parts, far_beyond_tolerance), 5);
}
END_TEST

START_TEST(attention_with_a_window_one_key_too_wide_fails_every_window_case)
{
    static const char *const parts[] = {"out", "tolerance", NULL};
    ck_assert_uint_ge(expect_defect("conf_attn_wide_window", "/nowindow/", parts, NULL), 5);
}
END_TEST

/* Most elements of a transposed row land elsewhere. */
static void most_elements_differ(const sy_conf_report *rep, const sy_conf_result *r)
{
    (void)rep;
    const sy_conf_check *k = check_of(r, "k_cache");
    ck_assert_msg(strncmp(r->name, "kv_layout.write/nhd/", 20) == 0, "unexpected case %s", r->name);
    ck_assert_msg(!k->passed && k->error > 0.05 * (double)k->elements, "%s: only %g of %lld elements differ", r->name,
                  k->error, (long long)k->elements);
}

START_TEST(kv_layout_with_a_wrong_offset_fails_every_write)
{
    /* The fixture's gather is kv_nhd's and right. */
    static const char *const parts[] = {"k_cache: ", "differ from the reference bit for bit", "(slot ", "head ", "dim ",
                                        NULL};
    ck_assert_uint_gt(expect_defect("conf_kv_transposed", "kv_layout.gather/", parts, most_elements_differ), 1);
}
END_TEST

static void unpadded_columns_pass(const sy_conf_report *rep, const sy_conf_result *r)
{
    (void)rep;
    ck_assert_msg(check_of(r, "out")->passed, "%s: the unpadded columns are right and must pass", r->name);
}

START_TEST(norm_that_forgets_the_pad_zeros_fails_its_padded_cases)
{
    /* The NaN is the poison an unwritten output keeps. */
    static const char *const parts[] = {"pad columns: ", "are not +0", "nan", NULL};
    ck_assert_uint_ge(expect_defect("conf_norm_no_pad", "/pad0/", parts, unpadded_columns_pass), 3);
}
END_TEST

/* What the narrow fixture declares: nhd, bf16 KV, f32 q, head dim 64, pages 16..64 in steps of 16,
 * GQA up to 8, no window, sinks, fp8 or split-K. */
static int narrow_caps_cover(const char *name)
{
    int decode = strncmp(name, "attention.decode_paged/", 23) == 0;
    if (decode && (!strstr(name, "/nhd/") || !(strstr(name, "/P16/") || strstr(name, "/P64/")) ||
                   !(strstr(name, "/splits0") || strstr(name, "/splits1"))))
        return 0;
    return strstr(name, "/bf16/qf32/") && strstr(name, "D64/") && strstr(name, "Hq64Hkv8") &&
           strstr(name, "/nowindow/") && strstr(name, "/nosinks");
}

START_TEST(cases_beyond_the_caps_are_not_supported_never_passed)
{
    fixture_run f;
    fixture_run_start(&f, "conf_attn_narrow");
    const sy_conf_report *rep = &f.rep;
    size_t covered = 0;
    for (size_t i = 0; i < rep->n_results; i++) {
        const sy_conf_result *r = &rep->results[i];
        if (narrow_caps_cover(r->name)) {
            expect_status(rep, r, SY_CONF_PASS);
            covered++;
            continue;
        }
        expect_status(rep, r, SY_CONF_NOT_SUPPORTED);
        ck_assert_msg(r->n_checks == 0, "%s is not supported yet compared %zu outputs", r->name, r->n_checks);
        ck_assert_msg(strstr(r->message, "conf_attn_narrow") || strstr(r->message, "caps"),
                      "%s: the reason names neither the plugin nor its caps: %s", r->name, r->message);
    }
    ck_assert_uint_ge(covered, 1);
    ck_assert_uint_ge(rep->not_supported, 10);
    ck_assert_uint_eq(rep->passed + rep->not_supported, rep->n_results);
    fixture_run_end(&f);
}
END_TEST

/* Fixtures computing with the precision a GPU kernel may pick must pass, and must really differ. */
static void expect_fair(const char *plugin)
{
    fixture_run f;
    fixture_run_start(&f, plugin);
    const sy_conf_report *rep = &f.rep;
    double worst = 0, largest_error = 0;
    const char *worst_case = "";
    for (size_t i = 0; i < rep->n_results; i++) {
        const sy_conf_result *r = &rep->results[i];
        expect_status(rep, r, SY_CONF_PASS);
        for (size_t k = 0; k < r->n_checks; k++)
            if (r->checks[k].tolerance > 0) {
                double ratio = r->checks[k].error / r->checks[k].tolerance;
                largest_error = r->checks[k].error > largest_error ? r->checks[k].error : largest_error;
                if (ratio > worst) {
                    worst = ratio;
                    worst_case = r->name;
                }
            }
    }
    fprintf(stderr, "%s: largest error / tolerance %.3f (%s)\n", plugin, worst, worst_case);
    ck_assert_msg(largest_error > 0, "%s never differed from the reference: the fixture is not lower precision", plugin);
    fixture_run_end(&f);
}

START_TEST(attention_rounding_q_to_bf16_passes)
{
    expect_fair("conf_attn_round_q");
}
END_TEST

START_TEST(attention_with_gpu_precision_and_other_sum_order_passes)
{
    expect_fair("conf_attn_lowp");
}
END_TEST

START_TEST(moe_with_other_sum_order_and_bf16_activations_passes)
{
    expect_fair("conf_moe_lowp");
}
END_TEST

START_TEST(linear_rounding_x_to_bf16_passes)
{
    expect_fair("conf_linear_round_x");
}
END_TEST

START_TEST(a_seed_reproduces_the_inputs_of_a_case)
{
    static const char *filter = "decode_paged/nhd/bf16/qbf16/P16/Hq64Hkv8D64/B4/ctx1000/nowindow/sinks";
    sy_registry *reg = open_registry(1);
    double error[3];
    const uint64_t seeds[3] = {99, 99, 100};
    for (int i = 0; i < 3; i++) {
        sy_conf_report rep;
        run_quick(reg, "conf_attn_no_sinks", filter, seeds[i], &rep);
        ck_assert_uint_eq(rep.n_results, 1);
        ck_assert_uint_eq(rep.seed, seeds[i]);
        error[i] = check_of(&rep.results[0], "out")->error;
        sy_conf_report_free(&rep);
    }
    ck_assert_msg(error[0] == error[1], "seed 99 gave errors %.17g and %.17g", error[0], error[1]);
    ck_assert_msg(error[0] != error[2], "seeds 99 and 100 gave the same error %.17g: inputs ignore the seed", error[0]);
    sy_registry_close(reg);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* the command */

static void run_command(const char *const *args, int exit_code, sy_process_result *r)
{
    sy_run_switchyard(args, NULL, r);
    ck_assert_msg(r->term_signal == 0, "switchyard conformance killed by signal %d; stderr:\n%s", r->term_signal,
                  r->err);
    ck_assert_msg(r->exit_code == exit_code, "switchyard conformance exited %d, expected %d; stdout:\n%s\nstderr:\n%s",
                  r->exit_code, exit_code, r->out, r->err);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    ck_assert(text && fread(text, 1, (size_t)n, f) == (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

static size_t files_in(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    ck_assert(d != NULL);
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

START_TEST(command_passes_and_writes_the_json_report_atomically)
{
    char *dir = sy_scratch_dir();
    char *json = sy_fixture_printf("%s/conformance.json", dir);
    const char *args[] = {"conformance", "--backend", "cpu", "--plugin", "norm_rmsnorm", "--quick", "--seed", "5",
                          "--json", json, NULL};
    sy_process_result r;
    run_command(args, 0, &r);
    ck_assert_msg(strstr(r.out, "seed 5 (--seed 5 reproduces)") && strstr(r.out, "5 passed, 0 failed, 0 not supported") &&
                      strstr(r.out, "PASS  norm_rmsnorm") && strstr(r.out, "norm.rmsnorm/f32/wf32/M7/N2880/pad256"),
                  "output:\n%s", r.out);
    ck_assert_uint_eq(files_in(dir), 1); /* the report and no leftover temporary file */
    char *text = slurp(json);
    json_doc d;
    json_doc_parse(&d, text);
    yaml_node_t *root = json_root(&d), *summary = json_member(&d, root, "summary");
    ck_assert_str_eq(json_text(&d, root, "backend"), "cpu");
    ck_assert_str_eq(json_text(&d, root, "seed"), "5");
    ck_assert_str_eq(json_text(&d, summary, "passed"), "5");
    ck_assert_str_eq(json_text(&d, summary, "failed"), "0");
    yaml_node_t *cases = json_member(&d, root, "cases");
    ck_assert_uint_eq(json_length(cases), 5);
    for (size_t i = 0; i < json_length(cases); i++) {
        yaml_node_t *c = json_element(&d, cases, i);
        ck_assert_str_eq(json_text(&d, c, "status"), "pass");
        ck_assert_str_eq(json_text(&d, c, "plugin"), "norm_rmsnorm");
        ck_assert_msg(json_text(&d, c, "name") && json_text(&d, c, "error") && json_text(&d, c, "tolerance") &&
                          json_text(&d, c, "time_ms") && json_length(json_member(&d, c, "checks")) >= 1,
                      "case %zu lacks name, error, tolerance, time or checks", i);
    }
    json_doc_free(&d);
    free(text);
    free(json);
    sy_process_result_free(&r);
    sy_scratch_remove(dir);
}
END_TEST

START_TEST(command_exits_one_on_a_failed_case_and_names_it)
{
    char *dir = sy_scratch_dir();
    char *json = sy_fixture_printf("%s/fail.json", dir);
    const char *args[] = {"conformance", "--plugin-path", SY_CONF_FIXTURE_DIR, "--plugin", "conf_norm_no_pad",
                          "--quick", "--json", json, NULL};
    sy_process_result r;
    run_command(args, 1, &r);
    ck_assert_msg(strstr(r.out, "FAIL  conf_norm_no_pad") &&
                      strstr(r.out, "norm.rmsnorm/f32/wf32/M7/N2880/pad256/fused_add/in_place  pad columns: ") &&
                      strstr(r.out, " failed, "),
                  "output:\n%s", r.out);
    char *text = slurp(json);
    json_doc d;
    json_doc_parse(&d, text);
    yaml_node_t *cases = json_member(&d, json_root(&d), "cases");
    int saw_fail = 0;
    for (size_t i = 0; i < json_length(cases); i++) {
        yaml_node_t *c = json_element(&d, cases, i);
        if (strcmp(json_text(&d, c, "status"), "fail") != 0)
            continue;
        saw_fail = 1;
        ck_assert_str_eq(json_text(&d, c, "metric"), "bits");
        ck_assert_msg(strstr(json_text(&d, c, "message"), "pad columns"), "message: %s", json_text(&d, c, "message"));
        ck_assert_msg(atof(json_text(&d, c, "error")) > 0, "a failed check with no error count");
    }
    ck_assert(saw_fail);
    json_doc_free(&d);
    free(text);
    free(json);
    sy_process_result_free(&r);
    sy_scratch_remove(dir);
}
END_TEST

START_TEST(command_usage_and_backend_errors_have_their_exit_codes)
{
    sy_process_result r;
    const char *no_backend[] = {"conformance", "--backend", "nosuch", "--quick", NULL};
    run_command(no_backend, 3, &r);
    ck_assert_msg(strstr(r.err, "backend 'nosuch' was not found"), "stderr: %s", r.err);
    sy_process_result_free(&r);
    const char *no_plugin[] = {"conformance", "--plugin", "nosuch", NULL};
    run_command(no_plugin, 2, &r);
    ck_assert_msg(strstr(r.err, "no plugin named 'nosuch' for backend cpu") && strstr(r.err, "attn_paged"),
                  "stderr: %s", r.err);
    sy_process_result_free(&r);
    const char *bad_option[] = {"conformance", "--bogus", NULL};
    run_command(bad_option, 2, &r);
    ck_assert_msg(strstr(r.err, "unknown option '--bogus'"), "stderr: %s", r.err);
    sy_process_result_free(&r);
    const char *bad_seed[] = {"conformance", "--seed", "twelve", NULL};
    run_command(bad_seed, 2, &r);
    ck_assert_msg(strstr(r.err, "--seed 'twelve'"), "stderr: %s", r.err);
    sy_process_result_free(&r);
    const char *missing_value[] = {"conformance", "--json", NULL};
    run_command(missing_value, 2, &r);
    sy_process_result_free(&r);
    const char *help[] = {"conformance", "--help", NULL};
    run_command(help, 0, &r);
    ck_assert_msg(strstr(r.out, "usage: switchyard conformance") && strstr(r.out, "--quick"), "help:\n%s", r.out);
    sy_process_result_free(&r);
}
END_TEST

START_TEST(command_lists_the_cases_without_running_them)
{
    const char *args[] = {"conformance", "--list", "--case", "decode_paged/5d/fp8", NULL};
    sy_process_result r;
    run_command(args, 0, &r);
    ck_assert_msg(strstr(r.out, "LIST  attn_paged") &&
                      strstr(r.out, "attention.decode_paged/5d/fp8/qbf16/P128/Hq64Hkv8D64/B2/ctx16385/window128/sinks/splits3") &&
                      !strstr(r.out, "PASS") && !strstr(r.out, "kv_layout.") && strstr(r.out, "cases\n"),
                  "output:\n%s", r.out);
    sy_process_result_free(&r);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {
        an_element_the_reference_leaves_unwritten_fails_the_case,
        cpu_plugins_conform_to_themselves,
        attention_that_drops_sinks_fails_its_sinks_cases,
        attention_with_a_window_one_key_too_wide_fails_every_window_case,
        kv_layout_with_a_wrong_offset_fails_every_write,
        norm_that_forgets_the_pad_zeros_fails_its_padded_cases,
        cases_beyond_the_caps_are_not_supported_never_passed,
        attention_rounding_q_to_bf16_passes,
        attention_with_gpu_precision_and_other_sum_order_passes,
        moe_with_other_sum_order_and_bf16_activations_passes,
        linear_rounding_x_to_bf16_passes,
        a_seed_reproduces_the_inputs_of_a_case,
        command_passes_and_writes_the_json_report_atomically,
        command_exits_one_on_a_failed_case_and_names_it,
        command_usage_and_backend_errors_have_their_exit_codes,
        command_lists_the_cases_without_running_them,
    };
    return sy_fixture_run_tests("conformance", tests, sizeof tests / sizeof tests[0]);
}
