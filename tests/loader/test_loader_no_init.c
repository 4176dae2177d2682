/* Listing reads metadata only: neither the registry nor `switchyard plugins` may call a plugin's
 * init. The fixture's init leaves a marker file, and the control test shows that the marker does
 * appear once init really runs, so its absence means something. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_support.h"
#include "run_process.h"
#include "switchyard/switchyard.h"

typedef struct listing_setup {
    char *scratch;
    char *marker;
    char *dirs[2];
} listing_setup;

/* Both fixtures whose init writes the marker: one that succeeds, one that fails. */
static void setup_listing(listing_setup *t)
{
    t->scratch = sy_scratch_dir();
    t->marker = sy_fixture_printf("%s/init-was-called", t->scratch);
    t->dirs[0] = sy_fixture_dir("init_marker");
    t->dirs[1] = sy_fixture_dir("init_fails");
    ck_assert_int_eq(setenv("SY_FIXTURE_INIT_MARKER", t->marker, 1), 0);
}

static void teardown_listing(listing_setup *t)
{
    unsetenv("SY_FIXTURE_INIT_MARKER");
    free(t->marker);
    free(t->dirs[0]);
    free(t->dirs[1]);
    sy_scratch_remove(t->scratch);
}

static int marker_exists(const listing_setup *t)
{
    return access(t->marker, F_OK) == 0;
}

START_TEST(registry_listing_does_not_call_init)
{
    listing_setup t;
    setup_listing(&t);
    sy_registry *reg = sy_fixture_registry((const char *const *)t.dirs, 2, 0);
    ck_assert_uint_eq(sy_registry_count(reg), 2);
    /* Everything a listing or a config check reads. */
    for (size_t i = 0; i < sy_registry_count(reg); i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        ck_assert_msg(e->stage == SY_STAGE_NONE, "%s: %s", e->file, e->reason);
        ck_assert_ptr_nonnull(e->plugin->init);
        char caps[512];
        sy_caps_summary(e->plugin, caps, sizeof caps);
        ck_assert_ptr_nonnull(sy_registry_find(reg, (int32_t)e->plugin->kind, e->plugin->name, e->plugin->backend));
    }
    sy_registry_close(reg);
    ck_assert_msg(!marker_exists(&t), "listing called a plugin's init (%s exists)", t.marker);
    teardown_listing(&t);
}
END_TEST

START_TEST(marker_appears_when_init_runs)
{
    listing_setup t;
    setup_listing(&t);
    sy_registry *reg = sy_fixture_registry((const char *const *)t.dirs, 1, 0);
    const sy_registry_entry *e = sy_registry_find(reg, SY_KIND_NORM, "fixture_init_marker", "cpu");
    ck_assert_ptr_nonnull(e);
    ck_assert(!marker_exists(&t));
    void *ctx = NULL;
    sy_error err = {{0}};
    ck_assert_msg(sy_registry_init_plugin(e, NULL, &ctx, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(marker_exists(&t), "init ran but left no marker: the listing tests would prove nothing");
    e->plugin->fini(ctx);
    sy_registry_close(reg);
    teardown_listing(&t);
}
END_TEST

START_TEST(plugins_command_does_not_call_init)
{
    listing_setup t;
    setup_listing(&t);
    char *env_marker = sy_fixture_printf("SY_FIXTURE_INIT_MARKER=%s", t.marker);
    const char *env[] = {env_marker, NULL};
    const char *text_args[] = {"plugins", "--plugin-path", t.dirs[0], "--plugin-path", t.dirs[1], NULL};
    const char *json_args[] = {"plugins", "--json", "--plugin-path", t.dirs[0], "--plugin-path", t.dirs[1], NULL};
    const char *const *runs[] = {text_args, json_args};
    for (size_t i = 0; i < 2; i++) {
        sy_process_result r;
        sy_run_switchyard(runs[i], env, &r);
        ck_assert_msg(r.exit_code == 0, "switchyard plugins exited %d (signal %d): %s", r.exit_code, r.term_signal,
                      r.err);
        ck_assert_msg(strstr(r.out, "fixture_init_marker") && strstr(r.out, "fixture_init_fails"),
                      "both fixtures must be listed:\n%s", r.out);
        ck_assert_msg(!marker_exists(&t), "`switchyard plugins%s` called a plugin's init", i ? " --json" : "");
        sy_process_result_free(&r);
    }
    free(env_marker);
    teardown_listing(&t);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        registry_listing_does_not_call_init,
        marker_appears_when_init_runs,
        plugins_command_does_not_call_init,
    };
    return sy_fixture_run_tests("loader_no_init", tests, sizeof tests / sizeof tests[0]);
}
