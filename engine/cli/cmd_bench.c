/* switchyard bench: the kernels at gpt-oss-120b shapes against the device's copy bandwidth and peak
 * rate (engine/src/bench, docs/performance.md). Exit 0 when every case ran or is not supported, 1
 * when a case failed, 2 on a usage error, 3 when the backend cannot be opened or the report cannot
 * be written. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli.h"
#include "report_file.h"

typedef struct bench_opts {
    sy_bench_options run;
    const char *json;
    int seed_given;
} bench_opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: switchyard bench [--backend B] [--case TEXT] [--runs N] [--warmup N] [--json FILE] [--list]\n"
            "                        [--quick] [--peak-tflops X] [--seed N] [--plugin-path DIR]...\n"
            "                        [--allow-insecure-plugins]\n"
            "Times every kernel at gpt-oss-120b shapes on backend B with device events and reports the median\n"
            "(p10, p90, min), the bytes and FLOPs it must move, the achieved GB/s and TFLOP/s, the floor\n"
            "max(bytes / copy bandwidth, FLOPs / peak) and the ratio to a device-to-device copy measured in\n"
            "the same run. docs/performance.md describes the method and the JSON.\n"
            "  --backend B       cpu, cuda, hip, a third party's, or auto (default: the usable backend with\n"
            "                    the highest probe score)\n"
            "  --case TEXT       only cases whose name contains TEXT (the copy is measured anyway)\n"
            "  --runs N          timed runs per case, at least %d (default %d)\n"
            "  --warmup N        untimed runs before them (default %d)\n"
            "  --json FILE       the report as JSON, written atomically\n"
            "  --list            name the cases without running them\n"
            "  --quick           the same cases at small shapes (CI, a smoke run on the cpu)\n"
            "  --peak-tflops X   the device's dense bf16 matrix rate for the compute floor (default %g:\n"
            "                    NVIDIA H200 SXM datasheet, dense)\n"
            "  --seed N          inputs of seed N (the seed of every run is printed)\n"
            "exit status: 0 every case ran or is not supported; 1 a case failed; 2 usage error; 3 the\n"
            "backend cannot be opened or the report cannot be written.\n",
            SY_BENCH_MIN_RUNS, SY_BENCH_MIN_RUNS, SY_BENCH_DEFAULT_WARMUP, SY_BENCH_DEFAULT_PEAK_TFLOPS);
}

static int parse_count(const char *flag, const char *text, long min, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > 1000000) {
        fprintf(stderr, "switchyard bench: %s needs a whole number from %ld to 1000000, got '%s'\n", flag, min, text);
        return 0;
    }
    *out = v;
    return 1;
}

static int parse_value(const char *flag, const char *text, bench_opts *o)
{
    long n = 0;
    if (strcmp(flag, "--runs") == 0) {
        if (!parse_count(flag, text, SY_BENCH_MIN_RUNS, &n))
            return 0;
        o->run.runs = (int)n;
    } else if (strcmp(flag, "--warmup") == 0) {
        if (!parse_count(flag, text, 0, &n))
            return 0;
        o->run.warmup = (int)n;
    } else if (strcmp(flag, "--peak-tflops") == 0) {
        char *end = NULL;
        double v = strtod(text, &end);
        if (end == text || *end || !isfinite(v) || v <= 0) {
            fprintf(stderr, "switchyard bench: --peak-tflops needs a positive number, got '%s'\n", text);
            return 0;
        }
        o->run.peak_tflops = v;
    } else if (strcmp(flag, "--seed") == 0) {
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(text, &end, 10); /* decimal, as printed: never octal or hex */
        if (errno || end == text || *end || text[0] == '-') {
            fprintf(stderr, "switchyard bench: --seed '%s' is not a non-negative integer\n", text);
            return 0;
        }
        o->run.seed = v;
        o->seed_given = 1;
    } else if (strcmp(flag, "--backend") == 0) {
        o->run.backend = text;
    } else if (strcmp(flag, "--case") == 0) {
        o->run.case_filter = text;
    } else {
        o->json = text;
    }
    return 1;
}

/* -1: usage error (printed); 0: --help printed; 1: parsed. */
static int parse(int argc, char **argv, sy_cli_common *common, bench_opts *o)
{
    static const char *const WITH_VALUE[] = {"--backend", "--case", "--runs", "--warmup",
                                             "--json",    "--peak-tflops", "--seed"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int c = sy_cli_common_opt(common, argc, argv, &i);
        if (c < 0)
            return -1;
        if (c > 0)
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--quick") == 0 || strcmp(a, "--list") == 0) {
            *(a[2] == 'q' ? &o->run.quick : &o->run.list_only) = 1;
            continue;
        }
        int takes_value = 0;
        for (size_t k = 0; k < sizeof WITH_VALUE / sizeof WITH_VALUE[0]; k++)
            takes_value |= strcmp(a, WITH_VALUE[k]) == 0;
        if (!takes_value) {
            fprintf(stderr, "switchyard bench: unknown option '%s'\n", a);
            usage(stderr);
            return -1;
        }
        if (i + 1 >= argc || argv[i + 1][0] == '\0') {
            fprintf(stderr, "switchyard bench: %s needs a value\n", a);
            return -1;
        }
        if (!parse_value(a, argv[++i], o))
            return -1;
    }
    return 1;
}

static uint64_t clock_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
}

static void print_result(void *user, const sy_bench_report *rep, const sy_bench_result *r)
{
    (void)user;
    (void)rep;
    char line[1280];
    sy_bench_format_result(r, line, sizeof line);
    printf("%s\n", line);
    fflush(stdout);
}

int sy_cmd_bench(int argc, char **argv)
{
    sy_cli_common common = {0};
    bench_opts o;
    memset(&o, 0, sizeof o);
    o.run.runs = SY_BENCH_MIN_RUNS;
    o.run.warmup = SY_BENCH_DEFAULT_WARMUP;
    o.run.peak_tflops = SY_BENCH_DEFAULT_PEAK_TFLOPS;
    int parsed = parse(argc, argv, &common, &o);
    if (parsed <= 0) {
        sy_cli_common_free(&common);
        return parsed == 0 ? SY_EXIT_OK : SY_EXIT_USAGE;
    }
    if (!o.seed_given)
        o.run.seed = clock_seed();
    if (!o.run.list_only)
        o.run.on_result = print_result;

    sy_registry *reg = NULL;
    sy_error err = {{0}};
    sy_report_file json_file = {0};
    if (o.json && !o.run.list_only && sy_report_open(&json_file, o.json) != 0) {
        sy_cli_common_free(&common);
        return SY_EXIT_RUNTIME;
    }
    if (sy_cli_open_registry(&common, &reg, &err) != SY_OK) {
        fprintf(stderr, "switchyard bench: %s\n", err.msg);
        sy_report_abort(&json_file);
        sy_cli_common_free(&common);
        return SY_EXIT_RUNTIME;
    }
    if (!o.run.list_only) {
        char header[256];
        sy_bench_format_header(header, sizeof header);
        printf("switchyard bench: backend %s, seed %llu (--seed %llu reproduces), %s shapes, %d warm-up + %d timed "
               "runs a case\n%s\n",
               o.run.backend ? o.run.backend : "auto", (unsigned long long)o.run.seed,
               (unsigned long long)o.run.seed, o.run.quick ? "quick" : "full", o.run.warmup, o.run.runs, header);
        fflush(stdout);
    }
    sy_bench_report rep;
    sy_status st = sy_bench_run(reg, &o.run, &rep, &err);
    int code;
    if (st != SY_OK) {
        fprintf(stderr, "switchyard bench: %s\n", err.msg);
        code = st == SY_E_INVALID ? SY_EXIT_USAGE : SY_EXIT_RUNTIME;
    } else if (o.run.list_only) {
        for (size_t i = 0; i < rep.n_results; i++)
            printf("%s\n", rep.results[i].name);
        code = SY_EXIT_OK;
    } else {
        char summary[512];
        sy_bench_format_summary(&rep, summary, sizeof summary);
        printf("%s\n", summary);
        code = rep.errors ? SY_EXIT_FAILED : SY_EXIT_OK;
        if (o.json) {
            sy_bench_write_json(&rep, json_file.f);
            if (sy_report_commit(&json_file) != 0)
                code = SY_EXIT_RUNTIME;
        }
    }
    sy_report_abort(&json_file);
    sy_bench_report_free(&rep);
    sy_registry_close(reg);
    sy_cli_common_free(&common);
    return code;
}
