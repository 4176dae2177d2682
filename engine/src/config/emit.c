/* Writing a resolved config back out (`config show`) in YAML, INI or JSON, each of which loads back
 * to the same resolved config; and the environment as YAML (`config import-env`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/env.h"
#include "config/resolved.h"
#include "util/json.h"
#include "util/strbuf.h"

/* "model" of "model.preset"; "" for top-level keys. */
static void section_of(const char *name, char *buf, size_t len)
{
    const char *dot = strchr(name, '.');
    size_t n = dot ? (size_t)(dot - name) : 0;
    snprintf(buf, len, "%.*s", (int)n, name);
}

static const char *leaf_of(const char *name)
{
    const char *dot = strchr(name, '.');
    return dot ? dot + 1 : name;
}

/* Double-quoted with JSON escapes, which YAML's double-quoted style reads the same way. */
static void quoted(FILE *f, const char *s)
{
    fputc('"', f);
    sy_json_escape(f, s);
    fputc('"', f);
}

static void yaml_value(FILE *f, const sy_cfg_key *k, const sy_cfg_value *v)
{
    if (k->type == SY_CFG_STRING) {
        quoted(f, v->text);
        return;
    }
    if (k->type == SY_CFG_LIST) {
        fputc('[', f);
        for (size_t i = 0; i < v->n_list; i++) {
            if (i)
                fputs(", ", f);
            quoted(f, v->list[i]);
        }
        fputc(']', f);
        return;
    }
    fputs(v->text, f);
}

/* Every key that has a value, in schema order, with a call whenever the section changes: the one
 * traversal the three syntaxes share. */
typedef struct writer {
    void (*section)(void *st, FILE *f, const char *prev, const char *sec);
    void (*key)(void *st, FILE *f, const char *sec, const sy_cfg_key *k, const sy_cfg_value *v);
} writer;

static void walk(const sy_config *c, FILE *f, const writer *w, void *st)
{
    char section[64] = "", sec[64];
    for (size_t i = 0; i < c->n; i++) {
        const sy_cfg_value *v = &c->e[i].v;
        if (!v->set)
            continue;
        section_of(c->keys[i].name, sec, sizeof sec);
        if (strcmp(sec, section) != 0)
            w->section(st, f, section, sec);
        snprintf(section, sizeof section, "%s", sec);
        w->key(st, f, sec, &c->keys[i], v);
    }
    w->section(st, f, section, NULL);
}

static void yaml_section(void *st, FILE *f, const char *prev, const char *sec)
{
    (void)st;
    (void)prev;
    if (sec && sec[0])
        fprintf(f, "%s:\n", sec);
}

static void yaml_key(void *st, FILE *f, const char *sec, const sy_cfg_key *k, const sy_cfg_value *v)
{
    (void)st;
    fprintf(f, "%s%s: ", sec[0] ? "  " : "", leaf_of(k->name));
    yaml_value(f, k, v);
    fputc('\n', f);
}

/* INI has no escapes: a value must survive inih's whitespace trimming and inline ';' comments. */
static int ini_safe(const char *s)
{
    return !strchr(s, '\n') && !strchr(s, '\r') && !strstr(s, " ;") && !strstr(s, "\t;");
}

static sy_status check_ini(const sy_config *c, sy_error *err)
{
    for (size_t i = 0; i < c->n; i++) {
        const sy_cfg_key *k = &c->keys[i];
        const sy_cfg_value *v = &c->e[i].v;
        if (!v->set)
            continue;
        if (!ini_safe(v->text))
            return sy_fail(err, SY_E_INVALID, "%s = '%s' cannot be written as INI (a newline or ' ;' in it)", k->name,
                           v->text);
        for (size_t j = 0; j < v->n_list; j++)
            if (strchr(v->list[j], ','))
                return sy_fail(err, SY_E_INVALID, "%s entry '%s' cannot be written as INI (INI lists are comma-separated)",
                               k->name, v->list[j]);
    }
    return SY_OK;
}

static void ini_section(void *st, FILE *f, const char *prev, const char *sec)
{
    (void)st;
    (void)prev;
    if (sec)
        fprintf(f, "\n[%s]\n", sec);
}

static void ini_key(void *st, FILE *f, const char *sec, const sy_cfg_key *k, const sy_cfg_value *v)
{
    (void)st;
    (void)sec;
    fprintf(f, "%s = ", leaf_of(k->name));
    if (k->type == SY_CFG_LIST) {
        fputc('"', f);
        for (size_t j = 0; j < v->n_list; j++)
            fprintf(f, "%s%s", j ? "," : "", v->list[j]);
        fputc('"', f);
    } else if (k->type == SY_CFG_STRING)
        fprintf(f, "\"%s\"", v->text);
    else
        fputs(v->text, f);
    fputc('\n', f);
}

typedef struct json_state {
    int first_top, first_in_section;
} json_state;

static void json_section(void *st, FILE *f, const char *prev, const char *sec)
{
    json_state *j = st;
    if (prev[0])
        fputs("\n  }", f);
    if (sec && sec[0]) {
        fprintf(f, "%s\n  ", j->first_top ? "" : ",");
        quoted(f, sec);
        fputs(": {", f);
        j->first_top = 0;
        j->first_in_section = 1;
    }
}

static void json_key(void *st, FILE *f, const char *sec, const sy_cfg_key *k, const sy_cfg_value *v)
{
    json_state *j = st;
    int *first = sec[0] ? &j->first_in_section : &j->first_top;
    fprintf(f, "%s\n%s", *first ? "" : ",", sec[0] ? "    " : "  ");
    *first = 0;
    quoted(f, leaf_of(k->name));
    fputs(": ", f);
    if (k->type == SY_CFG_ENUM || (k->type == SY_CFG_FLOAT && v->is_word))
        quoted(f, v->text);
    else
        yaml_value(f, k, v);
}

sy_status sy_config_write(const sy_config *c, sy_config_format format, FILE *f, sy_error *err)
{
    switch (format) {
    case SY_FORMAT_YAML: {
        static const writer w = {yaml_section, yaml_key};
        fprintf(f, "# resolved config%s%s (switchyard config show)\n", c->file[0] ? " of " : "", c->file);
        walk(c, f, &w, NULL);
        return SY_OK;
    }
    case SY_FORMAT_INI: {
        static const writer w = {ini_section, ini_key};
        sy_status st = check_ini(c, err);
        if (st != SY_OK)
            return st;
        fprintf(f, "; resolved config%s%s (switchyard config show)\n", c->file[0] ? " of " : "", c->file);
        walk(c, f, &w, NULL);
        return SY_OK;
    }
    case SY_FORMAT_JSON: {
        static const writer w = {json_section, json_key};
        json_state j = {1, 1};
        fputs("{", f);
        walk(c, f, &w, &j);
        fputs("\n}\n", f);
        return SY_OK;
    }
    default:
        return sy_fail(err, SY_E_INVALID, "unknown output format %d", (int)format);
    }
}

size_t sy_config_env_write_yaml(const char *const *envp, FILE *f, sy_diags *diags)
{
    char section[64] = "", sec[64];
    size_t written = 0, set = 0;
    /* One line per key; a second spelling of the same setting must agree, as when importing. */
    const sy_env_var *done[16];
    const char *done_value[16];
    size_t n_done = 0;
    fputs("# switchyard config equivalent of the SGLang environment variables set here\n", f);
    const sy_env_var *var;
    const char *value, *mapped;
    for (size_t cursor = 0; sy_env_next_set(envp, &cursor, &var, &value, &mapped);) {
        set++;
        if (!mapped) {
            sy_env_report_invalid(var, value, diags);
            continue;
        }
        size_t j = 0;
        while (j < n_done && strcmp(done[j]->key, var->key) != 0)
            j++;
        if (j < n_done) {
            if (strcmp(done_value[j], mapped) != 0)
                sy_env_report_conflict(var, value, done[j]->name, done_value[j], diags);
            continue;
        }
        if (n_done < sizeof done / sizeof done[0]) {
            done[n_done] = var;
            done_value[n_done++] = mapped;
        }
        section_of(var->key, sec, sizeof sec);
        if (strcmp(sec, section) != 0)
            fprintf(f, "%s:\n", sec);
        snprintf(section, sizeof section, "%s", sec);
        fprintf(f, "  %s: %s  # %s=%s\n", leaf_of(var->key), mapped, var->name, value);
        written++;
    }
    /* Only when none is set: after an invalid value (an error) it would contradict the error. */
    if (!set)
        fputs("# (none of them is set)\n", f);
    return written;
}
