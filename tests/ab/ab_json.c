#include "ab_json.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

yaml_node_t *ab_json_at(json_doc *d, const char *path)
{
    yaml_node_t *node = json_root(d);
    char *copy = strdup(path), *save = NULL;
    for (char *part = strtok_r(copy, ".", &save); node && part; part = strtok_r(NULL, ".", &save)) {
        char *end;
        unsigned long i = strtoul(part, &end, 10);
        node = *end == '\0' && node->type == YAML_SEQUENCE_NODE ? json_element(d, node, i) : json_member(d, node, part);
    }
    free(copy);
    return node;
}

const char *ab_json_text(json_doc *d, const char *path)
{
    yaml_node_t *n = ab_json_at(d, path);
    ck_assert_msg(n && n->type == YAML_SCALAR_NODE, "the report has no value at %s", path);
    return (const char *)n->data.scalar.value;
}

double ab_json_number(json_doc *d, const char *path)
{
    const char *t = ab_json_text(d, path);
    char *end;
    double v = strtod(t, &end);
    ck_assert_msg(*t && *end == '\0', "%s is '%s', not a number", path, t);
    return v;
}

int ab_json_bool(json_doc *d, const char *path)
{
    const char *t = ab_json_text(d, path);
    ck_assert_msg(strcmp(t, "true") == 0 || strcmp(t, "false") == 0, "%s is '%s', not a boolean", path, t);
    return strcmp(t, "true") == 0;
}

int ab_json_is_null(json_doc *d, const char *path)
{
    yaml_node_t *n = ab_json_at(d, path);
    ck_assert_msg(n != NULL, "the report has no %s", path);
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           strcmp((const char *)n->data.scalar.value, "null") == 0;
}

size_t ab_json_length(json_doc *d, const char *path)
{
    yaml_node_t *n = ab_json_at(d, path);
    ck_assert_msg(n && n->type == YAML_SEQUENCE_NODE, "%s is not an array", path);
    return json_length(n);
}
