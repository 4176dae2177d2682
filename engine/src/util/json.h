/* A minimal streaming JSON writer for reports (plugins --json, run --json, ab --json). Writing JSON
 * is a few lines of escaping; reading JSON goes through libyaml elsewhere. */
#ifndef SY_UTIL_JSON_H
#define SY_UTIL_JSON_H

#include <stdint.h>
#include <stdio.h>

typedef struct sy_json {
    FILE *f;
    int depth;
    int need_comma[64];
    int after_key;
    int pretty;
} sy_json;

void sy_json_init(sy_json *j, FILE *f, int pretty);
void sy_json_begin_object(sy_json *j);
void sy_json_end_object(sy_json *j);
void sy_json_begin_array(sy_json *j);
void sy_json_end_array(sy_json *j);
void sy_json_key(sy_json *j, const char *key);
void sy_json_string(sy_json *j, const char *s);
void sy_json_int(sy_json *j, int64_t v);
void sy_json_uint(sy_json *j, uint64_t v);
void sy_json_double(sy_json *j, double v); /* NaN and infinities become null */
void sy_json_bool(sy_json *j, int v);
void sy_json_null(sy_json *j);
/* Writes a string with JSON escaping (no surrounding quotes). */
void sy_json_escape(FILE *f, const char *s);

#endif
