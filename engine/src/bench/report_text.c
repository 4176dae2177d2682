/* The human table of `switchyard bench` (bench.h). */
#include <stdio.h>

#include "bench/bench.h"

void sy_bench_format_header(char *buf, size_t len)
{
    snprintf(buf, len, "%-46s %-13s %11s %9s %9s %11s %7s %7s  %s", "case", "status", "median_us", "GB/s", "TFLOP/s",
             "floor_us", "x floor", "% copy", "plugin");
}

void sy_bench_format_result(const sy_bench_result *r, char *buf, size_t len)
{
    if (r->status == SY_BENCH_LISTED) {
        snprintf(buf, len, "%s", r->name);
        return;
    }
    if (r->status != SY_BENCH_OK) {
        snprintf(buf, len, "%-46s %-13s %s", r->name, sy_bench_status_name(r->status), r->reason);
        return;
    }
    char tflops[16] = "-", floor_us[24] = "-", ratio[16] = "-", copy[16] = "-";
    if (r->flops)
        snprintf(tflops, sizeof tflops, "%.2f", r->tflops);
    if (r->floor_us > 0) {
        snprintf(floor_us, sizeof floor_us, "%.1f %s", r->floor_us, r->floor_compute ? "C" : "M");
        snprintf(ratio, sizeof ratio, "%.2f", r->floor_ratio);
        snprintf(copy, sizeof copy, "%.0f%%", 100.0 * r->copy_ratio);
    }
    snprintf(buf, len, "%-46s %-13s %11.1f %9.1f %9s %11s %7s %7s  %s", r->name, "ok", r->stats.median_us, r->gbps,
             tflops, floor_us, ratio, copy, r->plugin[0] ? r->plugin : "-");
}

void sy_bench_format_summary(const sy_bench_report *rep, char *buf, size_t len)
{
    if (rep->copy_measured)
        snprintf(buf, len,
                 "%zu ok, %zu not supported, %zu failed on %s (%s); copy %.1f GB/s; floors: M = bytes over the copy, "
                 "C = FLOPs over %.0f TFLOP/s; %.1f s",
                 rep->ok, rep->not_supported, rep->errors, rep->device.name, rep->device.backend, rep->copy_gbps,
                 rep->peak_tflops, rep->wall_ms * 1e-3);
    else
        snprintf(buf, len, "%zu ok, %zu not supported, %zu failed on %s (%s); no copy bandwidth, so no floors; %.1f s",
                 rep->ok, rep->not_supported, rep->errors, rep->device.name, rep->device.backend, rep->wall_ms * 1e-3);
}
