/* Writing a safetensors file: the header first (every tensor's dtype and shape are known up front),
 * then the tensors' bytes in header order, appended piece by piece so that no more than the piece
 * in hand is ever in memory. The file appears under its name only when complete: it is written to
 * a temporary file of an unpredictable name in the same folder (created by mkstemp, then given the
 * permissions of a new file under the umask), synced, renamed, and the folder synced. */
#ifndef SY_CHECKPOINT_ST_WRITE_H
#define SY_CHECKPOINT_ST_WRITE_H

#include <stdint.h>
#include <stdio.h>

#include "checkpoint/safetensors.h"

typedef struct sy_st_entry {
    const char *name;
    int32_t dtype; /* sy_st_dtype */
    uint32_t rank;
    uint64_t shape[SY_ST_MAX_RANK];
} sy_st_entry;

typedef struct sy_st_writer {
    char *path, *tmp;
    FILE *f;
    const sy_st_entry *entries;
    size_t n_entries;
    size_t current;      /* entry being written */
    uint64_t written;    /* bytes of it written so far */
    uint64_t *bytes;     /* byte size of each entry */
} sy_st_writer;

uint64_t sy_st_entry_bytes(const sy_st_entry *e);

/* Starts `path` with a header for `entries` (kept by the caller until commit or abort) and the
 * string pairs of __metadata__ (meta[2i] = key, meta[2i + 1] = value; n_meta pairs). */
sy_status sy_st_writer_begin(sy_st_writer *w, const char *path, const sy_st_entry *entries, size_t n_entries,
                             const char *const *meta, size_t n_meta, sy_error *err);
/* The next bytes of the data, in entry order; a piece may span entries. */
sy_status sy_st_writer_append(sy_st_writer *w, const void *data, uint64_t bytes, sy_error *err);
/* Checks that every entry was written in full, syncs, renames into place. Ends the writer either
 * way (on failure the temporary file is removed). */
sy_status sy_st_writer_commit(sy_st_writer *w, sy_error *err);
/* Removes the temporary file and ends the writer; for a failed begin or append. */
void sy_st_writer_abort(sy_st_writer *w);

/* Writes `text` to `path` through a synced temporary file and a rename. */
sy_status sy_write_file_atomic(const char *path, const char *text, size_t len, sy_error *err);
/* Syncs a folder, so that the renames and removals in it so far survive a crash. */
sy_status sy_sync_dir(const char *dir, sy_error *err);

#endif
