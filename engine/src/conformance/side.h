/* One side of a conformance comparison: an opened backend with a stream, timing events and the host
 * API its plugins are initialized with (workspace memory comes from the backend and is tracked, so
 * that whatever a plugin leaves allocated is released when the side closes). */
#ifndef SY_CONF_SIDE_H
#define SY_CONF_SIDE_H

#include <stddef.h>

#include "switchyard/switchyard.h"

typedef struct sy_conf_side {
    const sy_backend_desc *be;
    void *bctx;
    sy_stream stream;
    sy_event ev_start, ev_stop;
    sy_host_api host;
    void **workspace; /* live workspace allocations of the plugins on this side */
    size_t n_workspace, cap_workspace;
    char device[128];
} sy_conf_side;

/* Opens the backend of `entry` (device 0): probe, init, a stream and two events. */
sy_status sy_conf_side_open(sy_conf_side *s, const sy_registry_entry *entry, sy_error *err);
void sy_conf_side_close(sy_conf_side *s);

sy_status sy_conf_side_alloc(sy_conf_side *s, size_t bytes, void **ptr, sy_error *err);
void sy_conf_side_free(sy_conf_side *s, void *ptr);
/* A copy on the side's stream, then a synchronize: the data is in place when it returns. */
sy_status sy_conf_side_copy(sy_conf_side *s, void *dst, const void *src, size_t bytes, int32_t kind, sy_error *err);
/* Every byte of [ptr, ptr + bytes) set to `value`, synchronized. */
sy_status sy_conf_side_fill(sy_conf_side *s, void *ptr, int value, size_t bytes, sy_error *err);
sy_status sy_conf_side_sync(sy_conf_side *s, sy_error *err);

/* Device time of the work enqueued between begin and end, waiting for it: events on the stream. */
sy_status sy_conf_side_time_begin(sy_conf_side *s, sy_error *err);
sy_status sy_conf_side_time_end(sy_conf_side *s, double *ms, sy_error *err);

#endif
