#include "schema_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct checker {
    json_doc *schema, *doc;
    char *errors;
    size_t len, used, count;
} checker;

static void problem(checker *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void problem(checker *c, const char *path, const char *fmt, ...)
{
    c->count++;
    if (c->used + 1 >= c->len)
        return;
    int n = snprintf(c->errors + c->used, c->len - c->used, "%s: ", *path ? path : "(root)");
    if (n > 0)
        c->used = c->used + (size_t)n < c->len ? c->used + (size_t)n : c->len - 1;
    va_list ap;
    va_start(ap, fmt);
    n = vsnprintf(c->errors + c->used, c->len - c->used, fmt, ap);
    va_end(ap);
    if (n > 0)
        c->used = c->used + (size_t)n < c->len ? c->used + (size_t)n : c->len - 1;
    if (c->used + 1 < c->len) {
        c->errors[c->used++] = '\n';
        c->errors[c->used] = '\0';
    }
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int is_json_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return 0;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

/* "object", "array", "string", "null", "boolean", "integer", "number", or "invalid" (a plain
 * scalar JSON cannot have). Integers are numbers with no fractional part, as JSON Schema counts. */
static const char *json_type(const yaml_node_t *n)
{
    if (n->type == YAML_MAPPING_NODE)
        return "object";
    if (n->type == YAML_SEQUENCE_NODE)
        return "array";
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return "string";
    const char *s = scalar(n);
    if (strcmp(s, "null") == 0)
        return "null";
    if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
        return "boolean";
    if (!is_json_number(s))
        return "invalid";
    double v = strtod(s, NULL);
    return floor(v) == v && isfinite(v) ? "integer" : "number";
}

static int type_matches(const char *want, const char *have)
{
    return strcmp(want, have) == 0 || (strcmp(want, "number") == 0 && strcmp(have, "integer") == 0);
}

static int is_numeric(const char *t)
{
    return strcmp(t, "number") == 0 || strcmp(t, "integer") == 0;
}

static int scalars_equal(const yaml_node_t *a, const yaml_node_t *b)
{
    if (a->type != YAML_SCALAR_NODE || b->type != YAML_SCALAR_NODE)
        return 0;
    const char *ta = json_type(a), *tb = json_type(b);
    if (is_numeric(ta) && is_numeric(tb))
        return strtod(scalar(a), NULL) == strtod(scalar(b), NULL);
    return strcmp(ta, tb) == 0 && strcmp(scalar(a), scalar(b)) == 0;
}

static yaml_node_t *schema_node(checker *c, int id)
{
    return yaml_document_get_node(&c->schema->doc, id);
}

static void check(checker *c, yaml_node_t *s, yaml_node_t *v, const char *path);

static void child_path(char *out, size_t len, const char *path, const char *key, long index)
{
    if (key)
        snprintf(out, len, "%s%s%s", path, *path ? "." : "", key);
    else
        snprintf(out, len, "%s[%ld]", path, index);
}

static void check_type(checker *c, yaml_node_t *want, const char *have, const char *path)
{
    if (want->type == YAML_SCALAR_NODE) {
        if (!type_matches(scalar(want), have))
            problem(c, path, "expected %s, got %s", scalar(want), have);
        return;
    }
    for (yaml_node_item_t *i = want->data.sequence.items.start; i < want->data.sequence.items.top; i++)
        if (type_matches(scalar(schema_node(c, *i)), have))
            return;
    problem(c, path, "got %s, not one of the allowed types", have);
}

static yaml_node_t *member(json_doc *d, yaml_node_t *obj, const char *key)
{
    return json_member(d, obj, key);
}

static void check_object(checker *c, yaml_node_t *s, yaml_node_t *v, const char *path)
{
    yaml_node_t *props = member(c->schema, s, "properties");
    yaml_node_t *required = member(c->schema, s, "required");
    yaml_node_t *additional = member(c->schema, s, "additionalProperties");
    char sub[512];
    for (yaml_node_item_t *i = required ? required->data.sequence.items.start : NULL;
         required && i < required->data.sequence.items.top; i++) {
        const char *key = scalar(schema_node(c, *i));
        if (!json_member(c->doc, v, key))
            problem(c, path, "missing required member \"%s\"", key);
    }
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        const char *key = scalar(yaml_document_get_node(&c->doc->doc, p->key));
        yaml_node_t *value = yaml_document_get_node(&c->doc->doc, p->value);
        child_path(sub, sizeof sub, path, key, 0);
        yaml_node_t *ps = props ? member(c->schema, props, key) : NULL;
        if (ps)
            check(c, ps, value, sub);
        else if (additional && additional->type == YAML_SCALAR_NODE && strcmp(scalar(additional), "false") == 0)
            problem(c, path, "member \"%s\" is not in the schema", key);
        else if (additional && additional->type == YAML_MAPPING_NODE)
            check(c, additional, value, sub);
    }
}

static void check_array(checker *c, yaml_node_t *s, yaml_node_t *v, const char *path)
{
    yaml_node_t *items = member(c->schema, s, "items");
    yaml_node_t *min_items = member(c->schema, s, "minItems");
    size_t n = json_length(v);
    if (min_items && n < strtoul(scalar(min_items), NULL, 10))
        problem(c, path, "%zu items, fewer than minItems %s", n, scalar(min_items));
    char sub[512];
    for (size_t i = 0; items && i < n; i++) {
        child_path(sub, sizeof sub, path, NULL, (long)i);
        check(c, items, json_element(c->doc, v, i), sub);
    }
}

static const char *const known[] = {"$schema", "title", "description", "$defs", "$ref", "type", "const", "enum",
                                    "properties", "required", "additionalProperties", "items", "minItems",
                                    "minimum", NULL};

static void check(checker *c, yaml_node_t *s, yaml_node_t *v, const char *path)
{
    if (!s || s->type != YAML_MAPPING_NODE) {
        problem(c, path, "the schema here is not an object");
        return;
    }
    const char *have = json_type(v);
    if (strcmp(have, "invalid") == 0) {
        problem(c, path, "'%s' is not a JSON value", scalar(v));
        return;
    }
    for (yaml_node_pair_t *p = s->data.mapping.pairs.start; p < s->data.mapping.pairs.top; p++) {
        const char *kw = scalar(schema_node(c, p->key));
        size_t k = 0;
        while (known[k] && strcmp(known[k], kw) != 0)
            k++;
        if (!known[k])
            problem(c, path, "schema keyword \"%s\" is not supported by this validator", kw);
    }
    yaml_node_t *ref = member(c->schema, s, "$ref");
    if (ref) {
        const char *target = scalar(ref);
        yaml_node_t *defs = member(c->schema, json_root(c->schema), "$defs");
        yaml_node_t *def = strncmp(target, "#/$defs/", 8) == 0 ? member(c->schema, defs, target + 8) : NULL;
        if (!def)
            problem(c, path, "unresolvable $ref %s", target);
        else
            check(c, def, v, path);
    }
    yaml_node_t *type = member(c->schema, s, "type");
    if (type)
        check_type(c, type, have, path);
    yaml_node_t *konst = member(c->schema, s, "const");
    if (konst && !scalars_equal(konst, v))
        problem(c, path, "expected the constant %s", scalar(konst));
    yaml_node_t *choices = member(c->schema, s, "enum");
    if (choices) {
        int found = 0;
        for (yaml_node_item_t *i = choices->data.sequence.items.start; !found && i < choices->data.sequence.items.top;
             i++)
            found = scalars_equal(schema_node(c, *i), v);
        if (!found)
            problem(c, path, "'%s' is not one of the enum values", v->type == YAML_SCALAR_NODE ? scalar(v) : "?");
    }
    yaml_node_t *minimum = member(c->schema, s, "minimum");
    if (minimum && is_numeric(have) && strtod(scalar(v), NULL) < strtod(scalar(minimum), NULL))
        problem(c, path, "%s is below the minimum %s", scalar(v), scalar(minimum));
    if (strcmp(have, "object") == 0)
        check_object(c, s, v, path);
    else if (strcmp(have, "array") == 0)
        check_array(c, s, v, path);
}

size_t schema_check(json_doc *schema, json_doc *doc, char *errors, size_t len)
{
    checker c = {schema, doc, errors, len, 0, 0};
    if (len)
        errors[0] = '\0';
    check(&c, json_root(schema), json_root(doc), "");
    return c.count;
}
