/* Search order: plugin_paths first, then SWITCHYARD_PLUGIN_PATH, then the plugins folder beside
 * libswitchyard; empty elements of the variable never mean the current directory, and the current
 * directory is never searched implicitly. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture_support.h"
#include "switchyard/switchyard.h"

typedef struct search_setup {
    char *scratch;
    char *option_dir, *env_dir1, *env_dir2, *cwd_dir, *default_dir;
    char *old_cwd;
} search_setup;

static char *make_dir(const char *scratch, const char *name)
{
    char *dir = sy_fixture_printf("%s/%s", scratch, name);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    ck_assert_int_eq(chmod(dir, 0755), 0);
    return dir;
}

/* Each folder holds a different plugin; the option folder and the first environment folder hold
 * the same (kind, name, backend) too, so precedence is visible in which one loads. The current
 * directory holds a plugin that must never appear. */
static void setup_search(search_setup *t)
{
    t->scratch = sy_scratch_dir();
    t->option_dir = make_dir(t->scratch, "option");
    t->env_dir1 = make_dir(t->scratch, "env1");
    t->env_dir2 = make_dir(t->scratch, "env2");
    t->cwd_dir = make_dir(t->scratch, "cwd");
    free(sy_scratch_copy("valid_norm", t->option_dir, NULL, 0644));
    free(sy_scratch_copy("duplicate_b", t->option_dir, NULL, 0644));
    free(sy_scratch_copy("valid_rope", t->env_dir1, NULL, 0644));
    free(sy_scratch_copy("duplicate_a", t->env_dir1, NULL, 0644));
    free(sy_scratch_copy("valid_moe", t->env_dir2, NULL, 0644));
    free(sy_scratch_copy("valid_linear", t->cwd_dir, NULL, 0644));
    char *plugins = sy_fixture_printf("%s/lib/switchyard/plugins", sy_fixture_build_dir());
    t->default_dir = sy_fixture_realpath(plugins);
    free(plugins);
    t->old_cwd = getcwd(NULL, 0);
    ck_assert_int_eq(chdir(t->cwd_dir), 0);
}

static void teardown_search(search_setup *t)
{
    ck_assert_int_eq(chdir(t->old_cwd), 0);
    unsetenv("SWITCHYARD_PLUGIN_PATH");
    free(t->old_cwd);
    free(t->option_dir);
    free(t->env_dir1);
    free(t->env_dir2);
    free(t->cwd_dir);
    free(t->default_dir);
    sy_scratch_remove(t->scratch);
}

static sy_registry *open_with(const search_setup *t, int skip_environment, int skip_default_dir)
{
    const char *dirs[] = {t->option_dir};
    sy_registry_options o = {0};
    o.struct_size = sizeof o;
    o.plugin_paths = dirs;
    o.n_plugin_paths = 1;
    o.skip_environment = (uint32_t)skip_environment;
    o.skip_default_dir = (uint32_t)skip_default_dir;
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    ck_assert_msg(sy_registry_open(&o, &reg, &err) == SY_OK, "%s", err.msg);
    return reg;
}

static int under(const char *file, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(file, dir, n) == 0 && file[n] == '/';
}

/* Index of the search folder holding `file`, or -1. */
static long folder_of(const sy_registry *reg, const char *file)
{
    for (size_t i = 0; i < sy_registry_search_dir_count(reg); i++)
        if (under(file, sy_registry_search_dir(reg, i)))
            return (long)i;
    return -1;
}

static void assert_no_current_directory(const search_setup *t, const sy_registry *reg)
{
    for (size_t i = 0; i < sy_registry_search_dir_count(reg); i++)
        ck_assert_msg(strcmp(sy_registry_search_dir(reg, i), t->cwd_dir) != 0, "the current directory was searched");
    for (size_t i = 0; i < sy_registry_count(reg); i++)
        ck_assert_msg(!under(sy_registry_get(reg, i)->file, t->cwd_dir), "loaded %s from the current directory",
                      sy_registry_get(reg, i)->file);
    ck_assert_ptr_null(sy_registry_find(reg, SY_KIND_LINEAR, "fixture_valid_linear", "cpu"));
}

static void assert_search_dirs(const sy_registry *reg, const char *const *want, size_t n)
{
    ck_assert_uint_eq(sy_registry_search_dir_count(reg), n);
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(sy_registry_search_dir(reg, i), want[i]);
}

START_TEST(option_then_environment_then_default)
{
    search_setup t;
    setup_search(&t);
    /* Leading, doubled and trailing separators: three empty elements. */
    char *env = sy_fixture_printf(":%s::%s:", t.env_dir1, t.env_dir2);
    ck_assert_int_eq(setenv("SWITCHYARD_PLUGIN_PATH", env, 1), 0);
    sy_registry *reg = open_with(&t, 0, 0);

    const char *want[] = {t.option_dir, t.env_dir1, t.env_dir2, t.default_dir};
    assert_search_dirs(reg, want, 4);

    /* Entries come folder by folder, in search order. */
    long last = 0;
    for (size_t i = 0; i < sy_registry_count(reg); i++) {
        long folder = folder_of(reg, sy_registry_get(reg, i)->file);
        ck_assert_msg(folder >= last, "%s listed after a later folder's library", sy_registry_get(reg, i)->file);
        last = folder;
    }
    ck_assert_ptr_nonnull(sy_registry_find(reg, SY_KIND_NORM, "fixture_valid_norm", "cpu"));
    ck_assert_ptr_nonnull(sy_registry_find(reg, SY_KIND_ROPE, "fixture_valid_rope", "cpu"));
    ck_assert_ptr_nonnull(sy_registry_find(reg, SY_KIND_MOE, "fixture_valid_moe", "cpu"));
    const sy_registry_entry *cpu = sy_registry_find_backend(reg, "cpu");
    ck_assert_msg(cpu && under(cpu->file, t.default_dir), "the cpu backend must come from %s", t.default_dir);

    /* The option folder's copy wins although its file name sorts after the other one. */
    const sy_registry_entry *dup = sy_registry_find(reg, SY_KIND_NORM, "fixture_duplicate", "cpu");
    ck_assert_ptr_nonnull(dup);
    ck_assert_msg(under(dup->file, t.option_dir), "duplicate resolved to %s", dup->file);
    int saw_loser = 0;
    for (size_t i = 0; i < sy_registry_count(reg); i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (e->stage == SY_STAGE_DUPLICATE) {
            ck_assert_msg(under(e->file, t.env_dir1) && strstr(e->reason, dup->file), "%s: %s", e->file, e->reason);
            saw_loser = 1;
        }
    }
    ck_assert(saw_loser);
    assert_no_current_directory(&t, reg);
    sy_registry_close(reg);
    free(env);
    teardown_search(&t);
}
END_TEST

/* A folder named twice is searched once, at its first position. */
START_TEST(repeated_folder_searched_once)
{
    search_setup t;
    setup_search(&t);
    char *env = sy_fixture_printf("%s:%s", t.env_dir1, t.option_dir);
    ck_assert_int_eq(setenv("SWITCHYARD_PLUGIN_PATH", env, 1), 0);
    sy_registry *reg = open_with(&t, 0, 1);
    const char *want[] = {t.option_dir, t.env_dir1};
    assert_search_dirs(reg, want, 2);
    sy_registry_close(reg);
    free(env);
    teardown_search(&t);
}
END_TEST

START_TEST(only_empty_elements_add_nothing)
{
    search_setup t;
    setup_search(&t);
    const char *want[] = {t.option_dir};
    const char *values[] = {"::", ""};
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(setenv("SWITCHYARD_PLUGIN_PATH", values[i], 1), 0);
        sy_registry *reg = open_with(&t, 0, 1);
        assert_search_dirs(reg, want, 1);
        assert_no_current_directory(&t, reg);
        sy_registry_close(reg);
    }
    /* Nor does an empty --plugin-path. */
    const char *dirs[] = {"", t.option_dir};
    sy_registry *reg = sy_fixture_registry(dirs, 2, 0);
    assert_search_dirs(reg, want, 1);
    assert_no_current_directory(&t, reg);
    sy_registry_close(reg);
    teardown_search(&t);
}
END_TEST

START_TEST(skip_environment_and_default)
{
    search_setup t;
    setup_search(&t);
    ck_assert_int_eq(setenv("SWITCHYARD_PLUGIN_PATH", t.env_dir1, 1), 0);
    sy_registry *reg = open_with(&t, 1, 1);
    const char *want[] = {t.option_dir};
    assert_search_dirs(reg, want, 1);
    ck_assert_ptr_null(sy_registry_find(reg, SY_KIND_ROPE, "fixture_valid_rope", "cpu"));
    ck_assert_ptr_null(sy_registry_find_backend(reg, "cpu"));
    sy_registry_close(reg);
    teardown_search(&t);
}
END_TEST

/* NULL options: the environment and the default folder, still never the current directory. */
START_TEST(default_options)
{
    search_setup t;
    setup_search(&t);
    ck_assert_int_eq(setenv("SWITCHYARD_PLUGIN_PATH", t.env_dir2, 1), 0);
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    ck_assert_msg(sy_registry_open(NULL, &reg, &err) == SY_OK, "%s", err.msg);
    const char *want[] = {t.env_dir2, t.default_dir};
    assert_search_dirs(reg, want, 2);
    assert_no_current_directory(&t, reg);
    sy_registry_close(reg);
    teardown_search(&t);
}
END_TEST

/* Empty and missing folders are listed as searched and contribute nothing. */
START_TEST(empty_and_missing_folders)
{
    char *scratch = sy_scratch_dir();
    char *empty = make_dir(scratch, "empty");
    char *missing = sy_fixture_printf("%s/missing", scratch);
    const char *dirs[] = {empty, missing};
    sy_registry *reg = sy_fixture_registry(dirs, 2, 0);
    assert_search_dirs(reg, dirs, 2);
    ck_assert_uint_eq(sy_registry_count(reg), 0);
    sy_registry_close(reg);
    free(missing);
    free(empty);
    sy_scratch_remove(scratch);
}
END_TEST

START_TEST(options_struct_too_small)
{
    sy_registry_options o = {0};
    o.struct_size = 8;
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    ck_assert_int_eq(sy_registry_open(&o, &reg, &err), SY_E_INVALID);
    ck_assert_ptr_null(reg);
    ck_assert_msg(strstr(err.msg, "sy_registry_options.struct_size 8"), "'%s'", err.msg);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        option_then_environment_then_default,
        repeated_folder_searched_once,
        only_empty_elements_add_nothing,
        skip_environment_and_default,
        default_options,
        empty_and_missing_folders,
        options_struct_too_small,
    };
    return sy_fixture_run_tests("loader_search_order", tests, sizeof tests / sizeof tests[0]);
}
