/* Peak host memory and time of building the engine from a checkpoint (or from synthetic weights, for
 * comparison).
 *   checkpoint_load_rss PRESET (CHECKPOINT_DIR | synthetic) [--cold] [--backend NAME]   JSON on stdout
 * Without --backend: the cpu backend with the plugins found in $SY_NOOP_PLUGIN_DIR. With the no-op
 * plugins of bench/engine_overhead the MoE keeps no weights, so what stays resident is the engine's
 * own: the dense tensors on the cpu "device" and the host embedding table; the rest of the peak is
 * the loader's. With --backend (cuda, hip): that backend's in-tree plugins (kv_nhd, attn_paged,
 * moe_mxfp4_interleave, norm_rmsnorm, rope_yarn, linear), so every weight goes to device memory and
 * the host holds only what the loader has in flight, plus the embedding table.
 * --cold drops the checkpoint files from the page cache first (posix_fadvise), so that the time
 * includes reading the disk. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "model/engine_impl.h"
#include "model/presets.h"

static double rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

static void drop_cache(const char *dir)
{
    sy_checkpoint *c = NULL;
    sy_error err = {{0}};
    if (sy_checkpoint_open(dir, &c, &err) != SY_OK)
        return;
    for (size_t i = 0; i < c->n_shards; i++) {
        int fd = open(c->shards[i].path, O_RDONLY);
        if (fd >= 0) {
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            close(fd);
        }
    }
    sy_checkpoint_close(c);
}

int main(int argc, char **argv)
{
    int cold = 0;
    const char *backend = NULL;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--cold") == 0)
            cold = 1;
        else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc)
            backend = argv[++i];
        else
            argc = 0; /* usage */
    }
    if (argc < 3) {
        fprintf(stderr, "usage: checkpoint_load_rss PRESET (CHECKPOINT_DIR | synthetic) [--cold] [--backend NAME]\n");
        return 2;
    }
    const sy_model_preset *mp = sy_model_preset_find(argv[1]);
    if (!mp) {
        fprintf(stderr, "unknown preset %s\n", argv[1]);
        return 2;
    }
    int synthetic = strcmp(argv[2], "synthetic") == 0;
    const char *dir = backend ? NULL : getenv("SY_NOOP_PLUGIN_DIR");
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
    sy_plan p = {0};
    p.dims = mp->dims;
    p.weight_seed = 1;
    if (!synthetic)
        snprintf(p.checkpoint, sizeof p.checkpoint, "%s", argv[2]);
    static const char *const in_tree[SY_KIND_COUNT_] = {
        [SY_KIND_KV_LAYOUT] = "kv_nhd", [SY_KIND_ATTENTION] = "attn_paged", [SY_KIND_MOE] = "moe_mxfp4_interleave",
        [SY_KIND_NORM] = "norm_rmsnorm", [SY_KIND_ROPE] = "rope_yarn",     [SY_KIND_LINEAR] = "linear"};
    const char *on = backend ? backend : "cpu";
    if (!(p.backend = sy_registry_find_backend(reg, on))) {
        fprintf(stderr, "no backend %s\n", on);
        return 1;
    }
    for (int32_t k = 1; k < SY_KIND_COUNT_; k++)
        if (!(p.slot[k] = sy_registry_find(reg, k, backend ? in_tree[k] : "noop", on))) {
            if (backend)
                fprintf(stderr, "no %s plugin %s for backend %s\n", sy_kind_name(k), in_tree[k], on);
            else
                fprintf(stderr, "no noop %s plugin: set SY_NOOP_PLUGIN_DIR to BUILD/bench/noop_plugins\n",
                        sy_kind_name(k));
            return 1;
        }
    p.layout = SY_LAYOUT_NHD;
    p.kv_dtype = SY_DTYPE_BF16;
    p.page_size = 16;
    p.k_scale = p.v_scale = 1;
    p.batch = 1;
    p.input_len = 1;
    p.output_len = 1;
    p.repeat = 1;
    if (!synthetic && cold)
        drop_cache(argv[2]);
    double before = rss_mib(), t0 = sy_now_ms();
    sy_engine *e = NULL;
    if (sy_engine_create(&p, &e, &err) != SY_OK) {
        fprintf(stderr, "%s\n", err.msg);
        sy_engine_destroy(e);
        return 1;
    }
    double load_ms = sy_now_ms() - t0, peak = rss_mib();
    uint64_t embed = (uint64_t)mp->dims.vocab * mp->dims.hidden * 2;
    /* On the cpu backend "device" memory is this process's memory; on a GPU it is not. */
    uint64_t resident = embed + (strcmp(on, "cpu") == 0 ? e->device_bytes : 0);
    printf("{\n  \"bench\": \"checkpoint_load\",\n  \"preset\": \"%s\",\n  \"weights\": \"%s\",\n"
           "  \"backend\": \"%s\",\n  \"plugins\": \"%s\",\n  \"cold\": %s,\n  \"load_ms\": %.1f,\n  \"rss_before_mib\": %.1f,\n"
           "  \"peak_rss_mib\": %.1f,\n  \"engine_device_mib\": %.1f,\n  \"host_embedding_mib\": %.1f,\n"
           "  \"loader_peak_mib\": %.1f\n}\n",
           mp->name, synthetic ? "synthetic" : "checkpoint", on, backend ? "in-tree" : "noop",
           cold && !synthetic ? "true" : "false", load_ms, before, peak, e->device_bytes / 1048576.0,
           embed / 1048576.0, peak - before - resident / 1048576.0);
    sy_engine_destroy(e);
    sy_registry_close(reg);
    return 0;
}
