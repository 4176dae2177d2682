/* Conformance suite: every plugin of a backend against the cpu reference plugin of its kind, on fresh
 * random inputs at a list of shapes, reported as pass / fail / not-supported per case. The same suite
 * serves the in-tree GPU plugins and third-party plugins (docs/conformance.md).
 *
 * The plugin under test runs on its own backend: inputs are uploaded and outputs downloaded through
 * the backend descriptor, outputs are poisoned with a NaN pattern before every run, and the host-side
 * call checks (calls/checks.h) run before every kv_layout and attention op, as the engine does. The
 * reference runs on the cpu backend over host copies of the same inputs. A case whose needs (layout,
 * dtype, head dim, page size, feature) the plugin's caps do not declare is reported not-supported with
 * the reason; it is never skipped silently and never counted as a pass. */
#ifndef SY_CONFORMANCE_H
#define SY_CONFORMANCE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "switchyard/switchyard.h"

typedef struct sy_conf_report sy_conf_report;

typedef enum sy_conf_status {
    SY_CONF_PASS = 0,
    SY_CONF_FAIL = 1,
    SY_CONF_NOT_SUPPORTED = 2,
    SY_CONF_LISTED = 3 /* --list: named, not run */
} sy_conf_status;

/* One comparison inside a case, e.g. "out" by relative L2 or "k_cache" bit for bit. */
typedef struct sy_conf_check {
    char what[48];
    char metric[16];   /* "rel_l2" (error is ||t - r|| / ||r||) or "bits" (error is mismatching elements) */
    double error;
    double tolerance;  /* rel_l2: the bound; bits: 0 */
    double max_abs;    /* largest |test - reference| over finite elements (rel_l2 checks) */
    int64_t elements;  /* elements compared */
    int passed;
} sy_conf_check;

#define SY_CONF_MAX_CHECKS 6

typedef struct sy_conf_result {
    size_t plugin;        /* index into sy_conf_report.plugins */
    char name[192];       /* e.g. "attention.decode_paged/nhd/bf16/P64/Hq64Hkv8D64/B4/ctx1000/window128/sinks/splits3" */
    int32_t status;       /* sy_conf_status */
    char message[512];    /* why it failed or is not supported; "" when it passed */
    size_t n_checks;
    sy_conf_check checks[SY_CONF_MAX_CHECKS];
    double op_ms;         /* the plugin's op(s) under test, on its backend's clock */
    double wall_ms;       /* the whole case: inputs, both runs, comparison */
} sy_conf_result;

/* A plugin under test and the reference it was held against. Strings point into the registry. */
typedef struct sy_conf_plugin {
    int32_t kind;
    const char *name, *version, *file;
    const char *reference;      /* reference plugin's name, or NULL */
    const char *reference_file; /* its file, or NULL */
} sy_conf_plugin;

typedef struct sy_conf_options {
    const char *backend; /* backend whose plugins are tested; NULL = "cpu" */
    const char *plugin;  /* only this plugin (by name); NULL = every plugin of the backend */
    const char *case_filter; /* only cases whose name contains this text; NULL = all */
    uint64_t seed;       /* inputs of a case are a function of (seed, case name) */
    int quick;           /* the reduced shape list */
    int list_only;       /* name every case, run nothing */
    /* Called as each case ends (progress output); may be NULL. */
    void (*on_result)(void *user, const sy_conf_report *report, const sy_conf_result *r);
    void *user;
} sy_conf_options;

struct sy_conf_report {
    char backend[32];
    char device[128];     /* the tested backend's device name */
    uint64_t seed;
    int quick;
    sy_conf_plugin *plugins;
    size_t n_plugins;
    sy_conf_result *results;
    size_t n_results, cap_results;
    size_t passed, failed, not_supported;
    double wall_ms;
};

/* Runs the suite and fills *report (freed with sy_conf_report_free, also after a failure).
 * Returns SY_E_BACKEND when the tested backend or the cpu reference backend cannot be found, is
 * unusable here or fails to open; SY_E_INVALID when `plugin` names no plugin of the backend, or the
 * backend has no plugins at all. A failed
 * case is not an error: see report->failed. */
sy_status sy_conformance_run(sy_registry *reg, const sy_conf_options *opts, sy_conf_report *report, sy_error *err);
void sy_conf_report_free(sy_conf_report *report);

const char *sy_conf_status_name(int32_t status); /* "pass", "fail", "not-supported", "listed" */

/* One line for a case: "PASS  plugin  name  out rel_l2 1.2e-07 <= 1e-05  0.41 ms", no newline. */
void sy_conf_format_result(const sy_conf_report *report, const sy_conf_result *r, char *buf, size_t len);
/* "N passed, N failed, N not supported", no newline. */
void sy_conf_format_summary(const sy_conf_report *report, char *buf, size_t len);
/* The whole report as one JSON document. */
void sy_conf_write_json(const sy_conf_report *report, FILE *f);

#endif
