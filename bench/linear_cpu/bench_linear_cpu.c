/* Speed of the host linear plugin (OpenBLAS sgemm) on the gpt-oss projections: qkv (2880 -> 5120),
 * attention out (4096 -> 2880), router (2880 -> 32) and a 16384-row slice of the unembedding, for a
 * decode step (M = 1) and a prefill chunk (M = 128, 512), with f32 and bf16 weights, f32
 * activations, a bias. Median of several runs after a warm-up; GFLOP/s counts 2 M N K.
 *
 *     bench_linear_cpu [--out FILE] [--runs N]
 *
 * JSON on stdout (or FILE), a table on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_support.h"
#include "switchyard/switchyard.h"
#include "sy_numeric.h"

typedef struct shape {
    const char *name;
    int64_t N, K;
} shape;

typedef struct result {
    const char *name;
    int64_t M, N, K;
    int32_t wdtype;
    double median_ms, gflops, weight_gbps;
} result;

static void die(const char *what, const sy_error *err)
{
    fprintf(stderr, "bench_linear_cpu: %s: %s\n", what, err->msg);
    exit(1);
}

int main(int argc, char **argv)
{
    const char *out_path = NULL;
    int runs = 7;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out_path = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc && (runs = atoi(argv[++i])) >= 1 && runs <= 64)
            continue;
        else {
            fprintf(stderr, "usage: %s [--out FILE] [--runs 1..64]\n", argv[0]);
            return 2;
        }
    }
    sy_registry_options opts = {sizeof opts, 0, NULL, 0, 1, 0};
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    if (sy_registry_open(&opts, &reg, &err) != SY_OK)
        die("registry", &err);
    const sy_registry_entry *entry = sy_registry_find(reg, SY_KIND_LINEAR, "linear", "cpu");
    if (!entry) {
        fprintf(stderr, "bench_linear_cpu: plugin linear (cpu) not found; build it first\n");
        return 1;
    }
    void *ctx = NULL;
    if (sy_registry_init_plugin(entry, NULL, &ctx, &err) != SY_OK)
        die("init", &err);
    const sy_linear_ops *ops = entry->plugin->ops;

    static const shape shapes[] = {
        {"qkv", 5120, 2880}, {"attn_out", 2880, 4096}, {"router", 32, 2880}, {"unembed_16k", 16384, 2880}};
    static const int64_t ms[] = {1, 128, 512};
    static const int32_t wdt[] = {SY_DTYPE_F32, SY_DTYPE_BF16};
    enum { NS = sizeof shapes / sizeof shapes[0], NM = sizeof ms / sizeof ms[0], NW = 2 };
    result res[NS * NM * NW];
    int nres = 0;
    for (int s = 0; s < NS; s++) {
        const int64_t N = shapes[s].N, K = shapes[s].K;
        float *wf = malloc(sizeof(float) * N * K), *b = malloc(sizeof(float) * N);
        uint16_t *wb = malloc(sizeof(uint16_t) * N * K);
        for (int64_t i = 0; i < N * K; i++) {
            wf[i] = (float)((i * 2654435761u) % 2001) * 1e-3f - 1.0f;
            wb[i] = sy_f32_to_bf16(wf[i]);
        }
        for (int64_t i = 0; i < N; i++)
            b[i] = 0.01f * (float)(i % 17);
        for (int m = 0; m < NM; m++) {
            const int64_t M = ms[m];
            float *x = malloc(sizeof(float) * M * K), *y = malloc(sizeof(float) * M * N);
            for (int64_t i = 0; i < M * K; i++)
                x[i] = (float)(i % 13) * 0.05f - 0.3f;
            for (int w = 0; w < NW; w++) {
                int64_t sx[2] = {M, K}, swt[2] = {N, K}, sb[1] = {N}, sy[2] = {M, N};
                sy_linear_args a;
                memset(&a, 0, sizeof a);
                a.struct_size = sizeof a;
                a.x = sy_tensor_contiguous(x, SY_DTYPE_F32, 2, sx);
                a.w = sy_tensor_contiguous(wdt[w] == SY_DTYPE_F32 ? (void *)wf : (void *)wb, wdt[w], 2, swt);
                a.b = sy_tensor_contiguous(b, SY_DTYPE_F32, 1, sb);
                a.y = sy_tensor_contiguous(y, SY_DTYPE_F32, 2, sy);
                double t[64];
                if (ops->linear(ctx, NULL, &a, &err) != SY_OK)
                    die("linear", &err);
                for (int r = 0; r < runs; r++) {
                    double t0 = sy_bench_now_ms();
                    ops->linear(ctx, NULL, &a, &err);
                    t[r] = sy_bench_now_ms() - t0;
                }
                result *rr = &res[nres++];
                rr->name = shapes[s].name;
                rr->M = M;
                rr->N = N;
                rr->K = K;
                rr->wdtype = wdt[w];
                rr->median_ms = sy_bench_median(t, (size_t)runs);
                rr->gflops = 2.0 * M * N * K / (rr->median_ms * 1e-3) * 1e-9;
                rr->weight_gbps = (double)N * K * sy_dtype_size(wdt[w]) / (rr->median_ms * 1e-3) * 1e-9;
                fprintf(stderr, "%-12s M %4lld N %6lld K %5lld  w %-4s  %9.3f ms  %6.1f GFLOP/s  %5.1f GB/s of W\n",
                        rr->name, (long long)M, (long long)N, (long long)K, wdt[w] == SY_DTYPE_F32 ? "f32" : "bf16",
                        rr->median_ms, rr->gflops, rr->weight_gbps);
            }
            free(x);
            free(y);
        }
        free(wf);
        free(wb);
        free(b);
    }

    FILE *f = sy_bench_open_out("bench_linear_cpu", out_path);
    sy_json j;
    sy_bench_json_begin(&j, f, "linear_cpu", runs);
    sy_bench_kv_string(&j, "activations", "f32 x and y, f32 bias");
    sy_json_key(&j, "results");
    sy_json_begin_array(&j);
    for (int i = 0; i < nres; i++) {
        sy_json_begin_object(&j);
        sy_bench_kv_string(&j, "op", res[i].name);
        sy_bench_kv_int(&j, "M", res[i].M);
        sy_bench_kv_int(&j, "N", res[i].N);
        sy_bench_kv_int(&j, "K", res[i].K);
        sy_bench_kv_string(&j, "weight_dtype", res[i].wdtype == SY_DTYPE_F32 ? "f32" : "bf16");
        sy_bench_kv_double(&j, "median_ms", res[i].median_ms);
        sy_bench_kv_double(&j, "gflops", res[i].gflops);
        sy_bench_kv_double(&j, "weight_gbps", res[i].weight_gbps);
        sy_json_end_object(&j);
    }
    sy_json_end_array(&j);
    sy_json_end_object(&j);
    fputc('\n', f);
    if (f != stdout)
        fclose(f);
    entry->plugin->fini(ctx);
    sy_registry_close(reg);
    return 0;
}
