/* Device scratch of a GPU plugin context: one buffer from the host API's workspace_alloc, kept
 * between calls and replaced by a larger one when a call needs more. .cu sources only.
 *
 * Replacing it releases the old buffer through workspace_free, which the GPU backends implement
 * with the runtime's free: that waits for work already queued on the device, so a kernel of an
 * earlier call that still reads the old buffer finishes first. Growth is rare (the first call at
 * each larger shape), so that wait is not on the steady path. */
#ifndef SY_WORKSPACE_GPU_CUH
#define SY_WORKSPACE_GPU_CUH

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "switchyard/plugin.h"

typedef struct sy_gpu_workspace {
    const sy_host_api *host;
    void *ptr;
    size_t bytes;
} sy_gpu_workspace;

/* Sections of one workspace, each aligned for 16-byte vector access and coalesced rows. */
enum { SY_GPU_WORKSPACE_ALIGN = 256 };

static inline size_t sy_gpu_workspace_align(size_t bytes)
{
    return (bytes + SY_GPU_WORKSPACE_ALIGN - 1) / SY_GPU_WORKSPACE_ALIGN * SY_GPU_WORKSPACE_ALIGN;
}

/* At least `bytes` of device scratch in *ptr; `op` names the calling op in errors. */
static inline sy_status sy_gpu_workspace_reserve(sy_gpu_workspace *ws, const char *op, size_t bytes, void **ptr,
                                                 sy_error *err)
{
    if (bytes == 0)
        bytes = 1;
    if (ws->ptr && ws->bytes >= bytes) {
        *ptr = ws->ptr;
        return SY_OK;
    }
    if (!ws->host || !ws->host->workspace_alloc) {
        if (err)
            snprintf(err->msg, sizeof err->msg,
                     "%s: needs %zu bytes of device workspace, but init was given no host API with workspace_alloc", op,
                     bytes);
        return SY_E_INVALID;
    }
    if (ws->ptr && ws->host->workspace_free)
        ws->host->workspace_free(ws->host->host, ws->ptr);
    ws->ptr = NULL;
    ws->bytes = 0;
    void *fresh = NULL;
    sy_status st = ws->host->workspace_alloc(ws->host->host, bytes, &fresh, err);
    if (st != SY_OK)
        return st;
    ws->ptr = fresh;
    ws->bytes = bytes;
    *ptr = fresh;
    return SY_OK;
}

static inline void sy_gpu_workspace_release(sy_gpu_workspace *ws)
{
    if (ws->ptr && ws->host && ws->host->workspace_free)
        ws->host->workspace_free(ws->host->host, ws->ptr);
    ws->ptr = NULL;
    ws->bytes = 0;
}

#endif
