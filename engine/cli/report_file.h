/* Reports written atomically: a temporary file beside the target, renamed over it once complete,
 * so a reader never sees half a report and a failed run leaves the old one intact. */
#ifndef SY_CLI_REPORT_FILE_H
#define SY_CLI_REPORT_FILE_H

#include <stdio.h>

typedef struct sy_report_file {
    FILE *f;
    char *tmp_path;
    char *path;
} sy_report_file;

/* 0 on success; on failure prints why to stderr. */
int sy_report_open(sy_report_file *r, const char *path);
/* Flushes, syncs and renames; 0 on success. */
int sy_report_commit(sy_report_file *r);
/* Removes the temporary file. */
void sy_report_abort(sy_report_file *r);

#endif
