/* Configuration: one schema (schema.c), two syntaxes (YAML, INI), one resolved config.
 *
 * A config is resolved in layers, each overriding the one before:
 *     built-in default  <  config file  <  imported environment (--import-env)  <  --set key=value
 * Some defaults depend on other keys (model dimensions on model.preset, model.attn_scale on
 * model.head_dim, kv_cache.page_size on the kv_layout plugin the composition picks). Every
 * resolved value remembers where it came from (sy_config_source).
 *
 * Problems are collected, never printed: every load or compose call appends to a sy_diags list
 * (file:line:col, severity, message) and carries on, so one run reports all of them. Sort and
 * print once at the end.
 *
 * Keys are named by their dotted name ("kv_cache.page_size"). Asking a getter for a key that is
 * not in the schema, or for the wrong type, is a bug in the caller: it aborts with a message. */
#ifndef SY_CONFIG_H
#define SY_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "switchyard/switchyard.h"

/* ------------------------------------------------------------------------------------------ */
/* Diagnostics                                                                                 */

typedef enum sy_severity { SY_SEV_ERROR = 0, SY_SEV_WARNING = 1, SY_SEV_NOTE = 2 } sy_severity;

/* Origins that are not files. */
#define SY_ORIGIN_SET "--set"        /* line = which --set (1-based), col = column in its argument; other
                                      * command-line options that set keys are origins "--NAME" alike */
#define SY_ORIGIN_ENV "environment"  /* no line */

typedef struct sy_diag {
    int32_t severity;  /* sy_severity */
    char *origin;      /* config file path, SY_ORIGIN_SET or SY_ORIGIN_ENV */
    uint32_t line;     /* 1-based; 0 when the message is about the whole origin */
    uint32_t col;      /* 1-based; 0 with line 0 */
    char *message;     /* one line, no trailing newline */
    size_t seq;        /* order of arrival: the tie-breaker of sy_diags_sort */
} sy_diag;

/* Where a value or a key was written. origin names the file (or --set, environment). */
typedef struct sy_mark {
    const char *origin;
    uint32_t line, col;
} sy_mark;

typedef struct sy_diags {
    sy_diag *items;
    size_t n, cap;
} sy_diags;

void sy_diags_add(sy_diags *d, int32_t severity, const char *origin, uint32_t line, uint32_t col, const char *fmt,
                  ...) __attribute__((format(printf, 6, 7)));
/* The same at a mark (a value's place, from sy_config_mark). */
void sy_diags_add_at(sy_diags *d, int32_t severity, sy_mark at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Files first (by path), then the environment, then --set; within one origin by line, column,
 * arrival. Exact repeats (one environment warning per file checked) are dropped. */
void sy_diags_sort(sy_diags *d);
size_t sy_diags_count(const sy_diags *d, int32_t severity);
/* GNU form: "origin:line:col: error: message", or "origin: error: message" when line is 0. */
void sy_diags_print(const sy_diags *d, FILE *f);
void sy_diag_format(const sy_diag *g, char *buf, size_t len);
void sy_diags_free(sy_diags *d);

/* ------------------------------------------------------------------------------------------ */
/* Limits of what a config file may contain (docs/config.md lists them).                       */

#define SY_CFG_MAX_FILE_BYTES (1u << 20) /* larger files are refused unread */
#define SY_CFG_MAX_DEPTH 8               /* nested YAML mappings / sequences */
#define SY_CFG_MAX_ITEMS 1024            /* keys in one file */
#define SY_CFG_MAX_LIST 64               /* entries of one list */
#define SY_CFG_MAX_VALUE 4096            /* bytes of one value */
#define SY_CFG_MAX_NODES 65536           /* YAML nodes visited, aliases expanded */
#define SY_CFG_MAX_INI_LINE 196          /* characters on one INI line (inih's line buffer is 200) */

/* ------------------------------------------------------------------------------------------ */
/* Loading and resolving                                                                       */

typedef struct sy_config sy_config;

typedef enum sy_config_syntax {
    SY_SYNTAX_AUTO = 0, /* from the file name: .yaml .yml .json = YAML, .ini = INI */
    SY_SYNTAX_YAML = 1,
    SY_SYNTAX_INI = 2
} sy_config_syntax;

typedef struct sy_config_options {
    const char *const *sets;  /* "key=value" strings, applied last, in order (--set) */
    size_t n_sets;
    /* Optional, parallel to sets: the option each came from as the user typed it ("--set-b",
     * "--seed"), for diagnostics and sources; NULL (or a NULL entry) is "--set". The strings must
     * outlive the config (string literals). Diagnostics number each option's entries from 1. */
    const char *const *set_origins;
    int import_env;           /* 1: apply the SGLang variables (env.c); 0: warn about each one set */
    const char *const *envp;  /* NULL-terminated "NAME=VALUE" list; NULL = the process environment */
} sy_config_options;

/* Load, validate and resolve a config file. Returns NULL only when the file cannot be used at all
 * (unreadable, binary, syntax error); otherwise a config whose invalid values were left at their
 * defaults, with every problem in *diags. opts may be NULL. */
sy_config *sy_config_load_file(const char *path, const sy_config_options *opts, sy_diags *diags);
/* The same from memory; `name` is the origin used in marks and diagnostics. */
sy_config *sy_config_load_string(const char *name, const char *text, size_t len, sy_config_syntax syntax,
                                 const sy_config_options *opts, sy_diags *diags);
/* Built-in defaults, then the environment and --set layers (no file). */
sy_config *sy_config_load_defaults(const sy_config_options *opts, sy_diags *diags);
void sy_config_free(sy_config *c);

/* The file the config came from ("" for sy_config_load_defaults). */
const char *sy_config_file(const sy_config *c);

/* Typed getters. sy_config_str serves enum and string keys. */
int sy_config_has(const sy_config *c, const char *key); /* 0: no value (an unset scale, an underived page size) */
int64_t sy_config_int(const sy_config *c, const char *key);
double sy_config_float(const sy_config *c, const char *key);
int sy_config_bool(const sy_config *c, const char *key);
const char *sy_config_str(const sy_config *c, const char *key);
size_t sy_config_list_len(const sy_config *c, const char *key);
const char *sy_config_list_item(const sy_config *c, const char *key, size_t i);
/* Float keys that also take a word (kv_cache.k_scale: "unit"): 1 when the word was given. */
int sy_config_is_word(const sy_config *c, const char *key);
/* The value as config text ("64", "vectorized_5d", "[a, b]"); "(unset)" when it has none. */
const char *sy_config_text(const sy_config *c, const char *key);

/* Where the value came from: "default", "default (preset gpt-oss-20b)", "default (vectorized_5d)",
 * "configs/x.yaml:7:3", "env SGLANG_AITER_KV_CACHE_LAYOUT", "--set". */
const char *sy_config_source(const sy_config *c, const char *key);
/* 1 for a built-in or derived default, 0 for a value someone wrote. */
int sy_config_is_default(const sy_config *c, const char *key);
/* Where to point a diagnostic about this key: its value's place in the file, the --set or the
 * environment; for a derived default, the key it was derived from; otherwise the config file as a
 * whole (line 0). */
sy_mark sy_config_mark(const sy_config *c, const char *key);

/* Sets a default that depends on something outside the config (the composition's kv_layout
 * plugin gives kv_cache.page_size). Only for keys that still have no value; `why` becomes the
 * source "default (why)". Returns 0 when text does not parse or is out of range for the key. */
int sy_config_derive(sy_config *c, const char *key, const char *text, const char *why, sy_mark mark);

/* The schema, for listings (explain, docs): key count and names in schema order. */
size_t sy_config_key_count(void);
const char *sy_config_key_name(size_t i);

/* ------------------------------------------------------------------------------------------ */
/* Output                                                                                      */

typedef enum sy_config_format { SY_FORMAT_YAML = 0, SY_FORMAT_INI = 1, SY_FORMAT_JSON = 2 } sy_config_format;

/* Every key with a value, in a form that loads back to the same resolved config. Fails (and writes
 * nothing) when a value cannot be written in that syntax (an INI value with a newline). */
sy_status sy_config_write(const sy_config *c, sy_config_format format, FILE *f, sy_error *err);

/* docs/config.md: every key of the schema, its type, allowed values, default and doc, the
 * environment table and the limits above. */
void sy_config_write_doc(FILE *f);

/* The SGLang environment variables that are set, as the equivalent YAML (`config import-env`).
 * Invalid values become errors in *diags. Returns the number of variables written. */
size_t sy_config_env_write_yaml(const char *const *envp, FILE *f, sy_diags *diags);

#endif
