/* The composition: backend, then the slots in dependency order (kv_layout gives the page size,
 * moe the pad multiple the norm needs), then the fused-path decisions. */
#include "compose/compose.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compose/match.h"
#include "config/suggest.h"
#include "util/strbuf.h"

typedef struct slot {
    const sy_registry_entry *chosen;
    char *why;
    sy_compose_candidate *cands;
    size_t n;
} slot;

struct sy_composition {
    const sy_registry_entry *backend;
    char *backend_why;
    slot slots[SY_KIND_COUNT_]; /* indexed by sy_kind */
    sy_compose_decisions d;
    int ok;
};

static const int32_t listed_order[SY_COMPOSE_SLOTS] = {SY_KIND_KV_LAYOUT, SY_KIND_ATTENTION, SY_KIND_ROPE,
                                                       SY_KIND_NORM,      SY_KIND_MOE,       SY_KIND_LINEAR};

int32_t sy_compose_slot_kind(size_t i)
{
    return i < SY_COMPOSE_SLOTS ? listed_order[i] : SY_KIND_INVALID;
}

const char *sy_compose_slot_key(int32_t kind)
{
    switch (kind) {
    case SY_KIND_KV_LAYOUT: return "kv_cache.plugin";
    case SY_KIND_ATTENTION: return "attention.plugin";
    case SY_KIND_ROPE: return "rope.plugin";
    case SY_KIND_NORM: return "norm.plugin";
    case SY_KIND_MOE: return "moe.plugin";
    case SY_KIND_LINEAR: return "linear.plugin";
    default: return NULL;
    }
}

static void error_at(sy_composition *c, const sy_config *cfg, sy_diags *d, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void error_at(sy_composition *c, const sy_config *cfg, sy_diags *d, const char *key, const char *fmt, ...)
{
    sy_str s = {0};
    va_list ap;
    va_start(ap, fmt);
    sy_str_vappendf(&s, fmt, ap);
    va_end(ap);
    sy_diags_add_at(d, SY_SEV_ERROR, sy_config_mark(cfg, key), "%s", s.data);
    sy_str_free(&s);
    c->ok = 0;
}

/* A config that leaves the backend to auto and lands on the cpu because the GPU backend cannot run
 * here would otherwise start, say, a gpt-oss-120b workload on the host without a word. */
static void warn_unusable_backends(const sy_registry *reg, const sy_config *cfg, sy_diags *d,
                                   const sy_registry_entry *chosen)
{
    size_t n = sy_registry_count(reg);
    for (size_t i = 0; i < n; i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (e->backend && e->stage == SY_STAGE_NONE && e->probe_score <= 0)
            sy_diags_add_at(d, SY_SEV_WARNING, sy_config_mark(cfg, "backend"),
                            "backend auto: %s cannot run here (%s); running on %s", e->backend->name,
                            e->probe_reason ? e->probe_reason : "its probe found no device", chosen->backend->name);
    }
}

/* " (kv_cache.layout = vectorized_5d from configs/x.yaml:5:3)": where a value in a message came from. */
static void cite(sy_str *s, const sy_config *cfg, const char *key)
{
    sy_str_appendf(s, " (%s = %s from %s)", key, sy_config_text(cfg, key), sy_config_source(cfg, key));
}

static void search_path(sy_str *s, const sy_registry *reg)
{
    size_t n = sy_registry_search_dir_count(reg);
    for (size_t i = 0; i < n; i++)
        sy_str_appendf(s, "%s%s", i ? ":" : "", sy_registry_search_dir(reg, i));
    if (!n)
        sy_str_appendf(s, "no folders");
}

static void choose_backend(sy_composition *c, const sy_registry *reg, const sy_config *cfg, sy_diags *d)
{
    const char *want = sy_config_str(cfg, "backend");
    size_t n = sy_registry_count(reg);
    sy_str found = {0};
    const sy_registry_entry *best = NULL;
    size_t usable = 0;
    for (size_t i = 0; i < n; i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (!e->backend || e->stage != SY_STAGE_NONE)
            continue;
        sy_str_appendf(&found, "%s%s", found.len ? ", " : "", e->backend->name);
        if (e->probe_score <= 0)
            continue;
        usable++;
        if (!best || e->probe_score > best->probe_score ||
            (e->probe_score == best->probe_score && strcmp(e->backend->name, best->backend->name) < 0))
            best = e;
    }
    if (strcmp(want, "auto") == 0) {
        if (!best) {
            sy_str sp = {0};
            search_path(&sp, reg);
            error_at(c, cfg, d, "backend", "backend auto: no usable backend (found: %s; searched %s)",
                     found.len ? found.data : "none", sp.data);
            sy_str_free(&sp);
        } else {
            c->backend = best;
            c->backend_why = sy_asprintf("auto: highest probe score (%d) of %zu usable", best->probe_score, usable);
            warn_unusable_backends(reg, cfg, d, best);
        }
        sy_str_free(&found);
        return;
    }
    const sy_registry_entry *e = sy_registry_find_backend(reg, want);
    if (!e) {
        sy_str sp = {0};
        search_path(&sp, reg);
        error_at(c, cfg, d, "backend", "backend '%s' is not loaded (found: %s; searched %s)", want,
                 found.len ? found.data : "none", sp.data);
        sy_str_free(&sp);
    } else if (e->probe_score <= 0) {
        error_at(c, cfg, d, "backend", "backend '%s' cannot run here: %s", want, e->probe_reason);
    } else {
        c->backend = e;
        c->backend_why = sy_asprintf("backend = %s from %s", want, sy_config_source(cfg, "backend"));
    }
    sy_str_free(&found);
}

static int cmp_candidate(const void *pa, const void *pb)
{
    const sy_plugin_desc *a = ((const sy_compose_candidate *)pa)->entry->plugin;
    const sy_plugin_desc *b = ((const sy_compose_candidate *)pb)->entry->plugin;
    if (a->rank != b->rank)
        return a->rank > b->rank ? -1 : 1;
    return strcmp(a->name, b->name);
}

static void gather_candidates(slot *s, const sy_registry *reg, const char *backend, int32_t kind)
{
    size_t n = sy_registry_count(reg);
    for (size_t i = 0; i < n; i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (!e->plugin || e->stage != SY_STAGE_NONE || (int32_t)e->plugin->kind != kind ||
            strcmp(e->plugin->backend, backend) != 0)
            continue;
        s->cands = sy_xrealloc(s->cands, (s->n + 1) * sizeof *s->cands);
        s->cands[s->n].entry = e;
        s->cands[s->n].reason = NULL;
        s->cands[s->n].key = NULL;
        s->n++;
    }
    if (s->n > 1)
        qsort(s->cands, s->n, sizeof *s->cands, cmp_candidate);
}

/* Why an explicit name is not a candidate: another backend's plugin, a typo, or absent. */
static void report_missing_choice(sy_composition *c, const sy_registry *reg, const sy_config *cfg, sy_diags *d,
                                  const slot *s, int32_t kind, const char *name)
{
    const char *key = sy_compose_slot_key(kind);
    const char *backend = c->backend->backend->name;
    sy_str others = {0};
    for (size_t i = 0; i < sy_registry_count(reg); i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (e->plugin && e->stage == SY_STAGE_NONE && (int32_t)e->plugin->kind == kind &&
            strcmp(e->plugin->name, name) == 0)
            sy_str_appendf(&others, "%s%s", others.len ? ", " : "", e->plugin->backend);
    }
    const char **names = sy_xcalloc(s->n + 1, sizeof *names);
    sy_str loaded = {0};
    for (size_t i = 0; i < s->n; i++) {
        names[i] = s->cands[i].entry->plugin->name;
        sy_str_appendf(&loaded, "%s%s", i ? ", " : "", names[i]);
    }
    const char *guess = sy_suggest(name, names, s->n);
    if (others.len)
        error_at(c, cfg, d, key, "%s '%s' is a plugin for backend %s, not for backend %s (loaded for %s: %s)", key, name,
                 others.data, backend, backend, loaded.len ? loaded.data : "none");
    else if (guess)
        error_at(c, cfg, d, key, "%s '%s' is not a loaded %s plugin for backend %s; did you mean '%s'?", key, name,
                 sy_kind_name(kind), backend, guess);
    else
        error_at(c, cfg, d, key, "%s '%s' is not a loaded %s plugin for backend %s (loaded: %s)", key, name,
                 sy_kind_name(kind), backend, loaded.len ? loaded.data : "none");
    free(names);
    sy_str_free(&others);
    sy_str_free(&loaded);
}

/* Keys that say which plugin family a slot needs (the layout, the MoE tile format): a candidate of
 * another family refuses on them, which says nothing about what is wrong with the config. */
static int identity_key(const char *key)
{
    return key && (strcmp(key, "kv_cache.layout") == 0 || strcmp(key, "moe.gate_up_layout") == 0 ||
                   strcmp(key, "moe.weight_format") == 0);
}

/* Where a "no plugin fits" error points: what the best-ranked candidate of the right family
 * objected to, usually the one key to change. */
static const char *blamed_key(const slot *s, const char *slot_key)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->cands[i].key && !identity_key(s->cands[i].key))
            return s->cands[i].key;
    return s->n && s->cands[0].key ? s->cands[0].key : slot_key;
}

static void choose_slot(sy_composition *c, const sy_registry *reg, const sy_config *cfg, const sy_compose_need *need,
                        int32_t kind, sy_diags *d)
{
    slot *s = &c->slots[kind];
    const char *key = sy_compose_slot_key(kind);
    const char *backend = c->backend->backend->name;
    gather_candidates(s, reg, backend, kind);
    sy_compose_match_fn match = sy_compose_matcher(kind);
    for (size_t i = 0; i < s->n; i++) {
        sy_str why = {0};
        const char *about = NULL;
        if (!match(need, s->cands[i].entry->plugin, &why, &about)) {
            s->cands[i].reason = why.data ? why.data : sy_strdup("incompatible");
            s->cands[i].key = about;
        } else
            sy_str_free(&why);
    }
    const char *choice = sy_config_str(cfg, key);
    if (strcmp(choice, "auto") != 0) {
        for (size_t i = 0; i < s->n; i++) {
            const sy_compose_candidate *cand = &s->cands[i];
            if (strcmp(cand->entry->plugin->name, choice) != 0)
                continue;
            if (cand->reason) {
                sy_str msg = {0};
                sy_str_appendf(&msg, "%s %s cannot serve this config: it %s", key, choice, cand->reason);
                if (cand->key && strcmp(cand->key, key) != 0)
                    cite(&msg, cfg, cand->key);
                error_at(c, cfg, d, key, "%s", msg.data);
                sy_str_free(&msg);
            } else {
                s->chosen = cand->entry;
                s->why = sy_asprintf("explicit choice: %s = %s from %s", key, choice, sy_config_source(cfg, key));
            }
            return;
        }
        report_missing_choice(c, reg, cfg, d, s, kind, choice);
        return;
    }
    size_t compatible = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->cands[i].reason && compatible++ == 0)
            s->chosen = s->cands[i].entry;
    if (s->chosen) {
        s->why = compatible == 1 ? sy_asprintf("auto: the only compatible %s plugin of %zu", sy_kind_name(kind), s->n)
                                 : sy_asprintf("auto: highest rank (%d, ties by name) of %zu compatible",
                                               s->chosen->plugin->rank, compatible);
        return;
    }
    if (s->n == 0) {
        sy_str sp = {0};
        search_path(&sp, reg);
        error_at(c, cfg, d, key, "no %s plugin is loaded for backend %s (searched %s)", sy_kind_name(kind), backend,
                 sp.data);
        sy_str_free(&sp);
        return;
    }
    sy_str msg = {0};
    sy_str_appendf(&msg, "no %s plugin for backend %s fits this config:", sy_kind_name(kind), backend);
    for (size_t i = 0; i < s->n; i++)
        sy_str_appendf(&msg, "%s %s %s", i ? ";" : "", s->cands[i].entry->plugin->name, s->cands[i].reason);
    error_at(c, cfg, d, blamed_key(s, key), "%s", msg.data);
    sy_str_free(&msg);
}

static uint32_t layout_id(const char *name)
{
    return strcmp(name, "vectorized_5d") == 0 ? SY_LAYOUT_VECTORIZED_5D : SY_LAYOUT_NHD;
}

static int32_t dtype_id(const char *name)
{
    return strcmp(name, "fp8_e4m3") == 0 ? SY_DTYPE_FP8_E4M3 : strcmp(name, "f32") == 0 ? SY_DTYPE_F32 : SY_DTYPE_BF16;
}

static void read_need(sy_compose_need *n, const sy_config *cfg)
{
    memset(n, 0, sizeof *n);
    n->cfg = cfg;
    n->layout = layout_id(sy_config_str(cfg, "kv_cache.layout"));
    n->kv_dtype = dtype_id(sy_config_str(cfg, "kv_cache.dtype"));
    n->act_dtype = dtype_id(sy_config_str(cfg, "model.dtype"));
    n->page_size = sy_config_has(cfg, "kv_cache.page_size") ? (uint32_t)sy_config_int(cfg, "kv_cache.page_size") : 0;
    n->head_dim = (uint32_t)sy_config_int(cfg, "model.head_dim");
    n->q_heads = (uint32_t)sy_config_int(cfg, "model.q_heads");
    n->kv_heads = (uint32_t)sy_config_int(cfg, "model.kv_heads");
    n->hidden = (uint32_t)sy_config_int(cfg, "model.hidden");
    n->experts = (uint32_t)sy_config_int(cfg, "model.experts");
    n->top_k = (uint32_t)sy_config_int(cfg, "model.top_k");
    n->tp = (uint32_t)sy_config_int(cfg, "parallel.tp");
    n->window = (uint32_t)sy_config_int(cfg, "model.sliding_window");
    n->num_splits = (uint32_t)sy_config_int(cfg, "attention.num_splits");
    n->sinks = sy_config_bool(cfg, "model.sinks");
    n->yarn = sy_config_float(cfg, "model.yarn_factor") != 1.0;
    n->weight_format = strcmp(sy_config_str(cfg, "moe.weight_format"), "bf16") == 0 ? SY_MOE_WEIGHTS_BF16
                                                                                    : SY_MOE_WEIGHTS_MXFP4;
    n->gate_up_layout = strcmp(sy_config_str(cfg, "moe.gate_up_layout"), "separated") == 0
                            ? SY_MOE_GATE_UP_SEPARATED
                            : SY_MOE_GATE_UP_INTERLEAVE;
    n->fuse_kv_on = strcmp(sy_config_str(cfg, "rope.fuse_kv_write"), "on") == 0;
    n->fuse_pad_on = strcmp(sy_config_str(cfg, "norm.fuse_pad"), "on") == 0;
    n->fuse_qkv_on = strcmp(sy_config_str(cfg, "linear.fuse_qkv"), "on") == 0;
    n->prefill_paged_on = strcmp(sy_config_str(cfg, "attention.prefill_paged"), "on") == 0;
}

/* Rule 1's default: an unset page size is the chosen kv_layout plugin's. */
static void resolve_page_size(sy_composition *c, sy_config *cfg, sy_compose_need *need)
{
    const sy_registry_entry *kv = c->slots[SY_KIND_KV_LAYOUT].chosen;
    if (!kv || need->page_size)
        return;
    const sy_kv_layout_caps *caps = kv->plugin->caps;
    char text[32];
    snprintf(text, sizeof text, "%u", caps->default_page_size);
    if (sy_config_derive(cfg, "kv_cache.page_size", text, sy_layout_name(caps->layout),
                         sy_config_mark(cfg, "kv_cache.layout")))
        need->page_size = caps->default_page_size;
}

/* Rule 2's config half: fp8 without explicit scales is the seed's 0.01-accuracy run. */
static void check_fp8_scales(sy_composition *c, const sy_config *cfg, const sy_compose_need *need, sy_diags *d)
{
    if (need->kv_dtype != SY_DTYPE_FP8_E4M3)
        return;
    int k = sy_config_has(cfg, "kv_cache.k_scale"), v = sy_config_has(cfg, "kv_cache.v_scale");
    if (k && v)
        return;
    error_at(c, cfg, d, "kv_cache.dtype",
             "kv_cache.dtype fp8_e4m3 needs %s%s%s: a number, or unit for an explicit scale of 1 (fp8 KV read "
             "without its scales is wrong)",
             k ? "" : "kv_cache.k_scale", !k && !v ? " and " : "", v ? "" : "kv_cache.v_scale");
}

static void decide_rope_fusion(sy_composition *c, const sy_config *cfg, const sy_compose_need *need)
{
    const char *mode = sy_config_str(cfg, "rope.fuse_kv_write");
    const sy_registry_entry *rope = c->slots[SY_KIND_ROPE].chosen;
    sy_str why = {0};
    if (strcmp(mode, "off") == 0) {
        sy_str_appendf(&why, "unfused (rope.fuse_kv_write = off): RoPE, then kv_layout.write");
    } else if (rope && sy_compose_rope_fuses(need, rope->plugin->caps, &why)) {
        c->d.fused_rope_kv = 1;
        sy_str_free(&why);
        sy_str_appendf(&why, "fused (rope.fuse_kv_write = %s): %s writes %s %s K/V in its RoPE kernel", mode,
                       rope->plugin->name, sy_layout_name(need->layout), sy_dtype_name(need->kv_dtype));
    } else if (rope) {
        /* `on` never gets here: the rope match refused every plugin that cannot fuse. */
        sy_str msg = {0};
        sy_str_appendf(&msg, "unfused (rope.fuse_kv_write = auto): %s %s; RoPE, then kv_layout.write",
                       rope->plugin->name, why.data);
        sy_str_free(&why);
        why = msg;
    } else
        sy_str_appendf(&why, "undecided: no rope plugin");
    c->d.fused_rope_kv_why = why.data;
}

/* Rule 4. The norm and MoE halves of `on` were requirements of their slots' matches. */
static void decide_pad_fusion(sy_composition *c, const sy_config *cfg, const sy_compose_need *need, sy_diags *d)
{
    const char *mode = sy_config_str(cfg, "norm.fuse_pad");
    const sy_registry_entry *norm = c->slots[SY_KIND_NORM].chosen, *moe = c->slots[SY_KIND_MOE].chosen;
    sy_str why = {0};
    c->d.padded_hidden = need->hidden;
    if (strcmp(mode, "off") == 0) {
        c->d.fuse_pad_why = sy_strdup("off (norm.fuse_pad = off): RMSNorm, then the MoE pads its input");
        return;
    }
    if (need->tp != 1)
        sy_str_appendf(&why, "parallel.tp is %u, and the padded width only flows through tp 1", need->tp);
    else if (!norm || !moe)
        sy_str_appendf(&why, "no %s plugin", norm ? "moe" : "norm");
    else {
        const sy_norm_caps *nc = norm->plugin->caps;
        const sy_moe_caps *mc = moe->plugin->caps;
        if (!(nc->features & SY_NORM_PAD_TO_MULTIPLE))
            sy_str_appendf(&why, "%s declares no pad_to_multiple", norm->plugin->name);
        else if (!mc->accepts_padded_input)
            sy_str_appendf(&why, "%s does not accept padded input", moe->plugin->name);
        else if (mc->input_alignment <= 1)
            sy_str_appendf(&why, "%s declares no input alignment", moe->plugin->name);
        else if (mc->input_alignment > nc->max_pad_multiple)
            sy_str_appendf(&why, "%s pads to multiples of at most %u, %s needs %u", norm->plugin->name,
                           nc->max_pad_multiple, moe->plugin->name, mc->input_alignment);
        else {
            uint32_t p = mc->input_alignment;
            c->d.pad_multiple = p;
            c->d.padded_hidden = (need->hidden + p - 1) / p * p;
            c->d.fuse_pad_why =
                sy_asprintf("fused (norm.fuse_pad = %s): %s pads to %s's input alignment %u (model.hidden %u -> %u); "
                            "the router reads the unpadded slice, the MoE output is trimmed to %u",
                            mode, norm->plugin->name, moe->plugin->name, p, need->hidden, c->d.padded_hidden,
                            need->hidden);
            return;
        }
    }
    if (strcmp(mode, "on") == 0 && need->tp != 1) {
        sy_str msg = {0};
        sy_str_appendf(&msg, "norm.fuse_pad on needs parallel.tp 1");
        cite(&msg, cfg, "parallel.tp");
        error_at(c, cfg, d, "norm.fuse_pad", "%s", msg.data);
        sy_str_free(&msg);
    }
    c->d.fuse_pad_why = sy_asprintf("off (norm.fuse_pad = %s): %s", mode, why.data);
    sy_str_free(&why);
}

/* Rule 6. `on` made both halves requirements of their slots' matches. */
static void decide_qkv_fusion(sy_composition *c, const sy_config *cfg, const sy_compose_need *need)
{
    const char *mode = sy_config_str(cfg, "linear.fuse_qkv");
    const sy_registry_entry *kv = c->slots[SY_KIND_KV_LAYOUT].chosen, *attn = c->slots[SY_KIND_ATTENTION].chosen;
    const sy_registry_entry *linear = c->slots[SY_KIND_LINEAR].chosen;
    uint32_t q = need->q_heads * need->head_dim, k = need->kv_heads * need->head_dim;
    /* Unfused, q, k and v sit in arrays of their own; a linear plugin that writes its columns to
     * several arrays still makes them with one product (the GEMM reads x once, one launch). */
    const int split_y = linear && sy_linear_split_y(linear->plugin->caps);
    c->d.qkv_linears = split_y ? 1u : 3u;
    char *unfused = split_y ? sy_asprintf("q, k and v in arrays of their own, written by one linear of %u columns "
                                          "(%s: split_y)", q + 2 * k, linear->plugin->name)
                    : linear ? sy_asprintf("three linears, for q, k and v (%s declares no split_y)", linear->plugin->name)
                             : sy_strdup("three linears, for q, k and v");
    if (strcmp(mode, "off") == 0) {
        c->d.fused_qkv_why = sy_asprintf("off (linear.fuse_qkv = off): %s", unfused);
        free(unfused);
        return;
    }
    const char *who = "", *lacking = NULL;
    if (!kv || !attn)
        lacking = kv ? "no attention plugin" : "no kv_layout plugin";
    else if (!(((const sy_kv_layout_caps *)kv->plugin->caps)->features & SY_KV_FEAT_ANY_TOKEN_STRIDE))
        who = kv->plugin->name, lacking = " declares no any_token_stride";
    else if (!(((const sy_attention_caps *)attn->plugin->caps)->features & SY_ATTN_ROW_STRIDE))
        who = attn->plugin->name, lacking = " declares no row_stride";
    if (lacking) {
        c->d.fused_qkv_why = sy_asprintf("off (linear.fuse_qkv = %s): %s%s; %s", mode, who, lacking, unfused);
        free(unfused);
        return;
    }
    free(unfused);
    c->d.fused_qkv = 1;
    c->d.qkv_linears = 1;
    c->d.fused_qkv_why = sy_asprintf("fused (linear.fuse_qkv = %s): one linear of %u columns (q %u, k %u, v %u); "
                                     "rope, the KV write (%s) and %s take q, k and v as slices of its rows",
                                     mode, q + 2 * k, q, k, k, kv->plugin->name, attn->plugin->name);
}

/* How a later prefill chunk reads its prefix. `on` made prefill_paged a requirement of the
 * attention slot's match. */
static void decide_prefill_paged(sy_composition *c, const sy_config *cfg, const sy_compose_need *need)
{
    const char *mode = sy_config_str(cfg, "attention.prefill_paged");
    const sy_registry_entry *attn = c->slots[SY_KIND_ATTENTION].chosen;
    static const char gather[] = "kv_layout.gather copies each sequence's prefix and chunk to contiguous rows, then "
                                 "attention.prefill_linear";
    if (strcmp(mode, "off") == 0) {
        c->d.prefill_paged_why = sy_asprintf("gather (attention.prefill_paged = off): %s", gather);
        return;
    }
    if (!attn) {
        c->d.prefill_paged_why = sy_asprintf("gather (attention.prefill_paged = %s): no attention plugin", mode);
        return;
    }
    if (!(((const sy_attention_caps *)attn->plugin->caps)->features & SY_ATTN_PREFILL_PAGED)) {
        c->d.prefill_paged_why = sy_asprintf("gather (attention.prefill_paged = %s): %s declares no prefill_paged; %s",
                                             mode, attn->plugin->name, gather);
        return;
    }
    c->d.prefill_paged = 1;
    c->d.prefill_paged_why = sy_asprintf("paged (attention.prefill_paged = %s): %s reads a later chunk's prefix from "
                                         "the %s pool's pages, nothing gathered",
                                         mode, attn->plugin->name, sy_layout_name(need->layout));
}

static void fill_scales(sy_composition *c, const sy_config *cfg)
{
    int fp8 = c->d.kv_dtype == SY_DTYPE_FP8_E4M3;
    c->d.k_scale = fp8 && sy_config_has(cfg, "kv_cache.k_scale") ? (float)sy_config_float(cfg, "kv_cache.k_scale") : 1.0f;
    c->d.v_scale = fp8 && sy_config_has(cfg, "kv_cache.v_scale") ? (float)sy_config_float(cfg, "kv_cache.v_scale") : 1.0f;
}

/* A plugin_path entry that names no folder is searched in vain: a typo there would otherwise show
 * only as a plugin that is "not loaded". */
static void warn_missing_plugin_folders(const sy_config *cfg, sy_diags *d)
{
    size_t n = sy_config_list_len(cfg, "plugin_path");
    for (size_t i = 0; i < n; i++) {
        const char *dir = sy_config_list_item(cfg, "plugin_path", i);
        struct stat st;
        if (stat(dir, &st) != 0)
            sy_diags_add_at(d, SY_SEV_WARNING, sy_config_mark(cfg, "plugin_path"), "plugin_path entry %s: %s", dir,
                            strerror(errno));
        else if (!S_ISDIR(st.st_mode))
            sy_diags_add_at(d, SY_SEV_WARNING, sy_config_mark(cfg, "plugin_path"),
                            "plugin_path entry %s is not a folder", dir);
    }
}

sy_composition *sy_compose(const sy_registry *reg, sy_config *cfg, sy_diags *d)
{
    sy_composition *c = sy_xcalloc(1, sizeof *c);
    sy_compose_need need;
    c->ok = 1;
    warn_missing_plugin_folders(cfg, d);
    read_need(&need, cfg);
    c->d.layout = need.layout;
    c->d.kv_dtype = need.kv_dtype;
    c->d.act_dtype = need.act_dtype;
    check_fp8_scales(c, cfg, &need, d);
    fill_scales(c, cfg);
    choose_backend(c, reg, cfg, d);
    if (!c->backend) {
        c->d.fused_rope_kv_why = sy_strdup("undecided: no backend");
        c->d.fuse_pad_why = sy_strdup("undecided: no backend");
        c->d.fused_qkv_why = sy_strdup("undecided: no backend");
        c->d.prefill_paged_why = sy_strdup("undecided: no backend");
        return c;
    }
    choose_slot(c, reg, cfg, &need, SY_KIND_KV_LAYOUT, d);
    resolve_page_size(c, cfg, &need);
    const sy_registry_entry *kv = c->slots[SY_KIND_KV_LAYOUT].chosen;
    c->d.page_size = need.page_size;
    c->d.kv_vec = kv ? sy_compose_kv_vec(kv->plugin->caps, need.kv_dtype) : 0;
    choose_slot(c, reg, cfg, &need, SY_KIND_ATTENTION, d);
    choose_slot(c, reg, cfg, &need, SY_KIND_MOE, d);
    const sy_registry_entry *moe = c->slots[SY_KIND_MOE].chosen;
    need.moe = moe ? moe->plugin->caps : NULL;
    choose_slot(c, reg, cfg, &need, SY_KIND_NORM, d);
    choose_slot(c, reg, cfg, &need, SY_KIND_ROPE, d);
    choose_slot(c, reg, cfg, &need, SY_KIND_LINEAR, d);
    decide_rope_fusion(c, cfg, &need);
    decide_pad_fusion(c, cfg, &need, d);
    decide_qkv_fusion(c, cfg, &need);
    decide_prefill_paged(c, cfg, &need);
    for (size_t i = 0; i < SY_COMPOSE_SLOTS; i++)
        if (!c->slots[listed_order[i]].chosen)
            c->ok = 0;
    return c;
}

void sy_composition_free(sy_composition *c)
{
    if (!c)
        return;
    for (int32_t k = 0; k < SY_KIND_COUNT_; k++) {
        slot *s = &c->slots[k];
        for (size_t i = 0; i < s->n; i++)
            free((char *)s->cands[i].reason);
        free(s->cands);
        free(s->why);
    }
    free(c->backend_why);
    free((char *)c->d.fused_rope_kv_why);
    free((char *)c->d.fuse_pad_why);
    free((char *)c->d.fused_qkv_why);
    free((char *)c->d.prefill_paged_why);
    free(c);
}

int sy_composition_ok(const sy_composition *c)
{
    return c->ok && c->backend;
}

const sy_registry_entry *sy_composition_backend(const sy_composition *c)
{
    return c->backend;
}

const char *sy_composition_backend_why(const sy_composition *c)
{
    return c->backend_why ? c->backend_why : "";
}

static const slot *slot_of(const sy_composition *c, int32_t kind)
{
    return kind > SY_KIND_INVALID && kind < SY_KIND_COUNT_ ? &c->slots[kind] : NULL;
}

const sy_registry_entry *sy_composition_plugin(const sy_composition *c, int32_t kind)
{
    const slot *s = slot_of(c, kind);
    return s ? s->chosen : NULL;
}

const char *sy_composition_why(const sy_composition *c, int32_t kind)
{
    const slot *s = slot_of(c, kind);
    return s && s->why ? s->why : "";
}

size_t sy_composition_candidate_count(const sy_composition *c, int32_t kind)
{
    const slot *s = slot_of(c, kind);
    return s ? s->n : 0;
}

const sy_compose_candidate *sy_composition_candidate(const sy_composition *c, int32_t kind, size_t i)
{
    const slot *s = slot_of(c, kind);
    return s && i < s->n ? &s->cands[i] : NULL;
}

const sy_compose_decisions *sy_composition_decisions(const sy_composition *c)
{
    return &c->d;
}

sy_status sy_compose_open_registry(const sy_config *cfg, const char *const *extra_paths, size_t n_extra,
                                   int allow_insecure, sy_registry **reg, sy_error *err)
{
    size_t n_cfg = sy_config_list_len(cfg, "plugin_path");
    const char **paths = sy_xcalloc(n_extra + n_cfg + 1, sizeof *paths);
    for (size_t i = 0; i < n_extra; i++)
        paths[i] = extra_paths[i];
    for (size_t i = 0; i < n_cfg; i++)
        paths[n_extra + i] = sy_config_list_item(cfg, "plugin_path", i);
    sy_registry_options o = {0};
    o.struct_size = sizeof o;
    o.allow_insecure = allow_insecure ? 1u : 0u;
    o.plugin_paths = paths;
    o.n_plugin_paths = n_extra + n_cfg;
    sy_status st = sy_registry_open(&o, reg, err);
    free(paths);
    return st;
}
