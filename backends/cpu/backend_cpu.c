/* The cpu backend: host memory, synchronous streams with the ordering contract, events on the
 * monotonic clock. Always built; the reference every other backend is compared against. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "switchyard/backend.h"
#include "sy_greedy.h"
#include "sy_synth.h"

#define CPU_ALIGNMENT 256

struct sy_stream_s {
    int unused;
};
struct sy_event_s {
    struct timespec when;
    int recorded;
};

static sy_status fail(sy_error *err, sy_status st, const char *msg)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "cpu backend: %s", msg);
    return st;
}

static int32_t cpu_probe(char *reason, size_t len)
{
    (void)reason;
    (void)len;
    return 1; /* always usable, but any GPU backend that probes successfully is preferred */
}

static sy_status cpu_init(int32_t device, void **ctx, sy_error *err)
{
    if (device != 0)
        return fail(err, SY_E_INVALID, "only device 0 exists");
    *ctx = NULL;
    return SY_OK;
}

static void cpu_fini(void *ctx)
{
    (void)ctx;
}

static uint64_t meminfo_kb(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    uint64_t value = 0;
    size_t klen = strlen(key);
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            value = strtoull(line + klen + 1, NULL, 10);
            break;
        }
    fclose(f);
    return value;
}

static sy_status cpu_device_info(void *ctx, sy_device_info *out, sy_error *err)
{
    (void)ctx;
    (void)err;
    struct utsname u;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    if (uname(&u) != 0)
        snprintf(u.machine, sizeof u.machine, "unknown");
    snprintf(out->name, sizeof out->name, "host (%s, %ld cores)", u.machine, cores);
    out->total_memory = meminfo_kb("MemTotal") * 1024u;
    out->free_memory = meminfo_kb("MemAvailable") * 1024u;
    out->multiprocessors = cores > 0 ? (uint32_t)cores : 1;
    out->warp_size = 1;
    return SY_OK;
}

static sy_status cpu_alloc(void *ctx, size_t bytes, void **ptr, sy_error *err)
{
    (void)ctx;
    size_t rounded = (bytes + CPU_ALIGNMENT - 1) / CPU_ALIGNMENT * CPU_ALIGNMENT;
    *ptr = aligned_alloc(CPU_ALIGNMENT, rounded ? rounded : CPU_ALIGNMENT);
    if (!*ptr) {
        if (err)
            snprintf(err->msg, sizeof err->msg, "cpu backend: cannot allocate %zu bytes of host memory", bytes);
        return SY_E_NOMEM;
    }
    return SY_OK;
}

static void cpu_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static sy_status cpu_memcpy(void *ctx, sy_stream stream, void *dst, const void *src, size_t bytes, int32_t kind,
                            sy_error *err)
{
    (void)ctx;
    (void)stream;
    if (kind < SY_MEMCPY_H2D || kind > SY_MEMCPY_D2D)
        return fail(err, SY_E_INVALID, "memcpy kind must be h2d, d2h or d2d");
    if (bytes)
        memmove(dst, src, bytes);
    return SY_OK;
}

static sy_status cpu_memset(void *ctx, sy_stream stream, void *dst, int value, size_t bytes, sy_error *err)
{
    (void)ctx;
    (void)stream;
    (void)err;
    if (bytes)
        memset(dst, value, bytes);
    return SY_OK;
}

static sy_status cpu_stream_create(void *ctx, sy_stream *out, sy_error *err)
{
    (void)ctx;
    *out = calloc(1, sizeof **out);
    return *out ? SY_OK : fail(err, SY_E_NOMEM, "cannot allocate a stream");
}

static void cpu_stream_destroy(void *ctx, sy_stream s)
{
    (void)ctx;
    free(s);
}

static sy_status cpu_stream_sync(void *ctx, sy_stream s, sy_error *err)
{
    (void)ctx;
    (void)s;
    (void)err;
    return SY_OK; /* every operation completed when it returned */
}

static sy_status cpu_event_create(void *ctx, sy_event *out, sy_error *err)
{
    (void)ctx;
    *out = calloc(1, sizeof **out);
    return *out ? SY_OK : fail(err, SY_E_NOMEM, "cannot allocate an event");
}

static void cpu_event_destroy(void *ctx, sy_event e)
{
    (void)ctx;
    free(e);
}

static sy_status cpu_event_record(void *ctx, sy_event e, sy_stream s, sy_error *err)
{
    (void)ctx;
    (void)s;
    (void)err;
    clock_gettime(CLOCK_MONOTONIC, &e->when);
    e->recorded = 1;
    return SY_OK;
}

static sy_status cpu_event_sync(void *ctx, sy_event e, sy_error *err)
{
    (void)ctx;
    return e->recorded ? SY_OK : fail(err, SY_E_INVALID, "event synchronized before it was recorded");
}

static sy_status cpu_event_elapsed(void *ctx, sy_event a, sy_event b, float *ms, sy_error *err)
{
    (void)ctx;
    if (!a->recorded || !b->recorded)
        return fail(err, SY_E_INVALID, "elapsed time of an event that was never recorded");
    *ms = (float)((double)(b->when.tv_sec - a->when.tv_sec) * 1e3 + (double)(b->when.tv_nsec - a->when.tv_nsec) * 1e-6);
    return SY_OK;
}

static sy_status cpu_synth_fill(void *ctx, sy_stream s, void *dst, uint64_t count, const sy_synth_spec *spec,
                                sy_error *err)
{
    (void)ctx;
    (void)s;
    if (spec->kind < SY_SYNTH_BF16_UNIFORM || spec->kind > SY_SYNTH_E8M0)
        return fail(err, SY_E_INVALID, "synth_fill: unknown synthetic tensor kind");
    for (uint64_t i = 0; i < count; i++) {
        uint16_t v = sy_synth_element(spec->kind, spec->seed, spec->tensor, i, spec->scale, spec->offset,
                                      spec->e8m0_base, spec->e8m0_span);
        if (spec->kind == SY_SYNTH_BF16_UNIFORM)
            ((uint16_t *)dst)[i] = v;
        else
            ((uint8_t *)dst)[i] = (uint8_t)v;
    }
    return SY_OK;
}

static sy_status cpu_greedy_rows(void *ctx, sy_stream s, const float *x, uint32_t rows, uint32_t cols,
                                 uint64_t row_stride, uint32_t *out, sy_error *err)
{
    (void)ctx;
    (void)s;
    const char *invalid = sy_greedy_rows_invalid(x, rows, cols, row_stride, out);
    if (invalid)
        return fail(err, SY_E_INVALID, invalid);
    for (uint32_t r = 0; r < rows; r++)
        out[r] = sy_greedy_token(x + (size_t)r * row_stride, cols);
    return SY_OK;
}

static const sy_backend_desc cpu_backend = {
    .abi_major = SY_ABI_MAJOR,
    .abi_minor = SY_ABI_MINOR,
    .struct_size = sizeof(sy_backend_desc),
    .name = "cpu",
    .version = "1.0.0",
    .description = "host memory and threads; synchronous streams; the reference backend",
    .probe = cpu_probe,
    .init = cpu_init,
    .fini = cpu_fini,
    .device_info = cpu_device_info,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .memcpy_async = cpu_memcpy,
    .memset_async = cpu_memset,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_sync = cpu_stream_sync,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_sync = cpu_event_sync,
    .event_elapsed_ms = cpu_event_elapsed,
    .synth_fill = cpu_synth_fill,
    .greedy_rows = cpu_greedy_rows,
};

SY_EXPORT const sy_backend_desc *sy_backend_entry(uint32_t host_major, uint32_t host_minor);
SY_EXPORT const sy_backend_desc *sy_backend_entry(uint32_t host_major, uint32_t host_minor)
{
    (void)host_minor;
    return host_major == SY_ABI_MAJOR ? &cpu_backend : NULL;
}
