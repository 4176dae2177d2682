/* Embedding Switchyard: build an engine from config text (or a config file given as the first
 * argument), print what the composition chose, run the config's workload and print its metrics,
 * then drive the same engine step by step on a prompt of our own, and release everything.
 *
 *   embed                 the built-in config below
 *   embed CONFIG          a config file (YAML or INI), e.g. configs/default.yaml
 *   embed CONFIG KEY=VALUE...   with overrides, as `switchyard run --set` */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <switchyard/switchyard.h>

/* The default config's tiny model on the cpu backend, with a short workload. */
static const char CONFIG[] = "backend: cpu\n"
                             "model:\n"
                             "  preset: tiny\n"
                             "  dtype: f32\n"
                             "kv_cache:\n"
                             "  layout: nhd\n"
                             "workload:\n"
                             "  batch: 2\n"
                             "  input_len: 24\n"
                             "  output_len: 6\n"
                             "  prefill_chunk: 16\n"
                             "  warmup: 0\n"
                             "  repeat: 1\n"
                             "report:\n"
                             "  per_op: true\n";

static void print_diagnostic(void *user, const char *line)
{
    (void)user;
    fprintf(stderr, "%s\n", line);
}

static void print_composition(const sy_engine_info *info)
{
    printf("composition (backend %s, %s):\n", info->backend, info->backend_file);
    for (uint32_t i = 0; i < info->n_slots; i++) {
        const sy_engine_slot *s = &info->slots[i];
        printf("  %-10s %-22s %-8s %s\n", sy_kind_name(s->kind), s->plugin, s->version, s->file);
    }
    printf("  kv cache   %s %s, page %u; rope+kv %s; norm pad %u\n", sy_layout_name(info->kv_layout),
           sy_dtype_name(info->kv_dtype), info->page_size, info->fused_rope_kv_write ? "fused" : "separate",
           info->norm_pad_multiple);
    /* Members appended to sy_engine_info later are read only when its struct_size covers them. */
    if (SY_HAS_MEMBER(info->struct_size, sy_engine_info, act_dtype))
        printf("  q/k/v      %s; activations %s\n", info->fused_qkv ? "one linear" : "three linears",
               sy_dtype_name(info->act_dtype));
}

static void print_metrics(const sy_engine_metrics *m)
{
    /* A config with workload.context: synthetic runs no prefill: TTFT and prefill rate are NaN. */
    if (isnan(m->ttft_ms))
        printf("workload: TTFT not measured (synthetic context), TPOT median %.3f ms (p90 %.3f), decode %.1f tok/s\n",
               m->tpot_median_ms, m->tpot_p90_ms, m->decode_tok_per_s);
    else
        printf("workload: TTFT %.3f ms, TPOT median %.3f ms (p90 %.3f), prefill %.1f tok/s, decode %.1f tok/s\n",
               m->ttft_ms, m->tpot_median_ms, m->tpot_p90_ms, m->prefill_tok_per_s, m->decode_tok_per_s);
    for (int32_t kind = 1; kind < SY_ENGINE_OP_SLOTS; kind++)
        if (m->op_calls[kind])
            printf("  %-10s %9.3f ms  %u calls\n", sy_kind_name(kind), m->op_ms[kind], m->op_calls[kind]);
    printf("  KV pool %u of %u full pages peak; checksum %016llx\n", m->peak_full_pages, m->full_pages,
           (unsigned long long)m->checksum);
    for (uint32_t b = 0; b < m->batch; b++) {
        printf("  sequence %u:", b);
        for (uint32_t t = 0; t < m->output_len; t++)
            printf(" %u", m->tokens[(size_t)b * m->output_len + t]);
        printf("\n");
    }
}

/* Prefill a prompt of our own ids in every sequence, then greedy decode a few tokens. */
static sy_status generate(sy_engine_handle *engine, const sy_engine_info *info, sy_error *err)
{
    uint32_t prompt_len = info->max_prompt_tokens < 10 ? info->max_prompt_tokens : 10;
    uint32_t steps = info->max_tokens - prompt_len < 5 ? info->max_tokens - prompt_len : 5;
    uint32_t *prompt = calloc((size_t)info->batch * prompt_len, sizeof *prompt);
    uint32_t *next = calloc(info->batch, sizeof *next);
    uint32_t *out = calloc((size_t)info->batch * (steps + 1), sizeof *out);
    sy_status st = SY_E_NOMEM;
    if (prompt && next && out) {
        for (uint32_t b = 0; b < info->batch; b++)
            for (uint32_t i = 0; i < prompt_len; i++)
                prompt[(size_t)b * prompt_len + i] = (7u * i + 31u * b + 1u) % info->vocab;
        st = sy_engine_prefill(engine, prompt, prompt_len, next, err);
        for (uint32_t step = 0; st == SY_OK; step++) {
            for (uint32_t b = 0; b < info->batch; b++)
                out[(size_t)b * (steps + 1) + step] = next[b];
            if (step == steps)
                break;
            st = sy_engine_decode(engine, next, next, err);
        }
    }
    if (st == SY_OK) {
        printf("steps: prompt of %u ids, then %u decode steps (sequences hold %u tokens)\n", prompt_len, steps,
               sy_engine_sequence_length(engine));
        for (uint32_t b = 0; b < info->batch; b++) {
            printf("  sequence %u:", b);
            for (uint32_t t = 0; t <= steps; t++)
                printf(" %u", out[(size_t)b * (steps + 1) + t]);
            printf("\n");
        }
    }
    free(prompt);
    free(next);
    free(out);
    return st;
}

int main(int argc, char **argv)
{
    sy_engine_open_options opts;
    memset(&opts, 0, sizeof opts);
    opts.struct_size = sizeof opts;
    opts.diag = print_diagnostic;
    if (argc > 2) {
        opts.sets = (const char *const *)(argv + 2);
        opts.n_sets = (size_t)(argc - 2);
    }
    sy_error err = {{0}};
    sy_engine_handle *engine = NULL;
    sy_status st = argc > 1 ? sy_engine_open_file(argv[1], &opts, &engine, &err)
                            : sy_engine_open_string(CONFIG, strlen(CONFIG), SY_CONFIG_TEXT_YAML, "embed.c", &opts,
                                                    &engine, &err);
    if (st != SY_OK) {
        fprintf(stderr, "embed: cannot build the engine: %s\n", err.msg);
        return 1;
    }
    const sy_engine_info *info = sy_engine_get_info(engine);
    print_composition(info);

    sy_engine_metrics metrics;
    memset(&metrics, 0, sizeof metrics);
    metrics.struct_size = sizeof metrics;
    if ((st = sy_engine_run_workload(engine, &err)) == SY_OK && (st = sy_engine_get_metrics(engine, &metrics, &err)) == SY_OK)
        print_metrics(&metrics);
    /* An engine built for a synthetic context (TTFT not measured) takes no prefill of its own. */
    if (st == SY_OK && isnan(metrics.ttft_ms))
        printf("steps: not run: workload.context is synthetic, so the engine takes decode steps only\n");
    else if (st == SY_OK)
        st = generate(engine, info, &err);
    if (st != SY_OK)
        fprintf(stderr, "embed: %s (%s)\n", err.msg, sy_status_name(st));
    sy_engine_close(engine);
    return st == SY_OK ? 0 : 1;
}
