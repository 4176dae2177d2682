/* switchyard checkpoint: write the synthetic weights of a model as an HF gpt-oss checkpoint
 * (synth), or check that a checkpoint folder holds a complete, well-formed gpt-oss (check). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/gpt_oss.h"
#include "checkpoint/hf_config.h"
#include "checkpoint/synth_write.h"
#include "cli.h"
#include "config/config.h"
#include "config/schema.h"
#include "model/presets.h"
#include "util/strbuf.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: switchyard checkpoint synth [--preset NAME] [--seed S] [--set key=value]... [--shards N] OUT_DIR\n"
            "       switchyard checkpoint check DIR\n"
            "synth writes the synthetic weights of a model (model.preset, default tiny; any model.* key by --set)\n"
            "as a Hugging Face gpt-oss checkpoint: config.json and model.safetensors, or N shards with\n"
            "model.safetensors.index.json. `switchyard run` with model.weights: OUT_DIR then computes exactly what\n"
            "the synthetic run with model.seed S computes.\n"
            "check reads DIR's config.json and every safetensors header, and verifies each gpt-oss tensor's\n"
            "name, dtype and shape.\n");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --preset NAME and --seed S are model.preset and model.seed, checked here so that a problem is
 * reported against the option the user typed ("--seed: error: ..."), not against a --set they never
 * gave. The checked value is appended to `sets` after the user's own --set entries, whose numbers in
 * "--set:N" diagnostics therefore stay theirs. */
static void add_option_set(const char *option, const char *key, const char *value, const char **sets,
                           size_t *n_sets, char **owned, sy_diags *diags)
{
    size_t n_keys = 0;
    const sy_cfg_key *k = &sy_schema_keys(&n_keys)[sy_schema_index(key)];
    size_t key_len = strlen(key);
    for (size_t i = 0; i < *n_sets; i++)
        if (strncmp(sets[i], key, key_len) == 0 && sets[i][key_len] == '=') {
            sy_diags_add(diags, SY_SEV_ERROR, option, 0, 0, "%s is also given by --set %zu; give it once", key, i + 1);
            return;
        }
    sy_cfg_value v = {0};
    char why[256];
    if (!sy_cfg_parse(k, value, 0, &v, why, sizeof why)) {
        sy_diags_add(diags, SY_SEV_ERROR, option, 0, 0, "%s: %s", key, why);
        return;
    }
    *owned = sy_asprintf("%s=%s", key, v.text);
    sets[(*n_sets)++] = *owned;
    sy_cfg_value_free(&v);
}

static int cmd_synth(int argc, char **argv)
{
    const char **sets = calloc((size_t)argc + 2, sizeof *sets);
    size_t n_sets = 0;
    const char *preset = NULL, *seed = NULL, *out = NULL; /* the last --preset and --seed count */
    char *preset_set = NULL, *seed_set = NULL, *label = NULL;
    long shards = 1;
    int rc = SY_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            rc = SY_EXIT_OK;
            goto done;
        } else if (strcmp(a, "--preset") == 0 && i + 1 < argc) {
            preset = argv[++i];
        } else if (strcmp(a, "--seed") == 0 && i + 1 < argc) {
            seed = argv[++i];
        } else if (strcmp(a, "--set") == 0 && i + 1 < argc) {
            sets[n_sets++] = argv[++i];
        } else if (strncmp(a, "--set=", 6) == 0) {
            sets[n_sets++] = a + 6;
        } else if (strcmp(a, "--shards") == 0 && i + 1 < argc) {
            char *end = NULL;
            shards = strtol(argv[++i], &end, 10);
            if (!end || *end || shards < 1 || shards > 99999) {
                fprintf(stderr, "switchyard checkpoint synth: --shards %s: expected a count from 1 to 99999\n",
                        argv[i]);
                goto done;
            }
        } else if (a[0] == '-' || out) {
            fprintf(stderr, "switchyard checkpoint synth: unexpected argument '%s'\n", a);
            usage(stderr);
            goto done;
        } else {
            out = a;
        }
    }
    if (!out) {
        usage(stderr);
        goto done;
    }
    sy_diags diags = {0};
    if (preset)
        add_option_set("--preset", "model.preset", preset, sets, &n_sets, &preset_set, &diags);
    if (seed)
        add_option_set("--seed", "model.seed", seed, sets, &n_sets, &seed_set, &diags);
    sy_config_options copts = {.sets = sets, .n_sets = n_sets};
    sy_config *cfg = sy_config_load_defaults(&copts, &diags);
    if (!cfg || sy_diags_count(&diags, SY_SEV_ERROR)) {
        sy_diags_sort(&diags);
        sy_diags_print(&diags, stderr);
        sy_diags_free(&diags);
        sy_config_free(cfg);
        goto done;
    }
    sy_diags_free(&diags);
    sy_model_dims d;
    sy_model_dims_from_config(cfg, &d);
    uint64_t seed_value = (uint64_t)sy_config_int(cfg, "model.seed");
    label = sy_strdup(sy_config_str(cfg, "model.preset"));
    sy_config_free(cfg);
    sy_error err = {{0}};
    if (sy_model_dims_check(&d, &err) != SY_OK) {
        fprintf(stderr, "switchyard checkpoint synth: %s\n", err.msg);
        goto done;
    }
    double t0 = now_s();
    sy_synth_write_result r;
    if (sy_checkpoint_write_synth(&d, seed_value, (uint32_t)shards, out, label, &r, &err) != SY_OK) {
        fprintf(stderr, "switchyard checkpoint synth: %s\n", err.msg);
        rc = strstr(err.msg, "--shards") ? SY_EXIT_USAGE : SY_EXIT_RUNTIME;
        goto done;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("wrote %s: %zu tensors, %.1f MiB in %u safetensors file%s%s + config.json (seed %llu) in %.2f s, peak "
           "resident memory %.1f MiB\n",
           out, r.tensors, (double)r.bytes / 1048576.0, r.files, r.files == 1 ? "" : "s",
           r.files > 1 ? " + " SY_CKPT_INDEX_FILE : "", (unsigned long long)seed_value, now_s() - t0,
           ru.ru_maxrss / 1024.0);
    rc = SY_EXIT_OK;
done:
    free(preset_set);
    free(seed_set);
    free(label);
    free(sets);
    return rc;
}

/* The cross-dimension rules a config's model must follow (heads dividing, multiples of 32 for the
 * MXFP4 blocks), for the model config.json describes: its tensor shapes are derived from them. */
static sy_status check_dims(const char *config, const sy_model_dims *d, sy_error *err)
{
    sy_error why = {{0}};
    sy_status st = sy_model_dims_check(d, &why);
    return st == SY_OK ? SY_OK : sy_fail(err, st, "%s: %s", config, why.msg);
}

static int cmd_check(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return SY_EXIT_OK;
    }
    if (argc != 2 || argv[1][0] == '-') {
        usage(stderr);
        return SY_EXIT_USAGE;
    }
    const char *dir = argv[1];
    char *config = malloc(strlen(dir) + sizeof SY_CKPT_CONFIG_FILE + 2);
    sprintf(config, "%s/%s", dir, SY_CKPT_CONFIG_FILE);
    sy_error err = {{0}};
    sy_hf_config hf;
    sy_checkpoint *c = NULL;
    sy_status st = sy_hf_config_read(config, &hf, &err);
    if (st == SY_OK)
        st = check_dims(config, &hf.dims, &err);
    if (st == SY_OK)
        st = sy_checkpoint_open(dir, &c, &err);
    if (st == SY_OK)
        st = sy_gpt_oss_check(c, &hf.dims, &err);
    free(config);
    if (st != SY_OK) {
        fprintf(stderr, "switchyard checkpoint check: %s\n", err.msg);
        sy_checkpoint_close(c);
        return st == SY_E_IO ? SY_EXIT_RUNTIME : SY_EXIT_FAILED;
    }
    uint64_t bytes = 0;
    for (size_t i = 0; i < c->n_refs; i++)
        bytes += c->refs[i].tensor->bytes;
    printf("%s: gpt-oss, %u layers, hidden %u, %u experts top-%u, vocab %u: %zu tensors, %.1f MiB in %zu file%s, all "
           "present with the expected dtype and shape\n",
           dir, hf.dims.layers, hf.dims.hidden, hf.dims.experts, hf.dims.top_k, hf.dims.vocab, c->n_refs,
           (double)bytes / 1048576.0, c->n_shards, c->n_shards == 1 ? "" : "s");
    sy_checkpoint_close(c);
    return SY_EXIT_OK;
}

int sy_cmd_checkpoint(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "synth") == 0)
        return cmd_synth(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "check") == 0)
        return cmd_check(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return SY_EXIT_OK;
    }
    if (argc >= 2)
        fprintf(stderr, "switchyard checkpoint: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return SY_EXIT_USAGE;
}
