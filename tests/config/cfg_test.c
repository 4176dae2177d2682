#include "cfg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sy_config *cfg_load(const char *name, const char *text, const sy_config_options *o, sy_diags *d)
{
    return sy_config_load_string(name, text, strlen(text), SY_SYNTAX_AUTO, o, d);
}

void print_diags(const sy_diags *d)
{
    for (size_t i = 0; i < d->n; i++) {
        char buf[2048];
        sy_diag_format(&d->items[i], buf, sizeof buf);
        fprintf(stderr, "  [%zu] %s\n", i, buf);
    }
}

void expect_count_at(const char *file, int line_no, const sy_diags *d, size_t n)
{
    if (d->n != n) {
        fprintf(stderr, "%s:%d: expected %zu diagnostics, got %zu:\n", file, line_no, n, d->n);
        print_diags(d);
    }
    ck_assert_uint_eq(d->n, n);
}

void expect_diag_at(const char *file, int line_no, const sy_diags *d, size_t i, int sev, const char *origin,
                    unsigned line, unsigned col, const char *msg)
{
    if (i >= d->n) {
        fprintf(stderr, "%s:%d: no diagnostic %zu:\n", file, line_no, i);
        print_diags(d);
        ck_abort_msg("missing diagnostic %zu", i);
    }
    const sy_diag *g = &d->items[i];
    int same = g->severity == sev && strcmp(g->origin, origin) == 0 && g->line == line && g->col == col &&
               strcmp(g->message, msg) == 0;
    if (!same) {
        char buf[2048];
        sy_diag_format(g, buf, sizeof buf);
        fprintf(stderr, "%s:%d: diagnostic %zu is\n    %s\nexpected\n    %s:%u:%u: [%d] %s\n", file, line_no, i, buf,
                origin, line, col, sev, msg);
        print_diags(d);
    }
    ck_assert_int_eq(g->severity, sev);
    ck_assert_str_eq(g->origin, origin);
    ck_assert_uint_eq(g->line, line);
    ck_assert_uint_eq(g->col, col);
    ck_assert_str_eq(g->message, msg);
}

sy_registry *fixture_registry(void)
{
    const char *dir = getenv("SY_CONFIG_FIXTURE_DIR");
    ck_assert_msg(dir != NULL, "SY_CONFIG_FIXTURE_DIR is not set (run through ctest)");
    sy_registry_options o = {0};
    o.struct_size = sizeof o;
    o.plugin_paths = &dir;
    o.n_plugin_paths = 1;
    o.skip_environment = 1;
    o.skip_default_dir = 1;
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    ck_assert_msg(sy_registry_open(&o, &reg, &err) == SY_OK, "%s", err.msg);
    for (size_t i = 0; i < sy_registry_count(reg); i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        ck_assert_msg(e->stage == SY_STAGE_NONE, "fixture %s rejected: %s", e->file, e->reason);
    }
    return reg;
}

const char *source_path(const char *relative, char *buf, size_t len)
{
    const char *src = getenv("SY_SOURCE_DIR");
    ck_assert_msg(src != NULL, "SY_SOURCE_DIR is not set (run through ctest)");
    snprintf(buf, len, "%s/%s", src, relative);
    return buf;
}

const char *temp_dir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/sy-config-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
    return buf;
}

void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

int run_suite(Suite *s)
{
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
