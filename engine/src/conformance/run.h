/* State of one conformance run, shared by the driver (harness.c) and the case life cycle (case.c). */
#ifndef SY_CONF_RUN_H
#define SY_CONF_RUN_H

#include "conformance/case.h"

enum { SY_CONF_MAX_REFERENCES = 16 };

typedef struct sy_conf_reference_slot {
    int32_t kind;
    const char *name;
    sy_conf_plugin_ctx p; /* desc NULL when unavailable */
    char why[640];        /* why it is unavailable */
} sy_conf_reference_slot;

struct sy_conf_run {
    sy_registry *reg;
    const sy_conf_options *opts;
    sy_conf_report *report;
    sy_conf_side ref_side;  /* cpu: the references */
    sy_conf_side test_side; /* the backend under test (a second cpu side when that is cpu) */
    sy_conf_reference_slot refs[SY_CONF_MAX_REFERENCES];
    size_t n_refs;
};

/* Appends a finished case to the report and tells the progress callback. */
void sy_conf_run_record(sy_conf_run *run, const sy_conf_result *r);

#endif
