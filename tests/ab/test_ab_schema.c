/* The JSON report validates against docs/ab-report.schema.json, and the check has teeth: reports
 * broken on purpose are rejected. Where python3 has jsonschema, it validates the same reports. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab_run.h"
#include "fixture_support.h"
#include "schema_check.h"

static char *schema_path(void)
{
    const char *src = getenv("SY_SOURCE_DIR");
    ck_assert_msg(src && *src, "SY_SOURCE_DIR is not set (run the suite through ctest)");
    return sy_fixture_printf("%s/docs/ab-report.schema.json", src);
}

static size_t validate(const char *report, char *errors, size_t len)
{
    char *path = schema_path();
    char *schema_text = ab_slurp(path);
    ck_assert_msg(schema_text != NULL, "cannot read %s", path);
    json_doc schema, doc;
    json_doc_parse(&schema, schema_text);
    json_doc_parse(&doc, report);
    size_t n = schema_check(&schema, &doc, errors, len);
    json_doc_free(&schema);
    json_doc_free(&doc);
    free(schema_text);
    free(path);
    return n;
}

/* jsonschema's own verdict on the file, or -1 when python3 has no jsonschema. */
static int python_jsonschema(const char *report_path)
{
    if (system("python3 -c 'import jsonschema' >/dev/null 2>&1") != 0)
        return -1;
    char *path = schema_path();
    char *cmd = sy_fixture_printf("python3 -c 'import json, sys, jsonschema; s = json.load(open(sys.argv[1])); "
                                  "jsonschema.Draft202012Validator.check_schema(s); "
                                  "jsonschema.validate(json.load(open(sys.argv[2])), s, "
                                  "cls=jsonschema.Draft202012Validator)' '%s' '%s'",
                                  path, report_path);
    int rc = system(cmd);
    free(cmd);
    free(path);
    return rc == 0;
}

static void expect_valid(const char *const *extra, int exit_code)
{
    ab_result r;
    ab_run(extra, &r);
    ab_expect_exit(&r, exit_code);
    ck_assert(r.json != NULL);
    char errors[4096];
    size_t n = validate(r.json, errors, sizeof errors);
    ck_assert_msg(n == 0, "%zu schema problems:\n%s", n, errors);
    int py = python_jsonschema(r.json_path);
    if (py < 0)
        fprintf(stderr, "note: python3 jsonschema is not installed; the built-in validator alone checked the report\n");
    else
        ck_assert_msg(py == 1, "python3 jsonschema rejects %s", r.json_path);
    ab_result_free(&r);
}

START_TEST(report_with_timing_is_valid)
{
    const char *extra[] = {"--rounds", "3", NULL};
    expect_valid(extra, 0);
}
END_TEST

START_TEST(report_with_differences_is_valid)
{
    const char *extra[] = {"--rounds", "0", "--set-b", "attention.plugin=attn_drop_sinks", NULL};
    expect_valid(extra, 1);
}
END_TEST

START_TEST(report_across_kv_dtypes_is_valid)
{
    const char *extra[] = {"--rounds", "0", "--set-b", "kv_cache.dtype=fp8_e4m3", "--set-b", "kv_cache.k_scale=unit",
                           "--set-b", "kv_cache.v_scale=unit", "--set-b", "kv_cache.layout=vectorized_5d", NULL};
    expect_valid(extra, 0);
}
END_TEST

START_TEST(report_after_synthetic_context_is_valid)
{
    const char *extra[] = {"--rounds", "3", "--set", "workload.context=synthetic", "--set-b",
                           "kv_cache.layout=vectorized_5d", NULL};
    expect_valid(extra, 0);
}
END_TEST

/* The reports committed under bench/results/ (other machines, older builds of format 1) stay valid:
 * the schema may gain optional members, never a new required one. */
START_TEST(committed_reports_stay_valid)
{
    const char *src = getenv("SY_SOURCE_DIR");
    char *folder = sy_fixture_printf("%s/bench/results", src);
    DIR *d = opendir(folder);
    ck_assert_msg(d != NULL, "cannot open %s", folder);
    int checked = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "ab-", 3) != 0 || n < 5 || strcmp(e->d_name + n - 5, ".json") != 0)
            continue;
        char *path = sy_fixture_printf("%s/%s", folder, e->d_name);
        char *text = ab_slurp(path);
        ck_assert_msg(text != NULL, "cannot read %s", path);
        char errors[4096];
        size_t problems = validate(text, errors, sizeof errors);
        ck_assert_msg(problems == 0, "%s: %zu schema problems:\n%s", path, problems, errors);
        free(text);
        free(path);
        checked++;
    }
    closedir(d);
    ck_assert_msg(checked > 0, "no ab-*.json report under %s", folder);
    free(folder);
}
END_TEST

static char *replace_first(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    ck_assert_msg(at != NULL, "the report has no \"%s\" to break", from);
    size_t head = (size_t)(at - text);
    return sy_fixture_printf("%.*s%s%s", (int)head, text, to, at + strlen(from));
}

START_TEST(broken_reports_are_rejected)
{
    ab_result r;
    const char *extra[] = {"--rounds", "3", NULL};
    ab_run(extra, &r);
    ab_expect_exit(&r, 0);
    static const char *const breaks[][3] = {
        {"\"report\": \"ab\"", "\"report\": \"xy\"", "expected the constant"},
        {"\"bit_exact\": true", "\"bit_exact\": \"yes\"", "expected boolean, got string"},
        {"\"rounds\": 3", "\"rounds\": 2", "below the minimum 3"},
        {"\"rows_compared\": ", "\"rows_counted\": ", "missing required member \"rows_compared\""},
        {"\"format\": 1,", "\"format\": 1, \"extra\": 0,", "member \"extra\" is not in the schema"},
        {"\"verdict\": \"", "\"verdict\": \"maybe_", "is not one of the enum values"},
        {"\"timing\": {", "\"timing\": [{", "not one of the allowed types"},
    };
    for (size_t i = 0; i < sizeof breaks / sizeof breaks[0]; i++) {
        char *bad = replace_first(r.json, breaks[i][0], breaks[i][1]);
        if (i == 6) { /* keep it parseable: close the array after the timing object */
            char *fixed = replace_first(bad, "\n  },\n  \"result\"", "\n  }],\n  \"result\"");
            free(bad);
            bad = fixed;
        }
        char errors[4096];
        size_t n = validate(bad, errors, sizeof errors);
        ck_assert_msg(n > 0 && strstr(errors, breaks[i][2]), "break %zu: %zu problems, expected \"%s\":\n%s", i, n,
                      breaks[i][2], errors);
        free(bad);
    }
    ab_result_free(&r);
}
END_TEST

int main(void)
{
    ab_model_seed();
    const TTest *tests[] = {report_with_timing_is_valid, report_with_differences_is_valid,
                            report_across_kv_dtypes_is_valid, report_after_synthetic_context_is_valid,
                            committed_reports_stay_valid, broken_reports_are_rejected};
    return sy_fixture_run_tests("ab_schema", tests, sizeof tests / sizeof tests[0]);
}
