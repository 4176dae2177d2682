/* Device-to-device copy bandwidth of a GPU backend: the ceiling every memory-bound kernel's achieved
 * bandwidth is compared against in the same run. Buffers are far larger than L2, filled with random
 * bytes; each copy is timed alone with device events; the report is the median of the runs, as JSON
 * on stdout. Bandwidth counts bytes read plus bytes written (2 x the copy size).
 *
 *   gpu_copy [--backend cuda|hip] [--device N] [--bytes N] [--runs N] [--warmup N] */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "switchyard/switchyard.h"
#include "util/json.h"

typedef struct options {
    const char *backend;
    int device;
    size_t bytes;
    int runs;
    int warmup;
} options;

static void usage(FILE *f)
{
    fprintf(f, "usage: gpu_copy [--backend cuda|hip] [--device N] [--bytes N] [--runs N] [--warmup N]\n"
               "  defaults: --backend cuda --device 0 --bytes 1073741824 --runs 50 --warmup 5\n");
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

static int parse_options(int argc, char **argv, options *o)
{
    o->backend = "cuda";
    o->device = 0;
    o->bytes = (size_t)1 << 30;
    o->runs = 50;
    o->warmup = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--backend") == 0 && v) {
            o->backend = v;
        } else if (strcmp(a, "--device") == 0) {
            if (!parse_count(a, v, 0, 1024, &n))
                return 0;
            o->device = (int)n;
        } else if (strcmp(a, "--bytes") == 0) {
            if (!parse_count(a, v, 1, 1ll << 40, &n))
                return 0;
            o->bytes = (size_t)n;
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

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* splitmix64 over the whole buffer: distinct, non-zero data on every run of the program. */
static void fill_random(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t state = seed;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        memcpy(p + i, &z, 8);
    }
    for (; i < n; i++)
        p[i] = (unsigned char)(i * 131u + 7u);
}

#define CHECK(call)                                                                  \
    do {                                                                             \
        if ((call) != SY_OK) {                                                       \
            fprintf(stderr, "gpu_copy: %s\n", err.msg);                              \
            return 3;                                                                \
        }                                                                            \
    } while (0)

int main(int argc, char **argv)
{
    options o;
    sy_error err = {{0}};
    if (!parse_options(argc, argv, &o))
        return 2;
    sy_registry *reg = open_registry(&err);
    if (!reg) {
        fprintf(stderr, "gpu_copy: %s\n", err.msg);
        return 3;
    }
    const sy_registry_entry *entry = sy_registry_find_backend(reg, o.backend);
    if (!entry) {
        fprintf(stderr, "gpu_copy: backend '%s' is not loaded (is it built? `switchyard plugins` lists what was "
                        "found)\n", o.backend);
        return 3;
    }
    if (entry->probe_score <= 0) {
        fprintf(stderr, "gpu_copy: backend '%s' cannot run here: %s\n", o.backend, entry->probe_reason);
        return 3;
    }
    const sy_backend_desc *be = entry->backend;
    void *ctx = NULL;
    CHECK(be->init(o.device, &ctx, &err));
    sy_device_info info;
    CHECK(be->device_info(ctx, &info, &err));

    const uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    unsigned char *host = malloc(o.bytes);
    float *ms = malloc((size_t)o.runs * sizeof *ms);
    if (!host || !ms) {
        fprintf(stderr, "gpu_copy: cannot allocate %zu bytes of host memory\n", o.bytes);
        return 3;
    }
    fill_random(host, o.bytes, seed);
    void *src = NULL, *dst = NULL;
    sy_stream stream = NULL;
    sy_event start = NULL, end = NULL;
    CHECK(be->alloc(ctx, o.bytes, &src, &err));
    CHECK(be->alloc(ctx, o.bytes, &dst, &err));
    CHECK(be->stream_create(ctx, &stream, &err));
    CHECK(be->event_create(ctx, &start, &err));
    CHECK(be->event_create(ctx, &end, &err));
    CHECK(be->memcpy_async(ctx, stream, src, host, o.bytes, SY_MEMCPY_H2D, &err));
    CHECK(be->memset_async(ctx, stream, dst, 0x5A, o.bytes, &err));
    CHECK(be->stream_sync(ctx, stream, &err));

    for (int i = 0; i < o.warmup; i++)
        CHECK(be->memcpy_async(ctx, stream, dst, src, o.bytes, SY_MEMCPY_D2D, &err));
    CHECK(be->stream_sync(ctx, stream, &err));
    for (int i = 0; i < o.runs; i++) {
        CHECK(be->event_record(ctx, start, stream, &err));
        CHECK(be->memcpy_async(ctx, stream, dst, src, o.bytes, SY_MEMCPY_D2D, &err));
        CHECK(be->event_record(ctx, end, stream, &err));
        CHECK(be->event_sync(ctx, end, &err));
        CHECK(be->event_elapsed_ms(ctx, start, end, &ms[i], &err));
    }

    /* The copy really happened: compare a sample of the destination with the source. */
    const size_t sample = o.bytes < (64u << 20) ? o.bytes : (64u << 20);
    const size_t sample_at = o.bytes - sample;
    unsigned char *back = malloc(sample);
    if (!back) {
        fprintf(stderr, "gpu_copy: cannot allocate %zu bytes of host memory\n", sample);
        return 3;
    }
    CHECK(be->memcpy_async(ctx, stream, back, (unsigned char *)dst + sample_at, sample, SY_MEMCPY_D2H, &err));
    CHECK(be->stream_sync(ctx, stream, &err));
    const int verified = memcmp(back, host + sample_at, sample) == 0;

    qsort(ms, (size_t)o.runs, sizeof *ms, cmp_float);
    const double median_ms = o.runs % 2 ? ms[o.runs / 2] : 0.5 * ((double)ms[o.runs / 2 - 1] + ms[o.runs / 2]);
    const double moved = 2.0 * (double)o.bytes;

    sy_json j;
    sy_json_init(&j, stdout, 1);
    sy_json_begin_object(&j);
    sy_json_key(&j, "bench"); sy_json_string(&j, "gpu_copy");
    sy_json_key(&j, "backend"); sy_json_string(&j, be->name);
    sy_json_key(&j, "backend_description"); sy_json_string(&j, be->description);
    sy_json_key(&j, "device_index"); sy_json_int(&j, o.device);
    sy_json_key(&j, "device"); sy_json_string(&j, info.name);
    sy_json_key(&j, "multiprocessors"); sy_json_uint(&j, info.multiprocessors);
    sy_json_key(&j, "compute_capability"); sy_json_uint(&j, info.cc_major * 10u + info.cc_minor);
    sy_json_key(&j, "total_memory_bytes"); sy_json_uint(&j, info.total_memory);
    sy_json_key(&j, "l2_bytes"), sy_json_uint(&j, info.l2_bytes);
    sy_json_key(&j, "bytes_per_copy"); sy_json_uint(&j, o.bytes);
    sy_json_key(&j, "warmup"); sy_json_int(&j, o.warmup);
    sy_json_key(&j, "runs"); sy_json_int(&j, o.runs);
    sy_json_key(&j, "median_ms"); sy_json_double(&j, median_ms);
    sy_json_key(&j, "min_ms"); sy_json_double(&j, ms[0]);
    sy_json_key(&j, "max_ms"); sy_json_double(&j, ms[o.runs - 1]);
    sy_json_key(&j, "bandwidth_read_plus_write_gbps"); sy_json_double(&j, moved / (median_ms * 1e-3) / 1e9);
    sy_json_key(&j, "bandwidth_best_gbps"); sy_json_double(&j, moved / ((double)ms[0] * 1e-3) / 1e9);
    sy_json_key(&j, "verified"); sy_json_bool(&j, verified);
    sy_json_end_object(&j);
    fputc('\n', stdout);

    be->event_destroy(ctx, start);
    be->event_destroy(ctx, end);
    be->stream_destroy(ctx, stream);
    be->free(ctx, src);
    be->free(ctx, dst);
    be->fini(ctx);
    sy_registry_close(reg);
    free(back);
    free(host);
    free(ms);
    if (!verified) {
        fprintf(stderr, "gpu_copy: the destination does not match the source after the copies\n");
        return 1;
    }
    return 0;
}
