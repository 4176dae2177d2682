/* Resolution: built-in defaults, then the file's key tree, then the imported environment, then
 * --set, then the defaults that depend on other keys; then the rules that only involve the config
 * itself (plugin-dependent rules are the composition's). Every problem becomes a diagnostic and
 * the offending value keeps its default, so one run finds everything. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/env.h"
#include "config/resolved.h"
#include "config/suggest.h"
#include "config/tree.h"
#include "util/strbuf.h"

#define WHY_LEN 640

sy_cfg_entry *sy_config_entry(const sy_config *c, const char *key, const sy_cfg_key **k)
{
    long i = sy_schema_index(key);
    if (i < 0) {
        fprintf(stderr, "switchyard: internal error: config key '%s' is not in the schema\n", key);
        abort();
    }
    if (k)
        *k = &c->keys[i];
    return &c->e[i];
}

static const sy_cfg_entry *typed(const sy_config *c, const char *key, sy_cfg_type want, int also_enum)
{
    const sy_cfg_key *k;
    const sy_cfg_entry *e = sy_config_entry(c, key, &k);
    if (k->type != want && !(also_enum && k->type == SY_CFG_ENUM)) {
        fprintf(stderr, "switchyard: internal error: config key '%s' is a %s, read as a %s\n", key,
                sy_cfg_type_name(k->type), sy_cfg_type_name(want));
        abort();
    }
    return e;
}

static sy_mark file_mark(const sy_config *c)
{
    sy_mark m = {c->file[0] ? c->file : "<defaults>", 0, 0};
    return m;
}

static void set_entry(sy_cfg_entry *e, sy_cfg_value *v, int32_t src, const char *source, sy_mark mark)
{
    sy_cfg_value_free(&e->v);
    e->v = *v;
    memset(v, 0, sizeof *v);
    free(e->source);
    e->source = sy_strdup(source);
    e->src = src;
    e->mark = mark;
}

/* The folder of a config file as an absolute path. Relative paths in the file are joined to it, and
 * `config show` prints the result: joined to a relative folder ("sub/../ck1") it would mean
 * something else once the shown config is loaded from another folder. */
static char *absolute_dir_of(const char *file)
{
    char *copy = sy_strdup(file);
    const char *dir = dirname(copy);
    char *abs = NULL;
    if (dir[0] == '/')
        abs = sy_strdup(dir);
    else if (!(abs = realpath(dir, NULL))) {
        /* A name that is no file here (sy_config_load_string): relative to the current folder. */
        char *cwd = getcwd(NULL, 0);
        abs = cwd ? sy_asprintf("%s/%s", cwd, dir) : sy_strdup(dir);
        free(cwd);
    }
    free(copy);
    return abs;
}

static sy_config *config_new(const char *file)
{
    sy_config *c = sy_xcalloc(1, sizeof *c);
    c->file = sy_strdup(file);
    c->dir = file[0] ? absolute_dir_of(file) : sy_strdup("");
    c->keys = sy_schema_keys(&c->n);
    c->e = sy_xcalloc(c->n, sizeof *c->e);
    for (size_t i = 0; i < c->n; i++) {
        const sy_cfg_key *k = &c->keys[i];
        sy_cfg_value v = {0};
        char why[WHY_LEN];
        if (k->def && !sy_cfg_parse(k, k->def, 0, &v, why, sizeof why)) {
            /* The schema test parses every default; reaching this is a broken table. */
            fprintf(stderr, "switchyard: internal error: default of %s: %s\n", k->name, why);
            abort();
        }
        set_entry(&c->e[i], &v, SY_SRC_DEFAULT, "default", file_mark(c));
    }
    return c;
}

void sy_config_free(sy_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        sy_cfg_value_free(&c->e[i].v);
        free(c->e[i].source);
    }
    free(c->e);
    free(c->file);
    free(c->dir);
    free(c);
}

/* Relative paths in a file are relative to the file's folder, so a config means the same from
 * any working directory (and the current directory is never searched implicitly). */
static void anchor_paths(const sy_config *c, const sy_cfg_key *k, sy_cfg_value *v)
{
    if (!(k->flags & SY_CFG_RELATIVE_PATH) || !c->dir[0])
        return;
    if (k->type == SY_CFG_STRING) {
        if (v->text[0] && v->text[0] != '/' && strcmp(v->text, "synthetic") != 0) {
            char *joined = sy_asprintf("%s/%s", c->dir, v->text);
            free(v->text);
            v->text = joined;
        }
        return;
    }
    int changed = 0;
    for (size_t i = 0; i < v->n_list; i++)
        if (v->list[i][0] != '/') {
            char *joined = sy_asprintf("%s/%s", c->dir, v->list[i]);
            free(v->list[i]);
            v->list[i] = joined;
            changed = 1;
        }
    if (changed) {
        sy_str s = {0};
        sy_str_appendf(&s, "[");
        for (size_t i = 0; i < v->n_list; i++)
            sy_str_appendf(&s, "%s%s", i ? ", " : "", v->list[i]);
        sy_str_appendf(&s, "]");
        free(v->text);
        v->text = s.data;
    }
}

static int is_section(const sy_config *c, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < c->n; i++)
        if (strncmp(c->keys[i].name, name, n) == 0 && c->keys[i].name[n] == '.')
            return 1;
    return 0;
}

/* The longest proper prefix of a dotted name that is a key ("kv_cache.layout" of
 * "kv_cache.layout.x"), or NULL. */
static const char *key_prefix(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s", name);
    for (char *dot = strrchr(buf, '.'); dot; dot = strrchr(buf, '.')) {
        *dot = '\0';
        if (sy_schema_index(buf) >= 0)
            return buf;
    }
    return NULL;
}

/* `of_mapping`: the name holds a mapping (an empty one); at the top level a section name is then as
 * likely a match as a key ('modle: {}' means 'model'). Sections are one level deep. */
static void report_unknown(const sy_config *c, const char *name, int of_mapping, const char *origin, uint32_t line,
                           uint32_t col, sy_diags *d)
{
    char prefix[256];
    if (is_section(c, name)) {
        sy_str keys = {0};
        size_t n = strlen(name), shown = 0;
        for (size_t i = 0; i < c->n && shown < 3; i++)
            if (strncmp(c->keys[i].name, name, n) == 0 && c->keys[i].name[n] == '.')
                sy_str_appendf(&keys, "%s%s", shown++ ? ", " : "", c->keys[i].name);
        sy_diags_add(d, SY_SEV_ERROR, origin, line, col, "'%s' is a section, not a key: set its keys (%s, ...)", name,
                     keys.data);
        sy_str_free(&keys);
        return;
    }
    if (key_prefix(name, prefix, sizeof prefix)) {
        sy_diags_add(d, SY_SEV_ERROR, origin, line, col, "'%s' takes a single value, not a mapping (found '%s')",
                     prefix, name);
        return;
    }
    const char **names = sy_xcalloc(2 * c->n, sizeof *names);
    char **sections = sy_xcalloc(c->n, sizeof *sections);
    size_t n_names = 0, n_sections = 0;
    int may_be_section = of_mapping && !strchr(name, '.');
    for (size_t i = 0; i < c->n; i++) {
        names[n_names++] = c->keys[i].name;
        const char *dot = strchr(c->keys[i].name, '.');
        if (!may_be_section || !dot)
            continue;
        /* Keys of a section are contiguous (schema.c): a new section differs from the last one. */
        size_t len = (size_t)(dot - c->keys[i].name);
        if (n_sections && strlen(sections[n_sections - 1]) == len &&
            strncmp(sections[n_sections - 1], c->keys[i].name, len) == 0)
            continue;
        sections[n_sections] = sy_xcalloc(1, len + 1);
        memcpy(sections[n_sections], c->keys[i].name, len);
        names[n_names++] = sections[n_sections++];
    }
    const char *guess = sy_suggest(name, names, n_names);
    if (guess)
        sy_diags_add(d, SY_SEV_ERROR, origin, line, col, "unknown key '%s'; did you mean '%s'?", name, guess);
    else
        sy_diags_add(d, SY_SEV_ERROR, origin, line, col, "unknown key '%s' (docs/config.md lists every key)", name);
    for (size_t i = 0; i < n_sections; i++)
        free(sections[i]);
    free(sections);
    free(names);
}

static void apply_item(sy_config *c, const sy_tree_item *it, sy_diags *d)
{
    long idx = sy_schema_index(it->key);
    const sy_mark *km = &it->key_mark;
    if (it->is_empty_mapping) {
        /* Sets nothing: fine for a section, a typo or a misplaced value otherwise. */
        if (idx >= 0)
            sy_diags_add(d, SY_SEV_ERROR, km->origin, km->line, km->col, "'%s' takes a single value, not a mapping",
                         it->key);
        else if (!is_section(c, it->key))
            report_unknown(c, it->key, 1, km->origin, km->line, km->col, d);
        return;
    }
    if (idx < 0) {
        report_unknown(c, it->key, 0, km->origin, km->line, km->col, d);
        return;
    }
    const sy_cfg_key *k = &c->keys[idx];
    sy_cfg_value v = {0};
    char why[WHY_LEN];
    int ok;
    sy_mark at = it->is_list ? *km : it->value.mark;
    if (it->is_list) {
        const char **texts = sy_xcalloc(it->n_values + 1, sizeof *texts);
        for (size_t i = 0; i < it->n_values; i++)
            texts[i] = it->values[i].text;
        ok = sy_cfg_parse_list(k, texts, it->n_values, &v, why, sizeof why);
        free(texts);
    } else if (!it->value.text) {
        snprintf(why, sizeof why, "no value; remove the key to keep the default");
        ok = 0;
    } else
        ok = sy_cfg_parse(k, it->value.text, it->value.quoted, &v, why, sizeof why);
    if (!ok) {
        sy_diags_add(d, SY_SEV_ERROR, at.origin, at.line, at.col, "%s: %s", k->name, why);
        return;
    }
    anchor_paths(c, k, &v);
    char *source = sy_asprintf("%s:%u:%u", km->origin, km->line, km->col);
    set_entry(&c->e[idx], &v, SY_SRC_FILE, source, at);
    free(source);
}

/* Imported: applied with source "env NAME". Not imported: one warning per variable set. */
static void apply_env(sy_config *c, const sy_config_options *o, sy_diags *d)
{
    const char *const *envp = o ? o->envp : NULL;
    int import = o && o->import_env;
    char accepted[256], why[WHY_LEN];
    const sy_env_var *var;
    const char *value, *mapped;
    for (size_t cursor = 0; sy_env_next_set(envp, &cursor, &var, &value, &mapped);) {
        sy_env_accepted(var, accepted, sizeof accepted);
        if (!import) {
            if (mapped)
                sy_diags_add(d, SY_SEV_WARNING, SY_ORIGIN_ENV, 0, 0,
                             "%s=%s is set but not imported: it means %s = %s; pass --import-env to apply it, or "
                             "set %s in the config",
                             var->name, value, var->key, mapped, var->key);
            else
                sy_diags_add(d, SY_SEV_WARNING, SY_ORIGIN_ENV, 0, 0,
                             "%s=%s is set but not imported (it maps to %s, and '%s' is not one of: %s)", var->name,
                             value, var->key, value, accepted);
            continue;
        }
        if (!mapped) {
            sy_env_report_invalid(var, value, d);
            continue;
        }
        const sy_cfg_key *k;
        sy_cfg_entry *e = sy_config_entry(c, var->key, &k);
        if (e->src == SY_SRC_ENV) {
            /* Two spellings of one setting: fine when they agree. */
            if (strcmp(e->v.text, mapped) != 0)
                sy_env_report_conflict(var, value, e->source + strlen("env "), e->v.text, d);
            continue;
        }
        sy_cfg_value v = {0};
        if (!sy_cfg_parse(k, mapped, 0, &v, why, sizeof why)) {
            sy_diags_add(d, SY_SEV_ERROR, SY_ORIGIN_ENV, 0, 0, "%s: %s", var->name, why);
            continue;
        }
        char *source = sy_asprintf("env %s", var->name);
        sy_mark m = {SY_ORIGIN_ENV, 0, 0};
        set_entry(e, &v, SY_SRC_ENV, source, m);
        free(source);
    }
}

static const char *set_origin(const sy_config_options *o, size_t i)
{
    return o->set_origins && o->set_origins[i] ? o->set_origins[i] : SY_ORIGIN_SET;
}

static void apply_sets(sy_config *c, const sy_config_options *o, sy_diags *d)
{
    if (!o)
        return;
    size_t *given_by = sy_xcalloc(c->n, sizeof *given_by); /* 1 + the index of the entry that set the key */
    uint32_t *line_of = sy_xcalloc(o->n_sets ? o->n_sets : 1, sizeof *line_of);
    char why[WHY_LEN];
    for (size_t i = 0; i < o->n_sets; i++) {
        const char *arg = o->sets[i], *origin = set_origin(o, i);
        /* Which of this option's occurrences: "--set-b:2" is the second --set-b typed. */
        uint32_t line = 1;
        for (size_t j = 0; j < i; j++)
            line += strcmp(set_origin(o, j), origin) == 0;
        line_of[i] = line;
        const char *eq = strchr(arg, '=');
        if (!eq || eq == arg) {
            sy_diags_add(d, SY_SEV_ERROR, origin, line, 1, "expected key=value, got '%s'", arg);
            continue;
        }
        char *key = sy_xcalloc(1, (size_t)(eq - arg) + 1);
        memcpy(key, arg, (size_t)(eq - arg));
        long idx = sy_schema_index(key);
        uint32_t value_col = (uint32_t)(eq - arg) + 2;
        if (idx < 0) {
            report_unknown(c, key, 0, origin, line, 1, d);
        } else if (given_by[idx]) {
            size_t first = given_by[idx] - 1;
            sy_diags_add(d, SY_SEV_ERROR, origin, line, 1, "duplicate key '%s' (first given by %s %u)", key,
                         set_origin(o, first), line_of[first]);
        } else {
            const sy_cfg_key *k = &c->keys[idx];
            sy_cfg_value v = {0};
            int ok = eq[1] || k->type == SY_CFG_STRING || k->type == SY_CFG_LIST;
            if (!ok)
                snprintf(why, sizeof why, "no value; remove the %s to keep the default", origin);
            else
                ok = sy_cfg_parse(k, eq + 1, 0, &v, why, sizeof why);
            if (!ok)
                sy_diags_add(d, SY_SEV_ERROR, origin, line, value_col, "%s: %s", key, why);
            else {
                sy_mark m = {origin, line, value_col};
                set_entry(&c->e[idx], &v, SY_SRC_SET, origin, m);
                given_by[idx] = i + 1;
            }
        }
        free(key);
    }
    free(line_of);
    free(given_by);
}

static void derive_defaults(sy_config *c)
{
    char text[256], why[256], err[WHY_LEN];
    for (size_t i = 0; i < c->n; i++) {
        const sy_cfg_key *k = &c->keys[i];
        sy_cfg_entry *e = &c->e[i];
        const char *from = NULL;
        if (!k->derive || e->src != SY_SRC_DEFAULT || !k->derive(c, k, text, sizeof text, why, sizeof why, &from))
            continue;
        sy_cfg_value v = {0};
        if (!sy_cfg_parse(k, text, 0, &v, err, sizeof err)) {
            fprintf(stderr, "switchyard: internal error: derived default of %s: %s\n", k->name, err);
            abort();
        }
        char *source = sy_asprintf("default (%s)", why);
        sy_mark m = from ? sy_config_mark(c, from) : file_mark(c);
        set_entry(e, &v, SY_SRC_DERIVED, source, m);
        free(source);
    }
}

int sy_config_derive(sy_config *c, const char *key, const char *text, const char *why, sy_mark mark)
{
    const sy_cfg_key *k;
    sy_cfg_entry *e = sy_config_entry(c, key, &k);
    char err[WHY_LEN];
    sy_cfg_value v = {0};
    if (e->v.set || !sy_cfg_parse(k, text, 0, &v, err, sizeof err))
        return 0;
    char *source = sy_asprintf("default (%s)", why);
    set_entry(e, &v, SY_SRC_DERIVED, source, mark.origin ? mark : file_mark(c));
    free(source);
    return 1;
}

/* Of two keys in a conflict, the one someone wrote (its mark is the useful place to point). */
static const char *blame(const sy_config *c, const char *a, const char *b)
{
    return sy_config_is_default(c, a) && !sy_config_is_default(c, b) ? b : a;
}

/* Rules that involve the config alone; the ones that involve plugins live in engine/src/compose. */
static void check_model(const sy_config *c, sy_diags *d)
{
    int64_t q = sy_config_int(c, "model.q_heads"), kv = sy_config_int(c, "model.kv_heads");
    int64_t tp = sy_config_int(c, "parallel.tp");
    int64_t top_k = sy_config_int(c, "model.top_k"), experts = sy_config_int(c, "model.experts");
    if (q % kv)
        sy_diags_add_at(d, SY_SEV_ERROR, sy_config_mark(c, blame(c, "model.q_heads", "model.kv_heads")),
                        "model.q_heads %lld is not a multiple of model.kv_heads %lld", (long long)q, (long long)kv);
    if (top_k > experts)
        sy_diags_add_at(d, SY_SEV_ERROR, sy_config_mark(c, blame(c, "model.top_k", "model.experts")),
                        "model.top_k %lld is more than model.experts %lld", (long long)top_k, (long long)experts);
    if (strcmp(sy_config_str(c, "moe.weight_format"), "mxfp4") == 0) {
        static const char *const dims[] = {"model.hidden", "model.intermediate"};
        for (size_t i = 0; i < 2; i++)
            if (sy_config_int(c, dims[i]) % 32)
                sy_diags_add_at(d, SY_SEV_ERROR, sy_config_mark(c, dims[i]),
                                "%s %lld is not a multiple of 32 (MXFP4 stores blocks of 32 values)", dims[i],
                                (long long)sy_config_int(c, dims[i]));
    }
    if (q % tp)
        sy_diags_add_at(d, SY_SEV_ERROR, sy_config_mark(c, blame(c, "parallel.tp", "model.q_heads")),
                        "parallel.tp %lld does not divide model.q_heads %lld", (long long)tp, (long long)q);
    if (strcmp(sy_config_str(c, "kv_cache.dtype"), "bf16") == 0) {
        static const char *const scales[] = {"kv_cache.k_scale", "kv_cache.v_scale"};
        for (size_t i = 0; i < 2; i++)
            if (sy_config_has(c, scales[i]))
                sy_diags_add_at(d, SY_SEV_WARNING, sy_config_mark(c, scales[i]),
                                "%s is ignored: kv_cache.dtype is bf16 (scales apply to fp8_e4m3)", scales[i]);
    }
    int64_t pool = sy_config_int(c, "kv_cache.pool_tokens");
    int64_t need = sy_config_int(c, "workload.batch") *
                   (sy_config_int(c, "workload.input_len") + sy_config_int(c, "workload.output_len"));
    if (pool && pool < need)
        sy_diags_add_at(d, SY_SEV_ERROR, sy_config_mark(c, "kv_cache.pool_tokens"),
                        "kv_cache.pool_tokens %lld cannot hold the workload: workload.batch x (workload.input_len + "
                        "workload.output_len) = %lld tokens",
                        (long long)pool, (long long)need);
    const char *weights = sy_config_str(c, "model.weights");
    if (strcmp(weights, "synthetic") != 0 && access(weights, R_OK) != 0)
        sy_diags_add_at(d, SY_SEV_ERROR, sy_config_mark(c, "model.weights"),
                        "model.weights: cannot read checkpoint '%s'", weights);
}

static sy_config *finish(sy_config *c, const sy_config_options *o, sy_diags *d)
{
    apply_env(c, o, d);
    apply_sets(c, o, d);
    derive_defaults(c);
    check_model(c, d);
    return c;
}

/* Extensions in any case: DEFAULT.YAML is as much YAML as default.yaml. */
static sy_config_syntax syntax_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot && (strcasecmp(dot, ".yaml") == 0 || strcasecmp(dot, ".yml") == 0 || strcasecmp(dot, ".json") == 0))
        return SY_SYNTAX_YAML;
    if (dot && strcasecmp(dot, ".ini") == 0)
        return SY_SYNTAX_INI;
    return SY_SYNTAX_AUTO;
}

sy_config *sy_config_load_string(const char *name, const char *text, size_t len, sy_config_syntax syntax,
                                 const sy_config_options *opts, sy_diags *diags)
{
    if (syntax == SY_SYNTAX_AUTO)
        syntax = syntax_of(name);
    if (syntax == SY_SYNTAX_AUTO) {
        sy_diags_add(diags, SY_SEV_ERROR, name, 0, 0,
                     "cannot tell the syntax from the file name: use .yaml, .yml or .json for YAML, .ini for INI");
        return NULL;
    }
    if (!sy_config_check_text(name, text, len, diags))
        return NULL;
    sy_config *c = config_new(name);
    sy_tree t;
    sy_tree_init(&t, c->file);
    int ok = syntax == SY_SYNTAX_YAML ? sy_load_yaml(text, len, &t, diags) : sy_load_ini(text, len, &t, diags);
    if (!ok) {
        sy_tree_free(&t);
        sy_config_free(c);
        return NULL;
    }
    sy_tree_check_duplicates(&t, diags);
    for (size_t i = 0; i < t.n; i++)
        apply_item(c, &t.items[i], diags);
    sy_tree_free(&t);
    return finish(c, opts, diags);
}

sy_config *sy_config_load_file(const char *path, const sy_config_options *opts, sy_diags *diags)
{
    /* A missing file or a folder is reported as such (by sy_config_read_file) before its name is
     * judged: "no such file" is the useful news about `run typo`. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode) && syntax_of(path) == SY_SYNTAX_AUTO) {
        sy_diags_add(diags, SY_SEV_ERROR, path, 0, 0,
                     "cannot tell the syntax from the file name: use .yaml, .yml or .json for YAML, .ini for INI");
        return NULL;
    }
    char *text;
    size_t len;
    if (!sy_config_read_file(path, &text, &len, diags))
        return NULL;
    sy_config *c = sy_config_load_string(path, text, len, SY_SYNTAX_AUTO, opts, diags);
    free(text);
    return c;
}

sy_config *sy_config_load_defaults(const sy_config_options *opts, sy_diags *diags)
{
    return finish(config_new(""), opts, diags);
}

const char *sy_config_file(const sy_config *c)
{
    return c->file;
}

int sy_config_has(const sy_config *c, const char *key)
{
    return sy_config_entry(c, key, NULL)->v.set;
}

int64_t sy_config_int(const sy_config *c, const char *key)
{
    return typed(c, key, SY_CFG_INT, 0)->v.i;
}

double sy_config_float(const sy_config *c, const char *key)
{
    return typed(c, key, SY_CFG_FLOAT, 0)->v.f;
}

int sy_config_bool(const sy_config *c, const char *key)
{
    return typed(c, key, SY_CFG_BOOL, 0)->v.b;
}

const char *sy_config_str(const sy_config *c, const char *key)
{
    const sy_cfg_entry *e = typed(c, key, SY_CFG_STRING, 1);
    return e->v.set ? e->v.text : "";
}

size_t sy_config_list_len(const sy_config *c, const char *key)
{
    return typed(c, key, SY_CFG_LIST, 0)->v.n_list;
}

const char *sy_config_list_item(const sy_config *c, const char *key, size_t i)
{
    const sy_cfg_entry *e = typed(c, key, SY_CFG_LIST, 0);
    return i < e->v.n_list ? e->v.list[i] : NULL;
}

int sy_config_is_word(const sy_config *c, const char *key)
{
    return typed(c, key, SY_CFG_FLOAT, 0)->v.is_word;
}

const char *sy_config_text(const sy_config *c, const char *key)
{
    const sy_cfg_entry *e = sy_config_entry(c, key, NULL);
    return e->v.set ? e->v.text : "(unset)";
}

const char *sy_config_source(const sy_config *c, const char *key)
{
    return sy_config_entry(c, key, NULL)->source;
}

int sy_config_is_default(const sy_config *c, const char *key)
{
    int32_t src = sy_config_entry(c, key, NULL)->src;
    return src == SY_SRC_DEFAULT || src == SY_SRC_DERIVED;
}

sy_mark sy_config_mark(const sy_config *c, const char *key)
{
    return sy_config_entry(c, key, NULL)->mark;
}
