/* sy_engine_open_file / sy_engine_open_string / sy_engine_close / sy_engine_get_info: the steps of
 * `switchyard run` up to a built engine (engine/cli/cmd_run.c), with every diagnostic handed to the
 * caller instead of printed. */
#include <stdlib.h>
#include <string.h>

#include "api/handle.h"
#include "util/strbuf.h"

/* The size of sy_engine_open_options in the first version of the embedding API: callers built
 * against it pass at least this much, later members are read only when struct_size covers them. */
#define OPEN_OPTIONS_FIRST_SIZE (offsetof(sy_engine_open_options, diag_user) + sizeof(void *))

static sy_status read_options(const sy_engine_open_options *opts, sy_engine_open_options *o, sy_error *err)
{
    memset(o, 0, sizeof *o);
    if (!opts)
        return SY_OK;
    if (opts->struct_size < OPEN_OPTIONS_FIRST_SIZE)
        return sy_fail(err, SY_E_INVALID, "sy_engine_open_options.struct_size %u is smaller than %zu; set it to sizeof",
                       opts->struct_size, (size_t)OPEN_OPTIONS_FIRST_SIZE);
    memcpy(o, opts, opts->struct_size < sizeof *o ? opts->struct_size : sizeof *o);
    if ((o->n_sets && !o->sets) || (o->n_plugin_paths && !o->plugin_paths))
        return sy_fail(err, SY_E_INVALID, "sy_engine_open_options: n_sets %zu / n_plugin_paths %zu given without the list",
                       o->n_sets, o->n_plugin_paths);
    return SY_OK;
}

/* Sorts the diagnostics and hands each to the caller once; *first gets the first error. Returns
 * the number of errors. */
static size_t hand_out_diags(sy_diags *diags, const sy_engine_open_options *o, sy_error *first)
{
    char line[SY_ERROR_MSG_LEN];
    sy_diags_sort(diags);
    size_t errors = sy_diags_count(diags, SY_SEV_ERROR);
    first->msg[0] = '\0';
    for (size_t i = 0; i < diags->n; i++) {
        sy_diag_format(&diags->items[i], line, sizeof line);
        if (o->diag)
            o->diag(o->diag_user, line);
        if (!first->msg[0] && diags->items[i].severity == SY_SEV_ERROR)
            memcpy(first->msg, line, sizeof line);
    }
    return errors;
}

static void fill_info(sy_engine_handle *h)
{
    const sy_compose_decisions *d = sy_composition_decisions(h->comp);
    const sy_registry_entry *be = sy_composition_backend(h->comp);
    for (size_t i = 0; i < SY_COMPOSE_SLOTS; i++) {
        int32_t kind = sy_compose_slot_kind(i);
        const sy_registry_entry *e = sy_composition_plugin(h->comp, kind);
        h->slots[i] = (sy_engine_slot){.kind = kind, .plugin = e->plugin->name, .version = e->plugin->version,
                                       .file = e->file};
        if (!h->slots[i].version)
            h->slots[i].version = "";
    }
    sy_steps_limits(h->engine, &h->limits);
    h->info = (sy_engine_info){
        .struct_size = sizeof(sy_engine_info),
        .n_slots = SY_COMPOSE_SLOTS,
        .slots = h->slots,
        .backend = be->backend->name,
        .backend_file = be->file,
        .kv_layout = d->layout,
        .kv_dtype = d->kv_dtype,
        .page_size = d->page_size,
        .fused_rope_kv_write = d->fused_rope_kv ? 1u : 0u,
        .norm_pad_multiple = d->pad_multiple,
        .batch = h->limits.batch,
        .vocab = h->limits.vocab,
        .max_prompt_tokens = h->limits.max_prompt,
        .max_tokens = h->limits.max_tokens,
        .fused_qkv = d->fused_qkv ? 1u : 0u,
        .act_dtype = d->act_dtype,
        .qkv_linears = d->qkv_linears,
        .prefill_paged = d->prefill_paged ? 1u : 0u,
    };
    h->chunk_ids = sy_xcalloc((size_t)h->limits.batch * (h->limits.chunk ? h->limits.chunk : 1), sizeof *h->chunk_ids);
}

/* From a loaded config (NULL when it could not be read at all) to a built engine. */
static sy_status build(sy_config *cfg, sy_diags *diags, const sy_engine_open_options *o, const char *origin,
                       sy_engine_handle **out, sy_error *err)
{
    sy_engine_handle *h = sy_xcalloc(1, sizeof *h);
    sy_status st = SY_OK;
    h->cfg = cfg;
    if (cfg && !sy_diags_count(diags, SY_SEV_ERROR)) {
        st = sy_compose_open_registry(cfg, o->plugin_paths, o->n_plugin_paths, (int)o->allow_insecure, &h->reg, err);
        if (st == SY_OK)
            h->comp = sy_compose(h->reg, cfg, diags);
    }
    sy_error first;
    size_t errors = hand_out_diags(diags, o, &first);
    sy_diags_free(diags);
    if (st == SY_OK && (errors || !cfg || !sy_composition_ok(h->comp))) {
        st = SY_E_INVALID;
        if (errors > 1)
            sy_fail(err, st, "%.*s (and %zu more errors)", (int)sizeof first.msg - 40, first.msg, errors - 1);
        else if (errors)
            *err = first;
        else
            sy_fail(err, st, "%s: the configuration %s", origin, cfg ? "does not compose" : "could not be read");
    }
    if (st == SY_OK)
        st = sy_plan_from_config(cfg, h->comp, &h->plan, err);
    if (st == SY_OK)
        st = sy_engine_create(&h->plan, &h->engine, err);
    if (st != SY_OK) {
        sy_engine_close(h);
        *out = NULL;
        return st;
    }
    fill_info(h);
    *out = h;
    return SY_OK;
}

static sy_config_options config_options(const sy_engine_open_options *o)
{
    sy_config_options c = {0};
    c.sets = o->sets;
    c.n_sets = o->n_sets;
    return c;
}

sy_status sy_engine_open_file(const char *config_path, const sy_engine_open_options *opts, sy_engine_handle **out,
                              sy_error *err)
{
    sy_engine_open_options o;
    sy_status st;
    if (!out)
        return sy_fail(err, SY_E_INVALID, "sy_engine_open_file: out is NULL");
    *out = NULL;
    if (!config_path || !config_path[0])
        return sy_fail(err, SY_E_INVALID, "sy_engine_open_file: config_path is NULL or empty");
    if ((st = read_options(opts, &o, err)) != SY_OK)
        return st;
    sy_diags diags = {0};
    sy_config_options copts = config_options(&o);
    sy_config *cfg = sy_config_load_file(config_path, &copts, &diags);
    return build(cfg, &diags, &o, config_path, out, err);
}

sy_status sy_engine_open_string(const char *text, size_t len, int32_t syntax, const char *name,
                                const sy_engine_open_options *opts, sy_engine_handle **out, sy_error *err)
{
    sy_engine_open_options o;
    sy_status st;
    if (!out)
        return sy_fail(err, SY_E_INVALID, "sy_engine_open_string: out is NULL");
    *out = NULL;
    if (!text)
        return sy_fail(err, SY_E_INVALID, "sy_engine_open_string: text is NULL");
    if (syntax != SY_CONFIG_TEXT_YAML && syntax != SY_CONFIG_TEXT_INI)
        return sy_fail(err, SY_E_INVALID, "sy_engine_open_string: syntax %d is neither SY_CONFIG_TEXT_YAML (%d) nor "
                       "SY_CONFIG_TEXT_INI (%d)", (int)syntax, SY_CONFIG_TEXT_YAML, SY_CONFIG_TEXT_INI);
    if ((st = read_options(opts, &o, err)) != SY_OK)
        return st;
    if (!name || !name[0])
        name = "<embedded>";
    sy_diags diags = {0};
    sy_config_options copts = config_options(&o);
    sy_config *cfg = sy_config_load_string(name, text, len, syntax == SY_CONFIG_TEXT_YAML ? SY_SYNTAX_YAML : SY_SYNTAX_INI,
                                           &copts, &diags);
    return build(cfg, &diags, &o, name, out, err);
}

void sy_engine_close(sy_engine_handle *h)
{
    if (!h)
        return;
    /* The engine calls into plugin libraries that the registry unloads: engine first. */
    sy_engine_destroy(h->engine);
    if (h->comp)
        sy_composition_free(h->comp);
    sy_registry_close(h->reg);
    sy_config_free(h->cfg);
    free(h->chunk_ids);
    free(h);
}

const sy_engine_info *sy_engine_get_info(const sy_engine_handle *h)
{
    return h ? &h->info : NULL;
}
