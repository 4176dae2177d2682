/* Growable scratch memory of a host plugin. It comes from the engine's workspace_alloc when the
 * plugin was initialized with a host API that has one (so that the engine counts it), from the C
 * heap otherwise (a host API of NULL, as in stand-alone use of a plugin). */
#ifndef SY_CPU_WORKSPACE_H
#define SY_CPU_WORKSPACE_H

#include <stddef.h>

#include "switchyard/plugin.h"

typedef struct sy_cpu_workspace {
    const sy_host_api *host; /* may be NULL */
    void *ptr;
    size_t bytes;
} sy_cpu_workspace;

/* Makes *ptr point to at least `bytes` bytes, 64-byte aligned; earlier contents are not kept. */
sy_status sy_cpu_workspace_reserve(sy_cpu_workspace *ws, size_t bytes, void **ptr, sy_error *err);
void sy_cpu_workspace_release(sy_cpu_workspace *ws);

#endif
