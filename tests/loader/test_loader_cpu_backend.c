/* The cpu backend module as the registry loads it from the default plugins folder: probe, device
 * info, host memory, copies, memset, streams and events, each against what backend.h promises.
 * Sizes are odd on purpose (alignment rounding), inputs random (seed printed), outputs poisoned. */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture_support.h"
#include "sy_test.h"
#include "sy_test_greedy.h"
#include "switchyard/switchyard.h"

typedef struct cpu_fixture {
    sy_registry *reg;
    const sy_registry_entry *entry;
    const sy_backend_desc *be;
    void *ctx;
    char *file;
} cpu_fixture;

static void open_cpu(cpu_fixture *f)
{
    char *plugins = sy_fixture_printf("%s/lib/switchyard/plugins", sy_fixture_build_dir());
    const char *dirs[] = {plugins};
    f->reg = sy_fixture_registry(dirs, 1, 0);
    f->file = sy_fixture_printf("%s/libsy_backend_cpu.so", plugins);
    char *real = sy_fixture_realpath(f->file);
    free(f->file);
    f->file = real;
    free(plugins);
    f->entry = sy_fixture_entry(f->reg, f->file);
    ck_assert_msg(f->entry->stage == SY_STAGE_NONE, "%s: stage %s: %s", f->file, sy_stage_name(f->entry->stage),
                  f->entry->reason);
    f->be = f->entry->backend;
    ck_assert_ptr_nonnull(f->be);
    sy_error err = {{0}};
    f->ctx = (void *)&f->ctx;
    ck_assert_msg(f->be->init(0, &f->ctx, &err) == SY_OK, "init(0): %s", err.msg);
}

static void close_cpu(cpu_fixture *f)
{
    f->be->fini(f->ctx);
    sy_registry_close(f->reg);
    free(f->file);
}

static void *alloc_or_fail(const cpu_fixture *f, size_t bytes)
{
    void *p = NULL;
    sy_error err = {{0}};
    ck_assert_msg(f->be->alloc(f->ctx, bytes, &p, &err) == SY_OK, "alloc(%zu): %s", bytes, err.msg);
    ck_assert_ptr_nonnull(p);
    return p;
}

static void random_bytes(sy_rng *rng, unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)sy_rng_next(rng);
}

static double monotonic_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

START_TEST(descriptor_and_probe)
{
    cpu_fixture f;
    open_cpu(&f);
    ck_assert_str_eq(f.be->name, "cpu");
    ck_assert_uint_eq(f.be->abi_major, SY_ABI_MAJOR);
    ck_assert_uint_le(f.be->abi_minor, SY_ABI_MINOR);
    ck_assert_uint_eq(f.be->struct_size, sizeof(sy_backend_desc));
    /* Usable everywhere, and below any GPU backend that is usable (their scores are above 1). */
    ck_assert_int_eq(f.entry->probe_score, 1);
    char reason[64] = "";
    ck_assert_int_eq(f.be->probe(reason, sizeof reason), 1);
    ck_assert_ptr_eq(sy_registry_find_backend(f.reg, "cpu"), f.entry);
    close_cpu(&f);
}
END_TEST

START_TEST(only_device_zero)
{
    cpu_fixture f;
    open_cpu(&f);
    void *ctx = NULL;
    sy_error err = {{0}};
    ck_assert_int_eq(f.be->init(1, &ctx, &err), SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "cpu backend: only device 0 exists"), "'%s'", err.msg);
    close_cpu(&f);
}
END_TEST

START_TEST(device_info_describes_this_host)
{
    cpu_fixture f;
    open_cpu(&f);
    sy_device_info info;
    memset(&info, 0xA5, sizeof info);
    sy_error err = {{0}};
    ck_assert_msg(f.be->device_info(f.ctx, &info, &err) == SY_OK, "%s", err.msg);
    ck_assert_uint_eq(info.struct_size, sizeof info);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char *cores_text = sy_fixture_printf(", %ld cores)", cores);
    ck_assert_msg(memchr(info.name, '\0', sizeof info.name) && strncmp(info.name, "host (", 6) == 0 &&
                      strstr(info.name, cores_text),
                  "name '%.*s' must be 'host (MACHINE, %ld cores)'", (int)sizeof info.name, info.name, cores);
    free(cores_text);
    ck_assert_uint_eq(info.multiprocessors, (uint32_t)cores);
    ck_assert_uint_eq(info.warp_size, 1);
    ck_assert_uint_eq(info.cc_major, 0);
    ck_assert_uint_eq(info.cc_minor, 0);
    /* /proc/meminfo: more than 64 MiB in total, and what is available never exceeds the total. */
    ck_assert_msg(info.total_memory > (64u << 20) && info.free_memory > 0 && info.free_memory <= info.total_memory,
                  "total %" PRIu64 " free %" PRIu64, (uint64_t)info.total_memory, (uint64_t)info.free_memory);
    close_cpu(&f);
}
END_TEST

/* Every size, including 0 and sizes that are not multiples of the alignment, gets 256-byte aligned
 * memory that can be written end to end (the sanitizer build catches a short block). */
START_TEST(alloc_is_aligned_and_writable)
{
    cpu_fixture f;
    open_cpu(&f);
    static const size_t sizes[] = {0, 1, 255, 257, 4099, 1000003};
    void *blocks[sizeof sizes / sizeof sizes[0]];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        blocks[i] = alloc_or_fail(&f, sizes[i]);
        ck_assert_msg((uintptr_t)blocks[i] % 256 == 0, "alloc(%zu) = %p is not 256-byte aligned", sizes[i], blocks[i]);
        memset(blocks[i], 0x5A, sizes[i]);
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        f.be->free(f.ctx, blocks[i]);
    f.be->free(f.ctx, NULL); /* a no-op by contract */
    close_cpu(&f);
}
END_TEST

/* Host -> device -> device -> host at an offset into each buffer: the bytes arrive exactly, and
 * nothing outside the copied range is touched. */
START_TEST(memcpy_every_direction)
{
    cpu_fixture f;
    open_cpu(&f);
    sy_rng rng = {sy_test_seed()};
    const size_t n = 3 * 4099 + 1 + sy_rng_below(&rng, 5000), guard = 37;
    unsigned char *src = malloc(n), *back = malloc(n + 2 * guard);
    unsigned char *a = alloc_or_fail(&f, n), *b = alloc_or_fail(&f, n + 2 * guard);
    ck_assert(src && back);
    random_bytes(&rng, src, n);
    memset(b, 0xEE, n + 2 * guard);
    memset(back, 0xEE, n + 2 * guard);
    sy_error err = {{0}};
    ck_assert_msg(f.be->memcpy_async(f.ctx, NULL, a, src, n, SY_MEMCPY_H2D, &err) == SY_OK, "h2d: %s", err.msg);
    ck_assert_msg(f.be->memcpy_async(f.ctx, NULL, b + guard, a, n, SY_MEMCPY_D2D, &err) == SY_OK, "d2d: %s", err.msg);
    ck_assert_msg(f.be->memcpy_async(f.ctx, NULL, back, b, n + 2 * guard, SY_MEMCPY_D2H, &err) == SY_OK, "d2h: %s",
                  err.msg);
    for (size_t i = 0; i < guard; i++)
        ck_assert_msg(back[i] == 0xEE && back[guard + n + i] == 0xEE, "guard byte %zu was written", i);
    ck_assert_msg(memcmp(back + guard, src, n) == 0, "round trip of %zu bytes differs", n);
    /* Zero bytes is a valid copy that touches nothing. */
    ck_assert_int_eq(f.be->memcpy_async(f.ctx, NULL, back, src, 0, SY_MEMCPY_H2D, &err), SY_OK);
    ck_assert_uint_eq(back[0], 0xEE);
    static const int32_t bad_kinds[] = {0, SY_MEMCPY_D2D + 1, -1};
    for (size_t i = 0; i < sizeof bad_kinds / sizeof bad_kinds[0]; i++) {
        memset(err.msg, 0, sizeof err.msg);
        ck_assert_int_eq(f.be->memcpy_async(f.ctx, NULL, a, src, n, bad_kinds[i], &err), SY_E_INVALID);
        ck_assert_msg(strstr(err.msg, "memcpy kind must be h2d, d2h or d2d"), "kind %d: '%s'", bad_kinds[i], err.msg);
    }
    f.be->free(f.ctx, a);
    f.be->free(f.ctx, b);
    free(src);
    free(back);
    close_cpu(&f);
}
END_TEST

START_TEST(memset_writes_exactly_its_range)
{
    cpu_fixture f;
    open_cpu(&f);
    sy_rng rng = {sy_test_seed()};
    const size_t n = 10007;
    unsigned char *d = alloc_or_fail(&f, n), *before = malloc(n);
    ck_assert(before);
    random_bytes(&rng, d, n);
    memcpy(before, d, n);
    const size_t start = 1 + sy_rng_below(&rng, 3000), len = 1 + sy_rng_below(&rng, 5000);
    /* The value is taken as an unsigned char, as memset does: 0x1AB writes 0xAB. */
    sy_error err = {{0}};
    ck_assert_msg(f.be->memset_async(f.ctx, NULL, d + start, 0x1AB, len, &err) == SY_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++) {
        unsigned char want = i >= start && i < start + len ? 0xAB : before[i];
        ck_assert_msg(d[i] == want, "byte %zu is 0x%02x, expected 0x%02x (range %zu + %zu)", i, d[i], want, start, len);
    }
    f.be->free(f.ctx, d);
    free(before);
    close_cpu(&f);
}
END_TEST

/* Streams are synchronous on the cpu: each operation is complete when its call returns, so work
 * on one stream is ordered and visible to the next call on any stream, and stream_sync has
 * nothing left to wait for. */
START_TEST(streams_order_and_complete_on_return)
{
    cpu_fixture f;
    open_cpu(&f);
    sy_rng rng = {sy_test_seed()};
    const size_t n = 65537;
    unsigned char *host = malloc(n), *out = malloc(n);
    unsigned char *a = alloc_or_fail(&f, n), *b = alloc_or_fail(&f, n);
    ck_assert(host && out);
    random_bytes(&rng, host, n);
    sy_stream s1 = NULL, s2 = NULL;
    sy_error err = {{0}};
    ck_assert_msg(f.be->stream_create(f.ctx, &s1, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(f.be->stream_create(f.ctx, &s2, &err) == SY_OK, "%s", err.msg);
    ck_assert_ptr_ne(s1, s2);
    ck_assert_int_eq(f.be->memcpy_async(f.ctx, s1, a, host, n, SY_MEMCPY_H2D, &err), SY_OK);
    ck_assert_msg(memcmp(a, host, n) == 0, "an h2d copy was not complete when it returned");
    /* Later operations on the same stream see earlier ones: b = a, then a is cleared. */
    ck_assert_int_eq(f.be->memcpy_async(f.ctx, s1, b, a, n, SY_MEMCPY_D2D, &err), SY_OK);
    ck_assert_int_eq(f.be->memset_async(f.ctx, s1, a, 0, n, &err), SY_OK);
    /* Another stream sees both without a synchronization in between. */
    sy_poison_bytes(out, n);
    ck_assert_int_eq(f.be->memcpy_async(f.ctx, s2, out, b, n, SY_MEMCPY_D2H, &err), SY_OK);
    ck_assert_msg(memcmp(out, host, n) == 0, "the copy on stream 2 did not see stream 1's copy");
    ck_assert_uint_eq(a[0], 0);
    ck_assert_uint_eq(a[n - 1], 0);
    ck_assert_int_eq(f.be->stream_sync(f.ctx, s1, &err), SY_OK);
    ck_assert_int_eq(f.be->stream_sync(f.ctx, s2, &err), SY_OK);
    f.be->stream_destroy(f.ctx, s1);
    f.be->stream_destroy(f.ctx, s2);
    f.be->free(f.ctx, a);
    f.be->free(f.ctx, b);
    free(host);
    free(out);
    close_cpu(&f);
}
END_TEST

/* Events read the monotonic clock: the time between two records spans a sleep between them and
 * fits inside the same clock read around both records. */
START_TEST(events_measure_monotonic_time)
{
    cpu_fixture f;
    open_cpu(&f);
    sy_stream s = NULL;
    sy_event first = NULL, second = NULL, never = NULL;
    sy_error err = {{0}};
    ck_assert_int_eq(f.be->stream_create(f.ctx, &s, &err), SY_OK);
    ck_assert_int_eq(f.be->event_create(f.ctx, &first, &err), SY_OK);
    ck_assert_int_eq(f.be->event_create(f.ctx, &second, &err), SY_OK);
    ck_assert_int_eq(f.be->event_create(f.ctx, &never, &err), SY_OK);
    const double sleep_ms = 25.0;
    double outer_start = monotonic_ms();
    ck_assert_int_eq(f.be->event_record(f.ctx, first, s, &err), SY_OK);
    struct timespec nap = {0, (long)(sleep_ms * 1e6)};
    while (nanosleep(&nap, &nap) != 0) {
    }
    ck_assert_int_eq(f.be->event_record(f.ctx, second, s, &err), SY_OK);
    double outer = monotonic_ms() - outer_start;
    ck_assert_msg(f.be->event_sync(f.ctx, second, &err) == SY_OK, "%s", err.msg);
    float ms = -1.0f, reverse = 0.0f;
    ck_assert_msg(f.be->event_elapsed_ms(f.ctx, first, second, &ms, &err) == SY_OK, "%s", err.msg);
    ck_assert_msg(f.be->event_elapsed_ms(f.ctx, second, first, &reverse, &err) == SY_OK, "%s", err.msg);
    /* float milliseconds: allow its rounding at this magnitude. */
    ck_assert_msg(ms >= sleep_ms - 1e-3 && ms <= outer + 1e-3, "elapsed %.6f ms, slept %.1f ms, outer clock %.6f ms",
                  (double)ms, sleep_ms, outer);
    ck_assert_msg(fabsf(ms + reverse) <= 1e-3f, "elapsed(b, a) = %f is not -elapsed(a, b) = %f", (double)reverse,
                  (double)-ms);
    memset(err.msg, 0, sizeof err.msg);
    ck_assert_int_eq(f.be->event_sync(f.ctx, never, &err), SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "cpu backend: event synchronized before it was recorded"), "'%s'", err.msg);
    memset(err.msg, 0, sizeof err.msg);
    ck_assert_int_eq(f.be->event_elapsed_ms(f.ctx, first, never, &ms, &err), SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "cpu backend: elapsed time of an event that was never recorded"), "'%s'", err.msg);
    f.be->event_destroy(f.ctx, first);
    f.be->event_destroy(f.ctx, second);
    f.be->event_destroy(f.ctx, never);
    f.be->stream_destroy(f.ctx, s);
    close_cpu(&f);
}
END_TEST

START_TEST(greedy_rows_follow_the_rule)
{
    cpu_fixture f;
    open_cpu(&f);
    sy_rng rng = {sy_test_seed()};
    char why[256] = "";
    ck_assert_msg(sy_test_greedy_rows(f.be, f.ctx, &rng, why, sizeof why) == 0, "%s", why);
    sy_error err = {{0}};
    uint32_t out = 0;
    float x = 1.0f;
    ck_assert_int_eq(f.be->greedy_rows(f.ctx, NULL, &x, 1, 0, 0, &out, &err), SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "rows of 0 values"), "'%s'", err.msg);
    ck_assert_int_eq(f.be->greedy_rows(f.ctx, NULL, &x, 2, 4, 3, &out, &err), SY_E_INVALID);
    ck_assert_msg(strstr(err.msg, "row_stride is shorter than a row"), "'%s'", err.msg);
    close_cpu(&f);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        descriptor_and_probe,
        only_device_zero,
        device_info_describes_this_host,
        alloc_is_aligned_and_writable,
        memcpy_every_direction,
        memset_writes_exactly_its_range,
        streams_order_and_complete_on_return,
        events_measure_monotonic_time,
        greedy_rows_follow_the_rule,
    };
    return sy_fixture_run_tests("loader_cpu_backend", tests, sizeof tests / sizeof tests[0]);
}
