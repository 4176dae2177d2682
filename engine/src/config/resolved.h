/* The resolved config: one entry per schema key with its value and where the value came from.
 * Internal to engine/src/config; everyone else goes through config.h. */
#ifndef SY_CONFIG_RESOLVED_H
#define SY_CONFIG_RESOLVED_H

#include "config/config.h"
#include "config/schema.h"

typedef enum sy_cfg_source_kind {
    SY_SRC_DEFAULT = 0, /* the schema's default (or no value) */
    SY_SRC_DERIVED = 1, /* a default computed from other keys or from the composition */
    SY_SRC_FILE = 2,
    SY_SRC_ENV = 3,
    SY_SRC_SET = 4
} sy_cfg_source_kind;

typedef struct sy_cfg_entry {
    sy_cfg_value v;
    int32_t src;  /* sy_cfg_source_kind */
    char *source; /* sy_config_source text */
    sy_mark mark; /* where the value is written (for derived values: where its origin is) */
} sy_cfg_entry;

struct sy_config {
    char *file; /* "" when loaded without a file */
    char *dir;  /* folder of the file: the base of relative paths ("" = none) */
    const sy_cfg_key *keys;
    size_t n;
    sy_cfg_entry *e; /* parallel to keys */
};

/* The entry of a key; aborts on a key that is not in the schema (a caller's bug). */
sy_cfg_entry *sy_config_entry(const sy_config *c, const char *key, const sy_cfg_key **k);

#endif
