#include "conformance/side.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

static sy_status backend_failed(const sy_conf_side *s, const char *call, const sy_error *inner, sy_error *err)
{
    return sy_fail(err, SY_E_BACKEND, "backend %s: %s failed: %s", s->be->name, call,
                   inner->msg[0] ? inner->msg : "no message");
}

static sy_status workspace_alloc(void *host, size_t bytes, void **ptr, sy_error *err)
{
    sy_conf_side *s = host;
    sy_status st = sy_conf_side_alloc(s, bytes, ptr, err);
    if (st != SY_OK)
        return st;
    if (s->n_workspace == s->cap_workspace) {
        s->cap_workspace = s->cap_workspace ? 2 * s->cap_workspace : 16;
        s->workspace = sy_xrealloc(s->workspace, s->cap_workspace * sizeof *s->workspace);
    }
    s->workspace[s->n_workspace++] = *ptr;
    return SY_OK;
}

static void workspace_free(void *host, void *ptr)
{
    sy_conf_side *s = host;
    for (size_t i = 0; i < s->n_workspace; i++)
        if (s->workspace[i] == ptr) {
            s->workspace[i] = s->workspace[--s->n_workspace];
            sy_conf_side_free(s, ptr);
            return;
        }
}

/* Plugins report through the case result, not the terminal: only errors are shown. */
static void host_log(void *host, int32_t level, const char *msg)
{
    const sy_conf_side *s = host;
    if (level == SY_LOG_ERROR)
        fprintf(stderr, "switchyard conformance: plugin on %s: %s\n", s->be->name, msg);
}

sy_status sy_conf_side_open(sy_conf_side *s, const sy_registry_entry *entry, sy_error *err)
{
    sy_error inner = {{0}};
    memset(s, 0, sizeof *s);
    if (entry->probe_score <= 0)
        return sy_fail(err, SY_E_BACKEND, "backend %s (%s) cannot run here: %s", entry->backend->name, entry->file,
                       entry->probe_reason && entry->probe_reason[0] ? entry->probe_reason : "probe returned 0");
    if (entry->backend->init(0, &s->bctx, &inner) != SY_OK)
        return sy_fail(err, SY_E_BACKEND, "backend %s (%s): init of device 0 failed: %s", entry->backend->name,
                       entry->file, inner.msg[0] ? inner.msg : "no message");
    s->be = entry->backend; /* from here on sy_conf_side_close releases what was opened */
    sy_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (s->be->device_info(s->bctx, &info, &inner) == SY_OK)
        snprintf(s->device, sizeof s->device, "%s", info.name);
    else
        snprintf(s->device, sizeof s->device, "%s device 0", s->be->name);
    if (s->be->stream_create(s->bctx, &s->stream, &inner) != SY_OK ||
        s->be->event_create(s->bctx, &s->ev_start, &inner) != SY_OK ||
        s->be->event_create(s->bctx, &s->ev_stop, &inner) != SY_OK) {
        sy_status st = backend_failed(s, "stream / event creation", &inner, err);
        sy_conf_side_close(s);
        return st;
    }
    s->host.struct_size = sizeof s->host;
    s->host.abi_major = SY_ABI_MAJOR;
    s->host.abi_minor = SY_ABI_MINOR;
    s->host.host = s;
    s->host.backend = s->be;
    s->host.backend_ctx = s->bctx;
    s->host.log = host_log;
    s->host.workspace_alloc = workspace_alloc;
    s->host.workspace_free = workspace_free;
    return SY_OK;
}

void sy_conf_side_close(sy_conf_side *s)
{
    if (!s->be)
        return;
    for (size_t i = 0; i < s->n_workspace; i++)
        s->be->free(s->bctx, s->workspace[i]);
    free(s->workspace);
    if (s->ev_stop)
        s->be->event_destroy(s->bctx, s->ev_stop);
    if (s->ev_start)
        s->be->event_destroy(s->bctx, s->ev_start);
    if (s->stream)
        s->be->stream_destroy(s->bctx, s->stream);
    s->be->fini(s->bctx);
    memset(s, 0, sizeof *s);
}

sy_status sy_conf_side_alloc(sy_conf_side *s, size_t bytes, void **ptr, sy_error *err)
{
    sy_error inner = {{0}};
    *ptr = NULL;
    if (s->be->alloc(s->bctx, bytes ? bytes : 1, ptr, &inner) != SY_OK || !*ptr)
        return sy_fail(err, SY_E_NOMEM, "backend %s: cannot allocate %zu bytes: %s", s->be->name, bytes,
                       inner.msg[0] ? inner.msg : "no message");
    return SY_OK;
}

void sy_conf_side_free(sy_conf_side *s, void *ptr)
{
    if (ptr)
        s->be->free(s->bctx, ptr);
}

sy_status sy_conf_side_sync(sy_conf_side *s, sy_error *err)
{
    sy_error inner = {{0}};
    if (s->be->stream_sync(s->bctx, s->stream, &inner) != SY_OK)
        return backend_failed(s, "stream_sync", &inner, err);
    return SY_OK;
}

sy_status sy_conf_side_copy(sy_conf_side *s, void *dst, const void *src, size_t bytes, int32_t kind, sy_error *err)
{
    sy_error inner = {{0}};
    if (bytes == 0)
        return SY_OK;
    if (s->be->memcpy_async(s->bctx, s->stream, dst, src, bytes, kind, &inner) != SY_OK)
        return backend_failed(s, kind == SY_MEMCPY_H2D ? "memcpy_async (host to device)" : "memcpy_async (device to host)",
                              &inner, err);
    return sy_conf_side_sync(s, err);
}

sy_status sy_conf_side_fill(sy_conf_side *s, void *ptr, int value, size_t bytes, sy_error *err)
{
    sy_error inner = {{0}};
    if (bytes == 0)
        return SY_OK;
    if (s->be->memset_async(s->bctx, s->stream, ptr, value, bytes, &inner) != SY_OK)
        return backend_failed(s, "memset_async", &inner, err);
    return sy_conf_side_sync(s, err);
}

sy_status sy_conf_side_time_begin(sy_conf_side *s, sy_error *err)
{
    sy_error inner = {{0}};
    if (s->be->event_record(s->bctx, s->ev_start, s->stream, &inner) != SY_OK)
        return backend_failed(s, "event_record", &inner, err);
    return SY_OK;
}

sy_status sy_conf_side_time_end(sy_conf_side *s, double *ms, sy_error *err)
{
    sy_error inner = {{0}};
    float elapsed = 0;
    if (s->be->event_record(s->bctx, s->ev_stop, s->stream, &inner) != SY_OK ||
        s->be->event_sync(s->bctx, s->ev_stop, &inner) != SY_OK ||
        s->be->event_elapsed_ms(s->bctx, s->ev_start, s->ev_stop, &elapsed, &inner) != SY_OK)
        return backend_failed(s, "event timing", &inner, err);
    *ms = elapsed;
    return SY_OK;
}
