#include "bench/timing.h"

#include <math.h>
#include <stdlib.h>

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

/* Every timed call gets its own pair of events and nothing waits between calls: the stream stays
 * busy, so the host's launch latency of one call hides behind the device work of the one before,
 * as it does in the engine (and in bench/peers/torch_peers.py, which times the same way). */
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
    for (int i = 0; i < warmup; i++, next = (next + 1) % copies)
        if ((st = call(user, next, err)) != SY_OK)
            return st;
    if ((st = sy_conf_side_sync(side, err)) != SY_OK)
        return st;
    size_t n_events = 2 * (size_t)runs, made = 0;
    sy_event *ev = sy_xcalloc(n_events, sizeof *ev);
    for (; made < n_events; made++)
        if (be->event_create(side->bctx, &ev[made], &inner) != SY_OK) {
            st = backend_failed(side, "event_create", &inner, err);
            goto done;
        }
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
