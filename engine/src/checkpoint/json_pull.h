/* Strict JSON (RFC 8259) as a stream of tokens, read through libyaml.
 *
 * libyaml parses JSON because JSON is (almost) a subset of YAML's flow syntax; it also accepts a lot
 * that is not JSON. Each libyaml event is therefore checked against the bytes it came from: objects
 * and arrays must open with '{' / '[', strings must be double-quoted with JSON's escapes only,
 * other scalars must be JSON numbers or true / false / null, and the text between two tokens may
 * hold only JSON whitespace and the one ',' or ':' the grammar expects there. What is refused that
 * JSON allows (docs/checkpoints.md): \uD800-\uDFFF surrogate escapes (write the character as UTF-8),
 * raw U+0085 / U+2028 / U+2029 inside strings (YAML folds them; write them as \u escapes), a key
 * and its ':' on different lines, keys longer than 1000 characters, nesting deeper than
 * SY_JSON_MAX_DEPTH, and strings holding \u0000. */
#ifndef SY_CHECKPOINT_JSON_PULL_H
#define SY_CHECKPOINT_JSON_PULL_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "switchyard/status.h"

#define SY_JSON_MAX_DEPTH 32

typedef enum sy_jtype {
    SY_J_OBJECT = 1,
    SY_J_OBJECT_END,
    SY_J_ARRAY,
    SY_J_ARRAY_END,
    SY_J_STRING,
    SY_J_NUMBER,
    SY_J_TRUE,
    SY_J_FALSE,
    SY_J_NULL,
    SY_J_END /* after the top-level value and the whitespace that follows it */
} sy_jtype;

typedef struct sy_jtoken {
    sy_jtype type;
    int is_key;       /* a string in key position of an object */
    const char *text; /* STRING: decoded UTF-8; NUMBER: as written. NUL-terminated; valid until the next call */
    size_t len;
    size_t offset;    /* byte offset of the token in the input */
} sy_jtoken;

typedef struct sy_jreader {
    yaml_parser_t parser;
    yaml_event_t event;
    int has_event;
    const char *origin; /* names the input in messages */
    const unsigned char *text;
    size_t len;
    size_t cursor_chr, cursor_byte; /* libyaml marks count characters; this maps them to bytes */
    size_t last_end;                /* byte just past the previous token */
    int depth;
    uint8_t in_object[SY_JSON_MAX_DEPTH];
    uint8_t want_value[SY_JSON_MAX_DEPTH]; /* object: a key was read, its value comes next */
    uint32_t items[SY_JSON_MAX_DEPTH];     /* members or elements read so far */
    int started, finished;
} sy_jreader;

void sy_jreader_init(sy_jreader *r, const char *origin, const void *text, size_t len);
void sy_jreader_free(sy_jreader *r);
/* The next token; on malformed input an error "ORIGIN: not JSON at byte N: why". */
sy_status sy_jreader_next(sy_jreader *r, sy_jtoken *t, sy_error *err);
/* Reads past the rest of a value whose first token is `first` (nested objects and arrays included). */
sy_status sy_jreader_skip(sy_jreader *r, const sy_jtoken *first, sy_error *err);

/* "an object", "a string", ... for messages. */
const char *sy_jtype_name(sy_jtype t);

/* A JSON number that is a non-negative integer without fraction or exponent, up to UINT64_MAX. */
int sy_json_u64(const char *text, size_t len, uint64_t *out);

#endif
