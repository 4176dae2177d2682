/* The engine's own cost per decode step: the same gpt-oss step timed over no-op plugins (only the
 * engine's work between plugin calls remains) and over the real plugins of the cpu backend.
 *   bench_engine_overhead [PRESET] [STEPS]     JSON on stdout */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "model/engine.h"
#include "model/presets.h"

static const char *real_plugins[SY_KIND_COUNT_] = {
    [SY_KIND_KV_LAYOUT] = "kv_nhd", [SY_KIND_ATTENTION] = "attn_paged", [SY_KIND_MOE] = "moe_mxfp4_interleave",
    [SY_KIND_NORM] = "norm_rmsnorm", [SY_KIND_ROPE] = "rope_yarn",     [SY_KIND_LINEAR] = "linear",
};

static int run(sy_registry *reg, const sy_model_dims *dims, int noop, uint32_t steps, sy_run_metrics *m,
               double *median_ms)
{
    sy_plan p = {0};
    p.dims = *dims;
    p.weight_seed = 1;
    p.backend = sy_registry_find_backend(reg, "cpu");
    for (int32_t k = 1; k < SY_KIND_COUNT_; k++) {
        p.slot[k] = sy_registry_find(reg, k, noop ? "noop" : real_plugins[k], "cpu");
        if (!p.slot[k]) {
            fprintf(stderr, "missing %s plugin %s\n", sy_kind_name(k), noop ? "noop" : real_plugins[k]);
            return 1;
        }
    }
    p.layout = SY_LAYOUT_NHD;
    p.kv_dtype = SY_DTYPE_BF16;
    p.page_size = 16;
    p.k_scale = p.v_scale = 1;
    p.batch = 1;
    p.input_len = 64;
    p.output_len = steps + 1;
    p.warmup = noop ? 1 : 0;
    p.repeat = 1;
    sy_engine *e = NULL;
    sy_error err = {{0}};
    if (sy_engine_create(&p, &e, &err) != SY_OK || sy_engine_run(e, m, &err) != SY_OK) {
        fprintf(stderr, "%s\n", err.msg);
        sy_engine_destroy(e);
        return 1;
    }
    *median_ms = m->tpot_median_ms;
    sy_engine_destroy(e);
    return 0;
}

/* "x86_64, 2 CPUs, <model name>": the machine a result belongs to, written into the result itself. */
static void describe_machine(char *out, size_t len)
{
    struct utsname u;
    char model[256] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    for (char line[512]; f && fgets(line, sizeof line, f);)
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n\"\\")] = 0;
            break;
        }
    if (f)
        fclose(f);
    snprintf(out, len, "%s, %ld CPUs, %s", uname(&u) == 0 ? u.machine : "unknown", sysconf(_SC_NPROCESSORS_ONLN),
             model);
}

int main(int argc, char **argv)
{
    const char *preset = argc > 1 ? argv[1] : "gpt-oss-20b";
    uint32_t steps = argc > 2 ? (uint32_t)atoi(argv[2]) : 3;
    const sy_model_preset *mp = sy_model_preset_find(preset);
    if (!mp) {
        fprintf(stderr, "unknown preset %s\n", preset);
        return 2;
    }
    const char *dir = getenv("SY_NOOP_PLUGIN_DIR");
    sy_registry_options o = {0};
    o.struct_size = sizeof o;
    o.plugin_paths = &dir;
    o.n_plugin_paths = dir ? 1 : 0;
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    if (sy_registry_open(&o, &reg, &err) != SY_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    sy_model_dims d = mp->dims;
    sy_run_metrics m;
    double noop_ms = 0, real_ms = 0;
    if (run(reg, &d, 1, 50, &m, &noop_ms) || run(reg, &d, 0, steps, &m, &real_ms))
        return 1;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    char machine[512];
    describe_machine(machine, sizeof machine);
    printf("{\n  \"bench\": \"engine_overhead\",\n  \"machine\": \"%s\",\n  \"preset\": \"%s\",\n"
           "  \"backend\": \"cpu\",\n"
           "  \"batch\": 1,\n  \"context\": 64,\n  \"noop_step_median_ms\": %.6f,\n"
           "  \"real_step_median_ms\": %.3f,\n  \"overhead_fraction\": %.6f,\n  \"peak_rss_mib\": %.1f\n}\n",
           machine, preset, noop_ms, real_ms, real_ms > 0 ? noop_ms / real_ms : 0, ru.ru_maxrss / 1024.0);
    sy_registry_close(reg);
    return 0;
}
