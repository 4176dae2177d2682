/* CPU time of `switchyard config check CONFIG` (process start, config load, registry scan with every
 * plugin dlopen'd, composition) on the gpt-oss configs, measured per child with wait4's rusage, and
 * of load + registry + compose in-process (CLOCK_PROCESS_CPUTIME_ID). Medians over many runs.
 * The target is 20 ms of CPU for the command. Where the time goes: the CPU cost of loading each
 * library on the search path on its own (dlopen, plus probe for backends) in a fresh process, and
 * of a process that loads nothing. GPU modules are a front (scanned) and a device library in
 * <plugins>/<vendor>/ that the front opens only at a plugin's init or a backend's probe with the
 * driver present (backends/gpu/README.md): the device libraries' own load cost is listed apart,
 * as what a GPU run pays and a scan does not. */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compose/compose.h"
#include "config/config.h"
#include "util/json.h"

#define TARGET_MS 20.0

extern char **environ;

static const char *const configs[] = {"gpt-oss-120b-vectorized_5d-fp8.yaml", "gpt-oss-20b-nhd.yaml",
                                      "gpt-oss-120b-vectorized_5d-fp8.ini", "default.yaml"};

typedef struct stats {
    double median, p90, min, max;
} stats;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static stats summarize(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    stats s = {v[n / 2], v[(size_t)ceil(0.9 * (double)(n - 1))], v[0], v[n - 1]};
    return s;
}

static double tv_ms(struct timeval t)
{
    return (double)t.tv_sec * 1e3 + (double)t.tv_usec / 1e3;
}

static double now_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One `switchyard config check` child: its user + system CPU and wall time. Fails on a non-zero
 * exit: a benchmark of a failing check measures the wrong thing. */
static void run_child(const char *cli, const char *config, double *cpu_ms, double *wall_ms)
{
    char *argv[] = {(char *)cli, "config", "check", (char *)config, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    double t0 = now_ms(CLOCK_MONOTONIC);
    pid_t pid;
    if (posix_spawn(&pid, cli, &fa, NULL, argv, environ) != 0) {
        fprintf(stderr, "bench_config_check: cannot run %s\n", cli);
        exit(EXIT_FAILURE);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_config_check: `%s config check %s` failed (status %d); fix the config first\n", cli,
                config, status);
        exit(EXIT_FAILURE);
    }
    *wall_ms = now_ms(CLOCK_MONOTONIC) - t0;
    *cpu_ms = tv_ms(ru.ru_utime) + tv_ms(ru.ru_stime);
    posix_spawn_file_actions_destroy(&fa);
}

/* The same work in this process: load, open the registry (scan + dlopen), compose, close. */
static double run_in_process(const char *config, size_t *plugins)
{
    double t0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
    sy_diags d = {0};
    sy_config *c = sy_config_load_file(config, NULL, &d);
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    if (!c || sy_compose_open_registry(c, NULL, 0, 0, &reg, &err) != SY_OK) {
        fprintf(stderr, "bench_config_check: %s does not load: %s\n", config, err.msg);
        exit(EXIT_FAILURE);
    }
    sy_composition *comp = sy_compose(reg, c, &d);
    int ok = sy_composition_ok(comp) && sy_diags_count(&d, SY_SEV_ERROR) == 0;
    *plugins = sy_registry_count(reg);
    sy_composition_free(comp);
    sy_registry_close(reg);
    sy_config_free(c);
    sy_diags_free(&d);
    if (!ok) {
        fprintf(stderr, "bench_config_check: %s does not compose\n", config);
        exit(EXIT_FAILURE);
    }
    return now_ms(CLOCK_PROCESS_CPUTIME_ID) - t0;
}

/* `bench_config_check --load FILE`: what a fresh process pays to load one library and, for a
 * backend, to probe it. Run as its own process so that nothing is loaded already. */
static int load_one(const char *file)
{
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 1;
    void *sym = dlsym(h, SY_BACKEND_ENTRY_SYMBOL);
    if (sym) {
        sy_backend_entry_fn fn;
        char why[256];
        memcpy(&fn, &sym, sizeof fn);
        const sy_backend_desc *d = fn(SY_ABI_MAJOR, SY_ABI_MINOR);
        if (d)
            d->probe(why, sizeof why);
    }
    return 0;
}

/* CPU of `bench_config_check --load FILE` (no FILE: load nothing), least of several runs, minus
 * nothing: the empty run is reported beside it. */
static double load_cost_ms(const char *file)
{
    double best = 1e30;
    for (int r = 0; r < 15; r++) {
        char *argv[] = {"/proc/self/exe", "--load", (char *)(file ? file : ""), NULL};
        pid_t pid;
        int status;
        struct rusage ru;
        if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) != 0 || wait4(pid, &status, 0, &ru) != pid)
            return -1;
        double ms = tv_ms(ru.ru_utime) + tv_ms(ru.ru_stime);
        if (ms < best)
            best = ms;
    }
    return best;
}

static const char *const gpu_vendors[] = {"cuda", "hip"};

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The device libraries in dir/vendor (never scanned), in name order: "<vendor>/<file>": CPU of
 * loading it alone. */
static void json_device_libraries(FILE *f, const char *dir, const char *vendor, int *first)
{
    char folder[2048];
    snprintf(folder, sizeof folder, "%s/%s", dir, vendor);
    DIR *d = opendir(folder);
    if (!d)
        return;
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < sizeof names / sizeof names[0]) {
        size_t len = strlen(de->d_name);
        if (len > 10 && strcmp(de->d_name + len - 10, "_device.so") == 0)
            names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_name);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", folder, names[i]);
        fprintf(f, "%s\n    \"%s/%s\": %.3f", *first ? "" : ",", vendor, names[i], load_cost_ms(path));
        *first = 0;
        free(names[i]);
    }
}

static void json_load_costs(FILE *f)
{
    sy_registry_options o = {0};
    o.struct_size = sizeof o;
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    fprintf(f, "  \"empty_process_cpu_ms\": %.3f,\n  \"library_load_cpu_ms\": {", load_cost_ms(NULL));
    if (sy_registry_open(&o, &reg, &err) == SY_OK) {
        const char *last = "";
        int first = 1;
        for (size_t i = 0; i < sy_registry_count(reg); i++) {
            const char *file = sy_registry_get(reg, i)->file;
            if (strcmp(file, last) == 0)
                continue; /* one library, several descriptors */
            last = file;
            const char *base = strrchr(file, '/');
            fprintf(f, "%s\n    \"%s\": %.3f", first ? "" : ",", base ? base + 1 : file, load_cost_ms(file));
            first = 0;
        }
        fprintf(f, "\n  },\n  \"device_library_load_cpu_ms\": {");
        first = 1;
        for (size_t d = 0; d < sy_registry_search_dir_count(reg); d++)
            for (size_t v = 0; v < sizeof gpu_vendors / sizeof gpu_vendors[0]; v++)
                json_device_libraries(f, sy_registry_search_dir(reg, d), gpu_vendors[v], &first);
        sy_registry_close(reg);
    }
    fprintf(f, "\n  },\n");
}

/* The config work alone: load, resolve and compose against a registry opened once. */
static double run_config_only(const char *config, const sy_registry *reg)
{
    double t0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
    sy_diags d = {0};
    sy_config *c = sy_config_load_file(config, NULL, &d);
    sy_composition *comp = c ? sy_compose(reg, c, &d) : NULL;
    double ms = now_ms(CLOCK_PROCESS_CPUTIME_ID) - t0;
    if (!comp || !sy_composition_ok(comp)) {
        fprintf(stderr, "bench_config_check: %s does not compose\n", config);
        exit(EXIT_FAILURE);
    }
    sy_composition_free(comp);
    sy_config_free(c);
    sy_diags_free(&d);
    return ms;
}

static void json_stats(FILE *f, const char *name, stats s, int last)
{
    fprintf(f, "      \"%s\": {\"median\": %.3f, \"p90\": %.3f, \"min\": %.3f, \"max\": %.3f}%s\n", name, s.median, s.p90,
            s.min, s.max, last ? "" : ",");
}

int main(int argc, char **argv)
{
    const char *output = NULL, *note = "";
    int reps = 100;
    if (argc == 3 && strcmp(argv[1], "--load") == 0)
        return argv[2][0] ? load_one(argv[2]) : 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--output") == 0 && i + 1 < argc)
            output = argv[++i];
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--note") == 0 && i + 1 < argc)
            note = argv[++i];
        else {
            fprintf(stderr, "usage: bench_config_check [--repeat N] [--output FILE.json] [--note TEXT]\n");
            return 2;
        }
    }
    if (reps < 5)
        reps = 5;
    FILE *f = output ? fopen(output, "w") : stdout;
    if (!f) {
        fprintf(stderr, "bench_config_check: cannot write %s\n", output);
        return 1;
    }
    struct utsname u;
    uname(&u);
    double *cpu = calloc((size_t)reps, sizeof *cpu), *wall = calloc((size_t)reps, sizeof *wall),
           *inproc = calloc((size_t)reps, sizeof *inproc);
    int all_pass = 1;
    fprintf(f, "{\n  \"benchmark\": \"config_check\",\n  \"command\": \"switchyard config check CONFIG\",\n");
    fprintf(f, "  \"machine\": {\"arch\": \"%s\", \"kernel\": \"%s\", \"cpus\": %ld},\n", u.machine, u.release,
            sysconf(_SC_NPROCESSORS_ONLN));
    fprintf(f, "  \"note\": \"");
    sy_json_escape(f, note);
    fprintf(f, "\",\n  \"repeat\": %d,\n  \"target_cpu_ms\": %.1f,\n  \"results\": [\n", reps, TARGET_MS);
    size_t n_configs = sizeof configs / sizeof configs[0];
    for (size_t k = 0; k < n_configs; k++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", SY_BENCH_CONFIGS, configs[k]);
        size_t plugins = 0;
        double scratch_cpu, scratch_wall;
        run_child(SY_BENCH_CLI, path, &scratch_cpu, &scratch_wall); /* warm the page cache */
        run_in_process(path, &plugins);
        for (int r = 0; r < reps; r++)
            run_child(SY_BENCH_CLI, path, &cpu[r], &wall[r]);
        for (int r = 0; r < reps; r++)
            inproc[r] = run_in_process(path, &plugins);
        stats sc = summarize(cpu, (size_t)reps), sw = summarize(wall, (size_t)reps),
              si = summarize(inproc, (size_t)reps);
        sy_registry *reg = NULL;
        sy_error err = {{0}};
        sy_registry_options ro = {0};
        ro.struct_size = sizeof ro;
        if (sy_registry_open(&ro, &reg, &err) != SY_OK) {
            fprintf(stderr, "bench_config_check: %s\n", err.msg);
            return 1;
        }
        for (int r = 0; r < reps; r++)
            inproc[r] = run_config_only(path, reg);
        sy_registry_close(reg);
        stats so = summarize(inproc, (size_t)reps);
        int pass = sc.median < TARGET_MS;
        all_pass &= pass;
        fprintf(f, "    {\n      \"config\": \"configs/%s\",\n      \"libraries_scanned\": %zu,\n", configs[k], plugins);
        json_stats(f, "process_cpu_ms", sc, 0);
        json_stats(f, "process_wall_ms", sw, 0);
        json_stats(f, "in_process_cpu_ms", si, 0);
        json_stats(f, "config_and_compose_cpu_ms", so, 0);
        fprintf(f, "      \"under_target\": %s\n    }%s\n", pass ? "true" : "false", k + 1 < n_configs ? "," : "");
        fprintf(stderr,
                "%-40s check: %.2f ms CPU median (p90 %.2f), wall %.2f ms; in-process %.2f ms CPU, of which "
                "config + compose %.3f ms\n",
                configs[k], sc.median, sc.p90, sw.median, si.median, so.median);
    }
    fprintf(f, "  ],\n");
    json_load_costs(f);
    fprintf(f, "  \"verdict\": \"%s\"\n}\n", all_pass ? "pass" : "fail");
    if (output)
        fclose(f);
    free(cpu);
    free(wall);
    free(inproc);
    return all_pass ? 0 : 1;
}
