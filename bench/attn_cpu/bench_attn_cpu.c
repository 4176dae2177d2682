/* Decode speed of the host reference attention (attn_paged, cpu) over both KV layouts and every
 * store dtype, on one pinned core: 64 sequences of 2048 keys with the tiny model's heads (4 q heads,
 * 2 KV heads, head dim 32), pages dealt out in a shuffled order as a running server would leave
 * them. Median of many runs after warm-up, in the thread's CPU time (what one core spent, also on
 * a busy machine) and in wall time; the K/V bytes each call must read give the bandwidth.
 *
 * The core is the first one the process may run on, so `taskset -c N bench_attn_cpu` picks it.
 * The process's CPU time is measured next to the thread's: were the plugin to run work on other
 * threads, the two would differ, and threads_used says so instead of assuming 1.
 *
 *     bench_attn_cpu [--out FILE] [--reps N] [--seqs B] [--context L] [--splits S]
 *
 * Writes JSON (default: stdout) and a table on stderr. */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_support.h"
#include "calls/checks.h"
#include "kv_pool.h"
#include "switchyard/switchyard.h"
#include "sy_test.h"

typedef struct variant {
    const char *kv_plugin;
    uint32_t page_size;
    int32_t dtype;
} variant;

/* Wall time, and the thread's own CPU time: on a shared machine the second is what one core spent,
 * without the time the thread waited for one. */
typedef struct result {
    const variant *v;
    double median_ms, min_ms, max_ms;
    double cpu_median_ms, cpu_min_ms;
    double process_cpu_median_ms; /* every thread of the process: equals cpu_median_ms when single-threaded */
    double gbytes_per_s; /* K/V bytes over the median CPU time */
    uint64_t kv_bytes;
} result;

/* The calling thread's CPU time. */
static double clock_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static double thread_cpu_ms(void)
{
    return clock_ms(CLOCK_THREAD_CPUTIME_ID);
}

static double process_cpu_ms(void)
{
    return clock_ms(CLOCK_PROCESS_CPUTIME_ID);
}

/* Pins the process to the first CPU it may run on; returns that CPU, or -1 when it stays unpinned. */
static int pin_to_one_core(void)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &allowed)) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            return sched_setaffinity(0, sizeof one, &one) == 0 ? cpu : -1;
        }
    return -1;
}

/* The 1-minute load average, to tell a quiet machine from a busy one in the record; -1 if unknown. */
static double load_average_1min(void)
{
    double load = -1.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1)
            load = -1.0;
        fclose(f);
    }
    return load;
}

static int die(const char *what, const sy_error *err)
{
    fprintf(stderr, "bench_attn_cpu: %s: %s\n", what, err->msg);
    exit(1);
}

static result run_variant(const sy_registry *reg, const variant *v, uint32_t B, int32_t L, int32_t splits, int reps)
{
    const uint32_t Hq = 4, H = 2, D = 32;
    const sy_registry_entry *kv_e = sy_registry_find(reg, SY_KIND_KV_LAYOUT, v->kv_plugin, "cpu");
    const sy_registry_entry *at_e = sy_registry_find(reg, SY_KIND_ATTENTION, "attn_paged", "cpu");
    if (!kv_e || !at_e) {
        fprintf(stderr, "bench_attn_cpu: plugin %s or attn_paged (cpu) not found\n", v->kv_plugin);
        exit(1);
    }
    sy_error err = {{0}};
    sy_rng rng = {0x5EEDu + v->page_size + (uint64_t)v->dtype};
    int32_t *lens = malloc(B * sizeof *lens);
    for (uint32_t b = 0; b < B; b++)
        lens[b] = L;
    uint32_t pages = sy_test_pages_for(lens, B, v->page_size);
    sy_test_pool pool;
    if (sy_test_pool_create(kv_e->plugin, v->dtype, pages, v->page_size, H, D, &pool, &err) != SY_OK)
        die("pool", &err);
    if (v->dtype == SY_DTYPE_FP8_E4M3)
        pool.k_scale = pool.v_scale = 1.0f / 128;
    sy_test_seqs seqs;
    sy_test_seqs_layout(lens, B, v->page_size, pages, &rng, &seqs);
    int64_t total = seqs.first_token[B];
    float *k = malloc((size_t)total * H * D * sizeof *k), *vv = malloc((size_t)total * H * D * sizeof *vv);
    sy_fill_uniform_f32(&rng, k, (size_t)total * H * D, -1.0f, 1.0f);
    sy_fill_uniform_f32(&rng, vv, (size_t)total * H * D, -1.0f, 1.0f);
    if (sy_test_pool_write(kv_e->plugin, &pool, k, vv, seqs.slots, total, &err) != SY_OK)
        die("write", &err);
    free(k);
    free(vv);

    float *q = malloc((size_t)B * Hq * D * sizeof *q), *out = malloc((size_t)B * Hq * D * sizeof *out);
    float sinks[4];
    sy_fill_uniform_f32(&rng, q, (size_t)B * Hq * D, -1.0f, 1.0f);
    sy_fill_uniform_f32(&rng, sinks, Hq, -1.0f, 1.0f);
    sy_attn_decode_args a = {0};
    a.struct_size = sizeof a;
    a.geom = pool.geom;
    int64_t qs[3] = {B, Hq, D}, bt[2] = {B, seqs.max_blocks}, nb[1] = {B}, nh[1] = {Hq};
    a.q = sy_tensor_contiguous(q, SY_DTYPE_F32, 3, qs);
    a.out = sy_tensor_contiguous(out, SY_DTYPE_F32, 3, qs);
    a.k_cache = pool.k;
    a.v_cache = pool.v;
    a.block_tables = sy_tensor_contiguous(seqs.block_tables, SY_DTYPE_I32, 2, bt);
    a.context_lens = sy_tensor_contiguous(seqs.lens, SY_DTYPE_I32, 1, nb);
    a.sinks = sy_tensor_contiguous(sinks, SY_DTYPE_F32, 1, nh);
    a.scale = 1.0f / sqrtf((float)D);
    a.k_scale = pool.k_scale;
    a.v_scale = pool.v_scale;
    a.num_splits = splits;
    if (sy_check_decode_args(&a, seqs.block_tables, seqs.lens, &err) != SY_OK ||
        sy_check_decode_caps(at_e->plugin, &a, &err) != SY_OK)
        die("decode args", &err);

    void *ctx = NULL;
    sy_test_host host;
    sy_test_host_init(&host);
    if (sy_registry_init_plugin(at_e, &host.api, &ctx, &err) != SY_OK)
        die("init", &err);
    const sy_attention_ops *ops = at_e->plugin->ops;
    double *ms = malloc((size_t)reps * sizeof *ms), *cpu = malloc((size_t)reps * sizeof *cpu);
    double *proc = malloc((size_t)reps * sizeof *proc);
    for (int i = -3; i < reps; i++) {
        double t0 = sy_bench_now_ms(), p0 = process_cpu_ms(), c0 = thread_cpu_ms();
        if (ops->decode_paged(ctx, NULL, &a, &err) != SY_OK)
            die("decode_paged", &err);
        double c1 = thread_cpu_ms(), p1 = process_cpu_ms(), t1 = sy_bench_now_ms();
        if (i >= 0) {
            ms[i] = t1 - t0;
            cpu[i] = c1 - c0;
            proc[i] = p1 - p0;
        }
    }
    /* sy_bench_median sorts in place: element 0 is then the minimum, element reps - 1 the maximum. */
    double wall_median = sy_bench_median(ms, (size_t)reps), cpu_median = sy_bench_median(cpu, (size_t)reps);
    result r = {v, wall_median, ms[0], ms[reps - 1], cpu_median, cpu[0], sy_bench_median(proc, (size_t)reps), 0,
                (uint64_t)total * H * D * 2 * sy_dtype_size(v->dtype)};
    r.gbytes_per_s = (double)r.kv_bytes / (r.cpu_median_ms * 1e6);
    free(proc);
    free(cpu);
    at_e->plugin->fini(ctx);
    free(ms);
    free(q);
    free(out);
    free(lens);
    sy_test_seqs_free(&seqs);
    sy_test_pool_free(&pool);
    return r;
}

int main(int argc, char **argv)
{
    const char *out_path = NULL;
    int reps = 21;
    uint32_t B = 64;
    int32_t L = 2048, splits = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out_path = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seqs") && i + 1 < argc)
            B = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--context") && i + 1 < argc)
            L = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--splits") && i + 1 < argc)
            splits = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--out FILE] [--reps N] [--seqs B] [--context L] [--splits S]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || B < 1 || L < 1 || splits < 0) {
        fprintf(stderr, "bench_attn_cpu: --reps, --seqs and --context must be positive, --splits >= 0\n");
        return 2;
    }
    /* One core: the reference kernel is single-threaded, and pinning keeps the numbers steady. */
    double load_before = load_average_1min();
    int pinned_cpu = pin_to_one_core();

    sy_registry_options opts = {sizeof opts, 0, NULL, 0, 1, 0};
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    if (sy_registry_open(&opts, &reg, &err) != SY_OK)
        die("registry", &err);
    static const variant variants[] = {
        {"kv_nhd", 16, SY_DTYPE_BF16},           {"kv_vectorized_5d", 64, SY_DTYPE_BF16},
        {"kv_nhd", 16, SY_DTYPE_FP8_E4M3},       {"kv_vectorized_5d", 64, SY_DTYPE_FP8_E4M3},
        {"kv_nhd", 16, SY_DTYPE_F32},            {"kv_vectorized_5d", 64, SY_DTYPE_F32},
    };
    const size_t nv = sizeof variants / sizeof variants[0];
    result res[sizeof variants / sizeof variants[0]];
    fprintf(stderr, "decode_paged (attn_paged, cpu): %u sequences x %d keys, 4 q heads, 2 KV heads, head dim 32, "
                    "%d runs, pinned to cpu %d (-1: not pinned), load average %.2f\n",
            B, L, reps, pinned_cpu, load_before);
    for (size_t i = 0; i < nv; i++) {
        res[i] = run_variant(reg, &variants[i], B, L, splits, reps);
        fprintf(stderr,
                "  %-17s P=%-3u %-9s cpu median %7.2f ms (min %7.2f)  wall median %7.2f ms (min %7.2f)  %5.2f GB/s\n",
                variants[i].kv_plugin, variants[i].page_size, sy_dtype_name(variants[i].dtype), res[i].cpu_median_ms,
                res[i].cpu_min_ms, res[i].median_ms, res[i].min_ms, res[i].gbytes_per_s);
    }

    /* Another thread's work shows as process CPU time beyond the thread's (0.1 ms for clock reads). */
    int other_threads = 0;
    for (size_t i = 0; i < nv; i++)
        other_threads |= res[i].process_cpu_median_ms > res[i].cpu_median_ms * 1.02 + 0.1;

    FILE *f = sy_bench_open_out("bench_attn_cpu", out_path);
    sy_json j;
    sy_json_init(&j, f, 1);
    sy_json_begin_object(&j);
    sy_json_key(&j, "bench");
    sy_json_string(&j, "attn_cpu_decode");
    sy_bench_json_machine(&j);
    sy_json_key(&j, "threads_used");
    if (other_threads)
        sy_json_string(&j, "more than 1 (process CPU time exceeds the calling thread's)");
    else
        sy_json_int(&j, 1);
    sy_json_key(&j, "pinned_cpu");
    sy_json_int(&j, pinned_cpu);
    sy_json_key(&j, "load_average_1min_before");
    sy_json_double(&j, load_before);
    sy_json_key(&j, "shape");
    sy_json_begin_object(&j);
    sy_json_key(&j, "sequences");
    sy_json_uint(&j, B);
    sy_json_key(&j, "context");
    sy_json_int(&j, L);
    sy_json_key(&j, "q_heads");
    sy_json_int(&j, 4);
    sy_json_key(&j, "kv_heads");
    sy_json_int(&j, 2);
    sy_json_key(&j, "head_dim");
    sy_json_int(&j, 32);
    sy_json_key(&j, "sinks");
    sy_json_bool(&j, 1);
    sy_json_key(&j, "num_splits");
    sy_json_int(&j, splits);
    sy_json_end_object(&j);
    sy_json_key(&j, "runs");
    sy_json_int(&j, reps);
    sy_json_key(&j, "target_ms");
    sy_json_double(&j, 50.0);
    sy_json_key(&j, "results");
    sy_json_begin_array(&j);
    for (size_t i = 0; i < nv; i++) {
        sy_json_begin_object(&j);
        sy_json_key(&j, "kv_layout_plugin");
        sy_json_string(&j, res[i].v->kv_plugin);
        sy_json_key(&j, "page_size");
        sy_json_uint(&j, res[i].v->page_size);
        sy_json_key(&j, "kv_dtype");
        sy_json_string(&j, sy_dtype_name(res[i].v->dtype));
        sy_json_key(&j, "cpu_median_ms");
        sy_json_double(&j, res[i].cpu_median_ms);
        sy_json_key(&j, "cpu_min_ms");
        sy_json_double(&j, res[i].cpu_min_ms);
        sy_json_key(&j, "process_cpu_median_ms");
        sy_json_double(&j, res[i].process_cpu_median_ms);
        sy_json_key(&j, "wall_median_ms");
        sy_json_double(&j, res[i].median_ms);
        sy_json_key(&j, "wall_min_ms");
        sy_json_double(&j, res[i].min_ms);
        sy_json_key(&j, "wall_max_ms");
        sy_json_double(&j, res[i].max_ms);
        sy_json_key(&j, "kv_bytes");
        sy_json_uint(&j, res[i].kv_bytes);
        sy_json_key(&j, "kv_gbytes_per_s");
        sy_json_double(&j, res[i].gbytes_per_s);
        sy_json_end_object(&j);
    }
    sy_json_end_array(&j);
    sy_json_end_object(&j);
    fputc('\n', f);
    if (out_path)
        fclose(f);
    sy_registry_close(reg);
    return 0;
}
