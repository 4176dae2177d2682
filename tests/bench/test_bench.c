/* `switchyard bench` on the cpu backend: a --quick run covers every case and writes a JSON report
 * whose numbers hold together (order statistics, rates over the median, floors from the copy
 * bandwidth of the same run) and whose byte and FLOP counts equal the formulas of each op written
 * again here from the shape the case reports; --list names every case, --case filters, bad
 * arguments exit 2, a missing backend exits 3, a plugin whose caps do not cover a case makes it
 * not-supported with the reason, and one whose calls fail makes its cases errors and the exit 1. The timing and rotation helpers are checked on known values. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/timing.h"
#include "bench/traffic.h"
#include "fixture_support.h"
#include "json_doc.h"
#include "run_process.h"
#include "sy_test.h"

/* Every case of the bench, in run order: the names other tools (bench/perf_table.py) look up. */
static const char *const ALL_CASES[] = {
    "copy.d2d",
    "decode.nhd.bf16.B128.ctx8192",
    "decode.nhd.bf16.B128.ctx1024",
    "decode.nhd.bf16.B1.ctx32768",
    "decode.nhd.fp8.B128.ctx8192",
    "decode.nhd.bf16.B128.ctx8192.window128",
    "decode.vectorized_5d.bf16.B128.ctx8192",
    "decode.vectorized_5d.bf16.B128.ctx1024",
    "decode.vectorized_5d.bf16.B1.ctx32768",
    "decode.vectorized_5d.fp8.B128.ctx8192",
    "decode.vectorized_5d.bf16.B128.ctx8192.window128",
    "prefill.B1.L8192.nowindow",
    "prefill.B1.L8192.window128",
    "prefill.B8.L2048.nowindow",
    "prefill.B8.L2048.window128",
    "extend.nhd.gather.prefix4096.chunk512",
    "extend.nhd.prefill.prefix4096.chunk512",
    "extend.nhd.total.prefix4096.chunk512",
    "extend.nhd.paged.prefix4096.chunk512",
    "extend.vectorized_5d.gather.prefix4096.chunk512",
    "extend.vectorized_5d.prefill.prefix4096.chunk512",
    "extend.vectorized_5d.total.prefix4096.chunk512",
    "extend.vectorized_5d.paged.prefix4096.chunk512",
    "kv_write.nhd.T16384",
    "kv_write.vectorized_5d.T16384",
    "rope.T16384",
    "rope_kv_write.nhd.T16384",
    "rope_kv_write.vectorized_5d.T16384",
    "norm.add_rmsnorm_pad.M16384.N2880.P3072",
    "norm.add_rmsnorm_pad.M128.N2880.P3072",
    "moe.interleave.T128.E128.k4",
    "moe.separated.T128.E128.k4",
    "moe.interleave.T8192.E128.k4",
    "moe.separated.T8192.E128.k4",
    "linear.bf16.qkv.M128.K2880.N5120",
    "linear.bf16.qkv_parts.M128.K2880.N5120",
    "linear.bf16.o.M128.K4096.N2880",
    "linear.bf16.router.M128.K2880.N128",
    "linear.bf16.unembed.M128.K2880.N201088",
    "linear.f32.qkv.M128.K2880.N5120",
    "linear.f32.qkv_parts.M128.K2880.N5120",
    "linear.f32.o.M128.K4096.N2880",
    "linear.f32.router.M128.K2880.N128",
    "linear.f32.unembed.M128.K2880.N201088",
};
enum { N_CASES = sizeof ALL_CASES / sizeof ALL_CASES[0] };

/* ------------------------------------------------------------------------------------------ */
/* running the command */

typedef struct bench_run {
    sy_process_result proc;
    char *json;       /* the report's text, NULL when none was written */
    char *json_path;
} bench_run;

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    ck_assert(text != NULL);
    size_t got = fread(text, 1, (size_t)n, f);
    text[got] = '\0';
    fclose(f);
    return text;
}

/* switchyard bench ARGS... --json <scratch file>; `args` NULL-terminated. */
static void run_bench(const char *const *args, bench_run *out)
{
    char *dir = sy_scratch_dir();
    out->json_path = sy_fixture_printf("%s/report.json", dir);
    const char *argv[32] = {"bench"};
    size_t n = 1;
    for (size_t i = 0; args[i]; i++)
        argv[n++] = args[i];
    argv[n++] = "--json";
    argv[n++] = out->json_path;
    argv[n] = NULL;
    sy_run_switchyard(argv, NULL, &out->proc);
    out->json = read_file(out->json_path);
    sy_scratch_remove(dir);
}

static void bench_run_free(bench_run *r)
{
    sy_process_result_free(&r->proc);
    free(r->json);
    free(r->json_path);
}

static void expect_exit(const sy_process_result *p, int code, const char *what)
{
    ck_assert_msg(p->term_signal == 0, "%s: killed by signal %d; stderr:\n%s", what, p->term_signal, p->err);
    ck_assert_msg(p->exit_code == code, "%s: exit %d, expected %d; stdout:\n%s\nstderr:\n%s", what, p->exit_code, code,
                  p->out, p->err);
}

/* ------------------------------------------------------------------------------------------ */
/* reading the report */

static double number(json_doc *d, yaml_node_t *node, const char *key)
{
    const char *text = json_text(d, node, key);
    ck_assert_msg(text != NULL, "member '%s' is missing", key);
    char *end = NULL;
    double v = strtod(text, &end);
    ck_assert_msg(end != text && *end == '\0', "member '%s' is '%s', not a number", key, text);
    return v;
}

static int is_null(json_doc *d, yaml_node_t *node, const char *key)
{
    const char *text = json_text(d, node, key);
    ck_assert_msg(text != NULL, "member '%s' is missing", key);
    return strcmp(text, "null") == 0;
}

static yaml_node_t *find_case(json_doc *d, const char *name)
{
    yaml_node_t *cases = json_member(d, json_root(d), "cases");
    for (size_t i = 0; i < json_length(cases); i++) {
        yaml_node_t *c = json_element(d, cases, i);
        const char *n = json_text(d, c, "name");
        if (n && strcmp(n, name) == 0)
            return c;
    }
    ck_abort_msg("case %s is not in the report", name);
    return NULL;
}

static uint64_t dim(json_doc *d, yaml_node_t *c, const char *key)
{
    return (uint64_t)number(d, json_member(d, c, "shape"), key);
}

static void expect_close(double got, double want, const char *what, const char *name)
{
    ck_assert_msg(isfinite(got) && fabs(got - want) <= 1e-9 * fabs(want), "%s: %s is %.17g, expected %.17g", name, what,
                  got, want);
}

/* ------------------------------------------------------------------------------------------ */
/* the formulas, written again from the reported shapes (gpt-oss: 64 q heads, 8 KV heads, dim 64) */

static const uint64_t HQ = 64, HKV = 8, D = 64, BF16 = 2, IDX = 4;

static uint64_t expected_decode_bytes(json_doc *d, yaml_node_t *c)
{
    uint64_t B = dim(d, c, "batch"), ctx = dim(d, c, "context"), w = dim(d, c, "window"), P = dim(d, c, "page");
    uint64_t kv = strcmp(json_text(d, json_member(d, c, "shape"), "kv"), "fp8_e4m3") == 0 ? 1 : 2;
    uint64_t keys = w && w < ctx ? w : ctx, first_page = (ctx - keys) / P, pages = (ctx - 1) / P - first_page + 1;
    return 2 * B * keys * HKV * D * kv + 2 * B * HQ * D * BF16 + B * pages * IDX + B * IDX + HQ * 4;
}

/* Causal pairs of lq queries that follow lk - lq cached keys, each seeing at most w keys. */
static uint64_t pairs(uint64_t lq, uint64_t lk, uint64_t w)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < lq; i++) {
        uint64_t seen = lk - lq + i + 1;
        n += w && seen > w ? w : seen;
    }
    return n;
}

static uint64_t elem_size(const char *dtype)
{
    ck_assert_msg(strcmp(dtype, "bf16") == 0 || strcmp(dtype, "f32") == 0, "dtype %s", dtype);
    return strcmp(dtype, "f32") == 0 ? 4 : 2;
}

static void check_formulas(json_doc *d, yaml_node_t *c, const char *name)
{
    double bytes = number(d, c, "bytes"), flops = number(d, c, "flops");
    double want_bytes = -1, want_flops = 0;
    if (strncmp(name, "decode.", 7) == 0) {
        uint64_t B = dim(d, c, "batch"), ctx = dim(d, c, "context"), w = dim(d, c, "window");
        want_bytes = (double)expected_decode_bytes(d, c);
        want_flops = 4.0 * B * HQ * (double)(w && w < ctx ? w : ctx) * D;
    } else if (strncmp(name, "prefill.", 8) == 0) {
        uint64_t B = dim(d, c, "batch"), L = dim(d, c, "length"), w = dim(d, c, "window");
        want_bytes = (double)(2 * B * L * HQ * D * BF16 + 2 * B * L * HKV * D * BF16 + 2 * (B + 1) * IDX + HQ * 4);
        want_flops = 4.0 * HQ * D * B * (double)pairs(L, L, w);
    } else if (strncmp(name, "extend.", 7) == 0) {
        uint64_t lq = dim(d, c, "chunk"), lk = dim(d, c, "prefix") + lq;
        double gather = (double)(4 * lk * HKV * D * BF16 + lk * IDX);
        double prefill = (double)(2 * lq * HQ * D * BF16 + 2 * lk * HKV * D * BF16 + 2 * 2 * IDX + HQ * 4);
        double attn_flops = 4.0 * HQ * D * (double)pairs(lq, lk, 0);
        /* prefill_paged reads the keys prefill_linear reads, from the pages: a prefill's bytes */
        const int prefill_only = strstr(name, ".prefill.") || strstr(name, ".paged.");
        want_bytes = strstr(name, ".gather.") ? gather : prefill_only ? prefill : gather + prefill;
        want_flops = strstr(name, ".gather.") ? 0 : attn_flops;
    } else if (strncmp(name, "kv_write.", 9) == 0) {
        uint64_t T = dim(d, c, "tokens");
        want_bytes = (double)(4 * T * HKV * D * BF16 + T * IDX);
    } else if (strncmp(name, "rope.", 5) == 0 || strncmp(name, "rope_kv_write.", 14) == 0) {
        uint64_t T = dim(d, c, "tokens");
        want_bytes = (double)(2 * T * (HQ + HKV) * D * BF16 + T * IDX);
        if (name[4] == '_')
            want_bytes += (double)(3 * T * HKV * D * BF16 + T * IDX); /* v read, pool K and V written, slots */
        want_flops = 3.0 * T * (HQ + HKV) * D;
    } else if (strncmp(name, "norm.", 5) == 0) {
        uint64_t M = dim(d, c, "rows"), N = dim(d, c, "cols"), out = dim(d, c, "out_cols");
        ck_assert_uint_eq(out, (N + 255) / 256 * 256);
        want_bytes = (double)((2 * M * N + N + M * out + M * N) * BF16);
        want_flops = 5.0 * M * N;
    } else if (strncmp(name, "moe.", 4) == 0) {
        uint64_t T = dim(d, c, "tokens"), k = dim(d, c, "top_k"), used = dim(d, c, "used_experts");
        uint64_t H = dim(d, c, "hidden"), I = dim(d, c, "intermediate"), x_cols = dim(d, c, "x_cols");
        uint64_t expert = (2 * I * H + H * I) / 32 * 17 + (2 * I + H) * BF16;
        ck_assert_msg(used >= k && used <= dim(d, c, "experts"), "%s: %llu experts used", name, (unsigned long long)used);
        want_bytes = (double)(used * expert + T * x_cols * BF16 + T * H * BF16 + 2 * T * k * IDX);
        want_flops = 2.0 * T * k * (2 * I * H + H * I);
    } else if (strncmp(name, "linear.", 7) == 0) {
        uint64_t M = dim(d, c, "rows"), K = dim(d, c, "in"), N = dim(d, c, "out");
        yaml_node_t *shape = json_member(d, c, "shape");
        uint64_t x = elem_size(json_text(d, shape, "x")), y = elem_size(json_text(d, shape, "y"));
        uint64_t bias = strcmp(json_text(d, shape, "bias"), "none") == 0 ? 0 : elem_size(json_text(d, shape, "bias"));
        ck_assert_str_eq(json_text(d, shape, "x"), strncmp(name + 7, "f32.", 4) == 0 ? "f32" : "bf16");
        want_bytes = (double)(N * K * BF16 + M * K * x + N * bias + M * N * y);
        want_flops = 2.0 * M * N * K;
    } else if (strcmp(name, "copy.d2d") == 0) {
        want_bytes = 2.0 * (double)dim(d, c, "bytes");
    }
    ck_assert_msg(want_bytes >= 0, "%s: no formula in the test for this case", name);
    expect_close(bytes, want_bytes, "bytes", name);
    if (want_flops > 0)
        expect_close(flops, want_flops, "flops", name);
    else
        ck_assert_msg(flops == 0, "%s: %g flops for an op that does no arithmetic", name, flops);
}

/* Statistics in order, rates over the median, the floor and both ratios from the run's copy. */
static void check_numbers(json_doc *d, yaml_node_t *c, const char *name, double copy_gbps, double peak)
{
    double median = number(d, c, "median_us"), p10 = number(d, c, "p10_us"), p90 = number(d, c, "p90_us");
    double min = number(d, c, "min_us"), bytes = number(d, c, "bytes"), flops = number(d, c, "flops");
    ck_assert_msg(median > 0 && min > 0 && min <= p10 && p10 <= median && median <= p90,
                  "%s: min %g p10 %g median %g p90 %g out of order", name, min, p10, median, p90);
    ck_assert_msg(number(d, c, "runs") == 50, "%s: %g runs, expected the default 50", name, number(d, c, "runs"));
    ck_assert_msg(number(d, c, "input_copies") >= 1, "%s: no input copy", name);
    expect_close(number(d, c, "GBps"), bytes / median * 1e-3, "GBps", name);
    if (flops > 0)
        expect_close(number(d, c, "TFLOPs"), flops / median * 1e-6, "TFLOPs", name);
    else
        ck_assert_msg(is_null(d, c, "TFLOPs"), "%s: a FLOP rate without FLOPs", name);
    double memory_us = bytes / copy_gbps * 1e-3, compute_us = flops / peak * 1e-6;
    double floor_us = memory_us > compute_us ? memory_us : compute_us;
    expect_close(number(d, c, "floor_us"), floor_us, "floor_us", name);
    ck_assert_str_eq(json_text(d, c, "floor_kind"), memory_us >= compute_us ? "memory" : "compute");
    expect_close(number(d, c, "floor_ratio"), median / floor_us, "floor_ratio", name);
    expect_close(number(d, c, "copy_ratio"), bytes / median * 1e-3 / copy_gbps, "copy_ratio", name);
}

/* ------------------------------------------------------------------------------------------ */
/* one --quick run of every case, shared by the tests that read it */

static bench_run quick;

/* Inputs of seed SY_TEST_SEED (printed), so that a failure can be run again on the same data. */
static void quick_run_once(void)
{
    static char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)sy_test_seed());
    const char *args[] = {"--backend", "cpu", "--quick", "--seed", seed, NULL};
    run_bench(args, &quick);
}

static void quick_run_free(void)
{
    bench_run_free(&quick);
}

START_TEST(quick_run_covers_every_case)
{
    expect_exit(&quick.proc, 0, "bench --quick");
    ck_assert_msg(quick.json != NULL, "no JSON report was written; stdout:\n%s", quick.proc.out);
    json_doc d;
    json_doc_parse(&d, quick.json);
    yaml_node_t *root = json_root(&d);
    ck_assert_str_eq(json_text(&d, root, "benchmark"), "kernels");
    const char *date = json_text(&d, root, "date");
    ck_assert_msg(date && strlen(date) == 10 && date[4] == '-' && date[7] == '-', "date '%s'", date ? date : "");
    yaml_node_t *device = json_member(&d, root, "device");
    ck_assert_str_eq(json_text(&d, device, "backend"), "cpu");
    ck_assert_msg(number(&d, device, "memory_bytes") > 0 && number(&d, device, "multiprocessors") >= 1 &&
                      number(&d, device, "warp_size") == 1,
                  "device fields");
    yaml_node_t *method = json_member(&d, root, "method");
    ck_assert_str_eq(json_text(&d, method, "timing"), "device events");
    ck_assert(number(&d, method, "runs") == 50 && number(&d, method, "warmup") == 10);
    ck_assert(number(&d, method, "peak_tflops") == 989);
    yaml_node_t *copy = json_member(&d, root, "copy");
    double copy_gbps = number(&d, copy, "GBps");
    ck_assert_msg(copy_gbps > 0 && isfinite(copy_gbps), "copy bandwidth %g", copy_gbps);
    expect_close(copy_gbps, number(&d, copy, "bytes") / number(&d, copy, "median_us") * 1e-3, "copy GBps", "copy");

    yaml_node_t *cases = json_member(&d, root, "cases");
    ck_assert_uint_eq(json_length(cases), N_CASES);
    for (size_t i = 0; i < N_CASES; i++) {
        yaml_node_t *c = json_element(&d, cases, i);
        const char *name = json_text(&d, c, "name");
        ck_assert_str_eq(name, ALL_CASES[i]);
        ck_assert_msg(strcmp(json_text(&d, c, "status"), "ok") == 0, "%s: %s (%s)", name, json_text(&d, c, "status"),
                      json_text(&d, c, "reason"));
        ck_assert_msg(is_null(&d, c, "reason"), "%s: a reason although ok", name);
        check_numbers(&d, c, name, copy_gbps, 989.0);
        check_formulas(&d, c, name);
        ck_assert_msg(strstr(quick.proc.out, name) != NULL, "the table lacks %s:\n%s", name, quick.proc.out);
    }
    /* The copy row is the run's own copy bandwidth. */
    yaml_node_t *c = find_case(&d, "copy.d2d");
    expect_close(number(&d, c, "GBps"), copy_gbps, "copy.d2d GBps", "copy.d2d");
    json_doc_free(&d);
}
END_TEST

START_TEST(quick_run_names_plugins_and_layouts)
{
    json_doc d;
    json_doc_parse(&d, quick.json);
    static const struct {
        const char *name, *plugin, *layout, *op;
    } want[] = {
        {"decode.vectorized_5d.fp8.B128.ctx8192", "attn_paged", "vectorized_5d", "attention.decode_paged"},
        {"extend.nhd.total.prefix4096.chunk512", "kv_nhd+attn_paged", "nhd", "kv_layout.gather+attention.prefill_linear"},
        {"extend.vectorized_5d.paged.prefix4096.chunk512", "attn_paged", "vectorized_5d", "attention.prefill_paged"},
        {"rope_kv_write.vectorized_5d.T16384", "rope_yarn", "vectorized_5d", "rope.rope_kv_write"},
        {"moe.separated.T8192.E128.k4", "moe_mxfp4_separated", "separated", "moe.forward"},
        {"norm.add_rmsnorm_pad.M128.N2880.P3072", "norm_rmsnorm", NULL, "norm.rmsnorm"},
        {"linear.f32.qkv.M128.K2880.N5120", "linear", NULL, "linear.linear"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        yaml_node_t *c = find_case(&d, want[i].name);
        ck_assert_str_eq(json_text(&d, c, "plugin"), want[i].plugin);
        ck_assert_str_eq(json_text(&d, c, "op"), want[i].op);
        ck_assert_str_eq(json_text(&d, c, "layout"), want[i].layout ? want[i].layout : "null");
    }
    /* fp8 reads half the KV bytes of bf16 at the same shape. */
    uint64_t fp8 = (uint64_t)number(&d, find_case(&d, "decode.nhd.fp8.B128.ctx8192"), "bytes");
    uint64_t bf16 = (uint64_t)number(&d, find_case(&d, "decode.nhd.bf16.B128.ctx8192"), "bytes");
    ck_assert_msg(fp8 < bf16 && bf16 - fp8 > bf16 / 3, "fp8 %llu vs bf16 %llu bytes", (unsigned long long)fp8,
                  (unsigned long long)bf16);
    ck_assert_msg(strstr(quick.proc.out, "44 ok, 0 not supported, 0 failed"), "summary:\n%s", quick.proc.out);
    json_doc_free(&d);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */

START_TEST(list_names_every_case)
{
    const char *args[] = {"bench", "--list", NULL};
    sy_process_result p;
    sy_run_switchyard(args, NULL, &p);
    expect_exit(&p, 0, "bench --list");
    char *at = p.out;
    for (size_t i = 0; i < N_CASES; i++) {
        size_t n = strlen(ALL_CASES[i]);
        ck_assert_msg(strncmp(at, ALL_CASES[i], n) == 0 && at[n] == '\n', "line %zu: expected %s, output:\n%s", i + 1,
                      ALL_CASES[i], p.out);
        at += n + 1;
    }
    ck_assert_msg(*at == '\0', "more lines than cases:\n%s", at);
    ck_assert_str_eq(p.err, "");
    sy_process_result_free(&p);
}
END_TEST

START_TEST(case_filters_list_and_run)
{
    const char *list[] = {"bench", "--list", "--case", "decode.vectorized_5d", NULL};
    sy_process_result p;
    sy_run_switchyard(list, NULL, &p);
    expect_exit(&p, 0, "bench --list --case");
    size_t lines = 0;
    for (const char *s = p.out; *s; s++)
        lines += *s == '\n';
    ck_assert_uint_eq(lines, 5);
    ck_assert(strstr(p.out, "decode.nhd") == NULL && strstr(p.out, "decode.vectorized_5d.bf16.B1.ctx32768\n"));
    sy_process_result_free(&p);

    const char *args[] = {"--backend", "cpu", "--quick", "--case", "norm.add_rmsnorm_pad.M128", NULL};
    bench_run r;
    run_bench(args, &r);
    expect_exit(&r.proc, 0, "bench --case");
    json_doc d;
    json_doc_parse(&d, r.json);
    yaml_node_t *cases = json_member(&d, json_root(&d), "cases");
    ck_assert_uint_eq(json_length(cases), 1);
    ck_assert_str_eq(json_text(&d, json_element(&d, cases, 0), "name"), "norm.add_rmsnorm_pad.M128.N2880.P3072");
    /* The copy is measured anyway: the floor needs it. */
    ck_assert(number(&d, json_member(&d, json_root(&d), "copy"), "GBps") > 0);
    ck_assert(!is_null(&d, json_element(&d, cases, 0), "floor_us"));
    json_doc_free(&d);
    bench_run_free(&r);
}
END_TEST

START_TEST(bad_arguments_exit_two)
{
    static const struct {
        const char *args[6];
        const char *message;
    } bad[] = {
        {{"bench", "--runs", "49", NULL}, "--runs needs a whole number from 50"},
        {{"bench", "--runs", "fifty", NULL}, "--runs needs a whole number from 50"},
        {{"bench", "--warmup", "-1", NULL}, "--warmup needs a whole number from 0"},
        {{"bench", "--peak-tflops", "0", NULL}, "--peak-tflops needs a positive number"},
        {{"bench", "--seed", "-3", NULL}, "--seed '-3' is not a non-negative integer"},
        {{"bench", "--json", NULL}, "--json needs a value"},
        {{"bench", "--frobnicate", NULL}, "unknown option '--frobnicate'"},
        {{"bench", "--list", "--case", "no.such.case", NULL}, "--case 'no.such.case' matches no case"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sy_process_result p;
        sy_run_switchyard(bad[i].args, NULL, &p);
        expect_exit(&p, 2, bad[i].args[1]);
        ck_assert_msg(strstr(p.err, bad[i].message), "%s: stderr lacks '%s':\n%s", bad[i].args[1], bad[i].message,
                      p.err);
        sy_process_result_free(&p);
    }
    const char *help[] = {"bench", "--help", NULL};
    sy_process_result p;
    sy_run_switchyard(help, NULL, &p);
    expect_exit(&p, 0, "bench --help");
    ck_assert(strstr(p.out, "usage: switchyard bench") && strstr(p.out, "--peak-tflops X"));
    sy_process_result_free(&p);
}
END_TEST

START_TEST(missing_backend_exits_three)
{
    const char *args[] = {"--backend", "no_such_backend", "--quick", NULL};
    bench_run r;
    run_bench(args, &r);
    expect_exit(&r.proc, 3, "bench --backend no_such_backend");
    ck_assert_msg(strstr(r.proc.err, "backend 'no_such_backend' was not found"), "stderr:\n%s", r.proc.err);
    ck_assert_msg(r.json == NULL, "a report was written although nothing ran");
    bench_run_free(&r);
}
END_TEST

/* attn_paged with caps narrowed to f32 q, nhd and bf16 KV, no sinks or window: every attention case
 * of the bench (bf16 q, sinks) is beyond them. */
START_TEST(caps_that_do_not_cover_a_case_make_it_not_supported)
{
    const char *args[] = {"--backend", "cpu", "--quick", "--plugin-path", SY_BENCH_FIXTURE_ROOT "/narrow_attention",
                          "--case", "decode.", NULL};
    bench_run r;
    run_bench(args, &r);
    expect_exit(&r.proc, 0, "bench with a narrowed attention plugin");
    json_doc d;
    json_doc_parse(&d, r.json);
    yaml_node_t *cases = json_member(&d, json_root(&d), "cases");
    ck_assert_uint_eq(json_length(cases), 10);
    for (size_t i = 0; i < json_length(cases); i++) {
        yaml_node_t *c = json_element(&d, cases, i);
        const char *name = json_text(&d, c, "name"), *reason = json_text(&d, c, "reason");
        ck_assert_msg(strcmp(json_text(&d, c, "status"), "not-supported") == 0, "%s: %s", name,
                      json_text(&d, c, "status"));
        ck_assert_msg(reason && strstr(reason, "plugin attn_paged (cpu) does not ") &&
                          (strstr(reason, "read layout vectorized_5d") || strstr(reason, "declare KV dtype fp8_e4m3") ||
                           strstr(reason, "declare q dtype bf16")),
                      "%s: reason '%s'", name, reason ? reason : "");
        ck_assert(is_null(&d, c, "median_us") && is_null(&d, c, "floor_us"));
    }
    ck_assert_msg(strstr(r.proc.out, "0 ok, 10 not supported, 0 failed"), "summary:\n%s", r.proc.out);
    json_doc_free(&d);
    bench_run_free(&r);
}
END_TEST

/* A plugin whose calls fail: its cases are errors with its message, the others still run, the
 * report is still written, and the exit status says a case failed. */
START_TEST(a_failing_plugin_makes_its_cases_errors_and_exits_one)
{
    const char *args[] = {"--backend", "cpu", "--quick", "--plugin-path", SY_BENCH_FIXTURE_ROOT "/failing_attention",
                          "--case", ".B1.", NULL};
    bench_run r;
    run_bench(args, &r);
    expect_exit(&r.proc, 1, "bench with a failing attention plugin");
    ck_assert_msg(r.json != NULL, "no report although the run completed");
    json_doc d;
    json_doc_parse(&d, r.json);
    static const char *const names[] = {"decode.nhd.bf16.B1.ctx32768", "decode.vectorized_5d.bf16.B1.ctx32768",
                                        "prefill.B1.L8192.nowindow", "prefill.B1.L8192.window128"};
    yaml_node_t *cases = json_member(&d, json_root(&d), "cases");
    ck_assert_uint_eq(json_length(cases), 4);
    for (size_t i = 0; i < 4; i++) {
        yaml_node_t *c = find_case(&d, names[i]);
        const char *reason = json_text(&d, c, "reason");
        ck_assert_str_eq(json_text(&d, c, "status"), "error");
        ck_assert_msg(reason && strstr(reason, "fixture: planted launch failure"), "%s: reason '%s'", names[i],
                      reason ? reason : "");
        ck_assert(is_null(&d, c, "median_us"));
    }
    ck_assert_msg(strstr(r.proc.out, "0 ok, 0 not supported, 4 failed"), "summary:\n%s", r.proc.out);
    json_doc_free(&d);
    bench_run_free(&r);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* helpers, on known values */

START_TEST(percentiles_interpolate_between_ranks)
{
    double us[10] = {10, 3, 7, 1, 9, 2, 8, 4, 6, 5};
    sy_bench_stats s;
    sy_bench_stats_of(us, 10, &s);
    ck_assert(s.runs == 10 && s.min_us == 1 && s.max_us == 10);
    ck_assert_msg(fabs(s.median_us - 5.5) < 1e-12 && fabs(s.p10_us - 1.9) < 1e-12 && fabs(s.p90_us - 9.1) < 1e-12,
                  "median %g p10 %g p90 %g", s.median_us, s.p10_us, s.p90_us);
    double one = 4.0;
    sy_bench_stats_of(&one, 1, &s);
    ck_assert(s.median_us == 4.0 && s.p10_us == 4.0 && s.p90_us == 4.0);
}
END_TEST

START_TEST(rotation_spans_the_target)
{
    const uint64_t MiB = 1 << 20;
    ck_assert_uint_eq(sy_bench_rotation_copies(10 * MiB, 200 * MiB, 256), 20);
    ck_assert_uint_eq(sy_bench_rotation_copies(70 * MiB, 200 * MiB, 256), 3);
    ck_assert_uint_eq(sy_bench_rotation_copies(200 * MiB, 200 * MiB, 256), 1);
    ck_assert_uint_eq(sy_bench_rotation_copies(1, 200 * MiB, 256), 256);
    ck_assert_uint_eq(sy_bench_rotation_target(60 * MiB, 0), 240 * MiB);
    ck_assert_uint_eq(sy_bench_rotation_target(0, 0), 200 * MiB);
    ck_assert_uint_eq(sy_bench_rotation_target(60 * MiB, 1), 16 * MiB);
}
END_TEST

START_TEST(attention_pairs_follow_causality_and_window)
{
    ck_assert_uint_eq(sy_bench_attention_pairs(4, 4, 1, 0), 10);   /* 1 + 2 + 3 + 4 */
    ck_assert_uint_eq(sy_bench_attention_pairs(4, 4, 1, 2), 7);    /* 1 + 2 + 2 + 2 */
    ck_assert_uint_eq(sy_bench_attention_pairs(2, 5, 1, 0), 9);    /* after 3 cached keys: 4 + 5 */
    ck_assert_uint_eq(sy_bench_attention_pairs(3, 5, 0, 0), 15);   /* not causal: every key */
    ck_assert_uint_eq(sy_bench_decode_keys(8192, 128), 128);
    ck_assert_uint_eq(sy_bench_decode_keys(100, 128), 100);
    ck_assert_uint_eq(sy_bench_decode_pages(8192, 128, 64), 2);    /* keys 8064 .. 8191 */
    ck_assert_uint_eq(sy_bench_decode_pages(8190, 128, 64), 3);    /* keys 8062 .. 8189 straddle three pages */
    ck_assert_uint_eq(sy_bench_decode_pages(1, 0, 64), 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bench");
    TCase *run = tcase_create("quick run");
    tcase_add_unchecked_fixture(run, quick_run_once, quick_run_free);
    tcase_set_timeout(run, 600);
    tcase_add_test(run, quick_run_covers_every_case);
    tcase_add_test(run, quick_run_names_plugins_and_layouts);
    suite_add_tcase(s, run);
    TCase *cli = tcase_create("command");
    tcase_set_timeout(cli, 300);
    tcase_add_test(cli, list_names_every_case);
    tcase_add_test(cli, case_filters_list_and_run);
    tcase_add_test(cli, bad_arguments_exit_two);
    tcase_add_test(cli, missing_backend_exits_three);
    tcase_add_test(cli, caps_that_do_not_cover_a_case_make_it_not_supported);
    tcase_add_test(cli, a_failing_plugin_makes_its_cases_errors_and_exits_one);
    suite_add_tcase(s, cli);
    TCase *units = tcase_create("helpers");
    tcase_add_test(units, percentiles_interpolate_between_ranks);
    tcase_add_test(units, rotation_spans_the_target);
    tcase_add_test(units, attention_pairs_follow_causality_and_window);
    suite_add_tcase(s, units);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
