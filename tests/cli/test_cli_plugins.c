/* `switchyard plugins [--json]` over a folder of planted fixtures: the cpu backend with its
 * status, fixture backends usable and unusable, good plugins loaded, and each bad library on one
 * line naming the file, the stage and the reason. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fixture_support.h"
#include "json_doc.h"
#include "run_process.h"
#include "switchyard/switchyard.h"

typedef struct planted {
    char *dir;
    char *cpu_file;
    char *default_dir;
} planted;

static const char *const good_cases[] = {"valid_norm", "valid_attention", "no_strings", "backend_usable",
                                         "backend_unusable"};
enum { N_GOOD = sizeof good_cases / sizeof good_cases[0] };

/* Every rejection the loader knows, with the stage and a piece of the reason the user must see. */
static const struct {
    const char *fixture_case;
    const char *stage;
    const char *reason_part;
} bad_cases[] = {
    {"not_shared_object", "open", "dlopen failed: "},
    {"unresolved_function", "open", "undefined symbol: sy_fixture_function_defined_nowhere"},
    {"entry_hidden", "symbol", "undefined symbol: sy_plugin_entry"},
    {"both_entries", "symbol", "exports both"},
    {"abi_zero", "abi", "abi_major is 0"},
    {"abi_other_major", "abi", "built for ABI major 2, this host speaks major 1"},
    {"abi_newer_minor", "abi", "newer than this host's"},
    {"entry_null", "abi", "returned no descriptor"},
    {"struct_too_small", "descriptor", "is smaller than the v1 descriptor"},
    {"empty_name", "descriptor", "empty name"},
    {"empty_backend", "descriptor", "has an empty backend"},
    {"unknown_kind", "descriptor", "unknown kind 42"},
    {"missing_caps", "descriptor", "has no caps"},
    {"missing_ops", "descriptor", "has no ops"},
    {"null_op", "descriptor", "missing op prepared_bytes"},
    {"backend_missing_fn", "descriptor", "missing function event_elapsed_ms"},
};
enum { N_BAD = sizeof bad_cases / sizeof bad_cases[0] };

static void plant(planted *p, int with_all_bad)
{
    p->dir = sy_scratch_dir();
    for (size_t i = 0; i < N_GOOD; i++)
        free(sy_scratch_copy(good_cases[i], p->dir, NULL, 0644));
    for (size_t i = 0; i < (with_all_bad ? N_BAD : 1); i++)
        free(sy_scratch_copy(with_all_bad ? bad_cases[i].fixture_case : "abi_other_major", p->dir, NULL, 0644));
    char *plugins = sy_fixture_printf("%s/lib/switchyard/plugins", sy_fixture_build_dir());
    p->default_dir = sy_fixture_realpath(plugins);
    p->cpu_file = sy_fixture_printf("%s/libsy_backend_cpu.so", p->default_dir);
    free(plugins);
}

static void unplant(planted *p)
{
    free(p->cpu_file);
    free(p->default_dir);
    sy_scratch_remove(p->dir);
}

static char *planted_file(const planted *p, const char *fixture_case)
{
    return sy_fixture_printf("%s/lib%s.so", p->dir, fixture_case);
}

static void run_plugins(const planted *p, int json, const char *extra, sy_process_result *r)
{
    const char *args[6];
    size_t n = 0;
    args[n++] = "plugins";
    if (json)
        args[n++] = "--json";
    args[n++] = "--plugin-path";
    args[n++] = p->dir;
    if (extra)
        args[n++] = extra;
    args[n] = NULL;
    sy_run_switchyard(args, NULL, r);
    ck_assert_msg(r->exit_code == 0, "switchyard plugins exited %d (signal %d); stderr:\n%s", r->exit_code,
                  r->term_signal, r->err);
}

/* The whole line of `text` that contains `needle`, or NULL. */
static char *line_with(const char *text, const char *needle)
{
    const char *hit = strstr(text, needle);
    if (!hit)
        return NULL;
    const char *start = hit;
    while (start > text && start[-1] != '\n')
        start--;
    const char *end = strchr(hit, '\n');
    return strndup(start, end ? (size_t)(end - start) : strlen(start));
}

static void assert_line(const char *text, const char *needle, const char *part)
{
    char *line = line_with(text, needle);
    ck_assert_msg(line != NULL, "no line with '%s' in:\n%s", needle, text);
    ck_assert_msg(strstr(line, part), "line '%s' lacks '%s'", line, part);
    free(line);
}

START_TEST(text_lists_backends_plugins_and_the_planted_bad_one)
{
    planted p;
    plant(&p, 0);
    sy_process_result r;
    run_plugins(&p, 0, NULL, &r);
    char *search = sy_fixture_printf("search path:\n  %s\n  %s\n", p.dir, p.default_dir);
    ck_assert_msg(strstr(r.out, search), "search path must list %s then %s:\n%s", p.dir, p.default_dir, r.out);
    assert_line(r.out, "  cpu ", "usable (score 1)");
    char *cpu_file_line = sy_fixture_printf("    file: %s\n", p.cpu_file);
    ck_assert_msg(strstr(r.out, cpu_file_line), "the cpu backend's file is not listed:\n%s", r.out);
    assert_line(r.out, "fixture_backend_usable", "usable (score 7)");
    assert_line(r.out, "fixture_backend_unusable", "unusable here: no fixture device is attached");
    assert_line(r.out, "fixture_valid_norm", "norm");
    assert_line(r.out, "fixture_valid_norm", "cpu");
    assert_line(r.out, "fixture_valid_norm", "0.0.1");
    assert_line(r.out, "fixture_valid_norm", "loaded");
    assert_line(r.out, "fixture_valid_attention", "attention");
    assert_line(r.out, "fixture_valid_attention", "loaded");
    assert_line(r.out, "fixture_no_strings", "loaded");
    ck_assert_msg(!strstr(r.out, "(null)"), "a NULL version reached printf:\n%s", r.out);
    assert_line(r.out, "caps: features=rmsnorm,fused_add", "dtypes=f32");
    assert_line(r.out, "caps: layouts=nhd", "decode_paged prefill_linear");
    char *bad = planted_file(&p, "abi_other_major");
    char *head = sy_fixture_printf("\nrejected:\n  %s: stage abi: ", bad);
    ck_assert_msg(strstr(r.out, head), "the planted bad plugin is not reported as '%s...':\n%s", head, r.out);
    assert_line(r.out, head + strlen("\nrejected:\n"), "built for ABI major 2, this host speaks major 1");
    free(head);
    free(bad);
    free(cpu_file_line);
    free(search);
    sy_process_result_free(&r);
    unplant(&p);
}
END_TEST

START_TEST(text_reports_every_rejection_on_one_line)
{
    planted p;
    plant(&p, 1);
    sy_process_result r;
    run_plugins(&p, 0, NULL, &r);
    for (size_t i = 0; i < N_BAD; i++) {
        char *file = planted_file(&p, bad_cases[i].fixture_case);
        char *head = sy_fixture_printf("  %s: stage %s: ", file, bad_cases[i].stage);
        assert_line(r.out, head, bad_cases[i].reason_part);
        free(head);
        free(file);
    }
    /* The good ones are still there. */
    assert_line(r.out, "fixture_valid_norm", "loaded");
    assert_line(r.out, "fixture_valid_attention", "loaded");
    assert_line(r.out, "fixture_backend_usable", "usable (score 7)");
    assert_line(r.out, "  cpu ", "usable (score 1)");
    sy_process_result_free(&r);
    unplant(&p);
}
END_TEST

static yaml_node_t *entry_for(json_doc *d, yaml_node_t *entries, const char *file)
{
    for (size_t i = 0; i < json_length(entries); i++) {
        yaml_node_t *e = json_element(d, entries, i);
        const char *f = json_text(d, e, "file");
        if (f && strcmp(f, file) == 0)
            return e;
    }
    ck_abort_msg("no JSON entry for %s", file);
    return NULL;
}

static void assert_member(json_doc *d, yaml_node_t *node, const char *key, const char *want)
{
    const char *got = json_text(d, node, key);
    ck_assert_msg(got != NULL, "JSON member '%s' is missing", key);
    ck_assert_msg(strcmp(got, want) == 0, "JSON member '%s' is '%s', expected '%s'", key, got, want);
}

START_TEST(json_is_valid_with_the_expected_fields)
{
    planted p;
    plant(&p, 1);
    sy_process_result r;
    run_plugins(&p, 1, NULL, &r);
    json_doc d;
    json_doc_parse(&d, r.out);
    yaml_node_t *root = json_root(&d);
    ck_assert_int_eq(root->type, YAML_MAPPING_NODE);
    assert_member(&d, root, "version", sy_version());
    yaml_node_t *abi = json_member(&d, root, "abi");
    ck_assert_uint_eq(json_length(abi), 2);
    char major[16], minor[16];
    snprintf(major, sizeof major, "%u", SY_ABI_MAJOR);
    snprintf(minor, sizeof minor, "%u", SY_ABI_MINOR);
    ck_assert_str_eq((const char *)json_element(&d, abi, 0)->data.scalar.value, major);
    ck_assert_str_eq((const char *)json_element(&d, abi, 1)->data.scalar.value, minor);
    yaml_node_t *search = json_member(&d, root, "search_path");
    ck_assert_uint_eq(json_length(search), 2);
    ck_assert_str_eq((const char *)json_element(&d, search, 0)->data.scalar.value, p.dir);
    ck_assert_str_eq((const char *)json_element(&d, search, 1)->data.scalar.value, p.default_dir);

    yaml_node_t *entries = json_member(&d, root, "entries");
    ck_assert_uint_ge(json_length(entries), N_GOOD + N_BAD + 1);
    for (size_t i = 0; i < json_length(entries); i++) {
        yaml_node_t *e = json_element(&d, entries, i);
        ck_assert_msg(json_text(&d, e, "type") && json_text(&d, e, "file") && json_text(&d, e, "status"),
                      "entry %zu lacks type, file or status", i);
    }

    yaml_node_t *cpu = entry_for(&d, entries, p.cpu_file);
    assert_member(&d, cpu, "type", "backend");
    assert_member(&d, cpu, "status", "loaded");
    assert_member(&d, cpu, "name", "cpu");
    assert_member(&d, cpu, "usable", "true");
    assert_member(&d, cpu, "probe_score", "1");
    ck_assert_ptr_null(json_member(&d, cpu, "stage"));

    char *file = planted_file(&p, "backend_unusable");
    yaml_node_t *unusable = entry_for(&d, entries, file);
    assert_member(&d, unusable, "status", "loaded");
    assert_member(&d, unusable, "usable", "false");
    assert_member(&d, unusable, "probe_score", "0");
    assert_member(&d, unusable, "probe_reason", "no fixture device is attached");
    free(file);

    file = planted_file(&p, "valid_norm");
    yaml_node_t *norm = entry_for(&d, entries, file);
    assert_member(&d, norm, "type", "plugin");
    assert_member(&d, norm, "status", "loaded");
    assert_member(&d, norm, "kind", "norm");
    assert_member(&d, norm, "name", "fixture_valid_norm");
    assert_member(&d, norm, "backend", "cpu");
    assert_member(&d, norm, "version", "0.0.1");
    assert_member(&d, norm, "description", "loader test fixture fixture_valid_norm");
    assert_member(&d, norm, "rank", "3");
    assert_member(&d, norm, "caps", "features=rmsnorm,fused_add dtypes=f32");
    ck_assert_ptr_null(json_member(&d, norm, "reason"));
    free(file);

    file = planted_file(&p, "no_strings");
    yaml_node_t *no_strings = entry_for(&d, entries, file);
    assert_member(&d, no_strings, "status", "loaded");
    assert_member(&d, no_strings, "version", "null");
    assert_member(&d, no_strings, "description", "null");
    free(file);

    for (size_t i = 0; i < N_BAD; i++) {
        file = planted_file(&p, bad_cases[i].fixture_case);
        yaml_node_t *bad = entry_for(&d, entries, file);
        assert_member(&d, bad, "status", "rejected");
        assert_member(&d, bad, "stage", bad_cases[i].stage);
        const char *reason = json_text(&d, bad, "reason");
        ck_assert_msg(reason && strstr(reason, bad_cases[i].reason_part), "%s: reason '%s' lacks '%s'", file,
                      reason ? reason : "(missing)", bad_cases[i].reason_part);
        ck_assert_ptr_null(json_member(&d, bad, "name"));
        free(file);
    }
    json_doc_free(&d);
    sy_process_result_free(&r);
    unplant(&p);
}
END_TEST

/* A file name that is not UTF-8 (another encoding, or bytes) must not make the JSON unreadable:
 * the byte is written as U+FFFD. */
START_TEST(json_stays_utf8_for_a_file_name_that_is_not)
{
    planted p;
    plant(&p, 0);
    char *odd = sy_fixture_printf("%s/lib\xff\xc3(.so", p.dir);
    FILE *f = fopen(odd, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a library\n", f);
    fclose(f);
    ck_assert_int_eq(chmod(odd, 0644), 0);
    sy_process_result r;
    run_plugins(&p, 1, NULL, &r);
    json_doc d;
    json_doc_parse(&d, r.out);
    ck_assert_msg(strstr(r.out, "lib\\ufffd\\ufffd(.so") != NULL, "the odd name is not in the listing:\n%s", r.out);
    json_doc_free(&d);
    sy_process_result_free(&r);
    free(odd);
    unplant(&p);
}
END_TEST

START_TEST(allow_insecure_plugins_option)
{
    planted p;
    plant(&p, 0);
    ck_assert_int_eq(chmod(p.dir, 0777), 0);
    char *file = planted_file(&p, "valid_norm");
    char *head = sy_fixture_printf("  %s: stage permissions: ", file);
    sy_process_result r;
    run_plugins(&p, 0, NULL, &r);
    assert_line(r.out, head, "is writable by others (mode 0777)");
    sy_process_result_free(&r);
    run_plugins(&p, 0, "--allow-insecure-plugins", &r);
    ck_assert_msg(!strstr(r.out, "stage permissions"), "--allow-insecure-plugins was ignored:\n%s", r.out);
    assert_line(r.out, "fixture_valid_norm", "loaded");
    sy_process_result_free(&r);
    free(head);
    free(file);
    unplant(&p);
}
END_TEST

START_TEST(environment_folder_comes_after_the_option)
{
    planted p;
    plant(&p, 0);
    char *env_dir = sy_scratch_dir();
    char *env = sy_fixture_printf("SWITCHYARD_PLUGIN_PATH=:%s:", env_dir);
    const char *envs[] = {env, NULL};
    /* The --plugin-path=DIR spelling. */
    char *option = sy_fixture_printf("--plugin-path=%s", p.dir);
    const char *args[] = {"plugins", option, NULL};
    sy_process_result r;
    sy_run_switchyard(args, envs, &r);
    ck_assert_msg(r.exit_code == 0, "exit %d (signal %d); stderr:\n%s", r.exit_code, r.term_signal, r.err);
    char *search = sy_fixture_printf("search path:\n  %s\n  %s\n  %s\n\n", p.dir, env_dir, p.default_dir);
    ck_assert_msg(strstr(r.out, search), "expected\n%s\nin:\n%s", search, r.out);
    sy_process_result_free(&r);
    free(search);
    free(option);
    free(env);
    sy_scratch_remove(env_dir);
    unplant(&p);
}
END_TEST

/* The config's plugin_path sits between --plugin-path and $SWITCHYARD_PLUGIN_PATH, its relative
 * entries taken from the config file's folder, not the current directory. A backend nobody
 * provides makes `config check` print the folders it searched, in order. */
START_TEST(config_plugin_path_between_option_and_environment)
{
    char *scratch = sy_scratch_dir();
    char *option_dir = sy_fixture_printf("%s/option", scratch), *config_dir = sy_fixture_printf("%s/from_config", scratch);
    char *env_dir = sy_fixture_printf("%s/environment", scratch);
    ck_assert_int_eq(mkdir(option_dir, 0755), 0);
    ck_assert_int_eq(mkdir(config_dir, 0755), 0);
    ck_assert_int_eq(mkdir(env_dir, 0755), 0);
    char *config = sy_scratch_write(scratch, "search.yaml", "backend: no_such_backend\nplugin_path: [from_config]\n", 0644);
    char *env = sy_fixture_printf("SWITCHYARD_PLUGIN_PATH=%s", env_dir);
    const char *envs[] = {env, NULL};
    const char *args[] = {"config", "check", config, "--plugin-path", option_dir, NULL};
    sy_process_result r;
    sy_run_switchyard(args, envs, &r);
    ck_assert_msg(r.exit_code == 1, "config check exited %d (signal %d), expected 1:\n%s%s", r.exit_code,
                  r.term_signal, r.out, r.err);
    char *plugins = sy_fixture_printf("%s/lib/switchyard/plugins", sy_fixture_build_dir());
    char *default_dir = sy_fixture_realpath(plugins);
    /* Which backends were found depends on the toolkits this build had (cuda, hip), so only the
     * error's start and the search list are pinned. */
    const char *head = "backend 'no_such_backend' is not loaded (found: cpu";
    char *want = sy_fixture_printf("; searched %s:%s:%s:%s)", option_dir, config_dir, env_dir, default_dir);
    const char *text = strstr(r.err, head) ? r.err : r.out;
    ck_assert_msg(strstr(text, head) && strstr(strstr(text, head), want), "expected '%s...%s' in:\n%s%s", head,
                  want, r.out, r.err);
    sy_process_result_free(&r);
    free(want);
    free(default_dir);
    free(plugins);
    free(env);
    free(config);
    free(env_dir);
    free(config_dir);
    free(option_dir);
    sy_scratch_remove(scratch);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        text_lists_backends_plugins_and_the_planted_bad_one,
        text_reports_every_rejection_on_one_line,
        json_is_valid_with_the_expected_fields,
        json_stays_utf8_for_a_file_name_that_is_not,
        allow_insecure_plugins_option,
        environment_folder_comes_after_the_option,
        config_plugin_path_between_option_and_environment,
    };
    return sy_fixture_run_tests("cli_plugins", tests, sizeof tests / sizeof tests[0]);
}
