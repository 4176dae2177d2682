/* The shipped configs against the plugins this build ships (the folder beside libswitchyard): each
 * one must pass `config check`. Skipped (exit 77) while a slot has no CPU plugin built yet. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_test.h"

static sy_registry *open_shipped(void)
{
    sy_registry_options o = {0};
    o.struct_size = sizeof o;
    o.skip_environment = 1;
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    if (sy_registry_open(&o, &reg, &err) != SY_OK) {
        fprintf(stderr, "cannot open the registry: %s\n", err.msg);
        exit(EXIT_FAILURE);
    }
    return reg;
}

/* The first slot kind with no loaded cpu plugin, or SY_KIND_INVALID. */
static int32_t missing_kind(const sy_registry *reg)
{
    for (size_t s = 0; s < SY_COMPOSE_SLOTS; s++) {
        int32_t kind = sy_compose_slot_kind(s);
        int found = 0;
        for (size_t i = 0; i < sy_registry_count(reg); i++) {
            const sy_registry_entry *e = sy_registry_get(reg, i);
            found |= e->plugin && e->stage == SY_STAGE_NONE && (int32_t)e->plugin->kind == kind &&
                     strcmp(e->plugin->backend, "cpu") == 0;
        }
        if (!found)
            return kind;
    }
    return SY_KIND_INVALID;
}

START_TEST(every_shipped_config_checks)
{
    char dir[1024], path[1400];
    source_path("configs", dir, sizeof dir);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    sy_registry *reg = open_shipped();
    struct dirent *de;
    size_t checked = 0;
    static const char *const no_env[] = {NULL};
    sy_config_options o = {0};
    o.envp = no_env;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (!(n > 5 && strcmp(de->d_name + n - 5, ".yaml") == 0) && !(n > 4 && strcmp(de->d_name + n - 4, ".ini") == 0))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        sy_diags diags = {0};
        sy_config *c = sy_config_load_file(path, &o, &diags);
        ck_assert_msg(c != NULL, "%s", path);
        sy_composition *comp = sy_compose(reg, c, &diags);
        sy_diags_sort(&diags);
        if (diags.n)
            print_diags(&diags);
        ck_assert_msg(sy_diags_count(&diags, SY_SEV_ERROR) == 0 && sy_composition_ok(comp), "%s", de->d_name);
        sy_composition_free(comp);
        sy_config_free(c);
        sy_diags_free(&diags);
        checked++;
    }
    closedir(d);
    sy_registry_close(reg);
    ck_assert_uint_ge(checked, 13);
}
END_TEST

int main(void)
{
    sy_registry *reg = open_shipped();
    int32_t missing = missing_kind(reg);
    sy_registry_close(reg);
    if (missing != SY_KIND_INVALID) {
        printf("skipped: no cpu %s plugin is built yet\n", sy_kind_name(missing));
        return 77;
    }
    Suite *s = suite_create("config_shipped");
    TCase *t = tcase_create("shipped");
    tcase_add_test(t, every_shipped_config_checks);
    suite_add_tcase(s, t);
    return run_suite(s);
}
