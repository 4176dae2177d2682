/* The in-tree plugin a fixture wraps (fixture_plugin.h). Loading it with dlopen rather than
 * compiling its sources in keeps the fixture exactly the shipped plugin plus the one change. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_plugin.h"

const sy_plugin_desc *conf_delegate(void)
{
    static const sy_plugin_desc *desc;
    if (desc)
        return desc;
    void *lib = dlopen(CONF_DELEGATE_FILE, RTLD_NOW | RTLD_LOCAL);
    sy_plugin_entry_fn entry = lib ? (sy_plugin_entry_fn)dlsym(lib, SY_PLUGIN_ENTRY_SYMBOL) : NULL;
    const sy_plugin_desc *const *list = entry ? entry(SY_ABI_MAJOR, SY_ABI_MINOR) : NULL;
    if (!list || !list[0]) {
        fprintf(stderr, "conformance fixture: cannot load %s: %s\n", CONF_DELEGATE_FILE, lib ? "no descriptor" : dlerror());
        return NULL;
    }
    desc = list[0];
    return desc;
}

sy_status conf_wrapped_init(const sy_host_api *host, void **ctx, sy_error *err)
{
    const sy_plugin_desc *d = conf_delegate();
    if (!d) {
        snprintf(err->msg, sizeof err->msg, "fixture: cannot load %s", CONF_DELEGATE_FILE);
        return SY_E_INTERNAL;
    }
    conf_wrapped *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err->msg, sizeof err->msg, "fixture: out of memory");
        return SY_E_NOMEM;
    }
    w->desc = d;
    sy_status st = d->init ? d->init(host, &w->ctx, err) : SY_OK;
    if (st != SY_OK) {
        free(w);
        return st;
    }
    *ctx = w;
    return SY_OK;
}

void conf_wrapped_fini(void *ctx)
{
    conf_wrapped *w = ctx;
    if (!w)
        return;
    if (w->desc->fini)
        w->desc->fini(w->ctx);
    free(w);
}
