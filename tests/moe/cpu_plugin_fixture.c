#include "cpu_plugin_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_support.h"

static sy_registry *registry;

static void close_registry(void)
{
    sy_registry_close(registry);
    registry = NULL;
}

const sy_plugin_desc *sy_cpu_plugin(int32_t kind, const char *name)
{
    static char dir[4096];
    if (!registry) {
        snprintf(dir, sizeof dir, "%s/lib/switchyard/plugins", sy_fixture_build_dir());
        const char *dirs[] = {dir};
        /* The build tree's permissions are the builder's business; the loader suites test them. */
        registry = sy_fixture_registry(dirs, 1, 1);
        atexit(close_registry);
    }
    const sy_registry_entry *e = sy_registry_find(registry, kind, name, "cpu");
    if (!e) {
        char file[4200];
        snprintf(file, sizeof file, "%s/libsy_%s.so", dir, name);
        for (size_t i = 0; i < sy_registry_count(registry); i++) {
            const sy_registry_entry *r = sy_registry_get(registry, i);
            ck_assert_msg(strcmp(r->file, file) != 0, "%s rejected at stage %s: %s", file, sy_stage_name(r->stage),
                          r->reason);
        }
        ck_abort_msg("plugin %s (%s, cpu) not found in %s", name, sy_kind_name(kind), dir);
    }
    return e->plugin;
}

void *sy_cpu_plugin_init(const sy_plugin_desc *desc, const sy_host_api *host)
{
    void *ctx = NULL;
    sy_error err = {{0}};
    if (desc->init) {
        sy_status st = desc->init(host, &ctx, &err);
        ck_assert_msg(st == SY_OK, "%s init: %s", desc->name, err.msg);
    }
    return ctx;
}

void sy_cpu_plugin_fini(const sy_plugin_desc *desc, void *ctx)
{
    if (desc->fini)
        desc->fini(ctx);
}
