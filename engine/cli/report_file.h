/* Report files (--json, --html). A regular file, or a path not there yet, is written atomically: a
 * temporary file beside it, renamed over it once complete, so a reader never sees half a report
 * and a failed run leaves the old one intact. A symlink is followed and its target written the
 * same way, so the link stays a link. Anything else that can be written (a FIFO, /dev/stdout, a
 * terminal) is written in place: it cannot be replaced and must not be. Commands open their
 * report files before the work, so an unwritable path costs nothing. */
#ifndef SY_CLI_REPORT_FILE_H
#define SY_CLI_REPORT_FILE_H

#include <stdio.h>

typedef struct sy_report_file {
    FILE *f;
    char *tmp_path; /* NULL when written in place */
    char *path;     /* what the user named, for messages */
    char *target;   /* what the rename replaces: path, or a symlink's target */
} sy_report_file;

/* 0 on success; on failure prints why to stderr. */
int sy_report_open(sy_report_file *r, const char *path);
/* Flushes, syncs and renames; 0 on success, on failure prints why to stderr. */
int sy_report_commit(sy_report_file *r);
/* Removes the temporary file; a report written in place is left as far as it got. Safe on a
 * zeroed or already committed sy_report_file. */
void sy_report_abort(sy_report_file *r);

#endif
