/* Valid libraries load: a plugin of every kind with its metadata and caps, and backends with their
 * probe result, usable or not. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_support.h"
#include "switchyard/switchyard.h"

static const struct {
    int32_t kind;
    const char *caps_part; /* something the caps summary of the fixture's declaration must say */
} kinds[] = {
    {SY_KIND_KV_LAYOUT, "layout=nhd store=bf16"},
    {SY_KIND_ATTENTION, "layouts=nhd kv=bf16 head_dim=8..256 page=1..256 max_tp=1 decode_paged prefill_linear"},
    {SY_KIND_MOE, "weights=mxfp4 gate_up=interleave align=256 padded_input=yes"},
    {SY_KIND_NORM, "features=rmsnorm,fused_add dtypes=f32"},
    {SY_KIND_ROPE, "style=neox scaling=yarn fused_kv=nhd"},
    {SY_KIND_LINEAR, "weights=bf16 act=f32 bias=yes"},
};
enum { N_KINDS = sizeof kinds / sizeof kinds[0] };

static char *case_of_kind(int32_t kind)
{
    return sy_fixture_printf("valid_%s", sy_kind_name(kind));
}

static void check_loaded_plugin(const sy_registry *reg, int32_t kind, const char *caps_part)
{
    char *fixture_case = case_of_kind(kind);
    char *file = sy_fixture_file(fixture_case);
    char *name = sy_fixture_printf("fixture_%s", fixture_case);
    const sy_registry_entry *e = sy_fixture_entry(reg, file);
    ck_assert_msg(e->stage == SY_STAGE_NONE, "%s rejected at stage %s: %s", file, sy_stage_name(e->stage), e->reason);
    ck_assert_str_eq(e->reason, "");
    ck_assert_int_eq(e->type, SY_ENTRY_PLUGIN);
    ck_assert_ptr_nonnull(e->plugin);
    ck_assert_ptr_null(e->backend);
    ck_assert_int_eq((int32_t)e->plugin->kind, kind);
    ck_assert_str_eq(e->plugin->name, name);
    ck_assert_str_eq(e->plugin->backend, "cpu");
    ck_assert_str_eq(e->plugin->version, "0.0.1");
    ck_assert_int_eq(e->plugin->rank, 3);
    ck_assert_ptr_eq(sy_registry_find(reg, kind, name, "cpu"), e);
    ck_assert_ptr_null(sy_registry_find(reg, kind, name, "cuda"));
    char caps[512];
    sy_caps_summary(e->plugin, caps, sizeof caps);
    ck_assert_msg(strstr(caps, caps_part), "%s caps summary '%s' lacks '%s'", sy_kind_name(kind), caps, caps_part);
    free(name);
    free(file);
    free(fixture_case);
}

START_TEST(plugin_of_each_kind_loads)
{
    char *fixture_case = case_of_kind(kinds[_i].kind);
    sy_registry *reg = sy_fixture_case_registry(fixture_case);
    ck_assert_uint_eq(sy_registry_count(reg), 1);
    check_loaded_plugin(reg, kinds[_i].kind, kinds[_i].caps_part);
    sy_registry_close(reg);
    free(fixture_case);
}
END_TEST

START_TEST(all_kinds_load_together)
{
    char *dirs[N_KINDS];
    for (size_t i = 0; i < N_KINDS; i++) {
        char *fixture_case = case_of_kind(kinds[i].kind);
        dirs[i] = sy_fixture_dir(fixture_case);
        free(fixture_case);
    }
    sy_registry *reg = sy_fixture_registry((const char *const *)dirs, N_KINDS, 0);
    ck_assert_uint_eq(sy_registry_count(reg), N_KINDS);
    ck_assert_uint_eq(sy_registry_search_dir_count(reg), N_KINDS);
    for (size_t i = 0; i < N_KINDS; i++) {
        ck_assert_str_eq(sy_registry_search_dir(reg, i), dirs[i]);
        check_loaded_plugin(reg, kinds[i].kind, kinds[i].caps_part);
    }
    sy_registry_close(reg);
    for (size_t i = 0; i < N_KINDS; i++)
        free(dirs[i]);
}
END_TEST

/* A library may declare several plugins; each gets its own entry naming the file. */
START_TEST(library_with_two_plugins)
{
    sy_registry *reg = sy_fixture_case_registry("second_descriptor_bad");
    const sy_registry_entry *e = sy_registry_find(reg, SY_KIND_NORM, "fixture_second_descriptor_bad", "cpu");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->type, SY_ENTRY_PLUGIN);
    sy_registry_close(reg);
}
END_TEST

static const sy_registry_entry *open_backend(const char *fixture_case, sy_registry **reg)
{
    char *file = sy_fixture_file(fixture_case);
    *reg = sy_fixture_case_registry(fixture_case);
    const sy_registry_entry *e = sy_fixture_entry(*reg, file);
    ck_assert_msg(e->stage == SY_STAGE_NONE, "%s rejected at stage %s: %s", file, sy_stage_name(e->stage), e->reason);
    ck_assert_int_eq(e->type, SY_ENTRY_BACKEND);
    ck_assert_ptr_nonnull(e->backend);
    ck_assert_ptr_null(e->plugin);
    free(file);
    return e;
}

START_TEST(usable_backend_reports_probe_score)
{
    sy_registry *reg;
    const sy_registry_entry *e = open_backend("backend_usable", &reg);
    ck_assert_str_eq(e->backend->name, "fixture_backend_usable");
    ck_assert_int_eq(e->probe_score, 7);
    ck_assert_str_eq(e->probe_reason, "");
    ck_assert_ptr_eq(sy_registry_find_backend(reg, "fixture_backend_usable"), e);
    ck_assert_ptr_null(sy_registry_find_backend(reg, "cpu"));
    sy_registry_close(reg);
}
END_TEST

/* Unusable here is not a rejection: the backend is listed, with its own explanation. */
START_TEST(backend_probing_zero_is_unusable_with_reason)
{
    sy_registry *reg;
    const sy_registry_entry *e = open_backend("backend_unusable", &reg);
    ck_assert_int_eq(e->probe_score, 0);
    ck_assert_str_eq(e->probe_reason, "no fixture device is attached");
    ck_assert_ptr_eq(sy_registry_find_backend(reg, "fixture_backend_unusable"), e);
    sy_registry_close(reg);
}
END_TEST

/* With an init, the context it makes; without one, SY_OK and a NULL context. */
static void expect_init_ok(const char *fixture_case, int has_init)
{
    char *name = sy_fixture_printf("fixture_%s", fixture_case);
    sy_registry *reg = sy_fixture_case_registry(fixture_case);
    const sy_registry_entry *e = sy_registry_find(reg, SY_KIND_NORM, name, "cpu");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->plugin->init != NULL, has_init);
    void *ctx = (void *)&ctx; /* must be overwritten either way */
    sy_error err = {{0}};
    ck_assert_msg(sy_registry_init_plugin(e, NULL, &ctx, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(has_init ? ctx != NULL && ctx != (void *)&ctx : ctx == NULL, "ctx %p after init", ctx);
    if (has_init)
        e->plugin->fini(ctx);
    sy_registry_close(reg);
    free(name);
}

START_TEST(init_succeeds_and_gives_a_context)
{
    expect_init_ok("init_marker", 1);
}
END_TEST

START_TEST(init_without_init_function)
{
    expect_init_ok("valid_norm", 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("loader_valid");
    TCase *tc = tcase_create("valid");
    tcase_add_loop_test(tc, plugin_of_each_kind_loads, 0, N_KINDS);
    tcase_add_test(tc, all_kinds_load_together);
    tcase_add_test(tc, library_with_two_plugins);
    tcase_add_test(tc, usable_backend_reports_probe_score);
    tcase_add_test(tc, backend_probing_zero_is_unusable_with_reason);
    tcase_add_test(tc, init_succeeds_and_gives_a_context);
    tcase_add_test(tc, init_without_init_function);
    suite_add_tcase(s, tc);
    return sy_fixture_run_suite(s);
}
