/* The cuda and hip backends: one C11 source over the vendor shim, built once per toolkit
 * (backends/cuda, backends/hip) into the device library that the backend's front
 * (gpu_backend_front.c) opens from <plugins>/<vendor>/. Device memory comes from plain gpuMalloc,
 * never managed memory, so that allocations are device-resident and failures are immediate.
 * Streams and events are the runtime's own handles (gpu_runtime.h). Every call selects the
 * context's device first, so one process can drive several devices from any thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_greedy.h"
#include "gpu_runtime.h"
#include "gpu_synth.h"
#include "switchyard/backend.h"
#include "sy_greedy.h"

#ifndef SY_GPU_ARCHS
#define SY_GPU_ARCHS "unknown"
#endif
#ifndef SY_GPU_TOOLKIT_VERSION
#define SY_GPU_TOOLKIT_VERSION "unknown"
#endif

/* Preferred over the cpu backend (score 1) under `backend: auto` whenever a device is usable. */
#define GPU_PROBE_SCORE 100

typedef struct gpu_ctx {
    int device;
} gpu_ctx;

static sy_status fail_invalid(sy_error *err, const char *what)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "%s backend: %s", SY_GPU_BACKEND_NAME, what);
    return SY_E_INVALID;
}

static int32_t gpu_probe(char *reason, size_t reason_len)
{
    int count = 0;
#if defined(SY_VENDOR_HIP)
    /* ROCm reaches the GPU only through the amdgpu driver's /dev/kfd. Without it, HIP 5.2's runtime
     * fails to initialize and leaks what it had allocated into every process that probes it. */
    if (access("/dev/kfd", F_OK) != 0) {
        if (reason && reason_len)
            snprintf(reason, reason_len, "/dev/kfd is missing: no AMD GPU driver (amdgpu with KFD) on this machine");
        return 0;
    }
#endif
    gpuError_t status = gpuGetDeviceCount(&count);
    if (status != gpuSuccess) {
        char what[192];
        sy_gpu_describe(status, what, sizeof what);
        if (reason && reason_len)
            snprintf(reason, reason_len, "%s: %s: no usable driver or device", SY_GPU_STR(gpuGetDeviceCount), what);
        return 0;
    }
    if (count <= 0) {
        if (reason && reason_len)
            snprintf(reason, reason_len, "%s reports no device", SY_GPU_STR(gpuGetDeviceCount));
        return 0;
    }
    return GPU_PROBE_SCORE;
}

static sy_status gpu_init(int32_t device, void **ctx, sy_error *err)
{
    int count = 0;
    *ctx = NULL;
    SY_GPU_CHECK(err, gpuGetDeviceCount(&count));
    if (device < 0 || device >= count) {
        if (err)
            snprintf(err->msg, sizeof err->msg, "%s backend: device %d requested, but %d device(s) are present",
                     SY_GPU_BACKEND_NAME, (int)device, count);
        return SY_E_INVALID;
    }
    SY_GPU_CHECKF(err, gpuSetDevice(device), "for device %d", (int)device);
    SY_GPU_CHECKF(err, gpuInitDeviceContext(), "creating the context of device %d", (int)device);
    gpu_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        if (err)
            snprintf(err->msg, sizeof err->msg, "%s backend: cannot allocate its context", SY_GPU_BACKEND_NAME);
        return SY_E_NOMEM;
    }
    c->device = device;
    *ctx = c;
    return SY_OK;
}

/* Leaves the device's context alone: other users in the process (plugins, the embedder) share it. */
static void gpu_fini(void *ctx)
{
    free(ctx);
}

/* Copies a runtime string into a fixed field, cutting it at the field's size. */
static void copy_text(char *dst, size_t dst_size, const char *src, size_t src_size)
{
    size_t n = strnlen(src, src_size);
    if (n >= dst_size)
        n = dst_size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static sy_status select_device(const gpu_ctx *c, sy_error *err)
{
    SY_GPU_CHECKF(err, gpuSetDevice(c->device), "for device %d", c->device);
    return SY_OK;
}

static sy_status gpu_device_info(void *ctx, sy_device_info *out, sy_error *err)
{
    const gpu_ctx *c = ctx;
    gpuDeviceProp_t prop;
    size_t free_bytes = 0, total_bytes = 0;
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECKF(err, gpuGetDeviceProperties(&prop, c->device), "of device %d", c->device);
    SY_GPU_CHECKF(err, gpuMemGetInfo(&free_bytes, &total_bytes), "of device %d", c->device);
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    copy_text(out->name, sizeof out->name, prop.name, sizeof prop.name);
#if defined(SY_VENDOR_HIP)
    /* Some ROCm releases leave the marketing name empty; the gfx target still names the chip. */
    if (!out->name[0])
        copy_text(out->name, sizeof out->name, prop.gcnArchName, sizeof prop.gcnArchName);
#endif
    out->total_memory = total_bytes;
    out->free_memory = free_bytes;
    out->multiprocessors = prop.multiProcessorCount > 0 ? (uint32_t)prop.multiProcessorCount : 0;
    out->warp_size = prop.warpSize > 0 ? (uint32_t)prop.warpSize : 0;
    out->cc_major = prop.major > 0 ? (uint32_t)prop.major : 0;
    out->cc_minor = prop.minor > 0 ? (uint32_t)prop.minor : 0;
    out->l2_bytes = prop.l2CacheSize > 0 ? (uint64_t)prop.l2CacheSize : 0;
    return SY_OK;
}

static sy_status gpu_alloc(void *ctx, size_t bytes, void **ptr, sy_error *err)
{
    const gpu_ctx *c = ctx;
    /* A zero-byte request still gets a distinct pointer, as on the cpu backend. */
    size_t request = bytes ? bytes : 1;
    *ptr = NULL;
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECKF(err, gpuMalloc(ptr, request), "for %zu bytes on device %d", bytes, c->device);
    return SY_OK;
}

/* Errors have nowhere to go here; a failing free means the context is already broken, and the next
 * checked call reports that. */
static void gpu_free(void *ctx, void *ptr)
{
    const gpu_ctx *c = ctx;
    if (!ptr)
        return;
    if (gpuSetDevice(c->device) == gpuSuccess)
        (void)gpuFree(ptr);
}

static sy_status gpu_memcpy_async(void *ctx, sy_stream stream, void *dst, const void *src, size_t bytes,
                                  int32_t kind, sy_error *err)
{
    const gpu_ctx *c = ctx;
    gpuMemcpyKind runtime_kind;
    switch (kind) {
    case SY_MEMCPY_H2D: runtime_kind = gpuMemcpyHostToDevice; break;
    case SY_MEMCPY_D2H: runtime_kind = gpuMemcpyDeviceToHost; break;
    case SY_MEMCPY_D2D: runtime_kind = gpuMemcpyDeviceToDevice; break;
    default:
        if (err)
            snprintf(err->msg, sizeof err->msg,
                     "%s backend: memcpy kind %d is not h2d (%d), d2h (%d) or d2d (%d)", SY_GPU_BACKEND_NAME,
                     (int)kind, SY_MEMCPY_H2D, SY_MEMCPY_D2H, SY_MEMCPY_D2D);
        return SY_E_INVALID;
    }
    if (!bytes)
        return SY_OK;
    if (!dst || !src)
        return fail_invalid(err, !dst ? "memcpy destination is NULL" : "memcpy source is NULL");
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECKF(err, gpuMemcpyAsync(dst, src, bytes, runtime_kind, sy_gpu_stream(stream)),
                  "for %zu bytes (kind %d) from %p to %p", bytes, (int)kind, src, dst);
    return SY_OK;
}

static sy_status gpu_memset_async(void *ctx, sy_stream stream, void *dst, int value, size_t bytes, sy_error *err)
{
    const gpu_ctx *c = ctx;
    if (!bytes)
        return SY_OK;
    if (!dst)
        return fail_invalid(err, "memset destination is NULL");
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECKF(err, gpuMemsetAsync(dst, value, bytes, sy_gpu_stream(stream)), "for %zu bytes of 0x%02x at %p",
                  bytes, (unsigned)value & 0xFFu, dst);
    return SY_OK;
}

/* Blocking streams (plain gpuStreamCreate): they stay ordered with work on the default stream, which
 * is what NULL means in the ABI. */
static sy_status gpu_stream_create(void *ctx, sy_stream *out, sy_error *err)
{
    const gpu_ctx *c = ctx;
    gpuStream_t s = NULL;
    *out = NULL;
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECKF(err, gpuStreamCreate(&s), "on device %d", c->device);
    *out = (sy_stream)(void *)s;
    return SY_OK;
}

static void gpu_stream_destroy(void *ctx, sy_stream stream)
{
    const gpu_ctx *c = ctx;
    if (stream && gpuSetDevice(c->device) == gpuSuccess)
        (void)gpuStreamDestroy(sy_gpu_stream(stream));
}

static sy_status gpu_stream_sync(void *ctx, sy_stream stream, sy_error *err)
{
    const gpu_ctx *c = ctx;
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECKF(err, gpuStreamSynchronize(sy_gpu_stream(stream)), "on device %d", c->device);
    return SY_OK;
}

static sy_status gpu_event_create(void *ctx, sy_event *out, sy_error *err)
{
    const gpu_ctx *c = ctx;
    gpuEvent_t e = NULL;
    *out = NULL;
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECKF(err, gpuEventCreate(&e), "on device %d", c->device);
    *out = (sy_event)(void *)e;
    return SY_OK;
}

static void gpu_event_destroy(void *ctx, sy_event event)
{
    const gpu_ctx *c = ctx;
    if (event && gpuSetDevice(c->device) == gpuSuccess)
        (void)gpuEventDestroy(sy_gpu_event(event));
}

static sy_status gpu_event_record(void *ctx, sy_event event, sy_stream stream, sy_error *err)
{
    const gpu_ctx *c = ctx;
    if (!event)
        return fail_invalid(err, "event_record: the event is NULL");
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECK(err, gpuEventRecord(sy_gpu_event(event), sy_gpu_stream(stream)));
    return SY_OK;
}

static sy_status gpu_event_sync(void *ctx, sy_event event, sy_error *err)
{
    const gpu_ctx *c = ctx;
    if (!event)
        return fail_invalid(err, "event_sync: the event is NULL");
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECK(err, gpuEventSynchronize(sy_gpu_event(event)));
    return SY_OK;
}

static sy_status gpu_event_elapsed_ms(void *ctx, sy_event start, sy_event end, float *ms, sy_error *err)
{
    const gpu_ctx *c = ctx;
    if (!start || !end)
        return fail_invalid(err, !start ? "event_elapsed_ms: the start event is NULL"
                                        : "event_elapsed_ms: the end event is NULL");
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECKF(err, gpuEventElapsedTime(ms, sy_gpu_event(start), sy_gpu_event(end)),
                  "(both events must have been recorded and the end event completed)");
    return SY_OK;
}

static sy_status gpu_synth_fill(void *ctx, sy_stream stream, void *dst, uint64_t count, const sy_synth_spec *spec,
                                sy_error *err)
{
    const gpu_ctx *c = ctx;
    if (spec->kind < SY_SYNTH_BF16_UNIFORM || spec->kind > SY_SYNTH_E8M0)
        return fail_invalid(err, "synth_fill: unknown synthetic tensor kind");
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECKF(err, (gpuError_t)sy_gpu_synth_fill((void *)sy_gpu_stream(stream), dst, count, spec),
                  "synthetic tensor %u, %llu elements, on device %d", spec->tensor, (unsigned long long)count,
                  c->device);
    return SY_OK;
}

static sy_status gpu_greedy_rows(void *ctx, sy_stream stream, const float *x, uint32_t rows, uint32_t cols,
                                 uint64_t row_stride, uint32_t *out, sy_error *err)
{
    const gpu_ctx *c = ctx;
    const char *invalid = sy_greedy_rows_invalid(x, rows, cols, row_stride, out);
    if (invalid)
        return fail_invalid(err, invalid);
    sy_status st = select_device(c, err);
    if (st != SY_OK)
        return st;
    SY_GPU_CHECKF(err, (gpuError_t)sy_gpu_greedy_rows((void *)sy_gpu_stream(stream), x, rows, cols, row_stride, out),
                  "greedy tokens of %u rows of %u logits on device %d", rows, cols, c->device);
    return SY_OK;
}

static const sy_backend_desc gpu_backend = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_backend_desc),
    .name = SY_GPU_BACKEND_NAME,
    .version = "1.0.0",
    .description = SY_GPU_RUNTIME_NAME " " SY_GPU_TOOLKIT_VERSION " runtime; device code for " SY_GPU_ARCHS,
    .probe = gpu_probe,
    .init = gpu_init,
    .fini = gpu_fini,
    .device_info = gpu_device_info,
    .alloc = gpu_alloc,
    .free = gpu_free,
    .memcpy_async = gpu_memcpy_async,
    .memset_async = gpu_memset_async,
    .stream_create = gpu_stream_create,
    .stream_destroy = gpu_stream_destroy,
    .stream_sync = gpu_stream_sync,
    .event_create = gpu_event_create,
    .event_destroy = gpu_event_destroy,
    .event_record = gpu_event_record,
    .event_sync = gpu_event_sync,
    .event_elapsed_ms = gpu_event_elapsed_ms,
    .synth_fill = gpu_synth_fill,
    .greedy_rows = gpu_greedy_rows,
};

/* The device library's entry point, opened by the front (gpu_backend_front.c) under a name of its
 * own: sy_device_library.h. */
SY_EXPORT const sy_backend_desc *sy_device_backend_entry(uint32_t host_major, uint32_t host_minor);
SY_EXPORT const sy_backend_desc *sy_device_backend_entry(uint32_t host_major, uint32_t host_minor)
{
    (void)host_minor;
    return host_major == SY_ABI_MAJOR ? &gpu_backend : NULL;
}
