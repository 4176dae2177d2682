#include "checkpoint/json_value.h"

#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

typedef struct builder {
    sy_jreader r;
    size_t values, max_values;
} builder;

static int key_order(const void *a, const void *b)
{
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* Duplicate keys make a document mean different things to different readers: refuse them. */
static sy_status check_unique_keys(builder *b, const sy_jvalue *v, size_t offset, sy_error *err)
{
    if (v->n < 2)
        return SY_OK;
    char ***sorted = sy_xcalloc(v->n, sizeof *sorted);
    for (size_t i = 0; i < v->n; i++)
        sorted[i] = &v->keys[i];
    qsort(sorted, v->n, sizeof *sorted, key_order);
    sy_status st = SY_OK;
    for (size_t i = 1; i < v->n && st == SY_OK; i++)
        if (strcmp(*sorted[i - 1], *sorted[i]) == 0)
            st = sy_fail(err, SY_E_INVALID, "%s: the object at byte %zu has the key \"%s\" twice", b->r.origin, offset,
                         *sorted[i]);
    free(sorted);
    return st;
}

static sy_status build(builder *b, const sy_jtoken *first, sy_jvalue *v, sy_error *err)
{
    memset(v, 0, sizeof *v);
    if (++b->values > b->max_values)
        return sy_fail(err, SY_E_INVALID, "%s: more than %zu JSON values", b->r.origin, b->max_values);
    v->type = first->type;
    if (first->type == SY_J_STRING || first->type == SY_J_NUMBER) {
        v->text = sy_strdup(first->text);
        return SY_OK;
    }
    if (first->type != SY_J_OBJECT && first->type != SY_J_ARRAY)
        return SY_OK;
    size_t cap = 0, offset = first->offset;
    for (;;) {
        sy_jtoken t;
        sy_status st = sy_jreader_next(&b->r, &t, err);
        if (st != SY_OK)
            return st;
        if (t.type == SY_J_OBJECT_END || t.type == SY_J_ARRAY_END)
            return v->type == SY_J_OBJECT ? check_unique_keys(b, v, offset, err) : SY_OK;
        if (v->n == cap) {
            cap = cap ? cap * 2 : 4;
            v->items = sy_xrealloc(v->items, cap * sizeof *v->items);
            if (v->type == SY_J_OBJECT)
                v->keys = sy_xrealloc(v->keys, cap * sizeof *v->keys);
        }
        if (v->type == SY_J_OBJECT) {
            v->keys[v->n] = sy_strdup(t.text); /* the reader guarantees a key here */
            if ((st = sy_jreader_next(&b->r, &t, err)) != SY_OK) {
                free(v->keys[v->n]);
                return st;
            }
        }
        st = build(b, &t, &v->items[v->n], err);
        v->n++;
        if (st != SY_OK)
            return st;
    }
}

sy_status sy_jvalue_parse(const char *origin, const void *text, size_t len, size_t max_values, sy_jvalue *out,
                          sy_error *err)
{
    builder b = {.max_values = max_values};
    sy_jreader_init(&b.r, origin, text, len);
    sy_jtoken t;
    sy_status st = sy_jreader_next(&b.r, &t, err);
    memset(out, 0, sizeof *out);
    if (st == SY_OK)
        st = build(&b, &t, out, err);
    if (st == SY_OK && (st = sy_jreader_next(&b.r, &t, err)) == SY_OK && t.type != SY_J_END)
        st = sy_fail(err, SY_E_INTERNAL, "%s: JSON continues after its value", origin);
    sy_jreader_free(&b.r);
    if (st != SY_OK)
        sy_jvalue_free(out);
    return st;
}

void sy_jvalue_free(sy_jvalue *v)
{
    for (size_t i = 0; i < v->n; i++) {
        sy_jvalue_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->text);
    memset(v, 0, sizeof *v);
}

const sy_jvalue *sy_jvalue_get(const sy_jvalue *v, const char *key)
{
    if (!v || v->type != SY_J_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}

int sy_jvalue_u64(const sy_jvalue *v, uint64_t *out)
{
    return v && v->type == SY_J_NUMBER && sy_json_u64(v->text, strlen(v->text), out);
}

int sy_jvalue_f64(const sy_jvalue *v, double *out)
{
    if (!v || v->type != SY_J_NUMBER)
        return 0;
    char *end = NULL;
    *out = strtod(v->text, &end); /* the reader admitted only JSON numbers: strtod reads all of it */
    return end && *end == '\0';
}
