/* Device-to-device copy bandwidth of a backend: the ceiling every memory-bound kernel's achieved
 * bandwidth is compared against. The measurement is `switchyard bench`'s copy.d2d
 * (engine/src/bench/copy.c: random source made on the device, each copy between device events,
 * a sample of the destination checked afterwards); this tool runs it alone at any size and
 * prints JSON on stdout. Bandwidth counts bytes read plus bytes written (2 x the copy size).
 * The backend is opened on device 0, as by every Switchyard command.
 *
 *   gpu_copy [--backend cuda|hip|cpu] [--bytes N] [--runs N] [--warmup N] */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/copy.h"
#include "bench/traffic.h"
#include "switchyard/switchyard.h"
#include "util/json.h"

typedef struct options {
    const char *backend;
    uint64_t bytes;
    int runs;
    int warmup;
} options;

static void usage(FILE *f)
{
    fprintf(f, "usage: gpu_copy [--backend cuda|hip|cpu] [--bytes N] [--runs N] [--warmup N]\n"
               "  defaults: --backend cuda --bytes 1073741824 --runs 50 --warmup 5 (device 0)\n");
}

static int parse_count(const char *flag, const char *text, long long min, long long max, long long *out)
{
    char *end = NULL;
    long long v = text ? strtoll(text, &end, 0) : 0;
    if (!text || !*text || *end || v < min || v > max) {
        fprintf(stderr, "gpu_copy: %s needs a whole number from %lld to %lld, got '%s'\n", flag, min, max,
                text ? text : "");
        return 0;
    }
    *out = v;
    return 1;
}

/* 1: parsed; 0: usage error (printed); -1: --help printed. */
static int parse_options(int argc, char **argv, options *o)
{
    o->backend = "cuda";
    o->bytes = (uint64_t)1 << 30;
    o->runs = 50;
    o->warmup = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return -1;
        } else if (strcmp(a, "--backend") == 0 && v) {
            o->backend = v;
        } else if (strcmp(a, "--bytes") == 0) {
            if (!parse_count(a, v, 1, 1ll << 40, &n))
                return 0;
            o->bytes = (uint64_t)n;
        } else if (strcmp(a, "--runs") == 0) {
            if (!parse_count(a, v, 1, 100000, &n))
                return 0;
            o->runs = (int)n;
        } else if (strcmp(a, "--warmup") == 0) {
            if (!parse_count(a, v, 0, 100000, &n))
                return 0;
            o->warmup = (int)n;
        } else {
            fprintf(stderr, "gpu_copy: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 0;
        }
        i++;
    }
    return 1;
}

/* The backends beside this build's libswitchyard, found from the executable (build/bin/) so that a
 * copied build tree works without SWITCHYARD_PLUGIN_PATH. */
static sy_registry *open_registry(sy_error *err)
{
    static char dir[PATH_MAX + 32];
    static const char *paths[1];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    sy_registry_options opts = {0};
    opts.struct_size = sizeof opts;
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(dir, sizeof dir, "%s/../lib/switchyard/plugins", exe);
        paths[0] = dir;
        opts.plugin_paths = paths;
        opts.n_plugin_paths = 1;
    }
    sy_registry *reg = NULL;
    return sy_registry_open(&opts, &reg, err) == SY_OK ? reg : NULL;
}

static void print_json(const options *o, const sy_conf_side *side, const sy_device_info *info, const sy_bench_copy *c)
{
    const double moved = (double)sy_bench_copy_traffic(o->bytes).bytes;
    sy_json j;
    sy_json_init(&j, stdout, 1);
    sy_json_begin_object(&j);
    sy_json_key(&j, "bench"); sy_json_string(&j, "gpu_copy");
    sy_json_key(&j, "backend"); sy_json_string(&j, side->be->name);
    sy_json_key(&j, "backend_description"); sy_json_string(&j, side->be->description);
    sy_json_key(&j, "device_index"); sy_json_int(&j, 0);
    sy_json_key(&j, "device"); sy_json_string(&j, info->name);
    sy_json_key(&j, "multiprocessors"); sy_json_uint(&j, info->multiprocessors);
    sy_json_key(&j, "compute_capability"); sy_json_uint(&j, info->cc_major * 10u + info->cc_minor);
    sy_json_key(&j, "total_memory_bytes"); sy_json_uint(&j, info->total_memory);
    sy_json_key(&j, "l2_bytes"); sy_json_uint(&j, info->l2_bytes);
    sy_json_key(&j, "bytes_per_copy"); sy_json_uint(&j, o->bytes);
    sy_json_key(&j, "warmup"); sy_json_int(&j, o->warmup);
    sy_json_key(&j, "runs"); sy_json_int(&j, o->runs);
    sy_json_key(&j, "median_ms"); sy_json_double(&j, c->stats.median_us * 1e-3);
    sy_json_key(&j, "min_ms"); sy_json_double(&j, c->stats.min_us * 1e-3);
    sy_json_key(&j, "max_ms"); sy_json_double(&j, c->stats.max_us * 1e-3);
    sy_json_key(&j, "bandwidth_read_plus_write_gbps"); sy_json_double(&j, moved / c->stats.median_us * 1e-3);
    sy_json_key(&j, "bandwidth_best_gbps"); sy_json_double(&j, moved / c->stats.min_us * 1e-3);
    sy_json_key(&j, "verified"); sy_json_bool(&j, c->verified);
    sy_json_end_object(&j);
    fputc('\n', stdout);
}

int main(int argc, char **argv)
{
    options o;
    sy_error err = {{0}};
    int parsed = parse_options(argc, argv, &o);
    if (parsed <= 0)
        return parsed < 0 ? 0 : 2;
    sy_registry *reg = open_registry(&err);
    if (!reg) {
        fprintf(stderr, "gpu_copy: %s\n", err.msg);
        return 3;
    }
    const sy_registry_entry *entry = sy_registry_find_backend(reg, o.backend);
    if (!entry) {
        fprintf(stderr, "gpu_copy: backend '%s' is not loaded (is it built? `switchyard plugins` lists what was "
                        "found)\n", o.backend);
        sy_registry_close(reg);
        return 3;
    }
    sy_conf_side side;
    if (sy_conf_side_open(&side, entry, &err) != SY_OK) {
        fprintf(stderr, "gpu_copy: %s\n", err.msg);
        sy_registry_close(reg);
        return 3;
    }
    sy_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    int code = 0;
    sy_bench_copy copy;
    const uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (side.be->device_info(side.bctx, &info, &err) != SY_OK) {
        fprintf(stderr, "gpu_copy: %s\n", err.msg);
        code = 3;
    } else if (sy_bench_measure_copy(&side, o.bytes, 1, o.warmup, o.runs, seed, &copy, &err) != SY_OK) {
        fprintf(stderr, "gpu_copy: %s\n", err.msg);
        code = copy.stats.runs && !copy.verified ? 1 : 3;
        if (code == 1)
            print_json(&o, &side, &info, &copy);
    } else {
        print_json(&o, &side, &info, &copy);
    }
    sy_conf_side_close(&side);
    sy_registry_close(reg);
    return code;
}
