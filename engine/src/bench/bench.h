/* Kernel benchmark (`switchyard bench`): every kernel of the engine at gpt-oss-120b shapes, timed
 * with the backend's device events, with the bytes and FLOPs it must move, its floor and its ratio
 * to a device-to-device copy measured in the same run (docs/performance.md, "Method").
 *
 * A run opens one backend (device 0), measures the copy bandwidth first, then walks the case table
 * (cases.h). Each case picks its plugin by name for the slot, as the engine does (attn_paged,
 * kv_nhd / kv_vectorized_5d, rope_yarn, norm_rmsnorm, moe_mxfp4_interleave / _separated, linear),
 * makes its inputs on the device (random, never zeros), times warm-up then `runs` calls one by one, and
 * frees every buffer and the plugin context before the next case starts. A case whose needs the
 * plugin's caps do not declare is reported not-supported with the reason, never skipped. */
#ifndef SY_BENCH_H
#define SY_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/timing.h"
#include "switchyard/switchyard.h"

enum {
    SY_BENCH_MIN_RUNS = 50,
    SY_BENCH_DEFAULT_WARMUP = 10
};

/* Dense bf16 tensor-core rate of an NVIDIA H200 SXM (989.4 TFLOP/s without sparsity; the datasheet
 * lists 1979 with 2:4 sparsity), the compute ceiling unless --peak-tflops says otherwise. */
#define SY_BENCH_DEFAULT_PEAK_TFLOPS 989.0

typedef enum sy_bench_status {
    SY_BENCH_OK = 0,
    SY_BENCH_NOT_SUPPORTED = 1,
    SY_BENCH_ERROR = 2,
    SY_BENCH_LISTED = 3 /* --list: named, not run */
} sy_bench_status;

typedef struct sy_bench_result {
    char name[96];
    const char *op;       /* "attention.decode_paged", ... */
    char plugin[96];      /* the plugin(s) timed, "" for the copy */
    const char *layout;   /* "nhd", "vectorized_5d", "interleave", "separated" or NULL */
    int32_t status;       /* sy_bench_status */
    char reason[768];     /* why it is not supported or failed; "" when ok */
    char shape[256];      /* what ran as key=value words, "batch=4 context=512 window=0 kv=bf16" (--quick
                             shrinks it); numbers become JSON numbers */
    char note[256];       /* how the case runs, where its name does not say it; "" when nothing */
    sy_bench_stats stats; /* microseconds */
    uint32_t input_copies; /* input sets rotated through so that each run reads cold memory */
    uint64_t bytes;       /* compulsory traffic (traffic.h) */
    uint64_t flops;
    double gbps, tflops;  /* bytes or FLOPs over the median; tflops 0 when flops is 0 */
    double floor_us;      /* max(bytes / copy bandwidth, flops / peak); 0 without a copy bandwidth */
    int floor_compute;    /* 1: the FLOP term is the larger */
    double floor_ratio;   /* median / floor */
    double copy_ratio;    /* gbps / copy bandwidth */
} sy_bench_result;

typedef struct sy_bench_device {
    char backend[32];
    char name[128];
    uint64_t memory_bytes;
    uint32_t multiprocessors, warp_size;
    uint32_t cc_major, cc_minor;
    uint64_t l2_bytes; /* 0 when the backend does not report it */
} sy_bench_device;

typedef struct sy_bench_report {
    char date[16];          /* YYYY-MM-DD, local time */
    sy_bench_device device;
    uint64_t seed;
    int quick, warmup, runs;
    double peak_tflops;
    uint64_t rotation_bytes; /* inputs of one case span at least this much, in copies (timing.h) */
    int copy_measured;       /* 0 when the copy failed: no floors or copy ratios then */
    uint64_t copy_bytes;     /* read + write of one copy */
    double copy_median_us, copy_gbps;
    sy_bench_result *results;
    size_t n_results, cap_results;
    size_t ok, not_supported, errors;
    double wall_ms;
} sy_bench_report;

typedef struct sy_bench_options {
    const char *backend;     /* NULL or "auto": the usable backend with the highest probe score */
    const char *case_filter; /* only cases whose name contains this; NULL = all */
    int runs;                /* >= SY_BENCH_MIN_RUNS */
    int warmup;              /* >= 0 */
    int quick;               /* the same cases at small shapes */
    int list_only;
    double peak_tflops;      /* > 0 */
    uint64_t seed;           /* inputs are a function of (seed, case name) */
    /* Called as each case ends (progress output); may be NULL. */
    void (*on_result)(void *user, const sy_bench_report *report, const sy_bench_result *r);
    void *user;
} sy_bench_options;

/* Names every case (list_only) or runs them into *report (freed with sy_bench_report_free, also
 * after a failure). Returns SY_E_INVALID when the filter matches no case, SY_E_BACKEND when the
 * backend is not found, cannot run here or fails to open. A case that fails is not an error of the
 * run: see report->errors. */
sy_status sy_bench_run(sy_registry *reg, const sy_bench_options *opts, sy_bench_report *report, sy_error *err);
void sy_bench_report_free(sy_bench_report *report);

const char *sy_bench_status_name(int32_t status); /* "ok", "not-supported", "error", "listed" */

/* The human table: a header, one row per case, a summary line (no trailing newline in rows). */
void sy_bench_format_header(char *buf, size_t len);
void sy_bench_format_result(const sy_bench_result *r, char *buf, size_t len);
void sy_bench_format_summary(const sy_bench_report *report, char *buf, size_t len);

/* The report as one JSON document (docs/performance.md, "Schema"). */
void sy_bench_write_json(const sy_bench_report *report, FILE *f);

#endif
