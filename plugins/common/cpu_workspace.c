#include "cpu_workspace.h"

#include <stdlib.h>

#include "sy_op_check.h"

static int has_workspace_api(const sy_host_api *host)
{
    return host && SY_HAS_MEMBER(host->struct_size, sy_host_api, workspace_free) && host->workspace_alloc &&
           host->workspace_free;
}

void sy_cpu_workspace_release(sy_cpu_workspace *ws)
{
    if (ws->ptr) {
        if (has_workspace_api(ws->host))
            ws->host->workspace_free(ws->host->host, ws->ptr);
        else
            free(ws->ptr);
    }
    ws->ptr = NULL;
    ws->bytes = 0;
}

sy_status sy_cpu_workspace_reserve(sy_cpu_workspace *ws, size_t bytes, void **ptr, sy_error *err)
{
    if (bytes == 0)
        bytes = 64;
    if (ws->bytes >= bytes) {
        *ptr = ws->ptr;
        return SY_OK;
    }
    sy_cpu_workspace_release(ws);
    /* Grow geometrically so that a slowly rising token count does not reallocate every call. */
    size_t want = bytes + bytes / 4;
    want = (want + 63) / 64 * 64;
    void *p = NULL;
    if (has_workspace_api(ws->host)) {
        sy_error inner = {{0}};
        sy_status st = ws->host->workspace_alloc(ws->host->host, want, &p, &inner);
        if (st != SY_OK)
            return sy_op_fail(err, st, "workspace_alloc of %zu bytes failed: %s", want, inner.msg);
        if (((size_t)p & 63u) != 0) {
            ws->host->workspace_free(ws->host->host, p);
            return sy_op_fail(err, SY_E_INTERNAL, "workspace_alloc returned %p, not 64-byte aligned", p);
        }
    } else {
        p = aligned_alloc(64, want);
        if (!p)
            return sy_op_fail(err, SY_E_NOMEM, "scratch allocation of %zu bytes failed", want);
    }
    ws->ptr = p;
    ws->bytes = want;
    *ptr = p;
    return SY_OK;
}
