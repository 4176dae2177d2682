/* Timing, statistics and machine description shared by the host kernel benchmarks (moe_cpu,
 * linear_cpu). */
#ifndef SY_BENCH_SUPPORT_H
#define SY_BENCH_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/json.h"

double sy_bench_now_ms(void);
/* Sorts `ms` in place and returns the median. */
double sy_bench_median(double *ms, size_t n);
/* Writes "machine": {cpu, arch, cores, blas_threads, blas_config} into an open JSON object. */
void sy_bench_json_machine(sy_json *j);
/* Opens the report object: "bench": name, "machine": {cpu, arch, cores, blas_threads, blas_config},
 * "runs", "statistic" (the median after one warm-up); the caller adds its fields and closes it. */
void sy_bench_json_begin(sy_json *j, FILE *f, const char *bench, int runs);
/* "key": value members of the open JSON object. */
void sy_bench_kv_int(sy_json *j, const char *key, int64_t v);
void sy_bench_kv_uint(sy_json *j, const char *key, uint64_t v);
void sy_bench_kv_double(sy_json *j, const char *key, double v);
void sy_bench_kv_string(sy_json *j, const char *key, const char *v);
/* The output file of --out PATH, or stdout for NULL; exits with a message when it cannot be opened. */
FILE *sy_bench_open_out(const char *prog, const char *path);

#endif
