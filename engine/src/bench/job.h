/* One benchmark case while it runs: the run's backend side and options, the case and the shape it
 * runs at, its result, its device buffers and host scratch, and the plugins it opened. Everything
 * a job holds is released by sy_bench_job_end, so an op module can return at any point after
 * recording a verdict. The op modules (op_*.c) each fill one kind of case. */
#ifndef SY_BENCH_JOB_H
#define SY_BENCH_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "bench/bench.h"
#include "bench/cases.h"
#include "bench/device_data.h"
#include "bench/traffic.h"
#include "conformance/inputs.h"
#include "conformance/side.h"
#include "model/model.h"

/* State of the whole run, shared by its jobs. */
typedef struct sy_bench_run_state {
    sy_registry *reg;
    const sy_bench_options *opts;
    sy_conf_side side;
    uint64_t rotation_target; /* timing.h */
    sy_model_dims model;      /* gpt-oss-120b: heads, RoPE, norm eps, SwiGLU */
} sy_bench_run_state;

enum { SY_BENCH_JOB_MAX_PLUGINS = 2 };

typedef struct sy_bench_job {
    sy_bench_run_state *run;
    const sy_bench_case *c;
    const sy_bench_shape *s; /* full or quick */
    sy_bench_result *r;
    sy_bench_data data;      /* device buffers */
    sy_conf_rng rng;         /* host-made inputs (block tables, slots, routing), from (seed, case name) */
    void **host;
    size_t n_host, cap_host;
    const sy_plugin_desc *plugin[SY_BENCH_JOB_MAX_PLUGINS];
    void *plugin_ctx[SY_BENCH_JOB_MAX_PLUGINS];
    size_t n_plugins;
} sy_bench_job;

void sy_bench_job_begin(sy_bench_job *j, sy_bench_run_state *run, const sy_bench_case *c, sy_bench_result *r);
/* Waits for the stream, finishes the plugins, frees every buffer. */
void sy_bench_job_end(sy_bench_job *j);

/* 1 while no verdict other than ok is recorded. */
int sy_bench_job_ok(const sy_bench_job *j);
void sy_bench_job_unsupported(sy_bench_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sy_bench_job_error(sy_bench_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* SY_OK -> 1; otherwise the case fails with "<what>: <message>" (SY_E_UNSUPPORTED from a caps
 * check makes it not-supported instead) and 0 is returned. */
int sy_bench_job_check(sy_bench_job *j, const char *what, sy_status st, const sy_error *err);

/* The plugin of (kind, name) on the run's backend, initialized for this job and named in the
 * result; NULL with the verdict recorded when it is not loaded (not-supported) or fails to
 * initialize (error). *ctx receives its context. */
const sy_plugin_desc *sy_bench_job_plugin(sy_bench_job *j, int32_t kind, const char *name, void **ctx);
/* The geometry of one layer's pool, from the layout's kv_layout plugin on this backend (its
 * geometry op is a pure function, callable without init); 0 with the verdict recorded. */
int sy_bench_job_geometry(sy_bench_job *j, uint32_t layout, int32_t store, uint32_t num_pages, uint32_t page_size,
                          sy_kv_geometry *geom);

/* Host memory of the job (zeroed), freed at its end. */
void *sy_bench_job_host(sy_bench_job *j, size_t bytes);
/* Device buffers (NULL with the case failed when the backend refuses). */
void *sy_bench_job_alloc(sy_bench_job *j, size_t bytes);
void *sy_bench_job_random(sy_bench_job *j, int32_t dtype, uint64_t count);
void *sy_bench_job_upload(sy_bench_job *j, const void *host, size_t bytes);
/* `count` f32 values uniform in [lo, hi), drawn on the host from the job's generator (for inputs
 * small enough that the device generator, which makes no f32, is not needed). */
void *sy_bench_job_uniform_f32(sy_bench_job *j, uint64_t count, double lo, double hi);
/* Hq sinks (f32) drawn from [1, 7), as gpt-oss's learned sinks are of order one to a few. */
void *sy_bench_job_sinks(sy_bench_job *j, uint32_t q_heads);

/* Input copies for a set of `set_bytes` (timing.h), recorded in the result. */
uint32_t sy_bench_job_copies(sy_bench_job *j, uint64_t set_bytes);
/* Times the call over the copies with the run's warm-up and runs; 0 with the case failed. */
int sy_bench_job_time(sy_bench_job *j, sy_bench_call_fn call, void *user, uint32_t copies);
/* Records the traffic and the shape text of the case. */
void sy_bench_job_traffic(sy_bench_job *j, sy_bench_traffic t);
void sy_bench_job_shape(sy_bench_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* gpt-oss-120b's attention heads, and its softmax scale (1 / sqrt(head dim)). */
sy_bench_heads sy_bench_job_heads(const sy_bench_job *j);
float sy_bench_job_softmax_scale(const sy_bench_job *j);

/* The op modules. */
void sy_bench_op_decode(sy_bench_job *j);
void sy_bench_op_prefill(sy_bench_job *j);
void sy_bench_op_extend(sy_bench_job *j);
void sy_bench_op_kv_write(sy_bench_job *j);
void sy_bench_op_rope(sy_bench_job *j);
void sy_bench_op_norm(sy_bench_job *j);
void sy_bench_op_moe(sy_bench_job *j);
void sy_bench_op_linear(sy_bench_job *j);

#endif
