/* The front of the cuda and hip backends (plugins/common/sy_device_library.h says why a GPU module
 * is two libraries): plain C, no GPU runtime. probe and init check for the vendor's driver device
 * node first, so a scan (or an init) on a machine without that GPU never loads the runtime; with the
 * driver present they open the device library (backends/gpu/gpu_backend.c, in <plugins>/<vendor>/)
 * and return that backend's probe or init. Every other member forwards to the device backend, whose ctx, streams and events
 * pass through untouched (they are the runtime's own handles, as gpu_runtime.h says). Before the
 * device library is open (no probe, no init yet), calls fail with a message and void calls do
 * nothing. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "switchyard/backend.h"
#include "sy_device_library.h"
#include "vendor_names.h"

#ifndef SY_GPU_ARCHS
#define SY_GPU_ARCHS "unknown"
#endif
#ifndef SY_GPU_TOOLKIT_VERSION
#define SY_GPU_TOOLKIT_VERSION "unknown"
#endif

/* The device backend once a probe or an init has opened it; NULL before. */
static const sy_backend_desc *opened;

static const sy_backend_desc *open_device(sy_error *err)
{
    void *address = NULL;
    if (sy_device_library_symbol(SY_GPU_BACKEND_NAME, SY_DEVICE_BACKEND_ENTRY_SYMBOL, &address, err) != SY_OK)
        return NULL;
    sy_backend_entry_fn entry;
    memcpy(&entry, &address, sizeof entry); /* dlsym's object pointer to a function pointer */
    const sy_backend_desc *d = entry(SY_ABI_MAJOR, SY_ABI_MINOR);
    if (!d || d->abi_major != SY_ABI_MAJOR || d->struct_size < sizeof(sy_backend_desc)) {
        if (err)
            snprintf(err->msg, sizeof err->msg,
                     "%s: the device library's backend descriptor is %s; front and device library come from "
                     "different builds",
                     sy_device_library_front_name(), d ? "of another ABI or size" : "missing");
        return NULL;
    }
    __atomic_store_n(&opened, d, __ATOMIC_RELEASE);
    return d;
}

/* Never loads anything: a call that needs the device before probe or init opened it is refused. */
static const sy_backend_desc *device_if_open(void)
{
    return __atomic_load_n(&opened, __ATOMIC_ACQUIRE);
}

static int driver_present(char *reason, size_t reason_len)
{
    if (access(SY_GPU_DRIVER_NODE, F_OK) == 0)
        return 1;
    if (reason && reason_len)
        snprintf(reason, reason_len, "no %s driver (%s not found)", SY_GPU_DRIVER_NAME, SY_GPU_DRIVER_NODE);
    return 0;
}

static int32_t front_probe(char *reason, size_t reason_len)
{
    if (!driver_present(reason, reason_len))
        return 0;
    sy_error err = {{0}};
    const sy_backend_desc *d = open_device(&err);
    if (!d) {
        if (reason && reason_len)
            snprintf(reason, reason_len, "%s", err.msg);
        return 0;
    }
    return d->probe(reason, reason_len);
}

static sy_status front_init(int32_t device, void **ctx, sy_error *err)
{
    *ctx = NULL;
    char reason[160];
    if (!driver_present(reason, sizeof reason)) {
        if (err)
            snprintf(err->msg, sizeof err->msg, "%s backend: %s", SY_GPU_BACKEND_NAME, reason);
        return SY_E_BACKEND;
    }
    const sy_backend_desc *d = open_device(err);
    return d ? d->init(device, ctx, err) : SY_E_IO;
}

static sy_status not_open(const char *call, sy_error *err)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "%s backend: %s called before init", SY_GPU_BACKEND_NAME, call);
    return SY_E_INVALID;
}

#define DEVICE_OR_FAIL(call)                   \
    const sy_backend_desc *d = device_if_open(); \
    if (!d)                                    \
    return not_open(call, err)

static void front_fini(void *ctx)
{
    const sy_backend_desc *d = device_if_open();
    if (d)
        d->fini(ctx);
}

static sy_status front_device_info(void *ctx, sy_device_info *out, sy_error *err)
{
    DEVICE_OR_FAIL("device_info");
    return d->device_info(ctx, out, err);
}

static sy_status front_alloc(void *ctx, size_t bytes, void **ptr, sy_error *err)
{
    DEVICE_OR_FAIL("alloc");
    return d->alloc(ctx, bytes, ptr, err);
}

static void front_free(void *ctx, void *ptr)
{
    const sy_backend_desc *d = device_if_open();
    if (d)
        d->free(ctx, ptr);
}

static sy_status front_memcpy_async(void *ctx, sy_stream stream, void *dst, const void *src, size_t bytes,
                                    int32_t kind, sy_error *err)
{
    DEVICE_OR_FAIL("memcpy_async");
    return d->memcpy_async(ctx, stream, dst, src, bytes, kind, err);
}

static sy_status front_memset_async(void *ctx, sy_stream stream, void *dst, int value, size_t bytes, sy_error *err)
{
    DEVICE_OR_FAIL("memset_async");
    return d->memset_async(ctx, stream, dst, value, bytes, err);
}

static sy_status front_stream_create(void *ctx, sy_stream *out, sy_error *err)
{
    DEVICE_OR_FAIL("stream_create");
    return d->stream_create(ctx, out, err);
}

static void front_stream_destroy(void *ctx, sy_stream stream)
{
    const sy_backend_desc *d = device_if_open();
    if (d)
        d->stream_destroy(ctx, stream);
}

static sy_status front_stream_sync(void *ctx, sy_stream stream, sy_error *err)
{
    DEVICE_OR_FAIL("stream_sync");
    return d->stream_sync(ctx, stream, err);
}

static sy_status front_event_create(void *ctx, sy_event *out, sy_error *err)
{
    DEVICE_OR_FAIL("event_create");
    return d->event_create(ctx, out, err);
}

static void front_event_destroy(void *ctx, sy_event event)
{
    const sy_backend_desc *d = device_if_open();
    if (d)
        d->event_destroy(ctx, event);
}

static sy_status front_event_record(void *ctx, sy_event event, sy_stream stream, sy_error *err)
{
    DEVICE_OR_FAIL("event_record");
    return d->event_record(ctx, event, stream, err);
}

static sy_status front_event_sync(void *ctx, sy_event event, sy_error *err)
{
    DEVICE_OR_FAIL("event_sync");
    return d->event_sync(ctx, event, err);
}

static sy_status front_event_elapsed_ms(void *ctx, sy_event start, sy_event end, float *ms, sy_error *err)
{
    DEVICE_OR_FAIL("event_elapsed_ms");
    return d->event_elapsed_ms(ctx, start, end, ms, err);
}

static sy_status front_synth_fill(void *ctx, sy_stream stream, void *dst, uint64_t count, const sy_synth_spec *spec,
                                  sy_error *err)
{
    DEVICE_OR_FAIL("synth_fill");
    return d->synth_fill(ctx, stream, dst, count, spec, err);
}

static sy_status front_greedy_rows(void *ctx, sy_stream stream, const float *x, uint32_t rows, uint32_t cols,
                                   uint64_t row_stride, uint32_t *out, sy_error *err)
{
    DEVICE_OR_FAIL("greedy_rows");
    return d->greedy_rows(ctx, stream, x, rows, cols, row_stride, out, err);
}

static const sy_backend_desc front_backend = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_backend_desc),
    .name = SY_GPU_BACKEND_NAME,
    .version = "1.0.0",
    .description = SY_GPU_RUNTIME_NAME " " SY_GPU_TOOLKIT_VERSION " runtime; device code for " SY_GPU_ARCHS,
    .probe = front_probe,
    .init = front_init,
    .fini = front_fini,
    .device_info = front_device_info,
    .alloc = front_alloc,
    .free = front_free,
    .memcpy_async = front_memcpy_async,
    .memset_async = front_memset_async,
    .stream_create = front_stream_create,
    .stream_destroy = front_stream_destroy,
    .stream_sync = front_stream_sync,
    .event_create = front_event_create,
    .event_destroy = front_event_destroy,
    .event_record = front_event_record,
    .event_sync = front_event_sync,
    .event_elapsed_ms = front_event_elapsed_ms,
    .synth_fill = front_synth_fill,
    .greedy_rows = front_greedy_rows,
};

SY_EXPORT const sy_backend_desc *sy_backend_entry(uint32_t host_major, uint32_t host_minor);
SY_EXPORT const sy_backend_desc *sy_backend_entry(uint32_t host_major, uint32_t host_minor)
{
    (void)host_minor;
    return host_major == SY_ABI_MAJOR ? &front_backend : NULL;
}
