#include "bench/job.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/timing.h"
#include "conformance/pool.h"
#include "util/strbuf.h"

void sy_bench_job_begin(sy_bench_job *j, sy_bench_run_state *run, const sy_bench_case *c, sy_bench_result *r)
{
    memset(j, 0, sizeof *j);
    j->run = run;
    j->c = c;
    j->s = run->opts->quick ? &c->quick : &c->full;
    j->r = r;
    j->rng = sy_conf_rng_for(run->opts->seed, c->name);
    sy_bench_data_init(&j->data, &run->side, j->rng.seed);
}

void sy_bench_job_end(sy_bench_job *j)
{
    sy_error ignored = {{0}};
    sy_conf_side_sync(&j->run->side, &ignored);
    for (size_t i = j->n_plugins; i-- > 0;)
        if (j->plugin[i]->fini && j->plugin_ctx[i])
            j->plugin[i]->fini(j->plugin_ctx[i]);
    j->n_plugins = 0;
    sy_bench_data_release(&j->data);
    for (size_t i = 0; i < j->n_host; i++)
        free(j->host[i]);
    free(j->host);
    j->host = NULL;
    j->n_host = j->cap_host = 0;
}

int sy_bench_job_ok(const sy_bench_job *j)
{
    return j->r->status == SY_BENCH_OK;
}

static void verdict(sy_bench_job *j, int32_t status, const char *fmt, va_list ap)
{
    if (!sy_bench_job_ok(j))
        return; /* the first verdict stands */
    j->r->status = status;
    vsnprintf(j->r->reason, sizeof j->r->reason, fmt, ap);
}

void sy_bench_job_unsupported(sy_bench_job *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict(j, SY_BENCH_NOT_SUPPORTED, fmt, ap);
    va_end(ap);
}

void sy_bench_job_error(sy_bench_job *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict(j, SY_BENCH_ERROR, fmt, ap);
    va_end(ap);
}

int sy_bench_job_check(sy_bench_job *j, const char *what, sy_status st, const sy_error *err)
{
    if (st == SY_OK)
        return 1;
    if (st == SY_E_UNSUPPORTED)
        sy_bench_job_unsupported(j, "%s", err->msg);
    else
        sy_bench_job_error(j, "%s returned %s: %s", what, sy_status_name(st), err->msg[0] ? err->msg : "no message");
    return 0;
}

/* A library of the backend that the loader rejected and that, by the build's file naming
 * (libsy_NAME.so on the cpu, libsy_NAME_BACKEND.so on a GPU), holds the plugin: a broken install
 * is an error, not a plugin that does not exist. */
static const sy_registry_entry *rejected_library(const sy_registry *reg, const char *name, const char *backend)
{
    char want[160];
    if (strcmp(backend, "cpu") == 0)
        snprintf(want, sizeof want, "libsy_%s.so", name);
    else
        snprintf(want, sizeof want, "libsy_%s_%s.so", name, backend);
    for (size_t i = 0; i < sy_registry_count(reg); i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        const char *slash = e->file ? strrchr(e->file, '/') : NULL;
        if (e->stage != SY_STAGE_NONE && slash && strcmp(slash + 1, want) == 0)
            return e;
    }
    return NULL;
}

static void name_plugin(sy_bench_job *j, const char *name)
{
    size_t used = strlen(j->r->plugin);
    snprintf(j->r->plugin + used, sizeof j->r->plugin - used, "%s%s", used ? "+" : "", name);
}

const sy_plugin_desc *sy_bench_job_plugin(sy_bench_job *j, int32_t kind, const char *name, void **ctx)
{
    const char *backend = j->run->side.be->name;
    *ctx = NULL;
    if (!sy_bench_job_ok(j))
        return NULL;
    name_plugin(j, name);
    const sy_registry_entry *e = sy_registry_find(j->run->reg, kind, name, backend);
    if (!e) {
        const sy_registry_entry *bad = rejected_library(j->run->reg, name, backend);
        if (bad)
            sy_bench_job_error(j, "%s plugin %s for backend %s was not loaded: %s (%s): %s", sy_kind_name(kind), name,
                               backend, sy_stage_name(bad->stage), bad->file, bad->reason);
        else
            sy_bench_job_unsupported(j, "no %s plugin named %s for backend %s is loaded (`switchyard plugins` lists "
                                        "what was found)",
                                     sy_kind_name(kind), name, backend);
        return NULL;
    }
    if (j->n_plugins == SY_BENCH_JOB_MAX_PLUGINS) {
        sy_bench_job_error(j, "bench: a case may open at most %d plugins", SY_BENCH_JOB_MAX_PLUGINS);
        return NULL;
    }
    sy_error err = {{0}};
    if (sy_registry_init_plugin(e, &j->run->side.host, ctx, &err) != SY_OK) {
        sy_bench_job_error(j, "%s", err.msg);
        return NULL;
    }
    j->plugin[j->n_plugins] = e->plugin;
    j->plugin_ctx[j->n_plugins++] = *ctx;
    return e->plugin;
}

int sy_bench_job_geometry(sy_bench_job *j, uint32_t layout, int32_t store, uint32_t num_pages, uint32_t page_size,
                          sy_kv_geometry *geom)
{
    const char *name = sy_conf_layout_reference(layout);
    const char *backend = j->run->side.be->name;
    const sy_registry_entry *e = name ? sy_registry_find(j->run->reg, SY_KIND_KV_LAYOUT, name, backend) : NULL;
    if (!e) {
        sy_bench_job_unsupported(j, "no kv_layout plugin %s for backend %s is loaded to give the %s pool geometry",
                                 name ? name : "(none)", backend, sy_layout_name(layout));
        return 0;
    }
    memset(geom, 0, sizeof *geom);
    geom->struct_size = sizeof *geom;
    geom->layout = layout;
    geom->store_dtype = store;
    geom->num_pages = num_pages;
    geom->page_size = page_size;
    geom->kv_heads = j->run->model.kv_heads;
    geom->head_dim = j->run->model.head_dim;
    sy_error err = {{0}};
    const sy_kv_layout_ops *ops = e->plugin->ops;
    return sy_bench_job_check(j, "kv_layout.geometry", ops->geometry(geom, &err), &err);
}

void *sy_bench_job_host(sy_bench_job *j, size_t bytes)
{
    if (j->n_host == j->cap_host) {
        j->cap_host = j->cap_host ? 2 * j->cap_host : 16;
        j->host = sy_xrealloc(j->host, j->cap_host * sizeof *j->host);
    }
    return j->host[j->n_host++] = sy_xcalloc(bytes ? bytes : 1, 1);
}

static void *device_result(sy_bench_job *j, sy_status st, void *ptr, const sy_error *err)
{
    if (st == SY_OK)
        return ptr;
    sy_bench_job_error(j, "%s", err->msg);
    return NULL;
}

void *sy_bench_job_alloc(sy_bench_job *j, size_t bytes)
{
    void *p = NULL;
    sy_error err = {{0}};
    if (!sy_bench_job_ok(j))
        return NULL;
    sy_status st = sy_bench_alloc(&j->data, bytes, &p, &err);
    return device_result(j, st, p, &err);
}

void *sy_bench_job_random(sy_bench_job *j, int32_t dtype, uint64_t count)
{
    void *p = NULL;
    sy_error err = {{0}};
    if (!sy_bench_job_ok(j))
        return NULL;
    sy_status st = sy_bench_random(&j->data, dtype, count, &p, &err);
    return device_result(j, st, p, &err);
}

void *sy_bench_job_upload(sy_bench_job *j, const void *host, size_t bytes)
{
    void *p = NULL;
    sy_error err = {{0}};
    if (!sy_bench_job_ok(j))
        return NULL;
    sy_status st = sy_bench_upload(&j->data, host, bytes, &p, &err);
    return device_result(j, st, p, &err);
}

void *sy_bench_job_uniform_f32(sy_bench_job *j, uint64_t count, double lo, double hi)
{
    float *host = sy_bench_job_host(j, count * sizeof(float));
    sy_conf_fill_uniform(&j->rng, host, count, lo, hi);
    return sy_bench_job_upload(j, host, count * sizeof(float));
}

void *sy_bench_job_sinks(sy_bench_job *j, uint32_t q_heads)
{
    return sy_bench_job_uniform_f32(j, q_heads, 1.0, 7.0);
}

uint32_t sy_bench_job_copies(sy_bench_job *j, uint64_t set_bytes)
{
    return j->r->input_copies = sy_bench_rotation_copies(set_bytes, j->run->rotation_target, SY_BENCH_MAX_COPIES);
}

int sy_bench_job_time(sy_bench_job *j, sy_bench_call_fn call, void *user, uint32_t copies)
{
    sy_error err = {{0}};
    if (!sy_bench_job_ok(j))
        return 0;
    const sy_bench_options *o = j->run->opts;
    sy_status st = sy_bench_time_calls(&j->run->side, call, user, copies, o->warmup, o->runs, &j->r->stats, &err);
    if (st != SY_OK) {
        sy_bench_job_error(j, "%s", err.msg);
        return 0;
    }
    return 1;
}

void sy_bench_job_traffic(sy_bench_job *j, sy_bench_traffic t)
{
    j->r->bytes = t.bytes;
    j->r->flops = t.flops;
}

void sy_bench_job_shape(sy_bench_job *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->r->shape, sizeof j->r->shape, fmt, ap);
    va_end(ap);
}

sy_bench_heads sy_bench_job_heads(const sy_bench_job *j)
{
    sy_bench_heads h = {j->run->model.q_heads, j->run->model.kv_heads, j->run->model.head_dim};
    return h;
}

float sy_bench_job_softmax_scale(const sy_bench_job *j)
{
    const sy_model_dims *m = &j->run->model;
    return m->attn_scale > 0 ? m->attn_scale : (float)(1.0 / sqrt((double)m->head_dim));
}
