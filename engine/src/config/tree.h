/* The key tree both loaders produce: every leaf of the file as a dotted key with its value(s) and
 * the file:line:col of the key and of each value. YAML nesting and INI sections both become the
 * dots, so the resolver never knows which syntax it reads. */
#ifndef SY_CONFIG_TREE_H
#define SY_CONFIG_TREE_H

#include <stddef.h>

#include "config/config.h"

typedef struct sy_tree_scalar {
    char *text;     /* NULL: no value at all (YAML null / empty, INI "key =") */
    int quoted;     /* written in quotes: a string, never a number or a bool */
    sy_mark mark;
} sy_tree_scalar;

typedef struct sy_tree_item {
    char *key;              /* "kv_cache.layout" */
    sy_mark key_mark;
    int is_list;            /* YAML sequence: values[] are its entries (possibly none) */
    int is_empty_mapping;   /* YAML `name: {}` or an INI section without keys: no value; the name is
                               checked (it must be a section) */
    sy_tree_scalar value;   /* !is_list */
    sy_tree_scalar *values; /* is_list */
    size_t n_values;
} sy_tree_item;

typedef struct sy_tree {
    const char *origin;     /* the file name every mark points to; owned by the caller */
    sy_tree_item *items;
    size_t n, cap;
    int too_many;           /* SY_CFG_MAX_ITEMS reached and reported */
} sy_tree;

void sy_tree_init(sy_tree *t, const char *origin);
void sy_tree_free(sy_tree *t);
/* Appends a leaf; returns NULL (after reporting once) past SY_CFG_MAX_ITEMS. */
sy_tree_item *sy_tree_add(sy_tree *t, const char *key, sy_mark key_mark, sy_diags *d);
void sy_tree_item_add_value(sy_tree_item *it, const char *text, int quoted, sy_mark mark);
/* Reports every key written twice, at the second place with the first place in the message and
 * a note at the first, and drops the later copies. Empty mappings are not values: a section may
 * be opened empty any number of times. */
void sy_tree_check_duplicates(sy_tree *t, sy_diags *d);

/* Readable text of a config, or a diagnostic: missing, unreadable, a folder, larger than
 * SY_CFG_MAX_FILE_BYTES, empty, or binary (NUL, control bytes, invalid UTF-8; the first bad byte's
 * line:col is given). *text is NUL-terminated and owned by the caller. */
int sy_config_read_file(const char *path, char **text, size_t *len, sy_diags *d);
/* The content checks of sy_config_read_file, for text already in memory. */
int sy_config_check_text(const char *origin, const char *text, size_t len, sy_diags *d);

/* The loaders. Syntax errors are reported at the parser's mark. sy_load_yaml returns 0 after one
 * (libyaml cannot go on); sy_load_ini keeps every readable line and returns 0 only when inih
 * fails outright. */
int sy_load_yaml(const char *text, size_t len, sy_tree *t, sy_diags *d);
int sy_load_ini(const char *text, size_t len, sy_tree *t, sy_diags *d);

#endif
