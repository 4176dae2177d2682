/* Helpers of the config suites: loading from text, finding and asserting diagnostics, the fixture
 * registry. */
#ifndef SY_CFG_TEST_H
#define SY_CFG_TEST_H

#include <check.h>

#include "compose/compose.h"
#include "config/config.h"

/* Loads `text` as a config named `name` (its extension picks the syntax). */
sy_config *cfg_load(const char *name, const char *text, const sy_config_options *o, sy_diags *d);

/* Asserts that diagnostic i (after sy_diags_sort) is exactly this; line 0 = about the whole origin. */
#define expect_diag(d, i, sev, origin, line, col, msg) \
    expect_diag_at(__FILE__, __LINE__, (d), (i), (sev), (origin), (line), (col), (msg))
void expect_diag_at(const char *file, int line_no, const sy_diags *d, size_t i, int sev, const char *origin,
                    unsigned line, unsigned col, const char *msg);
/* Asserts the number of diagnostics, printing them all when it differs. */
#define expect_count(d, n) expect_count_at(__FILE__, __LINE__, (d), (n))
void expect_count_at(const char *file, int line_no, const sy_diags *d, size_t n);
void print_diags(const sy_diags *d);

/* The fixture registry: tests/config/fixtures only, no environment, no default folder. */
sy_registry *fixture_registry(void);
/* A source-tree path (SY_SOURCE_DIR set by ctest). */
const char *source_path(const char *relative, char *buf, size_t len);
/* A fresh temporary folder for files a test writes. */
const char *temp_dir(char *buf, size_t len);
void write_file(const char *path, const void *data, size_t len);

/* Runs a Check suite and returns the process exit code. */
int run_suite(Suite *s);

#endif
