/* Every reason the loader refuses a library, one fixture each: the entry names the file, the
 * stage and the reason, and nothing from that file is usable. */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_support.h"
#include "switchyard/switchyard.h"

/* Open a registry over the fixture's own folder and check its single entry. */
static void expect_rejected(const char *fixture_case, int32_t stage, const char *reason_part)
{
    char *file = sy_fixture_file(fixture_case);
    sy_registry *reg = sy_fixture_case_registry(fixture_case);
    const sy_registry_entry *e = sy_fixture_entry(reg, file);
    ck_assert_str_eq(e->file, file);
    ck_assert_msg(e->stage == stage, "%s: stage %s, expected %s (reason: %s)", fixture_case, sy_stage_name(e->stage),
                  sy_stage_name(stage), e->reason);
    ck_assert_msg(strstr(e->reason, reason_part) != NULL, "%s: reason '%s' does not contain '%s'", fixture_case,
                  e->reason, reason_part);
    ck_assert_msg(strchr(e->reason, '\n') == NULL, "%s: reason is not one line: '%s'", fixture_case, e->reason);
    ck_assert_ptr_null(e->plugin);
    ck_assert_ptr_null(e->backend);
    sy_registry_close(reg);
    free(file);
}

START_TEST(not_a_shared_object)
{
    /* dlerror()'s own text must reach the user. */
    expect_rejected("not_shared_object", SY_STAGE_OPEN, "dlopen failed: ");
    expect_rejected("not_shared_object", SY_STAGE_OPEN, "invalid ELF header");
}
END_TEST

/* Every symbol is bound when the library is opened (RTLD_NOW): a library that calls a function
 * nothing defines is refused at open with dlerror()'s text, not when the call is first made. */
START_TEST(unresolved_function)
{
    expect_rejected("unresolved_function", SY_STAGE_OPEN, "dlopen failed: ");
    expect_rejected("unresolved_function", SY_STAGE_OPEN, "undefined symbol: sy_fixture_function_defined_nowhere");
}
END_TEST

START_TEST(no_entry_symbol)
{
    expect_rejected("entry_hidden", SY_STAGE_SYMBOL, "exports neither sy_plugin_entry nor sy_backend_entry");
    expect_rejected("entry_hidden", SY_STAGE_SYMBOL, "undefined symbol: sy_plugin_entry");
}
END_TEST

START_TEST(both_entry_symbols)
{
    expect_rejected("both_entries", SY_STAGE_SYMBOL,
                    "exports both sy_plugin_entry and sy_backend_entry; a library is either a plugin or a backend");
}
END_TEST

START_TEST(abi_major_zero)
{
    expect_rejected("abi_zero", SY_STAGE_ABI, "abi_major is 0");
}
END_TEST

START_TEST(abi_other_major)
{
    char want[128];
    snprintf(want, sizeof want, "built for ABI major %u, this host speaks major %u", SY_ABI_MAJOR + 1, SY_ABI_MAJOR);
    expect_rejected("abi_other_major", SY_STAGE_ABI, want);
}
END_TEST

START_TEST(abi_newer_minor)
{
    char want[128];
    snprintf(want, sizeof want, "built for ABI %u.%u, newer than this host's %u.%u", SY_ABI_MAJOR, SY_ABI_MINOR + 1,
             SY_ABI_MAJOR, SY_ABI_MINOR);
    expect_rejected("abi_newer_minor", SY_STAGE_ABI, want);
}
END_TEST

START_TEST(struct_size_too_small)
{
    char want[128];
    snprintf(want, sizeof want, "struct_size %zu is smaller than the v1 descriptor (%zu bytes)",
             offsetof(sy_plugin_desc, init), sizeof(sy_plugin_desc));
    expect_rejected("struct_too_small", SY_STAGE_DESCRIPTOR, want);
}
END_TEST

/* A zeroed header is an uninitialized descriptor, never an empty but acceptable one. */
START_TEST(struct_size_zero)
{
    expect_rejected("struct_size_zero", SY_STAGE_DESCRIPTOR, "struct_size is 0");
}
END_TEST

/* Names appear in configs and file names: [a-z0-9_]+ only. */
START_TEST(name_not_identifier)
{
    expect_rejected("name_not_identifier", SY_STAGE_DESCRIPTOR, "name 'Fixture-Name' is not of the form [a-z0-9_]+");
}
END_TEST

START_TEST(empty_name)
{
    expect_rejected("empty_name", SY_STAGE_DESCRIPTOR, "empty name");
}
END_TEST

START_TEST(empty_backend)
{
    expect_rejected("empty_backend", SY_STAGE_DESCRIPTOR, "plugin 'fixture_empty_backend' has an empty backend");
}
END_TEST

START_TEST(unknown_kind)
{
    expect_rejected("unknown_kind", SY_STAGE_DESCRIPTOR, "plugin 'fixture_unknown_kind' has unknown kind 42");
}
END_TEST

START_TEST(missing_caps)
{
    expect_rejected("missing_caps", SY_STAGE_DESCRIPTOR, "plugin 'fixture_missing_caps' has no caps");
}
END_TEST

START_TEST(missing_ops)
{
    expect_rejected("missing_ops", SY_STAGE_DESCRIPTOR, "plugin 'fixture_missing_ops' has no ops");
}
END_TEST

START_TEST(required_op_null)
{
    expect_rejected("null_op", SY_STAGE_DESCRIPTOR, "plugin 'fixture_null_op': missing op prepared_bytes");
}
END_TEST

/* A feature bit the claimed ABI minor does not define is not a capability to compose with. */
START_TEST(feature_bits_outside_the_claimed_abi)
{
    char *undefined = sy_fixture_printf("plugin 'fixture_undefined_feature': caps: features 0x80000003 holds bits "
                                        "ABI %d.%d does not define (0x80000000)",
                                        SY_ABI_MAJOR, SY_ABI_MINOR);
    expect_rejected("undefined_feature", SY_STAGE_DESCRIPTOR, undefined);
    free(undefined);
    expect_rejected("feature_newer_than_minor", SY_STAGE_DESCRIPTOR,
                    "plugin 'fixture_feature_newer_than_minor': caps: features 0x43 holds bits ABI 1.2 does not define "
                    "(0x40)");
    expect_rejected("linear_feature_newer_than_minor", SY_STAGE_DESCRIPTOR,
                    "plugin 'fixture_linear_feature_newer_than_minor': caps: features 0x1 holds bits ABI 1.3 does not "
                    "define (0x1)");
}
END_TEST

START_TEST(entry_returns_null)
{
    expect_rejected("entry_null", SY_STAGE_ABI, "sy_plugin_entry returned no descriptor for host ABI");
}
END_TEST

START_TEST(backend_missing_function)
{
    expect_rejected("backend_missing_fn", SY_STAGE_DESCRIPTOR,
                    "backend 'fixture_backend_missing_fn': missing function event_elapsed_ms");
}
END_TEST

/* Two libraries providing the same thing in one folder, under these file names: the first in
 * sorted order loads, the second is refused and names the first. */
static void expect_second_is_duplicate(const char *case_a, const char *name_a, const char *case_b,
                                       const char *name_b, const char *reason_part)
{
    char *dir = sy_scratch_dir();
    char *first = sy_scratch_copy(case_a, dir, name_a, 0644);
    char *second = sy_scratch_copy(case_b, dir, name_b, 0644);
    const char *dirs[] = {dir};
    sy_registry *reg = sy_fixture_registry(dirs, 1, 0);
    const sy_registry_entry *winner = sy_fixture_entry(reg, first);
    const sy_registry_entry *loser = sy_fixture_entry(reg, second);
    ck_assert_msg(winner->stage == SY_STAGE_NONE, "%s: %s", winner->file, winner->reason);
    ck_assert_ptr_nonnull(winner->plugin ? (const void *)winner->plugin : (const void *)winner->backend);
    ck_assert_msg(loser->stage == SY_STAGE_DUPLICATE, "stage %s: %s", sy_stage_name(loser->stage), loser->reason);
    ck_assert_msg(strstr(loser->reason, reason_part) && strstr(loser->reason, first),
                  "reason '%s' must say '%s' and name the first file %s", loser->reason, reason_part, first);
    ck_assert_ptr_null(loser->plugin);
    ck_assert_ptr_null(loser->backend);
    sy_registry_close(reg);
    free(first);
    free(second);
    sy_scratch_remove(dir);
}

START_TEST(duplicate_plugin)
{
    expect_second_is_duplicate("duplicate_a", NULL, "duplicate_b", NULL,
                               "norm plugin 'fixture_duplicate' for backend 'cpu' is already provided by");
}
END_TEST

START_TEST(duplicate_backend)
{
    expect_second_is_duplicate("backend_usable", "libbackend_1.so", "backend_usable", "libbackend_2.so",
                               "backend 'fixture_backend_usable' is already provided by");
}
END_TEST

/* Across folders the search order decides, not the file names. */
START_TEST(duplicate_across_folders)
{
    char *dir_b = sy_fixture_dir("duplicate_b"), *dir_a = sy_fixture_dir("duplicate_a");
    char *file_b = sy_fixture_file("duplicate_b");
    char *file_a = sy_fixture_file("duplicate_a");
    const char *dirs[] = {dir_b, dir_a};
    sy_registry *reg = sy_fixture_registry(dirs, 2, 0);
    ck_assert_int_eq(sy_fixture_entry(reg, file_b)->stage, SY_STAGE_NONE);
    ck_assert_ptr_eq(sy_registry_find(reg, SY_KIND_NORM, "fixture_duplicate", "cpu"), sy_fixture_entry(reg, file_b));
    const sy_registry_entry *loser = sy_fixture_entry(reg, file_a);
    ck_assert_int_eq(loser->stage, SY_STAGE_DUPLICATE);
    ck_assert_msg(strstr(loser->reason, file_b), "reason '%s' must name %s", loser->reason, file_b);
    sy_registry_close(reg);
    free(file_a);
    free(file_b);
    free(dir_a);
    free(dir_b);
}
END_TEST

/* init runs only when a composition selects the plugin; its failure names the file and the stage. */
START_TEST(init_failure)
{
    char *file = sy_fixture_file("init_fails");
    sy_registry *reg = sy_fixture_case_registry("init_fails");
    const sy_registry_entry *e = sy_fixture_entry(reg, file);
    ck_assert_msg(e->stage == SY_STAGE_NONE, "listing must not run init: %s", e->reason);
    void *ctx = (void *)&ctx;
    sy_error err = {{0}};
    sy_status st = sy_registry_init_plugin(e, NULL, &ctx, &err);
    ck_assert_int_eq(st, SY_E_BACKEND);
    ck_assert_ptr_null(ctx);
    ck_assert_msg(strstr(err.msg, file) && strstr(err.msg, "stage init") &&
                      strstr(err.msg, "norm plugin 'fixture_init_fails' failed to initialize") &&
                      strstr(err.msg, "fixture device table is missing"),
                  "init error must name the file, the stage, the plugin and its message: '%s'", err.msg);
    ck_assert_ptr_null(strchr(err.msg, '\n'));
    sy_registry_close(reg);
    free(file);
}
END_TEST

START_TEST(init_of_rejected_entry)
{
    sy_registry *reg = sy_fixture_case_registry("abi_zero");
    ck_assert_uint_eq(sy_registry_count(reg), 1);
    void *ctx = NULL;
    sy_error err = {{0}};
    ck_assert_int_eq(sy_registry_init_plugin(sy_registry_get(reg, 0), NULL, &ctx, &err), SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "not a loaded plugin") && strstr(err.msg, "libabi_zero.so"), "'%s'", err.msg);
    sy_registry_close(reg);
}
END_TEST

/* Descriptors of one library are judged one by one. */
START_TEST(bad_second_descriptor)
{
    char *file = sy_fixture_file("second_descriptor_bad");
    sy_registry *reg = sy_fixture_case_registry("second_descriptor_bad");
    ck_assert_uint_eq(sy_fixture_entry_count(reg, file), 2);
    const sy_registry_entry *first = sy_registry_get(reg, 0), *second = sy_registry_get(reg, 1);
    ck_assert_str_eq(first->file, file);
    ck_assert_str_eq(second->file, file);
    ck_assert_msg(first->stage == SY_STAGE_NONE, "%s", first->reason);
    ck_assert_str_eq(first->plugin->name, "fixture_second_descriptor_bad");
    ck_assert_int_eq(second->stage, SY_STAGE_DESCRIPTOR);
    ck_assert_msg(strstr(second->reason, "descriptor 1: empty name"), "'%s'", second->reason);
    sy_registry_close(reg);
    free(file);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        not_a_shared_object,
        unresolved_function,
        no_entry_symbol,
        both_entry_symbols,
        abi_major_zero,
        abi_other_major,
        abi_newer_minor,
        struct_size_too_small,
        struct_size_zero,
        name_not_identifier,
        empty_name,
        empty_backend,
        unknown_kind,
        missing_caps,
        missing_ops,
        required_op_null,
        feature_bits_outside_the_claimed_abi,
        entry_returns_null,
        backend_missing_function,
        duplicate_plugin,
        duplicate_backend,
        duplicate_across_folders,
        init_failure,
        init_of_rejected_entry,
        bad_second_descriptor,
    };
    return sy_fixture_run_tests("loader_rejections", tests, sizeof tests / sizeof tests[0]);
}
