/* A JSON document in memory, for the small files of a checkpoint (config.json, the shard index).
 * Parsed through the strict reader of json_pull.h; duplicate keys are an error. */
#ifndef SY_CHECKPOINT_JSON_VALUE_H
#define SY_CHECKPOINT_JSON_VALUE_H

#include <stddef.h>
#include <stdint.h>

#include "checkpoint/json_pull.h"

typedef struct sy_jvalue {
    sy_jtype type;            /* OBJECT, ARRAY, STRING, NUMBER, TRUE, FALSE or NULL */
    char *text;               /* STRING (decoded) and NUMBER (as written) */
    size_t n;                 /* members of an OBJECT, elements of an ARRAY */
    char **keys;              /* OBJECT, in file order */
    struct sy_jvalue *items;
} sy_jvalue;

/* At most max_values values in all (a bound on memory whatever the input). */
sy_status sy_jvalue_parse(const char *origin, const void *text, size_t len, size_t max_values, sy_jvalue *out,
                          sy_error *err);
void sy_jvalue_free(sy_jvalue *v);
/* A member of an object; NULL when v is not an object or has no such key. */
const sy_jvalue *sy_jvalue_get(const sy_jvalue *v, const char *key);
/* 1 and the value when v is a number of that kind; 0 otherwise. */
int sy_jvalue_u64(const sy_jvalue *v, uint64_t *out);
int sy_jvalue_f64(const sy_jvalue *v, double *out);

#endif
