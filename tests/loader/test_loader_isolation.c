/* One bad library never stops the others: a single folder holding every broken fixture next to
 * valid plugins of each kind and two backends; each good one loads, each bad one is refused at its
 * own stage, and nothing is skipped. */
#include <check.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_support.h"
#include "switchyard/switchyard.h"

static const struct {
    const char *fixture_case;
    int32_t stage;
} mix[] = {
    {"not_shared_object", SY_STAGE_OPEN},
    {"unresolved_function", SY_STAGE_OPEN},
    {"entry_hidden", SY_STAGE_SYMBOL},
    {"both_entries", SY_STAGE_SYMBOL},
    {"abi_zero", SY_STAGE_ABI},
    {"abi_other_major", SY_STAGE_ABI},
    {"abi_newer_minor", SY_STAGE_ABI},
    {"entry_null", SY_STAGE_ABI},
    {"struct_too_small", SY_STAGE_DESCRIPTOR},
    {"empty_name", SY_STAGE_DESCRIPTOR},
    {"empty_backend", SY_STAGE_DESCRIPTOR},
    {"unknown_kind", SY_STAGE_DESCRIPTOR},
    {"missing_caps", SY_STAGE_DESCRIPTOR},
    {"missing_ops", SY_STAGE_DESCRIPTOR},
    {"null_op", SY_STAGE_DESCRIPTOR},
    {"backend_missing_fn", SY_STAGE_DESCRIPTOR},
    {"duplicate_a", SY_STAGE_NONE},
    {"duplicate_b", SY_STAGE_DUPLICATE},
    {"init_fails", SY_STAGE_NONE}, /* init is not run by loading */
    {"valid_kv_layout", SY_STAGE_NONE},
    {"valid_attention", SY_STAGE_NONE},
    {"valid_moe", SY_STAGE_NONE},
    {"valid_norm", SY_STAGE_NONE},
    {"valid_rope", SY_STAGE_NONE},
    {"valid_linear", SY_STAGE_NONE},
    {"no_strings", SY_STAGE_NONE},
    {"backend_usable", SY_STAGE_NONE},
    {"backend_unusable", SY_STAGE_NONE},
};
enum { N_MIX = sizeof mix / sizeof mix[0] };

START_TEST(bad_libraries_do_not_stop_good_ones)
{
    char *dir = sy_scratch_dir();
    char *files[N_MIX];
    for (size_t i = 0; i < N_MIX; i++)
        files[i] = sy_scratch_copy(mix[i].fixture_case, dir, NULL, 0644);
    const char *dirs[] = {dir};
    sy_registry *reg = sy_fixture_registry(dirs, 1, 0);
    ck_assert_uint_eq(sy_registry_count(reg), N_MIX);
    size_t loaded = 0;
    for (size_t i = 0; i < N_MIX; i++) {
        const sy_registry_entry *e = sy_fixture_entry(reg, files[i]);
        ck_assert_msg(e->stage == mix[i].stage, "%s: stage %s (%s), expected %s", mix[i].fixture_case,
                      sy_stage_name(e->stage), e->reason, sy_stage_name(mix[i].stage));
        if (e->stage == SY_STAGE_NONE) {
            ck_assert_msg(e->plugin || e->backend, "%s: loaded but without a descriptor", mix[i].fixture_case);
            loaded++;
        } else {
            ck_assert_msg(e->reason[0], "%s: rejected without a reason", mix[i].fixture_case);
        }
    }
    ck_assert_uint_eq(loaded, 11);
    for (int32_t kind = SY_KIND_KV_LAYOUT; kind < SY_KIND_COUNT_; kind++) {
        char *name = sy_fixture_printf("fixture_valid_%s", sy_kind_name(kind));
        ck_assert_msg(sy_registry_find(reg, kind, name, "cpu"), "%s did not load", name);
        free(name);
    }
    ck_assert_ptr_nonnull(sy_registry_find_backend(reg, "fixture_backend_usable"));
    ck_assert_ptr_nonnull(sy_registry_find_backend(reg, "fixture_backend_unusable"));
    sy_registry_close(reg);
    for (size_t i = 0; i < N_MIX; i++)
        free(files[i]);
    sy_scratch_remove(dir);
}
END_TEST

/* Libraries are opened RTLD_LOCAL: what one plugin exports never becomes visible to the process
 * or to the next plugin (two plugins may both define helpers of the same name). Every fixture
 * exports sy_plugin_entry and this program defines none, so a global lookup must find nothing. */
START_TEST(exports_stay_local)
{
    sy_registry *reg = sy_fixture_case_registry("valid_norm");
    ck_assert_ptr_nonnull(sy_registry_find(reg, SY_KIND_NORM, "fixture_valid_norm", "cpu"));
    dlerror();
    void *global = dlsym(RTLD_DEFAULT, SY_PLUGIN_ENTRY_SYMBOL);
    ck_assert_msg(global == NULL, "%s of a loaded plugin is visible process-wide: not opened RTLD_LOCAL",
                  SY_PLUGIN_ENTRY_SYMBOL);
    sy_registry_close(reg);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        bad_libraries_do_not_stop_good_ones,
        exports_stay_local,
    };
    return sy_fixture_run_tests("loader_isolation", tests, sizeof tests / sizeof tests[0]);
}
