/* YAML loader: libyaml's document API (it resolves aliases to the anchored node and keeps a mark on
 * every node), walked into the key tree. Nested mappings become dotted keys; a sequence of scalars
 * becomes a list. What libyaml accepts but a config must not contain is reported here: duplicate
 * keys (libyaml keeps both), merge keys, non-scalar keys or list entries, a second document,
 * nesting past SY_CFG_MAX_DEPTH and alias expansions past SY_CFG_MAX_NODES.
 * An aliased value is marked where its anchor defines it: the document API keeps no trace of the
 * alias itself.
 *
 * Nesting is checked twice. libyaml's scanner costs time quadratic in the number of open flow
 * collections (300,000 '[' take minutes), and the document API scans everything before the walker
 * sees a node; so a first pass reads events, which libyaml produces as it scans, and stops at the
 * first collection past the limit. The walker checks again, for aliases that nest a value deeper
 * than where its anchor stands. */
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

/* A mapping's scalar keys sorted by text, then by position: each key's first copy is the first
 * entry of its run. Sorting keeps the duplicate check O(n log n) in a mapping of many keys. */
typedef struct key_ref {
    const unsigned char *text;
    size_t len;
    size_t pos; /* index of the pair in the mapping */
} key_ref;

static int cmp_key_ref(const void *pa, const void *pb)
{
    const key_ref *a = pa, *b = pb;
    int c = memcmp(a->text, b->text, a->len < b->len ? a->len : b->len);
    if (c)
        return c;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* For each pair of the mapping, the key node of the first pair with the same key text, or NULL
 * when the pair is that first one (or its key is not a scalar). */
static const yaml_node_t **first_copies(const walker *w, const yaml_node_t *map)
{
    const yaml_node_pair_t *pairs = map->data.mapping.pairs.start;
    size_t n = (size_t)(map->data.mapping.pairs.top - pairs), n_refs = 0;
    const yaml_node_t **first = sy_xcalloc(n ? n : 1, sizeof *first);
    key_ref *refs = sy_xcalloc(n ? n : 1, sizeof *refs);
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *k = yaml_document_get_node(w->doc, pairs[i].key);
        if (k && k->type == YAML_SCALAR_NODE)
            refs[n_refs++] = (key_ref){k->data.scalar.value, k->data.scalar.length, i};
    }
    qsort(refs, n_refs, sizeof *refs, cmp_key_ref);
    for (size_t i = 1; i < n_refs; i++) {
        const key_ref *run = &refs[i - 1];
        if (run->len == refs[i].len && memcmp(run->text, refs[i].text, run->len) == 0) {
            /* Every later copy points at the run's first; carry the first along the run. */
            const yaml_node_t *head = first[run->pos] ? first[run->pos]
                                                      : yaml_document_get_node(w->doc, pairs[run->pos].key);
            first[refs[i].pos] = head;
        }
    }
    free(refs);
    return first;
}

static void walk_pair(walker *w, const yaml_node_pair_t *p, const yaml_node_t *first, const char *prefix, int depth)
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
    char *path = prefix ? sy_asprintf("%s.%s", prefix, name) : sy_strdup(name);
    if (first) {
        /* The first copy is kept; the second is not walked, so its children are not reported twice. */
        sy_mark a = mark_of(w, first->start_mark);
        error_at(w, key->start_mark, "duplicate key '%s' (first set at %s:%u:%u)", path, w->t->origin, a.line, a.col);
        sy_diags_add(w->d, SY_SEV_NOTE, w->t->origin, a.line, a.col, "'%s' first set here", path);
    } else if (value->type == YAML_MAPPING_NODE && value->data.mapping.pairs.start == value->data.mapping.pairs.top &&
               depth + 1 <= SY_CFG_MAX_DEPTH) {
        /* An empty mapping sets nothing, but its name must still be a section: `modle: {}` is a typo. */
        sy_tree_item *it = sy_tree_add(w->t, path, mark_of(w, key->start_mark), w->d);
        if (it)
            it->is_empty_mapping = 1;
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
    const yaml_node_t **first = first_copies(w, map);
    const yaml_node_pair_t *pairs = map->data.mapping.pairs.start;
    for (size_t i = 0; pairs + i < map->data.mapping.pairs.top; i++) {
        if (w->over_budget || w->t->too_many)
            break;
        walk_pair(w, pairs + i, first[i], prefix, depth);
    }
    free(first);
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

/* The event pass: 0 after reporting the first collection nested past SY_CFG_MAX_DEPTH, 1 when there
 * is none. A syntax error ends the pass with 1: the document load meets the same error after the
 * same (shallow) events and reports it with everything else. */
static int nesting_within_limit(walker *w, const char *text, size_t len)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return 1; /* the document load reports the lack of memory */
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int depth = 0, within = 1;
    for (;;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&parser, &e))
            break;
        yaml_event_type_t type = e.type;
        if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
            if (++depth > SY_CFG_MAX_DEPTH) {
                error_at(w, e.start_mark, "nesting deeper than %d levels (the limit for a config)", SY_CFG_MAX_DEPTH);
                within = 0;
            }
        } else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT)
            depth--;
        yaml_event_delete(&e);
        if (!within || type == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&parser);
    return within;
}

int sy_load_yaml(const char *text, size_t len, sy_tree *t, sy_diags *d)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    walker w = {t, d, &doc, 0, 0};
    int ok = 1;
    if (!nesting_within_limit(&w, text, len))
        return 0;
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
