/* switchyard run CONFIG: the main job. Resolves and composes the config, builds the model on the
 * chosen backend, runs the workload, and reports TTFT, TPOT, throughput, per-op time by slot, pool
 * use and a checksum of the generated tokens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "compose/compose.h"
#include "config/config.h"
#include "model/plan.h"
#include "report_file.h"
#include "util/json.h"

typedef struct run_opts {
    const char *config;
    const char **sets;
    size_t n_sets;
    int import_env;
    const char *json;
    int quiet;
} run_opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: switchyard run CONFIG [--set key=value]... [--import-env] [--json FILE] [--quiet]\n"
               "                      [--plugin-path DIR]... [--allow-insecure-plugins]\n"
               "Runs the config's workload (chunked prefill, then greedy decode) on the composed plugins and\n"
               "reports TTFT, TPOT, throughput, per-op time by slot, peak pool use and a token checksum.\n"
               "--json writes the same report as JSON (atomically); report.json in the config does too.\n");
}

/* Tokens the first `steps` forwards of a repetition have processed: the prefill chunks (none for a
 * synthetic context), then one token per sequence per decode step. */
static double tokens_after(const sy_plan *p, uint32_t steps)
{
    uint32_t chunk = sy_plan_chunk(p);
    uint32_t n_prefill = p->synthetic_context ? 0 : (p->input_len + chunk - 1) / chunk;
    if (steps <= n_prefill) {
        uint64_t prompt = (uint64_t)steps * chunk;
        return (double)p->batch * (double)(prompt < p->input_len ? prompt : p->input_len);
    }
    return (double)p->batch * ((n_prefill ? p->input_len : 0) + (double)(steps - n_prefill));
}

/* One line, rewritten in place: only ever shown on a terminal (see sy_cmd_run). */
static void progress(void *user, uint32_t done, uint32_t total, double elapsed_ms)
{
    const sy_plan *p = user;
    double seconds = elapsed_ms * 1e-3;
    double steps_per_s = seconds > 0 ? done / seconds : 0;
    double eta = steps_per_s > 0 ? (total - done) / steps_per_s : 0;
    fprintf(stderr, "\r  step %u/%u  %.0f tok/s  ETA %.1fs   ", done, total,
            seconds > 0 ? tokens_after(p, done) / seconds : 0.0, eta);
    if (done == total)
        fputs("\r\033[K", stderr);
}

static long peak_rss_kib(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}

static void print_composition(const sy_composition *comp)
{
    const sy_compose_decisions *d = sy_composition_decisions(comp);
    const sy_registry_entry *be = sy_composition_backend(comp);
    printf("composition:\n  %-10s %s\n", "backend", be->backend->name);
    for (size_t i = 0; i < SY_COMPOSE_SLOTS; i++) {
        int32_t kind = sy_compose_slot_kind(i);
        const sy_registry_entry *e = sy_composition_plugin(comp, kind);
        printf("  %-10s %s %s\n", sy_kind_name(kind), e->plugin->name, e->plugin->version);
    }
    printf("  kv cache   %s %s, page %u%s\n", sy_layout_name(d->layout), sy_dtype_name(d->kv_dtype), d->page_size,
           d->kv_dtype == SY_DTYPE_FP8_E4M3 ? " (fp8 scales applied)" : "");
    printf("  rope+kv    %s\n", d->fused_rope_kv ? "fused" : "unfused (rope, then kv_layout.write)");
    if (d->pad_multiple)
        printf("  norm pad   fused to a multiple of %u (%u columns)\n", d->pad_multiple, d->padded_hidden);
    else
        printf("  norm pad   off\n");
    printf("  q/k/v      %s\n", d->fused_qkv           ? "one linear (fused)"
                                : d->qkv_linears == 1 ? "one linear, three arrays (unfused)"
                                                      : "three linears");
    printf("  extend     %s\n", d->prefill_paged ? "prefill_paged (a later chunk reads its prefix from the pages)"
                                                 : "kv_layout.gather, then prefill_linear");
    printf("  act dtype  %s between ops (residual stream and logits f32)\n", sy_dtype_name(d->act_dtype));
}

static void print_metrics(const sy_plan *p, const sy_run_metrics *m)
{
    printf("\nresults (%u measured repetitions after %u warm-up):\n", p->repeat, p->warmup);
    /* A synthetic context runs no prefill: its TTFT is not a number, and saying so beats "nan". */
    if (isfinite(m->ttft_ms))
        printf("  TTFT                 %10.3f ms  (batch %u x %u prompt tokens)\n", m->ttft_ms, p->batch, p->input_len);
    else
        printf("  TTFT                 not measured (synthetic context of %u tokens, no prefill)\n", p->input_len);
    printf("  TPOT median          %10.3f ms\n", m->tpot_median_ms);
    printf("  TPOT p90             %10.3f ms\n", m->tpot_p90_ms);
    if (isfinite(m->prefill_tok_per_s))
        printf("  prefill throughput   %10.1f tok/s\n", m->prefill_tok_per_s);
    else
        printf("  prefill throughput   not measured\n");
    printf("  decode throughput    %10.1f tok/s\n", m->decode_tok_per_s);
    if (p->per_op_timing) {
        double total = 0;
        for (int32_t k = 0; k < SY_KIND_COUNT_; k++)
            total += m->op_ms[k];
        printf("  time by slot (all measured repetitions):\n");
        for (int32_t k = 1; k < SY_KIND_COUNT_; k++)
            printf("    %-10s %10.3f ms %5.1f%%  (%u calls)\n", sy_kind_name(k), m->op_ms[k],
                   total > 0 ? 100 * m->op_ms[k] / total : 0, m->op_calls[k]);
        printf("    %-10s %10.3f ms %5.1f%%\n", "engine", m->op_ms[0], total > 0 ? 100 * m->op_ms[0] / total : 0);
    }
    printf("  KV pool              %u of %u full pages peak", m->peak_full_pages, m->full_pages);
    if (m->swa_pages)
        printf(", %u of %u sliding-window pages peak", m->peak_swa_pages, m->swa_pages);
    printf(" (%.1f MiB)\n", (double)m->pool_bytes / 1048576.0);
    printf("  peak resident memory %10.1f MiB\n", peak_rss_kib() / 1024.0);
    printf("  token checksum       %016llx\n", (unsigned long long)m->checksum);
}

static void write_json(FILE *f, const sy_config *cfg, const sy_composition *comp, const sy_plan *p,
                       const sy_run_metrics *m)
{
    sy_json j;
    sy_json_init(&j, f, 1);
    sy_json_begin_object(&j);
    sy_json_key(&j, "switchyard");
    sy_json_string(&j, sy_version());
    sy_json_key(&j, "config");
    sy_json_string(&j, sy_config_file(cfg));
    sy_json_key(&j, "resolved");
    sy_json_begin_object(&j);
    for (size_t i = 0; i < sy_config_key_count(); i++) {
        const char *key = sy_config_key_name(i);
        sy_json_key(&j, key);
        sy_json_begin_object(&j);
        sy_json_key(&j, "value");
        sy_json_string(&j, sy_config_text(cfg, key));
        sy_json_key(&j, "source");
        sy_json_string(&j, sy_config_source(cfg, key));
        sy_json_end_object(&j);
    }
    sy_json_end_object(&j);
    sy_json_key(&j, "composition");
    sy_json_begin_object(&j);
    sy_json_key(&j, "backend");
    sy_json_string(&j, sy_composition_backend(comp)->backend->name);
    for (size_t i = 0; i < SY_COMPOSE_SLOTS; i++) {
        int32_t kind = sy_compose_slot_kind(i);
        const sy_registry_entry *e = sy_composition_plugin(comp, kind);
        sy_json_key(&j, sy_kind_name(kind));
        sy_json_begin_object(&j);
        sy_json_key(&j, "plugin");
        sy_json_string(&j, e->plugin->name);
        sy_json_key(&j, "version");
        sy_json_string(&j, e->plugin->version);
        sy_json_key(&j, "file");
        sy_json_string(&j, e->file);
        sy_json_end_object(&j);
    }
    const sy_compose_decisions *d = sy_composition_decisions(comp);
    sy_json_key(&j, "fused_rope_kv_write");
    sy_json_bool(&j, d->fused_rope_kv);
    sy_json_key(&j, "fuse_pad_multiple");
    sy_json_uint(&j, d->pad_multiple);
    sy_json_key(&j, "fused_qkv");
    sy_json_bool(&j, d->fused_qkv);
    sy_json_key(&j, "qkv_linears");
    sy_json_uint(&j, d->qkv_linears);
    sy_json_key(&j, "prefill_paged");
    sy_json_bool(&j, d->prefill_paged);
    sy_json_key(&j, "activation_dtype");
    sy_json_string(&j, sy_dtype_name(d->act_dtype));
    sy_json_end_object(&j);
    sy_json_key(&j, "metrics");
    sy_json_begin_object(&j);
    sy_json_key(&j, "ttft_ms");
    sy_json_double(&j, m->ttft_ms);
    sy_json_key(&j, "tpot_median_ms");
    sy_json_double(&j, m->tpot_median_ms);
    sy_json_key(&j, "tpot_p90_ms");
    sy_json_double(&j, m->tpot_p90_ms);
    sy_json_key(&j, "prefill_tokens_per_s");
    sy_json_double(&j, m->prefill_tok_per_s);
    sy_json_key(&j, "decode_tokens_per_s");
    sy_json_double(&j, m->decode_tok_per_s);
    sy_json_key(&j, "measured_ms");
    sy_json_double(&j, m->total_ms);
    sy_json_key(&j, "per_op_ms");
    sy_json_begin_object(&j);
    if (p->per_op_timing) {
        for (int32_t k = 1; k < SY_KIND_COUNT_; k++) {
            sy_json_key(&j, sy_kind_name(k));
            sy_json_double(&j, m->op_ms[k]);
        }
        sy_json_key(&j, "engine");
        sy_json_double(&j, m->op_ms[0]);
    }
    sy_json_end_object(&j);
    sy_json_key(&j, "op_calls");
    sy_json_begin_object(&j);
    for (int32_t k = 1; k < SY_KIND_COUNT_; k++) {
        sy_json_key(&j, sy_kind_name(k));
        sy_json_uint(&j, m->op_calls[k]);
    }
    sy_json_end_object(&j);
    sy_json_key(&j, "decode_step_ms");
    sy_json_begin_array(&j);
    for (uint32_t i = 0; i < m->n_steps; i++)
        sy_json_double(&j, m->step_ms[i]);
    sy_json_end_array(&j);
    sy_json_key(&j, "peak_full_pages");
    sy_json_uint(&j, m->peak_full_pages);
    sy_json_key(&j, "full_pages");
    sy_json_uint(&j, m->full_pages);
    sy_json_key(&j, "peak_swa_pages");
    sy_json_uint(&j, m->peak_swa_pages);
    sy_json_key(&j, "swa_pages");
    sy_json_uint(&j, m->swa_pages);
    sy_json_key(&j, "pool_bytes");
    sy_json_uint(&j, m->pool_bytes);
    sy_json_key(&j, "peak_rss_kib");
    sy_json_int(&j, peak_rss_kib());
    char sum[32];
    snprintf(sum, sizeof sum, "%016llx", (unsigned long long)m->checksum);
    sy_json_key(&j, "token_checksum");
    sy_json_string(&j, sum);
    sy_json_key(&j, "tokens");
    sy_json_begin_array(&j);
    for (uint32_t b = 0; b < p->batch; b++) {
        sy_json_begin_array(&j);
        for (uint32_t t = 0; t < p->output_len; t++)
            sy_json_uint(&j, m->tokens[(size_t)b * p->output_len + t]);
        sy_json_end_array(&j);
    }
    sy_json_end_array(&j);
    sy_json_end_object(&j);
    sy_json_end_object(&j);
    fputc('\n', f);
}

int sy_cmd_run(int argc, char **argv)
{
    sy_cli_common common = {0};
    run_opts o = {0};
    int rc = SY_EXIT_USAGE;
    o.sets = calloc((size_t)argc, sizeof *o.sets);
    for (int i = 1; i < argc; i++) {
        int r = sy_cli_common_opt(&common, argc, argv, &i);
        if (r < 0)
            goto out;
        if (r > 0)
            continue;
        const char *a = argv[i], *v;
        int missing = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            rc = SY_EXIT_OK;
            goto out;
        } else if ((v = sy_cli_option_value("switchyard run", argc, argv, &i, "--set", &missing))) {
            o.sets[o.n_sets++] = v;
        } else if ((v = sy_cli_option_value("switchyard run", argc, argv, &i, "--json", &missing))) {
            o.json = v;
        } else if (missing) {
            goto out;
        } else if (strcmp(a, "--import-env") == 0) {
            o.import_env = 1;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o.quiet = 1;
        } else if (a[0] == '-' || o.config) {
            fprintf(stderr, "switchyard run: unexpected argument '%s'\n", a);
            usage(stderr);
            goto out;
        } else {
            o.config = a;
        }
    }
    if (!o.config) {
        usage(stderr);
        goto out;
    }
    sy_diags diags = {0};
    sy_config_options copts = {.sets = o.sets, .n_sets = o.n_sets, .import_env = o.import_env};
    sy_config *cfg = sy_config_load_file(o.config, &copts, &diags);
    sy_registry *reg = NULL;
    sy_composition *comp = NULL;
    sy_engine *engine = NULL;
    sy_report_file report = {0};
    sy_error err = {{0}};
    if (!cfg || sy_diags_count(&diags, SY_SEV_ERROR)) {
        sy_diags_sort(&diags);
        sy_diags_print(&diags, stderr);
        goto done;
    }
    if (sy_compose_open_registry(cfg, common.plugin_paths, common.n_plugin_paths, common.allow_insecure, &reg, &err) !=
        SY_OK) {
        fprintf(stderr, "switchyard run: %s\n", err.msg);
        rc = SY_EXIT_RUNTIME;
        goto done;
    }
    comp = sy_compose(reg, cfg, &diags);
    sy_diags_sort(&diags);
    sy_diags_print(&diags, stderr);
    if (!sy_composition_ok(comp) || sy_diags_count(&diags, SY_SEV_ERROR))
        goto done;
    sy_plan plan;
    if (sy_plan_from_config(cfg, comp, &plan, &err) != SY_OK) {
        fprintf(stderr, "%s: error: %s\n", o.config, err.msg);
        goto done;
    }
    print_composition(comp);
    fflush(stdout);
    if (!o.json && sy_config_str(cfg, "report.json")[0])
        o.json = sy_config_str(cfg, "report.json");
    rc = SY_EXIT_RUNTIME;
    if (o.json && sy_report_open(&report, o.json) != 0)
        goto done;
    if (sy_engine_create(&plan, &engine, &err) != SY_OK) {
        fprintf(stderr, "switchyard run: %s\n", err.msg);
        goto done;
    }
    if (!o.quiet && isatty(fileno(stderr)))
        sy_engine_set_progress(engine, progress, &plan);
    sy_run_metrics m;
    if (sy_engine_run(engine, &m, &err) != SY_OK) {
        fprintf(stderr, "switchyard run: %s\n", err.msg);
        goto done;
    }
    print_metrics(&plan, &m);
    if (o.json) {
        write_json(report.f, cfg, comp, &plan, &m);
        if (sy_report_commit(&report) != 0)
            goto done;
        printf("  report               %s\n", o.json);
    }
    rc = SY_EXIT_OK;
done:
    sy_report_abort(&report);
    sy_engine_destroy(engine);
    if (comp)
        sy_composition_free(comp);
    sy_registry_close(reg);
    sy_config_free(cfg);
    sy_diags_free(&diags);
out:
    free(o.sets);
    sy_cli_common_free(&common);
    return rc;
}
