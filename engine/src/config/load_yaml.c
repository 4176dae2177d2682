/* YAML loader: libyaml's document API (it resolves aliases to the anchored node and keeps a mark on
 * every node), walked into the key tree. Nested mappings become dotted keys; a sequence of scalars
 * becomes a list. What libyaml accepts but a config must not contain is reported here: duplicate
 * keys (libyaml keeps both), merge keys, non-scalar keys or list entries, a second document,
 * nesting past SY_CFG_MAX_DEPTH and alias expansions past SY_CFG_MAX_NODES.
 * An aliased value is marked where its anchor defines it: the document API keeps no trace of the
 * alias itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/tree.h"
#include "util/strbuf.h"

typedef struct walker {
    sy_tree *t;
    sy_diags *d;
    yaml_document_t *doc;
    size_t visited;
    int over_budget;
} walker;

static sy_mark mark_of(const walker *w, yaml_mark_t m)
{
    sy_mark k = {w->t->origin, (uint32_t)m.line + 1, (uint32_t)m.column + 1};
    return k;
}

static void error_at(const walker *w, yaml_mark_t m, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void error_at(const walker *w, yaml_mark_t m, const char *fmt, ...)
{
    sy_str s = {0};
    va_list ap;
    va_start(ap, fmt);
    sy_str_vappendf(&s, fmt, ap);
    va_end(ap);
    sy_diags_add(w->d, SY_SEV_ERROR, w->t->origin, (uint32_t)m.line + 1, (uint32_t)m.column + 1, "%s", s.data);
    sy_str_free(&s);
}

/* Every node costs one visit, aliases counted each time they are used, so a "billion laughs"
 * document stops at the budget instead of expanding. */
static int visit(walker *w, const yaml_node_t *n)
{
    if (++w->visited <= SY_CFG_MAX_NODES)
        return 1;
    if (!w->over_budget)
        error_at(w, n->start_mark, "more than %u YAML nodes once aliases are expanded (the limit for a config)",
                 SY_CFG_MAX_NODES);
    w->over_budget = 1;
    return 0;
}

/* A scalar's text, or NULL for YAML's null (an empty plain scalar, ~, null). Sets *bad when the
 * text cannot be a config value (a NUL from an escape, or too long). */
static const char *scalar_text(const walker *w, const yaml_node_t *n, int *bad)
{
    const char *s = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    *bad = 0;
    if (memchr(s, '\0', len)) {
        error_at(w, n->start_mark, "value contains a NUL character");
        *bad = 1;
        return NULL;
    }
    if (len > SY_CFG_MAX_VALUE) {
        error_at(w, n->start_mark, "value is %zu bytes, longer than the %u-byte limit", len, SY_CFG_MAX_VALUE);
        *bad = 1;
        return NULL;
    }
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
         strcmp(s, "NULL") == 0))
        return NULL;
    return s;
}

static int is_quoted(const yaml_node_t *n)
{
    return n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
}

static void walk_mapping(walker *w, const yaml_node_t *map, const char *prefix, int depth);

static void add_leaf(walker *w, const char *path, const yaml_node_t *key, const yaml_node_t *value, int depth)
{
    sy_tree_item *it = sy_tree_add(w->t, path, mark_of(w, key->start_mark), w->d);
    if (!it)
        return;
    int bad;
    if (value->type == YAML_SCALAR_NODE) {
        const char *text = scalar_text(w, value, &bad);
        sy_tree_item_add_value(it, bad ? "" : text, is_quoted(value), mark_of(w, value->start_mark));
        return;
    }
    /* A sequence: one level deeper, entries must be scalars. */
    it->is_list = 1;
    if (depth + 1 > SY_CFG_MAX_DEPTH) {
        error_at(w, value->start_mark, "nesting deeper than %d levels (the limit for a config)", SY_CFG_MAX_DEPTH);
        return;
    }
    for (yaml_node_item_t *i = value->data.sequence.items.start; i < value->data.sequence.items.top; i++) {
        const yaml_node_t *e = yaml_document_get_node(w->doc, *i);
        if (!visit(w, e))
            return;
        if (e->type != YAML_SCALAR_NODE) {
            error_at(w, e->start_mark, "'%s' is a list of plain values; this entry is a %s", path,
                     e->type == YAML_MAPPING_NODE ? "mapping" : "list");
            continue;
        }
        const char *text = scalar_text(w, e, &bad);
        if (bad)
            continue;
        if (!text) {
            error_at(w, e->start_mark, "'%s' has an empty list entry", path);
            continue;
        }
        sy_tree_item_add_value(it, text, is_quoted(e), mark_of(w, e->start_mark));
    }
}

/* The earlier key of the same mapping with the same name, or NULL. */
static const yaml_node_t *earlier_key(const walker *w, const yaml_node_t *map, const yaml_node_pair_t *upto,
                                      const yaml_node_t *key)
{
    for (const yaml_node_pair_t *p = map->data.mapping.pairs.start; p < upto; p++) {
        const yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        if (k->type == YAML_SCALAR_NODE && k->data.scalar.length == key->data.scalar.length &&
            memcmp(k->data.scalar.value, key->data.scalar.value, k->data.scalar.length) == 0)
            return k;
    }
    return NULL;
}

static void walk_pair(walker *w, const yaml_node_t *map, const yaml_node_pair_t *p, const char *prefix, int depth)
{
    const yaml_node_t *key = yaml_document_get_node(w->doc, p->key);
    const yaml_node_t *value = yaml_document_get_node(w->doc, p->value);
    if (!visit(w, key) || !visit(w, value))
        return;
    if (key->type != YAML_SCALAR_NODE) {
        error_at(w, key->start_mark, "a key must be a plain name, not a %s",
                 key->type == YAML_MAPPING_NODE ? "mapping" : "list");
        return;
    }
    int bad;
    const char *name = scalar_text(w, key, &bad);
    if (bad)
        return;
    if (!name || !name[0]) {
        error_at(w, key->start_mark, "empty key");
        return;
    }
    if (!is_quoted(key) && strcmp(name, "<<") == 0) {
        error_at(w, key->start_mark, "merge keys ('<<') are not supported: write the keys out, or alias a whole value");
        return;
    }
    const yaml_node_t *first = earlier_key(w, map, p, key);
    char *path = prefix ? sy_asprintf("%s.%s", prefix, name) : sy_strdup(name);
    if (first) {
        /* The first copy is kept; the second is not walked, so its children are not reported twice. */
        sy_mark a = mark_of(w, first->start_mark);
        error_at(w, key->start_mark, "duplicate key '%s' (first set at %s:%u:%u)", path, w->t->origin, a.line, a.col);
        sy_diags_add(w->d, SY_SEV_NOTE, w->t->origin, a.line, a.col, "'%s' first set here", path);
    } else if (value->type == YAML_MAPPING_NODE)
        walk_mapping(w, value, path, depth + 1);
    else
        add_leaf(w, path, key, value, depth);
    free(path);
}

static void walk_mapping(walker *w, const yaml_node_t *map, const char *prefix, int depth)
{
    if (depth > SY_CFG_MAX_DEPTH) {
        error_at(w, map->start_mark, "nesting deeper than %d levels (the limit for a config)", SY_CFG_MAX_DEPTH);
        return;
    }
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        if (w->over_budget || w->t->too_many)
            return;
        walk_pair(w, map, p, prefix, depth);
    }
}

/* Line and column of a byte offset (reader errors carry only an offset). */
static yaml_mark_t mark_at_offset(const char *text, size_t len, size_t off)
{
    yaml_mark_t m = {0, 0, 0};
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') {
            m.line++;
            m.column = 0;
        } else if (((unsigned char)text[i] & 0xC0) != 0x80)
            m.column++;
    }
    m.index = off;
    return m;
}

static void report_parser_error(walker *w, const yaml_parser_t *p, const char *text, size_t len)
{
    yaml_mark_t at = p->problem_mark;
    if (p->error == YAML_READER_ERROR)
        at = mark_at_offset(text, len, p->problem_offset);
    if (p->error == YAML_MEMORY_ERROR) {
        sy_diags_add(w->d, SY_SEV_ERROR, w->t->origin, 0, 0, "out of memory while parsing YAML");
        return;
    }
    const char *problem = p->problem ? p->problem : "invalid YAML";
    if (p->context)
        error_at(w, at, "syntax error: %s (%s at %zu:%zu)", problem, p->context, p->context_mark.line + 1,
                 p->context_mark.column + 1);
    else
        error_at(w, at, "syntax error: %s", problem);
}

int sy_load_yaml(const char *text, size_t len, sy_tree *t, sy_diags *d)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    walker w = {t, d, &doc, 0, 0};
    int ok = 1;
    if (!yaml_parser_initialize(&parser)) {
        sy_diags_add(d, SY_SEV_ERROR, t->origin, 0, 0, "out of memory while parsing YAML");
        return 0;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        report_parser_error(&w, &parser, text, len);
        yaml_parser_delete(&parser);
        return 0;
    }
    const yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root)
        sy_diags_add(d, SY_SEV_ERROR, t->origin, 0, 0, "config has no keys (only comments or an empty document)");
    else if (root->type != YAML_MAPPING_NODE) {
        int bad;
        if (root->type == YAML_SCALAR_NODE && !scalar_text(&w, root, &bad) && !bad)
            sy_diags_add(d, SY_SEV_ERROR, t->origin, 0, 0, "config has no keys (only comments or an empty document)");
        else
            error_at(&w, root->start_mark, "a config is a mapping of keys (key: value), not a %s",
                     root->type == YAML_SCALAR_NODE ? "single value" : "list");
        ok = 0;
    } else {
        walk_mapping(&w, root, NULL, 1);
        if (t->n == 0 && !w.over_budget && root->data.mapping.pairs.start == root->data.mapping.pairs.top)
            sy_diags_add(d, SY_SEV_ERROR, t->origin, 0, 0, "config has no keys (an empty mapping)");
    }
    if (!root)
        ok = 0;
    yaml_document_delete(&doc);
    /* A second document would be silently ignored by a reader that stops after the first. */
    yaml_document_t next;
    if (!yaml_parser_load(&parser, &next)) {
        report_parser_error(&w, &parser, text, len);
        ok = 0;
    } else {
        if (yaml_document_get_root_node(&next)) {
            error_at(&w, next.start_mark, "more than one YAML document: a config is a single document");
            ok = 0;
        }
        yaml_document_delete(&next);
    }
    yaml_parser_delete(&parser);
    return ok;
}
