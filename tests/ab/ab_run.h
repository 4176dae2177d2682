/* Running `switchyard ab` on the tiny model for the command suites: a small workload that still
 * chunks the prefill (8 + 8 + 5 prompt tokens, not a power of two, longer than the sliding window
 * of 16) and seeds drawn once per process from sy_test_seed(), so every run covers new weights and
 * prompts. The JSON report is read back with libyaml. */
#ifndef SY_AB_RUN_H
#define SY_AB_RUN_H

#include "run_process.h"

typedef struct ab_result {
    sy_process_result proc;
    char *dir;        /* scratch folder holding the reports */
    char *json_path;
    char *html_path;
    char *json;       /* the JSON report's text, NULL when none was written */
} ab_result;

/* The model and workload seeds of this process (drawn on first use, printed). */
unsigned long long ab_model_seed(void);
unsigned long long ab_workload_seed(void);

/* switchyard ab configs/default.yaml <workload and seeds> --plugin-path <fixture folder>
 * --json <dir>/ab.json --html <dir>/ab.html <extra...>. `extra` is NULL-terminated. */
void ab_run(const char *const *extra, ab_result *r);
/* The same with environment changes for the child (sy_run_switchyard's `env`). */
void ab_run_env(const char *const *extra, const char *const *env, ab_result *r);
void ab_result_free(ab_result *r);

/* Reads a whole file (malloc'd), NULL when it cannot be opened. */
char *ab_slurp(const char *path);
/* Fails the test with both output streams when the exit code is not `want`. */
void ab_expect_exit(const ab_result *r, int want);

#endif
