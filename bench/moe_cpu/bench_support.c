#include "bench_support.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

double sy_bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double sy_bench_median(double *ms, size_t n)
{
    qsort(ms, n, sizeof *ms, cmp_double);
    return n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
}

static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            const char *colon = strchr(line, ':');
            snprintf(buf, len, "%.*s", (int)strcspn(colon ? colon + 2 : line, "\n"), colon ? colon + 2 : line);
            break;
        }
    if (f)
        fclose(f);
}

void sy_bench_json_machine(sy_json *j)
{
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    struct utsname un;
    uname(&un);
    sy_json_key(j, "machine");
    sy_json_begin_object(j);
    sy_json_key(j, "cpu");
    sy_json_string(j, cpu);
    sy_json_key(j, "arch");
    sy_json_string(j, un.machine);
    sy_json_key(j, "cores");
    sy_json_int(j, sysconf(_SC_NPROCESSORS_ONLN));
    sy_json_key(j, "blas_threads");
    sy_json_int(j, openblas_get_num_threads());
    sy_json_key(j, "blas_config");
    sy_json_string(j, openblas_get_config());
    sy_json_end_object(j);
}

void sy_bench_json_begin(sy_json *j, FILE *f, const char *bench, int runs)
{
    sy_json_init(j, f, 1);
    sy_json_begin_object(j);
    sy_json_key(j, "bench");
    sy_json_string(j, bench);
    sy_bench_json_machine(j);
    sy_json_key(j, "runs");
    sy_json_int(j, runs);
    sy_json_key(j, "statistic");
    sy_json_string(j, "median ms after one warm-up");
}

void sy_bench_kv_int(sy_json *j, const char *key, int64_t v)
{
    sy_json_key(j, key);
    sy_json_int(j, v);
}

void sy_bench_kv_uint(sy_json *j, const char *key, uint64_t v)
{
    sy_json_key(j, key);
    sy_json_uint(j, v);
}

void sy_bench_kv_double(sy_json *j, const char *key, double v)
{
    sy_json_key(j, key);
    sy_json_double(j, v);
}

void sy_bench_kv_string(sy_json *j, const char *key, const char *v)
{
    sy_json_key(j, key);
    sy_json_string(j, v);
}

FILE *sy_bench_open_out(const char *prog, const char *path)
{
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        fprintf(stderr, "%s: cannot write %s\n", prog, path);
        exit(1);
    }
    return f;
}
