/* `switchyard config explain`: what was resolved, from where, what was chosen and why. */
#include <stdio.h>
#include <string.h>

#include "compose/compose.h"

static void explain_keys(const sy_config *cfg, FILE *f)
{
    fprintf(f, "keys (value, source):\n");
    for (size_t i = 0; i < sy_config_key_count(); i++) {
        const char *key = sy_config_key_name(i);
        const char *text = sy_config_text(cfg, key);
        fprintf(f, "  %-34s %-22s %s\n", key, text[0] ? text : "\"\"", sy_config_source(cfg, key));
    }
}

static void explain_slot(const sy_composition *c, int32_t kind, FILE *f)
{
    const sy_registry_entry *chosen = sy_composition_plugin(c, kind);
    size_t n = sy_composition_candidate_count(c, kind);
    if (chosen)
        fprintf(f, "  %-10s %s %s (rank %d, %s)\n      why: %s\n", sy_kind_name(kind), chosen->plugin->name,
                chosen->plugin->version, chosen->plugin->rank, chosen->file, sy_composition_why(c, kind));
    else
        fprintf(f, "  %-10s (none)\n", sy_kind_name(kind));
    if (!n)
        fprintf(f, "      no %s plugin loaded for this backend\n", sy_kind_name(kind));
    for (size_t i = 0; i < n; i++) {
        const sy_compose_candidate *cand = sy_composition_candidate(c, kind, i);
        if (cand->entry == chosen)
            continue;
        if (cand->reason)
            fprintf(f, "      rejected %s (rank %d): it %s\n", cand->entry->plugin->name, cand->entry->plugin->rank,
                    cand->reason);
        else
            fprintf(f, "      passed over %s (rank %d): compatible, %s\n", cand->entry->plugin->name,
                    cand->entry->plugin->rank, chosen ? "ranked after the choice" : "not the explicit choice");
    }
}

void sy_composition_explain(const sy_composition *c, const sy_config *cfg, FILE *f)
{
    const sy_compose_decisions *d = sy_composition_decisions(c);
    const char *file = sy_config_file(cfg);
    fprintf(f, "config: %s\n\n", file[0] ? file : "(built-in defaults)");
    explain_keys(cfg, f);
    const sy_registry_entry *b = sy_composition_backend(c);
    fprintf(f, "\nbackend: ");
    if (b)
        fprintf(f, "%s %s (%s)\n      why: %s\n", b->backend->name, b->backend->version, b->file,
                sy_composition_backend_why(c));
    else
        fprintf(f, "(none)\n");
    fprintf(f, "\nslots:\n");
    if (b)
        for (size_t i = 0; i < SY_COMPOSE_SLOTS; i++)
            explain_slot(c, sy_compose_slot_kind(i), f);
    fprintf(f, "\ndecisions:\n");
    if (d->page_size)
        fprintf(f, "  kv_cache.page_size: %u (%s), X = %u\n", d->page_size, sy_config_source(cfg, "kv_cache.page_size"),
                d->kv_vec);
    else
        fprintf(f, "  kv_cache.page_size: unresolved (no kv_layout plugin)\n");
    if (d->kv_dtype == SY_DTYPE_FP8_E4M3)
        fprintf(f, "  fp8 scales: k %g, v %g\n", (double)d->k_scale, (double)d->v_scale);
    fprintf(f, "  rope + KV write: %s\n", d->fused_rope_kv_why ? d->fused_rope_kv_why : "undecided");
    fprintf(f, "  add + RMSNorm + pad: %s\n", d->fuse_pad_why ? d->fuse_pad_why : "undecided");
    fprintf(f, "  q/k/v linear: %s\n", d->fused_qkv_why ? d->fused_qkv_why : "undecided");
    fprintf(f, "  later prefill chunks: %s\n", d->prefill_paged_why ? d->prefill_paged_why : "undecided");
    fprintf(f, "\nresult: %s\n", sy_composition_ok(c) ? "ok" : "errors (see the diagnostics)");
}
