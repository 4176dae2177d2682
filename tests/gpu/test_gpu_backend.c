/* The cuda / hip backend and the GPU plugin convention. Built once per enabled toolkit, with
 * SY_TEST_GPU_BACKEND naming the backend. Where the backend's probe returns 0 (no driver, no
 * device) the device cases are skipped with "skipped: no GPU (reason)" and the cases that need no
 * device still run: the libraries load, the descriptors are right, host-side argument checks work.
 *
 * Runs without fork: a GPU runtime initialized in a parent is unusable in its forked children. */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sy_synth.h"
#include "sy_test.h"
#include "sy_test_greedy.h"
#include "switchyard/switchyard.h"

#ifndef SY_TEST_GPU_BACKEND
#error "SY_TEST_GPU_BACKEND must name the backend under test (\"cuda\" or \"hip\")"
#endif

static sy_registry *registry;
static const sy_registry_entry *backend_entry;
static const sy_backend_desc *backend;
static void *ctx; /* the backend's context, per device case */

/* ------------------------------------------------------------------------------------------ */
/* set-up                                                                                      */

/* Folders relative to this executable (build/tests/), so that a copied build tree finds its own
 * libraries: the backends beside libswitchyard and the fixture plugin in tests/plugins. */
static void open_registry(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "cannot read /proc/self/exe\n");
        exit(1);
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    *slash = '\0';
    static char plugins_dir[PATH_MAX + 32], fixtures_dir[PATH_MAX + 32];
    snprintf(plugins_dir, sizeof plugins_dir, "%s/../lib/switchyard/plugins", exe);
    snprintf(fixtures_dir, sizeof fixtures_dir, "%s/plugins", exe);
    static const char *paths[2];
    paths[0] = plugins_dir;
    paths[1] = fixtures_dir;
    sy_registry_options opts = {0};
    opts.struct_size = sizeof opts;
    opts.plugin_paths = paths;
    opts.n_plugin_paths = 2;
    sy_error err = {{0}};
    if (sy_registry_open(&opts, &registry, &err) != SY_OK) {
        fprintf(stderr, "sy_registry_open: %s\n", err.msg);
        exit(1);
    }
    backend_entry = sy_registry_find_backend(registry, SY_TEST_GPU_BACKEND);
    if (!backend_entry) {
        fprintf(stderr, "backend '%s' is not loaded; registry entries:\n", SY_TEST_GPU_BACKEND);
        for (size_t i = 0; i < sy_registry_count(registry); i++) {
            const sy_registry_entry *e = sy_registry_get(registry, i);
            fprintf(stderr, "  %s: %s %s\n", e->file, sy_stage_name(e->stage), e->reason);
        }
        exit(1);
    }
    backend = backend_entry->backend;
}

static void device_setup(void)
{
    sy_error err = {{0}};
    ck_assert_msg(backend->init(0, &ctx, &err) == SY_OK, "init(0): %s", err.msg);
}

static void device_teardown(void)
{
    backend->fini(ctx);
    ctx = NULL;
}

static const sy_plugin_desc *fixture(const char *backend_name)
{
    const sy_registry_entry *e = sy_registry_find(registry, SY_KIND_LINEAR, "gpu_linear_fixture", backend_name);
    ck_assert_msg(e != NULL, "gpu_linear_fixture for backend '%s' was not loaded from tests/plugins", backend_name);
    return e->plugin;
}

static void fill_random_bytes(sy_rng *rng, unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(sy_rng_next(rng) >> 56);
}

/* Index of the first differing byte, or -1. */
static long long first_difference(const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return (long long)i;
    return -1;
}

/* Synchronous helpers over the async ABI, failing the case with the backend's message. */
static void copy_sync(void *dst, const void *src, size_t bytes, int32_t kind)
{
    sy_error err = {{0}};
    ck_assert_msg(backend->memcpy_async(ctx, NULL, dst, src, bytes, kind, &err) == SY_OK, "memcpy_async: %s", err.msg);
    ck_assert_msg(backend->stream_sync(ctx, NULL, &err) == SY_OK, "stream_sync: %s", err.msg);
}

static void *device_alloc(size_t bytes)
{
    sy_error err = {{0}};
    void *p = NULL;
    ck_assert_msg(backend->alloc(ctx, bytes, &p, &err) == SY_OK, "alloc(%zu): %s", bytes, err.msg);
    return p;
}

/* ------------------------------------------------------------------------------------------ */
/* cases that need no device                                                                   */

START_TEST(test_backend_descriptor)
{
    ck_assert_str_eq(backend->name, SY_TEST_GPU_BACKEND);
    ck_assert_int_eq(backend_entry->stage, SY_STAGE_NONE);
    ck_assert_msg(backend->description && backend->description[0], "empty description");
    ck_assert_msg(strstr(backend_entry->file, "libsy_backend_" SY_TEST_GPU_BACKEND ".so") != NULL, "loaded from %s",
                  backend_entry->file);
    /* The cpu backend scores 1; a usable GPU must win `backend: auto`. */
    if (backend_entry->probe_score > 0)
        ck_assert_int_gt(backend_entry->probe_score, 1);
    else
        ck_assert_msg(backend_entry->probe_reason[0] != '\0', "probe returned 0 without a reason");
}
END_TEST

/* The descriptor of each variant comes from the same plugin.c; the backend string from the build. */
START_TEST(test_fixture_descriptors)
{
    const sy_plugin_desc *gpu = fixture(SY_TEST_GPU_BACKEND);
    const sy_plugin_desc *cpu = fixture("cpu");
    ck_assert_str_eq(gpu->backend, SY_TEST_GPU_BACKEND);
    ck_assert_str_eq(cpu->backend, "cpu");
    ck_assert_int_eq(gpu->kind, SY_KIND_LINEAR);
    ck_assert_str_eq(gpu->name, cpu->name);
    ck_assert_ptr_ne(((const sy_linear_ops *)gpu->ops)->linear, ((const sy_linear_ops *)cpu->ops)->linear);
    const sy_registry_entry *e = sy_registry_find(registry, SY_KIND_LINEAR, "gpu_linear_fixture", SY_TEST_GPU_BACKEND);
    ck_assert_msg(strstr(e->file, "tests/plugins/libsy_gpu_linear_fixture_" SY_TEST_GPU_BACKEND ".so") != NULL,
                  "loaded from %s", e->file);
}
END_TEST

/* A shape error is caught on the host before anything reaches the device. */
START_TEST(test_fixture_rejects_bad_shapes)
{
    const sy_linear_ops *ops = fixture(SY_TEST_GPU_BACKEND)->ops;
    static float dummy[1];
    int64_t xs[2] = {3, 7}, ws[2] = {5, 8}, ys[2] = {3, 5};
    sy_linear_args a = {0};
    a.struct_size = sizeof a;
    a.x = sy_tensor_contiguous(dummy, SY_DTYPE_F32, 2, xs);
    a.w = sy_tensor_contiguous(dummy, SY_DTYPE_F32, 2, ws);
    a.y = sy_tensor_contiguous(dummy, SY_DTYPE_F32, 2, ys);
    sy_error err = {{0}};
    ck_assert_int_eq(ops->linear(NULL, NULL, &a, &err), SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "w.shape[1] (K) is 8, expected 7") != NULL, "message: %s", err.msg);
    ck_assert_msg(strstr(err.msg, "(" SY_TEST_GPU_BACKEND ")") != NULL, "message does not name the backend: %s",
                  err.msg);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* device cases                                                                                */

START_TEST(test_device_info)
{
    sy_device_info info;
    sy_error err = {{0}};
    memset(&info, 0xA5, sizeof info);
    ck_assert_msg(backend->device_info(ctx, &info, &err) == SY_OK, "device_info: %s", err.msg);
    printf("%s device 0: %s, %.1f GiB (%.1f free), %u multiprocessors, warp %u, cc %u.%u, L2 %.1f MiB\n",
           backend->name, info.name, (double)info.total_memory / 1073741824.0,
           (double)info.free_memory / 1073741824.0, info.multiprocessors, info.warp_size, info.cc_major,
           info.cc_minor, (double)info.l2_bytes / 1048576.0);
    ck_assert_uint_eq(info.struct_size, sizeof info);
    ck_assert_msg(info.name[0] != '\0' && memchr(info.name, '\0', sizeof info.name) != NULL, "bad name");
    ck_assert_msg(info.total_memory >= (1ull << 30), "total memory %llu", (unsigned long long)info.total_memory);
    ck_assert_msg(info.free_memory > 0 && info.free_memory <= info.total_memory, "free %llu of %llu",
                  (unsigned long long)info.free_memory, (unsigned long long)info.total_memory);
    ck_assert_uint_gt(info.multiprocessors, 0);
    ck_assert_msg(info.warp_size == 32 || info.warp_size == 64, "warp size %u", info.warp_size);
    ck_assert_uint_gt(info.cc_major, 0);
    ck_assert_msg(info.l2_bytes >= (1ull << 20), "L2 %llu bytes", (unsigned long long)info.l2_bytes);
}
END_TEST

START_TEST(test_alloc_free)
{
    static const size_t sizes[] = {0, 1, 255, 257, 4097, (1u << 20) + 3, (64u << 20) + 129};
    enum { N_SIZES = sizeof sizes / sizeof sizes[0] };
    void *ptrs[N_SIZES];
    for (int i = 0; i < N_SIZES; i++) {
        ptrs[i] = device_alloc(sizes[i]);
        ck_assert_msg(ptrs[i] != NULL, "alloc(%zu) returned NULL", sizes[i]);
        ck_assert_msg((uintptr_t)ptrs[i] % 256 == 0, "alloc(%zu) = %p is not 256-byte aligned", sizes[i], ptrs[i]);
        for (int j = 0; j < i; j++)
            ck_assert_ptr_ne(ptrs[i], ptrs[j]);
    }
    /* The memory is usable to its last byte. */
    unsigned char probe = 0x5A, back = 0;
    size_t last = sizes[N_SIZES - 1] - 1;
    copy_sync((unsigned char *)ptrs[N_SIZES - 1] + last, &probe, 1, SY_MEMCPY_H2D);
    copy_sync(&back, (unsigned char *)ptrs[N_SIZES - 1] + last, 1, SY_MEMCPY_D2H);
    ck_assert_uint_eq(back, probe);
    for (int i = 0; i < N_SIZES; i++)
        backend->free(ctx, ptrs[i]);
    backend->free(ctx, NULL);
}
END_TEST

/* h2d, d2d (to an odd offset), d2h of random bytes at a size that is no power of two. */
START_TEST(test_memcpy_round_trip)
{
    sy_rng rng = {sy_test_seed()};
    const size_t bytes = (3u << 20) + 17 + sy_rng_below(&rng, 4096);
    const size_t offset = 1 + sy_rng_below(&rng, 255);
    unsigned char *src = malloc(bytes), *out = malloc(bytes);
    ck_assert(src && out);
    fill_random_bytes(&rng, src, bytes);
    sy_poison_bytes(out, bytes);
    unsigned char *a = device_alloc(bytes), *b = device_alloc(bytes + offset);
    copy_sync(a, src, bytes, SY_MEMCPY_H2D);
    copy_sync(b + offset, a, bytes, SY_MEMCPY_D2D);
    copy_sync(out, b + offset, bytes, SY_MEMCPY_D2H);
    long long diff = first_difference(out, src, bytes);
    ck_assert_msg(diff < 0, "round trip of %zu bytes (offset %zu) differs at byte %lld", bytes, offset, diff);
    backend->free(ctx, a);
    backend->free(ctx, b);
    free(src);
    free(out);
}
END_TEST

/* memset touches exactly [offset, offset + length) and nothing around it. */
START_TEST(test_memset)
{
    sy_rng rng = {sy_test_seed()};
    const size_t bytes = (1u << 20) + 777;
    const size_t offset = 3 + sy_rng_below(&rng, 1000), length = 12345 + sy_rng_below(&rng, 100000);
    const int value = 1 + (int)sy_rng_below(&rng, 254);
    unsigned char *host = malloc(bytes), *expect = malloc(bytes), *out = malloc(bytes);
    ck_assert(host && expect && out);
    fill_random_bytes(&rng, host, bytes);
    memcpy(expect, host, bytes);
    memset(expect + offset, value, length);
    sy_poison_bytes(out, bytes);
    unsigned char *d = device_alloc(bytes);
    copy_sync(d, host, bytes, SY_MEMCPY_H2D);
    sy_error err = {{0}};
    ck_assert_msg(backend->memset_async(ctx, NULL, d + offset, value, length, &err) == SY_OK, "memset: %s", err.msg);
    copy_sync(out, d, bytes, SY_MEMCPY_D2H);
    long long diff = first_difference(out, expect, bytes);
    ck_assert_msg(diff < 0, "memset of %zu bytes of 0x%02x at %zu: byte %lld is wrong", length, value, offset, diff);
    backend->free(ctx, d);
    free(host);
    free(expect);
    free(out);
}
END_TEST

/* synth_fill on the device equals the generator of plugins/common/sy_synth.h run here, bit for bit,
 * for each kind, at a count past the kernel's grid (65536 blocks of 256, so its grid-stride loop
 * runs) and a small random one, at an offset into a buffer whose bytes around the tensor must stay. */
START_TEST(test_synth_fill_matches_host)
{
    ck_assert_msg(SY_HAS_MEMBER(backend->struct_size, sy_backend_desc, synth_fill) && backend->synth_fill,
                  "the %s backend declares no synth_fill", SY_TEST_GPU_BACKEND);
    sy_rng rng = {sy_test_seed()};
    const uint64_t counts[] = {65536ull * 256ull * 2ull + 12345ull, 1 + sy_rng_below(&rng, 100000)};
    const uint32_t kinds[] = {SY_SYNTH_BF16_UNIFORM, SY_SYNTH_BYTES, SY_SYNTH_E8M0};
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++)
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            sy_synth_spec spec = {0};
            spec.struct_size = sizeof spec;
            spec.kind = kinds[ki];
            spec.seed = sy_rng_next(&rng);
            spec.tensor = (uint32_t)sy_rng_below(&rng, 1u << 20);
            spec.scale = 0.01f + (float)sy_rng_below(&rng, 1000) / 997.0f;
            spec.offset = ki == 0 && ci == 1 ? 1.0f : 0.0f;
            spec.e8m0_base = 100 + (uint32_t)sy_rng_below(&rng, 20);
            spec.e8m0_span = 1 + (uint32_t)sy_rng_below(&rng, 9);
            const size_t elem = kinds[ki] == SY_SYNTH_BF16_UNIFORM ? 2 : 1, offset = 2 * (1 + sy_rng_below(&rng, 7));
            const size_t tensor_bytes = counts[ci] * elem, bytes = offset + tensor_bytes + 64;
            unsigned char *expect = malloc(bytes), *out = malloc(bytes);
            ck_assert(expect && out);
            fill_random_bytes(&rng, expect, bytes);
            for (uint64_t i = 0; i < counts[ci]; i++) {
                const uint16_t v = sy_synth_element(spec.kind, spec.seed, spec.tensor, i, spec.scale, spec.offset,
                                                    spec.e8m0_base, spec.e8m0_span);
                if (elem == 2)
                    memcpy(expect + offset + 2 * i, &v, 2);
                else
                    expect[offset + i] = (unsigned char)v;
            }
            /* The device starts from the expected bytes around the tensor and their complement in it,
             * so an element left unwritten differs in every bit. */
            for (size_t i = offset; i < offset + tensor_bytes; i++)
                out[i] = (unsigned char)~expect[i];
            memcpy(out, expect, offset);
            memcpy(out + offset + tensor_bytes, expect + offset + tensor_bytes, 64);
            unsigned char *d = device_alloc(bytes);
            copy_sync(d, out, bytes, SY_MEMCPY_H2D);
            sy_error err = {{0}};
            ck_assert_msg(backend->synth_fill(ctx, NULL, d + offset, counts[ci], &spec, &err) == SY_OK,
                          "synth_fill: %s", err.msg);
            sy_poison_bytes(out, bytes);
            copy_sync(out, d, bytes, SY_MEMCPY_D2H);
            const long long diff = first_difference(out, expect, bytes);
            ck_assert_msg(diff < 0, "synth_fill kind %u, %llu elements at byte %zu: byte %lld differs from the host's",
                          spec.kind, (unsigned long long)counts[ci], offset, diff);
            backend->free(ctx, d);
            free(expect);
            free(out);
        }
}
END_TEST

/* A chain of dependent operations on one created stream, synchronized only at the end: any
 * reordering leaves a wrong byte. The buffers are large enough that the copies take real time. */
START_TEST(test_stream_ordering)
{
    sy_rng rng = {sy_test_seed()};
    const size_t bytes = (48u << 20) + 4099;
    unsigned char *host = malloc(bytes), *expect = malloc(bytes), *out = malloc(bytes);
    ck_assert(host && expect && out);
    fill_random_bytes(&rng, host, bytes);
    unsigned char *a = device_alloc(bytes), *b = device_alloc(bytes), *c = device_alloc(bytes);
    sy_stream s = NULL;
    sy_error err = {{0}};
    ck_assert_msg(backend->stream_create(ctx, &s, &err) == SY_OK, "stream_create: %s", err.msg);
    for (int round = 0; round < 3; round++) {
        const size_t head = 1 + sy_rng_below(&rng, (uint32_t)(bytes / 2));
        const int value = 1 + (int)sy_rng_below(&rng, 254);
        memcpy(expect, host, bytes);
        memset(expect, value, head);
        sy_poison_bytes(out, bytes);
#define ENQUEUE(call) ck_assert_msg((call) == SY_OK, #call ": %s", err.msg)
        ENQUEUE(backend->memcpy_async(ctx, s, a, host, bytes, SY_MEMCPY_H2D, &err));
        ENQUEUE(backend->memset_async(ctx, s, b, 0, bytes, &err));
        ENQUEUE(backend->memcpy_async(ctx, s, b, a, bytes, SY_MEMCPY_D2D, &err));
        ENQUEUE(backend->memset_async(ctx, s, b, value, head, &err));
        ENQUEUE(backend->memcpy_async(ctx, s, c, b, bytes, SY_MEMCPY_D2D, &err));
        ENQUEUE(backend->memset_async(ctx, s, a, 0, bytes, &err)); /* after c was taken from b, not before */
        ENQUEUE(backend->memcpy_async(ctx, s, out, c, bytes, SY_MEMCPY_D2H, &err));
        ENQUEUE(backend->stream_sync(ctx, s, &err));
#undef ENQUEUE
        long long diff = first_difference(out, expect, bytes);
        ck_assert_msg(diff < 0, "round %d (head %zu, value 0x%02x): byte %lld out of order", round, head, value, diff);
    }
    backend->stream_destroy(ctx, s);
    backend->free(ctx, a);
    backend->free(ctx, b);
    backend->free(ctx, c);
    free(host);
    free(expect);
    free(out);
}
END_TEST

START_TEST(test_events_elapsed)
{
    const size_t bytes = 256u << 20;
    unsigned char *a = device_alloc(bytes), *b = device_alloc(bytes);
    sy_stream s = NULL;
    sy_event start = NULL, end = NULL, never = NULL;
    sy_error err = {{0}};
    ck_assert_msg(backend->stream_create(ctx, &s, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(backend->event_create(ctx, &start, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(backend->event_create(ctx, &end, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(backend->event_create(ctx, &never, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(backend->memset_async(ctx, s, a, 0x3C, bytes, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(backend->event_record(ctx, start, s, &err) == SY_OK, "%s", err.msg);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(backend->memcpy_async(ctx, s, b, a, bytes, SY_MEMCPY_D2D, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(backend->event_record(ctx, end, s, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(backend->event_sync(ctx, end, &err) == SY_OK, "event_sync: %s", err.msg);
    float ms = -1.0f;
    ck_assert_msg(backend->event_elapsed_ms(ctx, start, end, &ms, &err) == SY_OK, "elapsed: %s", err.msg);
    printf("%s: 4 copies of %zu MiB took %.3f ms between events\n", backend->name, bytes >> 20, (double)ms);
    /* 1 GiB moved twice: well over 0.1 ms on any device, well under 10 s. */
    ck_assert_msg(isfinite(ms) && ms > 0.1f && ms < 10000.0f, "elapsed %f ms", (double)ms);
    /* An event that was never recorded: an error that names the runtime call. */
    memset(err.msg, 0, sizeof err.msg);
    ck_assert_int_ne(backend->event_elapsed_ms(ctx, start, never, &ms, &err), SY_OK);
    ck_assert_msg(strstr(err.msg, "EventElapsedTime failed") != NULL, "message: %s", err.msg);
    backend->event_destroy(ctx, start);
    backend->event_destroy(ctx, end);
    backend->event_destroy(ctx, never);
    backend->stream_destroy(ctx, s);
    backend->free(ctx, a);
    backend->free(ctx, b);
}
END_TEST

/* A runtime failure becomes an sy_error naming the call, the values, the file and the line. */
START_TEST(test_errors_name_call_file_line)
{
    sy_device_info info;
    sy_error err = {{0}};
    ck_assert_msg(backend->device_info(ctx, &info, &err) == SY_OK, "%s", err.msg);
    const size_t oversize = (size_t)info.total_memory * 4;
    char bytes_text[32];
    snprintf(bytes_text, sizeof bytes_text, "%zu bytes", oversize);
    void *p = (void *)1;
    ck_assert_int_eq(backend->alloc(ctx, oversize, &p, &err), SY_E_NOMEM);
    ck_assert_ptr_null(p);
    printf("%s: oversize alloc: %s\n", backend->name, err.msg);
    ck_assert_msg(strncmp(err.msg, SY_TEST_GPU_BACKEND ": ", strlen(SY_TEST_GPU_BACKEND) + 2) == 0, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "Malloc failed: ") != NULL, "no call named: %s", err.msg);
    ck_assert_msg(strstr(err.msg, bytes_text) != NULL, "no size named: %s", err.msg);
    const char *where = strstr(err.msg, "backends/gpu/gpu_backend.c:");
    ck_assert_msg(where != NULL, "no file named: %s", err.msg);
    ck_assert_msg(atoi(where + strlen("backends/gpu/gpu_backend.c:")) > 0, "no line: %s", err.msg);

    /* The device is still usable after the failure. */
    void *ok = device_alloc(4096);
    ck_assert_int_eq(backend->memcpy_async(ctx, NULL, ok, ok, 1, 9, &err), SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "memcpy kind 9") != NULL, "%s", err.msg);
    backend->free(ctx, ok);

    void *other = NULL;
    ck_assert_int_eq(backend->init(1 << 20, &other, &err), SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "device 1048576 requested") != NULL, "%s", err.msg);
}
END_TEST

/* The fixture's GPU op against a double-precision reference: odd shapes, a padded x row stride,
 * with and without bias, output poisoned with NaN before the run. */
START_TEST(test_fixture_on_device)
{
    const sy_plugin_desc *d = fixture(SY_TEST_GPU_BACKEND);
    const sy_linear_ops *ops = d->ops;
    /* The GPU front opens its device library in init (plugins/common/sy_gpu_front.h). */
    void *fixture_ctx = NULL;
    sy_error init_err = {{0}};
    if (d->init)
        ck_assert_msg(d->init(NULL, &fixture_ctx, &init_err) == SY_OK, "fixture init: %s", init_err.msg);
    sy_rng rng = {sy_test_seed()};
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        const int64_t m_rows = 17 + sy_rng_below(&rng, 40), n_cols = 33 + sy_rng_below(&rng, 60);
        const int64_t k_cols = 97 + sy_rng_below(&rng, 400), x_stride = k_cols + 1 + sy_rng_below(&rng, 7);
        const size_t x_n = (size_t)(m_rows * x_stride), w_n = (size_t)(n_cols * k_cols);
        const size_t y_n = (size_t)(m_rows * n_cols);
        float *x = malloc(x_n * sizeof *x), *w = malloc(w_n * sizeof *w), *b = malloc((size_t)n_cols * sizeof *b);
        float *y = malloc(y_n * sizeof *y);
        double *ref = malloc(y_n * sizeof *ref);
        ck_assert(x && w && b && y && ref);
        sy_fill_uniform_f32(&rng, x, x_n, -1.0f, 1.0f);
        sy_fill_uniform_f32(&rng, w, w_n, -1.0f, 1.0f);
        sy_fill_uniform_f32(&rng, b, (size_t)n_cols, -1.0f, 1.0f);
        for (int64_t m = 0; m < m_rows; m++)
            for (int64_t n = 0; n < n_cols; n++) {
                double acc = with_bias ? (double)b[n] : 0.0;
                for (int64_t k = 0; k < k_cols; k++)
                    acc += (double)x[m * x_stride + k] * (double)w[n * k_cols + k];
                ref[m * n_cols + n] = acc;
            }
        sy_poison_f32(y, y_n);
        float *dx = device_alloc(x_n * sizeof *x), *dw = device_alloc(w_n * sizeof *w);
        float *db = device_alloc((size_t)n_cols * sizeof *b), *dy = device_alloc(y_n * sizeof *y);
        copy_sync(dx, x, x_n * sizeof *x, SY_MEMCPY_H2D);
        copy_sync(dw, w, w_n * sizeof *w, SY_MEMCPY_H2D);
        copy_sync(db, b, (size_t)n_cols * sizeof *b, SY_MEMCPY_H2D);
        copy_sync(dy, y, y_n * sizeof *y, SY_MEMCPY_H2D);

        int64_t xs[2] = {m_rows, k_cols}, ws[2] = {n_cols, k_cols}, ys[2] = {m_rows, n_cols}, bs[1] = {n_cols};
        sy_linear_args a = {0};
        a.struct_size = sizeof a;
        a.x = sy_tensor_contiguous(dx, SY_DTYPE_F32, 2, xs);
        a.x.stride[0] = x_stride;
        a.w = sy_tensor_contiguous(dw, SY_DTYPE_F32, 2, ws);
        a.y = sy_tensor_contiguous(dy, SY_DTYPE_F32, 2, ys);
        if (with_bias)
            a.b = sy_tensor_contiguous(db, SY_DTYPE_F32, 1, bs);
        sy_error err = {{0}};
        ck_assert_msg(ops->linear(fixture_ctx, NULL, &a, &err) == SY_OK, "linear: %s", err.msg);
        copy_sync(y, dy, y_n * sizeof *y, SY_MEMCPY_D2H);
        double rel = sy_rel_l2_f32(y, ref, y_n);
        ck_assert_msg(rel < 1e-5, "M=%lld N=%lld K=%lld bias=%d: rel L2 %g", (long long)m_rows, (long long)n_cols,
                      (long long)k_cols, with_bias, rel);
        backend->free(ctx, dx);
        backend->free(ctx, dw);
        backend->free(ctx, db);
        backend->free(ctx, dy);
        free(x);
        free(w);
        free(b);
        free(y);
        free(ref);
    }
    if (d->fini)
        d->fini(fixture_ctx);
}
END_TEST

/* The device's greedy tokens equal the plain rule's on every pattern and shape of the shared check. */
START_TEST(test_greedy_rows)
{
    sy_rng rng = {sy_test_seed()};
    char why[256] = "";
    ck_assert_msg(sy_test_greedy_rows(backend, ctx, &rng, why, sizeof why) == 0, "%s", why);
}
END_TEST

int main(void)
{
    open_registry();
    const int have_device = backend_entry->probe_score > 0;
    Suite *suite = suite_create("gpu_backend_" SY_TEST_GPU_BACKEND);
    TCase *host = tcase_create("host");
    tcase_add_test(host, test_backend_descriptor);
    tcase_add_test(host, test_fixture_descriptors);
    tcase_add_test(host, test_fixture_rejects_bad_shapes);
    suite_add_tcase(suite, host);
    if (have_device) {
        TCase *device = tcase_create("device");
        tcase_add_checked_fixture(device, device_setup, device_teardown);
        tcase_add_test(device, test_device_info);
        tcase_add_test(device, test_alloc_free);
        tcase_add_test(device, test_memcpy_round_trip);
        tcase_add_test(device, test_memset);
        tcase_add_test(device, test_synth_fill_matches_host);
        tcase_add_test(device, test_stream_ordering);
        tcase_add_test(device, test_events_elapsed);
        tcase_add_test(device, test_errors_name_call_file_line);
        tcase_add_test(device, test_fixture_on_device);
        tcase_add_test(device, test_greedy_rows);
        suite_add_tcase(suite, device);
    } else {
        printf("skipped: no GPU (%s)\n", backend_entry->probe_reason);
    }
    SRunner *runner = srunner_create(suite);
    srunner_set_fork_status(runner, CK_NOFORK);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    sy_registry_close(registry);
    return failed ? 1 : 0;
}
