/* The benchmark driver: the backend side, the copy bandwidth, then every selected case in table
 * order, each run by its op module and completed with its rates, floor and ratios. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "bench/cases.h"
#include "bench/copy.h"
#include "bench/job.h"
#include "model/engine_impl.h"
#include "model/presets.h"
#include "util/strbuf.h"

const char *sy_bench_status_name(int32_t status)
{
    switch (status) {
    case SY_BENCH_OK: return "ok";
    case SY_BENCH_NOT_SUPPORTED: return "not-supported";
    case SY_BENCH_ERROR: return "error";
    case SY_BENCH_LISTED: return "listed";
    default: return "invalid";
    }
}

void sy_bench_report_free(sy_bench_report *rep)
{
    free(rep->results);
    memset(rep, 0, sizeof *rep);
}

static int selected(const sy_bench_options *o, const sy_bench_case *c)
{
    return !o->case_filter || strstr(c->name, o->case_filter) != NULL;
}

static sy_bench_result *new_result(sy_bench_report *rep, const sy_bench_case *c)
{
    if (rep->n_results == rep->cap_results) {
        rep->cap_results = rep->cap_results ? 2 * rep->cap_results : 64;
        rep->results = sy_xrealloc(rep->results, rep->cap_results * sizeof *rep->results);
    }
    sy_bench_result *r = &rep->results[rep->n_results++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", c->name);
    r->op = sy_bench_op_name(c->op);
    r->layout = sy_bench_layout_tag(c);
    return r;
}

/* Rates over the median; the floor is the larger of bytes over the copy bandwidth measured in
 * this run and FLOPs over the peak. */
static void complete(const sy_bench_report *rep, sy_bench_result *r)
{
    if (r->status != SY_BENCH_OK || r->stats.median_us <= 0)
        return;
    const double us = r->stats.median_us;
    r->gbps = (double)r->bytes / us * 1e-3;
    r->tflops = r->flops ? (double)r->flops / us * 1e-6 : 0.0;
    if (!rep->copy_measured || rep->copy_gbps <= 0)
        return;
    const double memory_us = (double)r->bytes / rep->copy_gbps * 1e-3;
    const double compute_us = (double)r->flops / rep->peak_tflops * 1e-6;
    r->floor_compute = compute_us > memory_us;
    r->floor_us = r->floor_compute ? compute_us : memory_us;
    r->floor_ratio = r->floor_us > 0 ? us / r->floor_us : 0.0;
    r->copy_ratio = r->gbps / rep->copy_gbps;
}

static void record(const sy_bench_options *o, sy_bench_report *rep, sy_bench_result *r)
{
    complete(rep, r);
    rep->ok += r->status == SY_BENCH_OK;
    rep->not_supported += r->status == SY_BENCH_NOT_SUPPORTED;
    rep->errors += r->status == SY_BENCH_ERROR;
    if (o->on_result)
        o->on_result(o->user, rep, r);
}

static void run_case(sy_bench_run_state *run, const sy_bench_case *c, sy_bench_result *r)
{
    sy_bench_job j;
    sy_bench_job_begin(&j, run, c, r);
    switch (c->op) {
    case SY_BENCH_OP_DECODE: sy_bench_op_decode(&j); break;
    case SY_BENCH_OP_PREFILL: sy_bench_op_prefill(&j); break;
    case SY_BENCH_OP_EXTEND_GATHER:
    case SY_BENCH_OP_EXTEND_PREFILL:
    case SY_BENCH_OP_EXTEND_TOTAL:
    case SY_BENCH_OP_EXTEND_PAGED: sy_bench_op_extend(&j); break;
    case SY_BENCH_OP_KV_WRITE: sy_bench_op_kv_write(&j); break;
    case SY_BENCH_OP_ROPE:
    case SY_BENCH_OP_ROPE_KV_WRITE: sy_bench_op_rope(&j); break;
    case SY_BENCH_OP_NORM: sy_bench_op_norm(&j); break;
    case SY_BENCH_OP_MOE: sy_bench_op_moe(&j); break;
    case SY_BENCH_OP_LINEAR: sy_bench_op_linear(&j); break;
    default: sy_bench_job_error(&j, "bench: case %s has no op module (op %d)", c->name, c->op); break;
    }
    sy_bench_job_end(&j);
}

/* The copy goes first whatever the filter selects: every other case's floor and ratio need it. */
static void measure_copy(sy_bench_run_state *run, sy_bench_report *rep, const sy_bench_case *c)
{
    const sy_bench_shape *s = run->opts->quick ? &c->quick : &c->full;
    uint32_t copies = sy_bench_rotation_copies(sy_bench_copy_traffic(s->bytes).bytes, run->rotation_target,
                                               SY_BENCH_MAX_COPIES);
    sy_bench_copy copy;
    sy_error err = {{0}};
    sy_status st = sy_bench_measure_copy(&run->side, s->bytes, copies, run->opts->warmup, run->opts->runs,
                                         sy_conf_rng_for(run->opts->seed, c->name).seed, &copy, &err);
    rep->copy_bytes = sy_bench_copy_traffic(s->bytes).bytes;
    if (st == SY_OK) {
        rep->copy_measured = 1;
        rep->copy_median_us = copy.stats.median_us;
        rep->copy_gbps = (double)rep->copy_bytes / copy.stats.median_us * 1e-3;
    }
    if (!selected(run->opts, c)) {
        if (st != SY_OK)
            fprintf(stderr, "switchyard bench: the copy bandwidth could not be measured, so no floors: %s\n", err.msg);
        return;
    }
    sy_bench_result *r = new_result(rep, c);
    snprintf(r->shape, sizeof r->shape, "bytes=%llu", (unsigned long long)s->bytes);
    r->bytes = rep->copy_bytes;
    r->input_copies = copies;
    r->stats = copy.stats;
    if (st != SY_OK) {
        r->status = SY_BENCH_ERROR;
        snprintf(r->reason, sizeof r->reason, "%s", err.msg);
    }
    record(run->opts, rep, r);
}

static sy_status pick_backend(const sy_registry *reg, const char *name, const sy_registry_entry **out, sy_error *err)
{
    *out = NULL;
    if (name && strcmp(name, "auto") != 0) {
        *out = sy_registry_find_backend(reg, name);
        if (*out)
            return SY_OK;
        sy_str dirs = {0};
        for (size_t i = 0; i < sy_registry_search_dir_count(reg); i++)
            sy_str_appendf(&dirs, "%s%s", i ? ", " : "", sy_registry_search_dir(reg, i));
        sy_status st = sy_fail(err, SY_E_BACKEND, "backend '%s' was not found (searched: %s)", name,
                               dirs.data ? dirs.data : "no folder");
        sy_str_free(&dirs);
        return st;
    }
    for (size_t i = 0; i < sy_registry_count(reg); i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (e->type == SY_ENTRY_BACKEND && e->stage == SY_STAGE_NONE && e->probe_score > 0 &&
            (!*out || e->probe_score > (*out)->probe_score))
            *out = e;
    }
    return *out ? SY_OK : sy_fail(err, SY_E_BACKEND, "no backend can run here (`switchyard plugins` says why)");
}

static void today(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d", &tm);
}

static void describe_device(sy_bench_run_state *run, sy_bench_device *d)
{
    sy_device_info info;
    sy_error ignored = {{0}};
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    snprintf(d->backend, sizeof d->backend, "%s", run->side.be->name);
    snprintf(d->name, sizeof d->name, "%s", run->side.device);
    if (run->side.be->device_info(run->side.bctx, &info, &ignored) != SY_OK)
        return;
    d->memory_bytes = info.total_memory;
    d->multiprocessors = info.multiprocessors;
    d->warp_size = info.warp_size;
    d->cc_major = info.cc_major;
    d->cc_minor = info.cc_minor;
    d->l2_bytes = info.l2_bytes;
}

sy_status sy_bench_run(sy_registry *reg, const sy_bench_options *o, sy_bench_report *rep, sy_error *err)
{
    const double started = sy_now_ms();
    memset(rep, 0, sizeof *rep);
    today(rep->date, sizeof rep->date);
    rep->seed = o->seed;
    rep->quick = o->quick;
    rep->warmup = o->warmup;
    rep->runs = o->runs;
    rep->peak_tflops = o->peak_tflops;
    const sy_bench_case *cases;
    const size_t n = sy_bench_cases(&cases);
    size_t matched = 0;
    for (size_t i = 0; i < n; i++)
        matched += selected(o, &cases[i]);
    if (matched == 0)
        return sy_fail(err, SY_E_INVALID, "--case '%s' matches no case (--list names them)", o->case_filter);
    if (o->list_only) {
        for (size_t i = 0; i < n; i++)
            if (selected(o, &cases[i]))
                new_result(rep, &cases[i])->status = SY_BENCH_LISTED;
        return SY_OK;
    }
    if (o->runs < SY_BENCH_MIN_RUNS || o->warmup < 0 || !(o->peak_tflops > 0))
        return sy_fail(err, SY_E_INVALID, "bench: runs %d (at least %d), warmup %d (at least 0), peak %g TFLOP/s "
                                          "(positive)",
                       o->runs, SY_BENCH_MIN_RUNS, o->warmup, o->peak_tflops);

    const sy_registry_entry *backend = NULL;
    sy_status st = pick_backend(reg, o->backend, &backend, err);
    if (st != SY_OK)
        return st;
    sy_bench_run_state run;
    memset(&run, 0, sizeof run);
    run.reg = reg;
    run.opts = o;
    const sy_model_preset *preset = sy_model_preset_find("gpt-oss-120b");
    if (!preset)
        return sy_fail(err, SY_E_INTERNAL, "bench: the gpt-oss-120b preset is missing");
    run.model = preset->dims;
    if ((st = sy_conf_side_open(&run.side, backend, err)) != SY_OK)
        return st;
    describe_device(&run, &rep->device);
    run.rotation_target = rep->rotation_bytes = sy_bench_rotation_target(rep->device.l2_bytes, o->quick);

    for (size_t i = 0; i < n; i++) {
        if (cases[i].op == SY_BENCH_OP_COPY) {
            measure_copy(&run, rep, &cases[i]);
            continue;
        }
        if (!selected(o, &cases[i]))
            continue;
        sy_bench_result *r = new_result(rep, &cases[i]);
        run_case(&run, &cases[i], r);
        record(o, rep, r);
    }
    sy_conf_side_close(&run.side);
    rep->wall_ms = sy_now_ms() - started;
    return SY_OK;
}
