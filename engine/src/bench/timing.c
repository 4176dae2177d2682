#include "bench/timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/engine_impl.h"
#include "util/strbuf.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sy_bench_percentile(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return 0.0;
    double pos = (double)(n - 1) * q;
    size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : n - 1;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - (double)lo);
}

void sy_bench_stats_of(double *us, size_t n, sy_bench_stats *out)
{
    qsort(us, n, sizeof *us, by_value);
    out->runs = (uint32_t)n;
    out->median_us = sy_bench_percentile(us, n, 0.5);
    out->p10_us = sy_bench_percentile(us, n, 0.1);
    out->p90_us = sy_bench_percentile(us, n, 0.9);
    out->min_us = us[0];
    out->max_us = us[n - 1];
}

static sy_status backend_failed(const sy_conf_side *side, const char *call, const sy_error *inner, sy_error *err)
{
    return sy_fail(err, SY_E_BACKEND, "backend %s: %s failed: %s", side->be->name, call,
                   inner->msg[0] ? inner->msg : "no message");
}

/* Device work queued ahead of the timed calls: memsets of a scratch buffer whose device time
 * covers the host's time to enqueue every timed call (measured on the warm-up calls, with a
 * quarter to spare). Without it a call shorter than the host's own work per call (its argument
 * checks, the launch, two event records: about 5 us on the H200's host) would find the device
 * idle at its start event, and its pair of events would time the host, not the device: the KV
 * write of 16384 tokens read 22.6 us that way, where ncu gives its kernel 17.9 us. Only on a device
 * with a queue of its own (the cpu backend runs each call before it returns). The caller frees
 * *scratch_out once the timed calls are done: a device free waits for the device. */
static sy_status head_start(sy_conf_side *side, double host_us_per_call, int runs, void **scratch_out, sy_error *err)
{
    enum { SCRATCH_BYTES = 64u << 20, MAX_MEMSETS = 512 };
    const sy_backend_desc *be = side->be;
    sy_device_info info;
    sy_error inner = {{0}};
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (be->device_info(side->bctx, &info, &inner) != SY_OK || info.cc_major == 0 || !be->memset_async)
        return SY_OK;
    void *scratch = NULL;
    sy_event ev[2] = {0};
    int made = 0;
    sy_status st = SY_OK;
    if (be->alloc(side->bctx, SCRATCH_BYTES, &scratch, &inner) != SY_OK)
        return backend_failed(side, "alloc (head start scratch)", &inner, err);
    *scratch_out = scratch;
    for (; made < 2; made++)
        if (be->event_create(side->bctx, &ev[made], &inner) != SY_OK) {
            st = backend_failed(side, "event_create", &inner, err);
            goto done;
        }
    /* One memset timed on its own gives the device time of each. */
    float ms = 0;
    if (be->event_record(side->bctx, ev[0], side->stream, &inner) != SY_OK ||
        be->memset_async(side->bctx, side->stream, scratch, 0, SCRATCH_BYTES, &inner) != SY_OK ||
        be->event_record(side->bctx, ev[1], side->stream, &inner) != SY_OK ||
        be->event_sync(side->bctx, ev[1], &inner) != SY_OK ||
        be->event_elapsed_ms(side->bctx, ev[0], ev[1], &ms, &inner) != SY_OK) {
        st = backend_failed(side, "head start memset", &inner, err);
        goto done;
    }
    const double memset_us = ms > 0 ? (double)ms * 1e3 : 1.0, need_us = 1.25 * host_us_per_call * runs + 20.0;
    int memsets = (int)ceil(need_us / memset_us);
    if (memsets > MAX_MEMSETS)
        memsets = MAX_MEMSETS;
    for (int i = 0; i < memsets; i++)
        if (be->memset_async(side->bctx, side->stream, scratch, 0, SCRATCH_BYTES, &inner) != SY_OK) {
            st = backend_failed(side, "memset_async", &inner, err);
            goto done;
        }
done:
    for (int i = 0; i < made; i++)
        be->event_destroy(side->bctx, ev[i]);
    return st;
}

/* Every timed call gets its own pair of events and nothing waits between calls: after the head
 * start the device never waits for the host, so each pair of events times the call's device work
 * alone, as the engine's stream sees it (bench/peers/torch_peers.py times the same way). */
sy_status sy_bench_time_calls(sy_conf_side *side, sy_bench_call_fn call, void *user, uint32_t copies, int warmup,
                              int runs, sy_bench_stats *out, sy_error *err)
{
    const sy_backend_desc *be = side->be;
    sy_error inner = {{0}};
    sy_status st = SY_OK;
    uint32_t next = 0;
    double *us = NULL;
    if (copies == 0)
        copies = 1;
    /* The host's time per call as enqueued, from the warm-up calls after the first (which pays any
     * lazy initialization), with 2 us for a timed call's two event records. */
    double after_first = 0.0;
    for (int i = 0; i < warmup; i++, next = (next + 1) % copies) {
        if ((st = call(user, next, err)) != SY_OK)
            return st;
        if (i == 0)
            after_first = sy_now_ms();
    }
    const double host_us_per_call = warmup > 1 ? (sy_now_ms() - after_first) * 1e3 / (warmup - 1) + 2.0 : 20.0;
    if ((st = sy_conf_side_sync(side, err)) != SY_OK)
        return st;
    size_t n_events = 2 * (size_t)runs, made = 0;
    sy_event *ev = sy_xcalloc(n_events, sizeof *ev);
    void *scratch = NULL;
    for (; made < n_events; made++)
        if (be->event_create(side->bctx, &ev[made], &inner) != SY_OK) {
            st = backend_failed(side, "event_create", &inner, err);
            goto done;
        }
    if ((st = head_start(side, host_us_per_call, runs, &scratch, err)) != SY_OK)
        goto done;
    for (int i = 0; i < runs; i++, next = (next + 1) % copies) {
        if (be->event_record(side->bctx, ev[2 * i], side->stream, &inner) != SY_OK) {
            st = backend_failed(side, "event_record", &inner, err);
            goto done;
        }
        if ((st = call(user, next, err)) != SY_OK)
            goto done;
        if (be->event_record(side->bctx, ev[2 * i + 1], side->stream, &inner) != SY_OK) {
            st = backend_failed(side, "event_record", &inner, err);
            goto done;
        }
    }
    if (be->event_sync(side->bctx, ev[n_events - 1], &inner) != SY_OK) {
        st = backend_failed(side, "event_sync", &inner, err);
        goto done;
    }
    us = sy_xcalloc((size_t)runs, sizeof *us);
    for (int i = 0; i < runs && st == SY_OK; i++) {
        float ms = 0;
        if (be->event_elapsed_ms(side->bctx, ev[2 * i], ev[2 * i + 1], &ms, &inner) != SY_OK)
            st = backend_failed(side, "event_elapsed_ms", &inner, err);
        us[i] = (double)ms * 1e3;
    }
    if (st == SY_OK)
        sy_bench_stats_of(us, (size_t)runs, out);
done:
    free(us);
    if (st != SY_OK)
        sy_conf_side_sync(side, &inner); /* nothing of the case may still run when its memory is freed */
    for (size_t i = 0; i < made; i++)
        be->event_destroy(side->bctx, ev[i]);
    free(ev);
    if (scratch)
        be->free(side->bctx, scratch);
    return st;
}

uint32_t sy_bench_rotation_copies(uint64_t set_bytes, uint64_t target_bytes, uint32_t max_copies)
{
    if (set_bytes >= target_bytes || set_bytes == 0)
        return 1;
    uint64_t n = (target_bytes + set_bytes - 1) / set_bytes;
    return n > max_copies ? max_copies : (uint32_t)n;
}

uint64_t sy_bench_rotation_target(uint64_t l2_bytes, int quick)
{
    uint64_t target = SY_BENCH_ROTATION_L2_MULTIPLE * (l2_bytes ? l2_bytes : SY_BENCH_ASSUMED_L2_BYTES);
    return quick && target > SY_BENCH_QUICK_ROTATION_BYTES ? SY_BENCH_QUICK_ROTATION_BYTES : target;
}
