/* A's checkpoints, spilled to an unlinked temporary file so that memory stays at one row while the
 * file grows with the model: layer outputs at fixed offsets [layer][seq][position][hidden], logits
 * rows appended and found through an index by (seq, position). Positions of one sequence are
 * adjacent, so a prefill chunk is one write and one read. */
#ifndef SY_AB_SPILL_H
#define SY_AB_SPILL_H

#include <stdint.h>

#include "ab/step_rows.h"
#include "model/model.h"
#include "switchyard/switchyard.h"

typedef struct sy_ab_spill {
    int fd;
    uint32_t layers, hidden, vocab;
    sy_ab_shape shape;
    uint8_t *present;       /* [layers][seq][position]: written by A */
    int64_t *logits_at;     /* [seq][position]: offset of the logits row, -1 when A has none */
    uint64_t layer_bytes;   /* the fixed region; logits follow */
    uint64_t end;
} sy_ab_spill;

/* Bytes the spill of this model and workload needs at most. */
uint64_t sy_ab_spill_bytes(const sy_model_dims *d, const sy_ab_shape *s);
/* Creates the file in `dir` (NULL: $TMPDIR, else /tmp) after checking it has room. */
sy_status sy_ab_spill_open(sy_ab_spill *sp, const char *dir, const sy_model_dims *d, const sy_ab_shape *s,
                           sy_error *err);
void sy_ab_spill_close(sy_ab_spill *sp);

/* `n` rows of consecutive positions pos .. pos + n - 1 of one sequence (n == 1 for logits). */
sy_status sy_ab_spill_put(sy_ab_spill *sp, uint32_t layer, uint32_t seq, uint32_t pos, uint32_t n, const float *rows,
                          sy_error *err);
/* Reads them back; *have = 0 (and nothing read) when A did not write all of them. */
sy_status sy_ab_spill_get(const sy_ab_spill *sp, uint32_t layer, uint32_t seq, uint32_t pos, uint32_t n, float *rows,
                          int *have, sy_error *err);

#endif
