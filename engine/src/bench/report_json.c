/* The JSON report of `switchyard bench` (docs/performance.md, "Schema"). */
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/timing.h"
#include "util/json.h"
#include "util/strbuf.h"

static void member_string(sy_json *j, const char *key, const char *value)
{
    sy_json_key(j, key);
    if (value && value[0])
        sy_json_string(j, value);
    else
        sy_json_null(j);
}

static void member_double(sy_json *j, const char *key, double v, int present)
{
    sy_json_key(j, key);
    if (present)
        sy_json_double(j, v);
    else
        sy_json_null(j);
}

static void member_uint(sy_json *j, const char *key, uint64_t v)
{
    sy_json_key(j, key);
    sy_json_uint(j, v);
}

/* "batch=4 kv=bf16" as {"batch": 4, "kv": "bf16"}: whole numbers as numbers, the rest as text. */
static void shape_object(sy_json *j, const char *shape)
{
    char *copy = sy_strdup(shape), *save = NULL;
    sy_json_begin_object(j);
    for (char *word = strtok_r(copy, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(word, '=');
        if (!eq)
            continue;
        *eq = '\0';
        char *end = NULL;
        long long v = strtoll(eq + 1, &end, 10);
        sy_json_key(j, word);
        if (eq[1] && end && *end == '\0')
            sy_json_int(j, v);
        else
            sy_json_string(j, eq + 1);
    }
    sy_json_end_object(j);
    free(copy);
}

static void write_case(sy_json *j, const sy_bench_result *r)
{
    const int ok = r->status == SY_BENCH_OK, floored = ok && r->floor_us > 0;
    sy_json_begin_object(j);
    member_string(j, "name", r->name);
    member_string(j, "op", r->op);
    member_string(j, "plugin", r->plugin);
    member_string(j, "layout", r->layout);
    member_string(j, "status", sy_bench_status_name(r->status));
    member_string(j, "reason", r->reason);
    member_double(j, "median_us", r->stats.median_us, ok);
    member_double(j, "p10_us", r->stats.p10_us, ok);
    member_double(j, "p90_us", r->stats.p90_us, ok);
    member_double(j, "min_us", r->stats.min_us, ok);
    sy_json_key(j, "runs");
    sy_json_uint(j, ok ? r->stats.runs : 0);
    member_uint(j, "bytes", r->bytes);
    member_uint(j, "flops", r->flops);
    member_double(j, "GBps", r->gbps, ok);
    member_double(j, "TFLOPs", r->tflops, ok && r->flops);
    member_double(j, "floor_us", r->floor_us, floored);
    member_string(j, "floor_kind", floored ? (r->floor_compute ? "compute" : "memory") : NULL);
    member_double(j, "floor_ratio", r->floor_ratio, floored);
    member_double(j, "copy_ratio", r->copy_ratio, floored);
    sy_json_key(j, "shape");
    shape_object(j, r->shape);
    member_uint(j, "input_copies", r->input_copies);
    member_string(j, "note", r->note);
    sy_json_end_object(j);
}

void sy_bench_write_json(const sy_bench_report *rep, FILE *f)
{
    sy_json j;
    sy_json_init(&j, f, 1);
    sy_json_begin_object(&j);
    member_string(&j, "benchmark", "kernels");
    member_string(&j, "date", rep->date);
    sy_json_key(&j, "device");
    sy_json_begin_object(&j);
    member_string(&j, "backend", rep->device.backend);
    member_string(&j, "name", rep->device.name);
    member_uint(&j, "memory_bytes", rep->device.memory_bytes);
    member_uint(&j, "multiprocessors", rep->device.multiprocessors);
    member_uint(&j, "warp_size", rep->device.warp_size);
    member_uint(&j, "compute_capability", rep->device.cc_major * 10u + rep->device.cc_minor);
    member_uint(&j, "l2_bytes", rep->device.l2_bytes);
    sy_json_end_object(&j);
    sy_json_key(&j, "method");
    sy_json_begin_object(&j);
    sy_json_key(&j, "warmup");
    sy_json_int(&j, rep->warmup);
    sy_json_key(&j, "runs");
    sy_json_int(&j, rep->runs);
    member_string(&j, "timing", "device events");
    sy_json_key(&j, "peak_tflops");
    sy_json_double(&j, rep->peak_tflops);
    member_string(&j, "statistics", "median, p10, p90 (linear interpolation between ranks), min");
    member_uint(&j, "rotation_bytes", rep->rotation_bytes);
    member_string(&j, "bytes", "compulsory traffic: each input read once, each output written once");
    member_string(&j, "flops", "2 per multiply-add; attention counts q.k and p.v over the visible pairs");
    sy_json_key(&j, "seed");
    sy_json_uint(&j, rep->seed);
    sy_json_key(&j, "quick");
    sy_json_bool(&j, rep->quick);
    sy_json_end_object(&j);
    sy_json_key(&j, "copy");
    if (rep->copy_measured) {
        sy_json_begin_object(&j);
        member_uint(&j, "bytes", rep->copy_bytes);
        member_double(&j, "median_us", rep->copy_median_us, 1);
        member_double(&j, "GBps", rep->copy_gbps, 1);
        sy_json_end_object(&j);
    } else {
        sy_json_null(&j);
    }
    sy_json_key(&j, "cases");
    sy_json_begin_array(&j);
    for (size_t i = 0; i < rep->n_results; i++)
        write_case(&j, &rep->results[i]);
    sy_json_end_array(&j);
    sy_json_end_object(&j);
    fputc('\n', f);
}
