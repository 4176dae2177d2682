/* The schema: every config key, its type, allowed values, default and doc. schema.c holds the one
 * table; the loaders, the resolver, `config show`, the docs generator and the model bridge all read
 * it, so a key exists by being added there and nowhere else. */
#ifndef SY_CONFIG_SCHEMA_H
#define SY_CONFIG_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "model/model.h"

typedef enum sy_cfg_type {
    SY_CFG_ENUM = 1,   /* one word of `choices` */
    SY_CFG_INT = 2,    /* decimal integer in [min, max] */
    SY_CFG_FLOAT = 3,  /* number in [min, max] (or > 0 with SY_CFG_POSITIVE), or `word`; parsed as a
                          double but used as a 32-bit float (model dims, fp8 scales), so a value other
                          than 0 must also lie within FLT_MIN..FLT_MAX in magnitude */
    SY_CFG_BOOL = 4,   /* true / false (also yes / no, on / off, 1 / 0) */
    SY_CFG_STRING = 5, /* any text (a name with SY_CFG_IDENTIFIER) */
    SY_CFG_LIST = 6    /* of strings: a YAML sequence, or comma-separated text */
} sy_cfg_type;

enum {
    SY_CFG_RELATIVE_PATH = 1u << 0, /* a relative path written in a file is relative to that file's folder */
    SY_CFG_IDENTIFIER = 1u << 1,    /* [a-z0-9_]+, like plugin and backend names */
    SY_CFG_POSITIVE = 1u << 2,      /* FLOAT: strictly greater than 0 (min is ignored) */
    SY_CFG_FROM_PLUGIN = 1u << 3    /* no default here: the composition derives it (sy_config_derive) */
};

struct sy_cfg_key;

/* A default computed from other keys. Writes the value as config text, the reason for the source
 * ("preset gpt-oss-20b") and the key it was derived from; returns 0 when it cannot. */
typedef int (*sy_cfg_derive_fn)(const sy_config *c, const struct sy_cfg_key *k, char *text, size_t len, char *why,
                                size_t why_len, const char **from_key);

typedef struct sy_cfg_key {
    const char *name;
    sy_cfg_type type;
    const char *const *choices; /* ENUM: NULL-terminated */
    double min, max;            /* INT and FLOAT: inclusive range */
    const char *word;           /* FLOAT: a word accepted in place of a number */
    double word_value;          /* ... and the number it stands for */
    const char *def;            /* default as config text; NULL = none (or derived) */
    sy_cfg_derive_fn derive;    /* computes the default when def is NULL */
    size_t dims_field;          /* offsetof(sy_model_dims, member) + 1; 0 = not a model dimension */
    const char *def_doc;        /* how the default is derived, in words, for the docs */
    uint32_t flags;             /* SY_CFG_* above */
    const char *doc;            /* one line */
} sy_cfg_key;

const sy_cfg_key *sy_schema_keys(size_t *n);
/* Index of a key, or -1. */
long sy_schema_index(const char *name);
const char *sy_cfg_type_name(sy_cfg_type t);
/* "nhd, vectorized_5d" / "1..1024" / "> 0 or unit": the allowed values in words. */
void sy_schema_allowed(const sy_cfg_key *k, char *buf, size_t len);

/* A parsed value. `text` is its canonical config text for every type. */
typedef struct sy_cfg_value {
    int set;          /* 0: no value */
    int64_t i;        /* INT */
    double f;         /* FLOAT (word_value when is_word) */
    int b;            /* BOOL */
    uint32_t choice;  /* ENUM: index into choices */
    int is_word;      /* FLOAT given as the word */
    char *text;
    char **list;      /* LIST */
    size_t n_list;
} sy_cfg_value;

void sy_cfg_value_free(sy_cfg_value *v);
void sy_cfg_value_copy(sy_cfg_value *dst, const sy_cfg_value *src);
/* Parse config text for a key. A scalar for a LIST key is split at commas. `quoted` marks text
 * written in quotes, which is never a number or a bool. Returns 1, or 0 with the reason in why
 * (without the key's name). */
int sy_cfg_parse(const sy_cfg_key *k, const char *text, int quoted, sy_cfg_value *out, char *why, size_t why_len);
/* The same for a YAML sequence. */
int sy_cfg_parse_list(const sy_cfg_key *k, const char *const *items, size_t n, sy_cfg_value *out, char *why,
                      size_t why_len);
/* The shortest text ("%g" with the fewest digits) that reads back as v, as a double or, with
 * as_float, as a float: preset numbers are floats, and 1e-5f should be written 1e-05, not
 * 9.9999997473787516e-06. Cut to len bytes if it must be. */
void sy_cfg_format_shortest(double v, bool as_float, char *buf, size_t len);
/* The same as a double. */
void sy_cfg_format_double(double v, char *buf, size_t len);

/* Model dimensions: the preset's value of a key as text, and the resolved value stored into dims. */
void sy_schema_dims_field_text(const sy_cfg_key *k, const sy_model_dims *dims, char *text, size_t len);
void sy_schema_store_dims_field(const sy_cfg_key *k, const sy_config *c, sy_model_dims *dims);

#endif
