/* The conformance driver: opens the tested backend and the cpu reference backend, walks the
 * backend's plugins in (kind, name) order and hands each to its kind's case list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance/cases.h"
#include "conformance/run.h"
#include "util/strbuf.h"

static const struct {
    int32_t kind;
    void (*cases)(sy_conf_run *, const sy_conf_target *);
} suites[] = {
    {SY_KIND_KV_LAYOUT, sy_conf_cases_kv_layout}, {SY_KIND_ATTENTION, sy_conf_cases_attention},
    {SY_KIND_MOE, sy_conf_cases_moe},             {SY_KIND_NORM, sy_conf_cases_norm},
    {SY_KIND_ROPE, sy_conf_cases_rope},           {SY_KIND_LINEAR, sy_conf_cases_linear},
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

const char *sy_conf_status_name(int32_t status)
{
    switch (status) {
    case SY_CONF_PASS: return "pass";
    case SY_CONF_FAIL: return "fail";
    case SY_CONF_NOT_SUPPORTED: return "not-supported";
    case SY_CONF_LISTED: return "listed";
    default: return "invalid";
    }
}

void sy_conf_run_record(sy_conf_run *run, const sy_conf_result *r)
{
    sy_conf_report *rep = run->report;
    if (rep->n_results == rep->cap_results) {
        rep->cap_results = rep->cap_results ? 2 * rep->cap_results : 64;
        rep->results = sy_xrealloc(rep->results, rep->cap_results * sizeof *rep->results);
    }
    rep->results[rep->n_results++] = *r;
    rep->passed += r->status == SY_CONF_PASS;
    rep->failed += r->status == SY_CONF_FAIL;
    rep->not_supported += r->status == SY_CONF_NOT_SUPPORTED;
    if (run->opts->on_result)
        run->opts->on_result(run->opts->user, rep, &rep->results[rep->n_results - 1]);
}

/* ------------------------------------------------------------------------------------------ */
/* references */

const sy_conf_plugin_ctx *sy_conf_reference(sy_conf_run *run, int32_t kind, const char *name, const char **why)
{
    sy_conf_reference_slot *slot = NULL;
    for (size_t i = 0; i < run->n_refs && !slot; i++)
        if (run->refs[i].kind == kind && strcmp(run->refs[i].name, name) == 0)
            slot = &run->refs[i];
    if (!slot) {
        if (run->n_refs == SY_CONF_MAX_REFERENCES) {
            if (why)
                *why = "conformance suite: too many reference plugins";
            return NULL;
        }
        slot = &run->refs[run->n_refs++];
        memset(slot, 0, sizeof *slot);
        slot->kind = kind;
        slot->name = name;
        const sy_registry_entry *e = sy_registry_find(run->reg, kind, name, "cpu");
        sy_error err = {{0}};
        if (!e) {
            snprintf(slot->why, sizeof slot->why,
                     "the cpu reference %s plugin '%s' is not loaded (the build's or install's plugin folder must be "
                     "on the search path)",
                     sy_kind_name(kind), name);
        } else if (!run->opts->list_only &&
                   sy_registry_init_plugin(e, &run->ref_side.host, &slot->p.ctx, &err) != SY_OK) {
            snprintf(slot->why, sizeof slot->why, "the cpu reference failed to initialize: %s", err.msg);
        } else {
            slot->p.desc = e->plugin;
            slot->p.side = &run->ref_side;
        }
    }
    if (!slot->p.desc && why)
        *why = slot->why;
    return slot->p.desc ? &slot->p : NULL;
}

void sy_conf_note_reference(sy_conf_run *run, const sy_conf_target *t, const sy_conf_plugin_ctx *ref)
{
    sy_conf_plugin *p = &run->report->plugins[t->index];
    if (p->reference || !ref)
        return;
    const sy_registry_entry *e = sy_registry_find(run->reg, (int32_t)ref->desc->kind, ref->desc->name, "cpu");
    p->reference = ref->desc->name;
    p->reference_file = e ? e->file : NULL;
}

static void release_references(sy_conf_run *run)
{
    for (size_t i = 0; i < run->n_refs; i++)
        if (run->refs[i].p.desc && run->refs[i].p.desc->fini && run->refs[i].p.ctx)
            run->refs[i].p.desc->fini(run->refs[i].p.ctx);
    run->n_refs = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* plugins of the backend */

static int by_kind_then_name(const void *a, const void *b)
{
    const sy_registry_entry *x = *(const sy_registry_entry *const *)a, *y = *(const sy_registry_entry *const *)b;
    if (x->plugin->kind != y->plugin->kind)
        return x->plugin->kind < y->plugin->kind ? -1 : 1;
    return strcmp(x->plugin->name, y->plugin->name);
}

/* Loaded plugins of `backend` (named `only` when set), sorted. */
static size_t plugins_of(const sy_registry *reg, const char *backend, const char *only, const sy_registry_entry ***out)
{
    size_t n = 0, total = sy_registry_count(reg);
    const sy_registry_entry **list = sy_xcalloc(total ? total : 1, sizeof *list);
    for (size_t i = 0; i < total; i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (e->type == SY_ENTRY_PLUGIN && e->stage == SY_STAGE_NONE && e->plugin &&
            strcmp(e->plugin->backend, backend) == 0 && (!only || strcmp(e->plugin->name, only) == 0))
            list[n++] = e;
    }
    qsort(list, n, sizeof *list, by_kind_then_name);
    *out = list;
    return n;
}

static sy_status no_such_plugin(const sy_registry *reg, const char *backend, const char *name, sy_error *err)
{
    const sy_registry_entry **all;
    size_t n = plugins_of(reg, backend, NULL, &all);
    sy_str names = {0};
    for (size_t i = 0; i < n; i++)
        sy_str_appendf(&names, "%s%s", i ? ", " : "", all[i]->plugin->name);
    sy_status st = sy_fail(err, SY_E_INVALID, "no plugin named '%s' for backend %s (its plugins: %s)", name, backend,
                           n ? names.data : "none");
    sy_str_free(&names);
    free(all);
    return st;
}

static sy_status find_backend(const sy_registry *reg, const char *name, const sy_registry_entry **out, sy_error *err)
{
    *out = sy_registry_find_backend(reg, name);
    if (*out)
        return SY_OK;
    sy_str dirs = {0};
    for (size_t i = 0; i < sy_registry_search_dir_count(reg); i++)
        sy_str_appendf(&dirs, "%s%s", i ? ", " : "", sy_registry_search_dir(reg, i));
    sy_status st = sy_fail(err, SY_E_BACKEND, "backend '%s' was not found (searched: %s)", name,
                           dirs.data ? dirs.data : "no folder");
    sy_str_free(&dirs);
    return st;
}

static void test_plugin(sy_conf_run *run, const sy_registry_entry *e, size_t index)
{
    sy_conf_target t;
    memset(&t, 0, sizeof t);
    t.entry = e;
    t.index = index;
    t.p.desc = e->plugin;
    t.p.side = &run->test_side;
    if (!run->opts->list_only) {
        sy_error err = {{0}};
        if (sy_registry_init_plugin(e, &run->test_side.host, &t.p.ctx, &err) != SY_OK) {
            char name[64];
            snprintf(name, sizeof name, "%s.init", sy_kind_name((int32_t)e->plugin->kind));
            sy_conf_case *c = sy_conf_case_begin(run, &t, name);
            if (c)
                sy_conf_case_fail(c, "%s", err.msg);
            sy_conf_case_end(c);
            return;
        }
    }
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
        if (suites[i].kind == (int32_t)e->plugin->kind)
            suites[i].cases(run, &t);
    if (t.p.ctx && e->plugin->fini)
        e->plugin->fini(t.p.ctx);
}

sy_status sy_conformance_run(sy_registry *reg, const sy_conf_options *opts, sy_conf_report *rep, sy_error *err)
{
    double started = now_ms();
    const char *backend = opts->backend ? opts->backend : "cpu";
    memset(rep, 0, sizeof *rep);
    snprintf(rep->backend, sizeof rep->backend, "%s", backend);
    rep->seed = opts->seed;
    rep->quick = opts->quick;

    const sy_registry_entry *test_be, *ref_be;
    sy_status st;
    if ((st = find_backend(reg, backend, &test_be, err)) != SY_OK || (st = find_backend(reg, "cpu", &ref_be, err)) != SY_OK)
        return st;
    const sy_registry_entry **plugins;
    size_t n = plugins_of(reg, backend, opts->plugin, &plugins);
    if (opts->plugin && n == 0) {
        free(plugins);
        return no_such_plugin(reg, backend, opts->plugin, err);
    }
    if (n == 0) { /* a run of nothing would read as a pass */
        free(plugins);
        return sy_fail(err, SY_E_INVALID, "backend %s has no loaded plugins on the search path (see switchyard plugins)",
                       backend);
    }

    sy_conf_run run;
    memset(&run, 0, sizeof run);
    run.reg = reg;
    run.opts = opts;
    run.report = rep;
    if (!opts->list_only) {
        if ((st = sy_conf_side_open(&run.ref_side, ref_be, err)) != SY_OK) {
            free(plugins);
            return st;
        }
        if ((st = sy_conf_side_open(&run.test_side, test_be, err)) != SY_OK) {
            sy_conf_side_close(&run.ref_side);
            free(plugins);
            return st;
        }
        snprintf(rep->device, sizeof rep->device, "%s", run.test_side.device);
    }

    rep->plugins = sy_xcalloc(n ? n : 1, sizeof *rep->plugins);
    rep->n_plugins = n;
    for (size_t i = 0; i < n; i++) {
        sy_conf_plugin *p = &rep->plugins[i];
        p->kind = (int32_t)plugins[i]->plugin->kind;
        p->name = plugins[i]->plugin->name;
        p->version = plugins[i]->plugin->version;
        p->file = plugins[i]->file;
    }
    for (size_t i = 0; i < n; i++)
        test_plugin(&run, plugins[i], i);

    release_references(&run);
    sy_conf_side_close(&run.test_side);
    sy_conf_side_close(&run.ref_side);
    free(plugins);
    rep->wall_ms = now_ms() - started;
    return SY_OK;
}

void sy_conf_report_free(sy_conf_report *rep)
{
    free(rep->plugins);
    free(rep->results);
    memset(rep, 0, sizeof *rep);
}
