/* The SGLang environment variables that used to select kernel variants, and the config keys they
 * map to. They are reported when set and applied only on request (--import-env), so a config file
 * stays the single description of a run. */
#ifndef SY_CONFIG_ENV_H
#define SY_CONFIG_ENV_H

#include <stddef.h>

#include "config/config.h"

typedef struct sy_env_value {
    const char *env;  /* accepted value (compared case-insensitively) */
    const char *key;  /* the key's value it stands for */
} sy_env_value;

typedef struct sy_env_var {
    const char *name;            /* SGLANG_... */
    const char *key;             /* config key */
    const sy_env_value *values;  /* terminated by {NULL, NULL} */
    const char *meaning;         /* one line for the docs */
} sy_env_var;

size_t sy_env_var_count(void);
const sy_env_var *sy_env_var_get(size_t i);
/* The variable's value in envp (NULL-terminated NAME=VALUE; NULL = the process environment), or
 * NULL when unset. */
const char *sy_env_lookup(const char *const *envp, const char *name);
/* The variables that are set, one per call starting from *cursor = 0: returns 0 when none is left.
 * *mapped is NULL for a value that is not accepted. */
int sy_env_next_set(const char *const *envp, size_t *cursor, const sy_env_var **var, const char **value,
                    const char **mapped);
/* The key value an environment value maps to, or NULL when it is not accepted. */
const char *sy_env_map(const sy_env_var *v, const char *value);
/* "1, true, 0, false" */
void sy_env_accepted(const sy_env_var *v, char *buf, size_t len);
/* The errors of importing (the same for --import-env and `config import-env`): a value that is not
 * accepted, and a second spelling that disagrees with the first. */
void sy_env_report_invalid(const sy_env_var *v, const char *value, sy_diags *d);
void sy_env_report_conflict(const sy_env_var *v, const char *value, const char *first_var, const char *first_mapped,
                            sy_diags *d);

#endif
