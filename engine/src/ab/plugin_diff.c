/* The plugin chosen for each slot on each side, then the composition's decisions (pool layout,
 * dtype and page, fused rope + KV write, norm padding), one row each. */
#include <stdio.h>
#include <string.h>

#include "ab/ab.h"
#include "util/strbuf.h"

static sy_ab_slot_choice *add_row(sy_ab_report *r, const char *slot)
{
    r->slots = sy_xrealloc(r->slots, (r->n_slots + 1) * sizeof *r->slots);
    sy_ab_slot_choice *row = &r->slots[r->n_slots++];
    memset(row, 0, sizeof *row);
    row->slot = sy_strdup(slot);
    return row;
}

static void finish_row(sy_ab_slot_choice *row)
{
    for (int s = 0; s < SY_AB_SIDES; s++)
        if (!row->file[s])
            row->file[s] = sy_strdup("");
    row->same = strcmp(row->choice[SY_AB_A], row->choice[SY_AB_B]) == 0;
}

static char *entry_choice(const sy_registry_entry *e)
{
    if (!e)
        return sy_strdup("(none)");
    if (e->plugin)
        return sy_asprintf("%s %s", e->plugin->name, e->plugin->version ? e->plugin->version : "");
    return sy_strdup(e->backend ? e->backend->name : "(none)");
}

static char *decision(const sy_compose_decisions *d, int which)
{
    switch (which) {
    case 0:
        return sy_asprintf("%s %s, page %u", sy_layout_name(d->layout), sy_dtype_name(d->kv_dtype), d->page_size);
    case 1:
        return sy_strdup(d->fused_rope_kv ? "fused" : "unfused (rope, then kv_layout.write)");
    case 2:
        return d->pad_multiple ? sy_asprintf("fused, multiple of %u", d->pad_multiple) : sy_strdup("off");
    case 3:
        return sy_strdup(d->fused_qkv           ? "fused (one linear)"
                         : d->qkv_linears == 1 ? "off (one linear, three arrays)"
                                               : "off (three linears)");
    case 4:
        return sy_strdup(d->prefill_paged ? "paged (prefill_paged)" : "gather + prefill_linear");
    default:
        return d->kv_dtype == SY_DTYPE_FP8_E4M3 ? sy_asprintf("k %g, v %g", d->k_scale, d->v_scale)
                                                : sy_strdup("none (not fp8)");
    }
}

void sy_ab_plugin_diff(const sy_composition *a, const sy_composition *b, sy_ab_report *r)
{
    const sy_composition *side[SY_AB_SIDES] = {a, b};
    sy_ab_slot_choice *row = add_row(r, "backend");
    for (int s = 0; s < SY_AB_SIDES; s++) {
        const sy_registry_entry *e = sy_composition_backend(side[s]);
        row->choice[s] = entry_choice(e);
        row->file[s] = sy_strdup(e ? e->file : "");
    }
    finish_row(row);
    for (size_t i = 0; i < SY_COMPOSE_SLOTS; i++) {
        int32_t kind = sy_compose_slot_kind(i);
        row = add_row(r, sy_kind_name(kind));
        for (int s = 0; s < SY_AB_SIDES; s++) {
            const sy_registry_entry *e = sy_composition_plugin(side[s], kind);
            row->choice[s] = entry_choice(e);
            row->file[s] = sy_strdup(e ? e->file : "");
        }
        finish_row(row);
    }
    static const char *const decisions[] = {"kv cache",     "rope+kv write", "norm pad",
                                            "q/k/v linear", "later chunks",  "fp8 scales"};
    for (int k = 0; k < (int)(sizeof decisions / sizeof decisions[0]); k++) {
        row = add_row(r, decisions[k]);
        for (int s = 0; s < SY_AB_SIDES; s++)
            row->choice[s] = decision(sy_composition_decisions(side[s]), k);
        finish_row(row);
    }
}
