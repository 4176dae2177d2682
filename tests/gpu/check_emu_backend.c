/* The emulated checks' backend over host memory (check_emu_backend.h). */
#include "check_emu_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SY_EMU_WARP_SIZE
#error "SY_EMU_WARP_SIZE must give the emulated warp width"
#endif

static sy_status emu_alloc(void *ctx, size_t bytes, void **ptr, sy_error *err)
{
    (void)ctx;
    /* 256-byte aligned, as the GPU runtimes' allocations are at least, and exactly `bytes` long, so
     * that the sanitizers see a kernel's access past the end of its buffer. */
    if (posix_memalign(ptr, 256, bytes ? bytes : 1) == 0)
        return SY_OK;
    *ptr = NULL;
    snprintf(err->msg, sizeof err->msg, "out of host memory for %zu bytes of emulated device memory", bytes);
    return SY_E_NOMEM;
}

static void emu_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static sy_status emu_memcpy(void *ctx, sy_stream s, void *dst, const void *src, size_t bytes, int32_t kind,
                            sy_error *err)
{
    (void)ctx, (void)s, (void)kind, (void)err;
    memcpy(dst, src, bytes);
    return SY_OK;
}

static sy_status emu_memset(void *ctx, sy_stream s, void *dst, int value, size_t bytes, sy_error *err)
{
    (void)ctx, (void)s, (void)err;
    memset(dst, value, bytes);
    return SY_OK;
}

static sy_status emu_sync(void *ctx, sy_stream s, sy_error *err)
{
    (void)ctx, (void)s, (void)err;
    return SY_OK;
}

static sy_status emu_device_info(void *ctx, sy_device_info *out, sy_error *err)
{
    (void)ctx, (void)err;
    snprintf(out->name, sizeof out->name, "CPU emulator of the GPU dialect, warp %d", SY_EMU_WARP_SIZE);
    out->multiprocessors = 132;
    out->warp_size = SY_EMU_WARP_SIZE;
    return SY_OK;
}

static sy_status emu_stream_create(void *ctx, sy_stream *out, sy_error *err)
{
    (void)ctx, (void)err;
    *out = NULL;
    return SY_OK;
}

static void emu_stream_destroy(void *ctx, sy_stream s)
{
    (void)ctx, (void)s;
}

static void emu_fini(void *ctx)
{
    (void)ctx;
}

static sy_status emu_init(int32_t device, void **ctx, sy_error *err)
{
    (void)device, (void)err;
    *ctx = NULL;
    return SY_OK;
}

const sy_backend_desc sy_check_emu_backend = {
    .name = "emu", .init = emu_init, .fini = emu_fini, .device_info = emu_device_info, .alloc = emu_alloc,
    .free = emu_free, .memcpy_async = emu_memcpy, .memset_async = emu_memset, .stream_create = emu_stream_create,
    .stream_destroy = emu_stream_destroy, .stream_sync = emu_sync,
};
