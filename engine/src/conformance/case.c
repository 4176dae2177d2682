/* The life of one case and the memory it uses on either side (case.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance/run.h"
#include "util/strbuf.h"

enum { HOST_ALIGNMENT = 256, POISON_BYTE = 0xFF };

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ------------------------------------------------------------------------------------------ */
/* arena */

static void push(void ***list, size_t *n, size_t *cap, void *p)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        *list = sy_xrealloc(*list, *cap * sizeof **list);
    }
    (*list)[(*n)++] = p;
}

static int take(void **list, size_t *n, void *p)
{
    for (size_t i = 0; i < *n; i++)
        if (list[i] == p) {
            list[i] = list[--*n];
            return 1;
        }
    return 0;
}

void sy_conf_arena_init(sy_conf_arena *a, sy_conf_side *side)
{
    memset(a, 0, sizeof *a);
    a->side = side;
}

void sy_conf_arena_release(sy_conf_arena *a)
{
    for (size_t i = 0; i < a->n_dev; i++)
        sy_conf_side_free(a->side, a->dev[i]);
    for (size_t i = 0; i < a->n_host; i++)
        free(a->host[i]);
    free(a->dev);
    free(a->host);
    sy_conf_arena_init(a, a->side);
}

void *sy_conf_arena_host(sy_conf_arena *a, size_t bytes)
{
    size_t rounded = (bytes + HOST_ALIGNMENT - 1) / HOST_ALIGNMENT * HOST_ALIGNMENT;
    void *p = aligned_alloc(HOST_ALIGNMENT, rounded ? rounded : HOST_ALIGNMENT);
    if (!p) {
        fprintf(stderr, "switchyard conformance: out of host memory (%zu bytes)\n", bytes);
        abort();
    }
    memset(p, POISON_BYTE, rounded);
    push(&a->host, &a->n_host, &a->cap_host, p);
    return p;
}

void sy_conf_arena_host_free(sy_conf_arena *a, void *ptr)
{
    if (ptr && take(a->host, &a->n_host, ptr))
        free(ptr);
}

sy_status sy_conf_arena_dev(sy_conf_arena *a, size_t bytes, void **ptr, sy_error *err)
{
    sy_status st = sy_conf_side_alloc(a->side, bytes, ptr, err);
    if (st != SY_OK)
        return st;
    push(&a->dev, &a->n_dev, &a->cap_dev, *ptr);
    return sy_conf_side_fill(a->side, *ptr, POISON_BYTE, bytes, err);
}

void sy_conf_arena_dev_free(sy_conf_arena *a, void *ptr)
{
    if (ptr && take(a->dev, &a->n_dev, ptr))
        sy_conf_side_free(a->side, ptr);
}

/* ------------------------------------------------------------------------------------------ */
/* case */

int sy_conf_quick(const sy_conf_run *run)
{
    return run->opts->quick;
}

sy_conf_rng sy_conf_shared_rng(const sy_conf_run *run, const char *what)
{
    return sy_conf_rng_for(run->report->seed, what);
}

sy_conf_case *sy_conf_case_begin(sy_conf_run *run, const sy_conf_target *t, const char *name)
{
    const char *filter = run->opts->case_filter;
    if (filter && !strstr(name, filter))
        return NULL;
    sy_conf_case *c = sy_xcalloc(1, sizeof *c);
    c->run = run;
    c->target = t;
    c->result.plugin = t->index;
    snprintf(c->result.name, sizeof c->result.name, "%s", name);
    if (run->opts->list_only) {
        c->result.status = SY_CONF_LISTED;
        sy_conf_run_record(run, &c->result);
        free(c);
        return NULL;
    }
    c->result.status = SY_CONF_PASS;
    sy_conf_arena_init(&c->arena, t->p.side);
    c->rng = sy_conf_rng_for(run->report->seed, name);
    c->started_ms = now_ms();
    return c;
}

void sy_conf_case_end(sy_conf_case *c)
{
    if (!c)
        return;
    sy_conf_arena_release(&c->arena);
    c->result.wall_ms = now_ms() - c->started_ms;
    sy_conf_run_record(c->run, &c->result);
    free(c);
}

int sy_conf_case_ok(const sy_conf_case *c)
{
    return c->result.status == SY_CONF_PASS;
}

static void verdict(sy_conf_case *c, int32_t status, const char *fmt, va_list ap)
{
    if (c->result.status != SY_CONF_PASS)
        return;
    c->result.status = status;
    vsnprintf(c->result.message, sizeof c->result.message, fmt, ap);
}

void sy_conf_case_unsupported(sy_conf_case *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict(c, SY_CONF_NOT_SUPPORTED, fmt, ap);
    va_end(ap);
}

void sy_conf_case_fail(sy_conf_case *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict(c, SY_CONF_FAIL, fmt, ap);
    va_end(ap);
}

int sy_conf_case_call(sy_conf_case *c, const char *what, sy_status st, const sy_error *err)
{
    if (st == SY_OK)
        return 1;
    sy_conf_case_fail(c, "%s returned %s: %s", what, sy_status_name(st), err->msg[0] ? err->msg : "no message");
    return 0;
}

void *sy_conf_case_host(sy_conf_case *c, size_t bytes)
{
    return sy_conf_arena_host(&c->arena, bytes);
}

void *sy_conf_case_dev(sy_conf_case *c, size_t bytes)
{
    sy_error err = {{0}};
    void *p = NULL;
    if (!sy_conf_case_ok(c))
        return NULL;
    if (!sy_conf_case_call(c, "device allocation", sy_conf_arena_dev(&c->arena, bytes, &p, &err), &err))
        return NULL;
    return p;
}

void *sy_conf_case_upload(sy_conf_case *c, const void *host, size_t bytes)
{
    sy_error err = {{0}};
    void *p = sy_conf_case_dev(c, bytes);
    if (!p || !sy_conf_case_call(c, "upload", sy_conf_side_copy(c->arena.side, p, host, bytes, SY_MEMCPY_H2D, &err),
                                 &err))
        return NULL;
    return p;
}

void *sy_conf_case_download(sy_conf_case *c, const void *dev, size_t bytes)
{
    sy_error err = {{0}};
    if (!sy_conf_case_ok(c))
        return NULL;
    void *h = sy_conf_case_host(c, bytes);
    if (!sy_conf_case_call(c, "download", sy_conf_side_copy(c->arena.side, h, dev, bytes, SY_MEMCPY_D2H, &err), &err))
        return NULL;
    return h;
}

int sy_conf_case_poison(sy_conf_case *c, void *dev, size_t bytes)
{
    sy_error err = {{0}};
    return sy_conf_case_ok(c) &&
           sy_conf_case_call(c, "poison", sy_conf_side_fill(c->arena.side, dev, POISON_BYTE, bytes, &err), &err);
}

int sy_conf_case_time_begin(sy_conf_case *c)
{
    sy_error err = {{0}};
    return sy_conf_case_ok(c) &&
           sy_conf_case_call(c, "timing", sy_conf_side_time_begin(c->arena.side, &err), &err);
}

int sy_conf_case_time_end(sy_conf_case *c)
{
    sy_error err = {{0}};
    double ms = 0;
    if (!sy_conf_case_call(c, "timing", sy_conf_side_time_end(c->arena.side, &ms, &err), &err))
        return 0;
    c->result.op_ms += ms;
    return 1;
}

int sy_conf_case_op_begin(sy_conf_case *c)
{
    return sy_conf_case_ok(c) && sy_conf_case_time_begin(c);
}

int sy_conf_case_op_end(sy_conf_case *c, const char *what, sy_status st, const sy_error *err)
{
    int ok = sy_conf_case_call(c, what, st, err);
    return sy_conf_case_time_end(c) && ok;
}

const sy_conf_plugin_ctx *sy_conf_case_reference(sy_conf_case *c, int32_t kind, const char *name)
{
    const char *why = NULL;
    const sy_conf_plugin_ctx *ref = sy_conf_reference(c->run, kind, name, &why);
    if (!ref)
        sy_conf_case_fail(c, "no reference: %s", why);
    return ref;
}

void *sy_conf_arena_random(sy_conf_arena *a, sy_conf_rng *rng, size_t n, int32_t dtype, double std)
{
    float *f = sy_xcalloc(n ? n : 1, sizeof *f);
    sy_conf_fill_normal(rng, f, n, std);
    void *out = sy_conf_arena_host(a, n * sy_dtype_size(dtype));
    sy_conf_store(dtype, out, f, n);
    free(f);
    return out;
}

void *sy_conf_case_random(sy_conf_case *c, size_t n, int32_t dtype, double std)
{
    return sy_conf_arena_random(&c->arena, &c->rng, n, dtype, std);
}

void sy_conf_run_table(sy_conf_run *run, const sy_conf_target *t, const sy_conf_table *table)
{
    for (size_t i = 0; i < table->n_rows; i++) {
        const char *row = (const char *)table->rows + i * table->row_size;
        if (sy_conf_quick(run) && !row[table->quick_offset])
            continue;
        char name[sizeof ((sy_conf_result *)0)->name];
        table->name(name, sizeof name, row, table->user);
        sy_conf_case *c = sy_conf_case_begin(run, t, name);
        if (c)
            table->run(c, row, table->user);
        sy_conf_case_end(c);
    }
}
