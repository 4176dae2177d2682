/* A/B comparison of two composed configs on identical weights and prompt tokens (`switchyard ab`).
 *
 * What it produces, in report order:
 *   1 the resolved config diff: every key whose value differs, with each side's source;
 *   2 the plugin chosen for each slot on each side, and the composition's decisions;
 *   3 numerics: one deterministic pass per side with the engine's checkpoint callback on (every
 *     layer's output of every forward step, and the logits), A is the reference. A's checkpoints are
 *     spilled to an unlinked temporary file keyed by (layer, sequence, position); B's stream is
 *     compared against them as it arrives, so memory holds one row of A at a time plus a small
 *     summary per (layer, sequence, position). Rows are matched by token position, not by step, so
 *     the sides may chunk the prefill differently. Once a sequence's generated tokens differ, later
 *     positions of that sequence see different inputs and are counted as skipped, not compared;
 *   4 timing: --rounds rounds in the interleaved order A B B A A B B A ..., one workload repetition
 *     per side per round, without checkpoints; per row the median of each side and the ratio B/A
 *     with a 95% paired bootstrap interval (rounds resampled, fixed seed) and a verdict.
 * docs/ab.md is the user-facing description; docs/ab-report.schema.json the JSON's schema. */
#ifndef SY_AB_H
#define SY_AB_H

#include <stdint.h>
#include <stdio.h>

#include "compose/compose.h"
#include "config/config.h"
#include "model/engine.h"
#include "switchyard/switchyard.h"

enum { SY_AB_A = 0, SY_AB_B = 1, SY_AB_SIDES = 2 };

/* Bootstrap of the timing intervals: resamples and seed (the same samples always give the same
 * interval), 95% percentile intervals. */
#define SY_AB_BOOTSTRAP_RESAMPLES 2000u
#define SY_AB_BOOTSTRAP_SEED 0x5e1ec7ab5eedull
#define SY_AB_CONFIDENCE 0.95

/* Fewest rounds that give an interval worth stating; 0 rounds skips the timing. */
#define SY_AB_MIN_ROUNDS 3u

/* One side as the caller loaded it: a resolved config, its composition and the engine plan. */
typedef struct sy_ab_side {
    const char *label;      /* how the report names the side's origin: "configs/a.yaml + --set-b ..." */
    const sy_config *cfg;
    const sy_composition *comp;
    sy_plan plan;           /* from sy_plan_from_config; the comparison sets its own warmup/repeat */
} sy_ab_side;

typedef struct sy_ab_options {
    uint32_t rounds;                /* 0 = numerics only; otherwise at least SY_AB_MIN_ROUNDS */
    double tolerance;               /* relative L2 on the logits; < 0 = sy_ab_default_tolerance */
    uint32_t bootstrap_resamples;   /* 0 = SY_AB_BOOTSTRAP_RESAMPLES */
    uint64_t bootstrap_seed;        /* 0 = SY_AB_BOOTSTRAP_SEED */
    const char *spill_dir;          /* folder of A's checkpoint spill; NULL = $TMPDIR or /tmp */
    /* Called at each phase change and round ("numerics A", "timing", ...); may be NULL. */
    void (*progress)(void *user, const char *phase, uint32_t done, uint32_t total);
    void *progress_user;
} sy_ab_options;

/* ------------------------------------------------------------------------------------------ */
/* Same model, same prompts                                                                    */

/* The keys both sides must agree on (every model.* key but model.dtype and model.preset, which only
 * names where the dimensions came from, and the workload's batch, lengths, seed and context), so that both
 * run the same synthetic weights on the same token ids. A difference is refused rather than
 * overridden: a silently replaced seed would hide a mistake in B's config. On a difference, returns
 * SY_E_INVALID with one line naming the key, both values and both sources. */
sy_status sy_ab_check_same_inputs(const sy_config *a, const sy_config *b, sy_error *err);
int sy_ab_is_identity_key(const char *key);

/* ------------------------------------------------------------------------------------------ */
/* Report                                                                                      */

typedef struct sy_ab_config_change {
    char *key;
    char *value[SY_AB_SIDES];
    char *source[SY_AB_SIDES];
} sy_ab_config_change;

typedef struct sy_ab_slot_choice {
    char *slot;                   /* "backend", "kv_layout", ..., or a decision ("kv cache", "rope+kv write") */
    char *choice[SY_AB_SIDES];    /* "kv_nhd 1.0.0", "nhd bf16, page 16" */
    char *file[SY_AB_SIDES];      /* the library, for plugins and backends; "" for decisions */
    int same;
} sy_ab_slot_choice;

/* Differences accumulated over a set of values, B against the reference A. */
typedef struct sy_ab_diff {
    double sum_sq_diff, sum_sq_ref;
    double max_abs;               /* over the finite differences; see nonfinite */
    uint64_t values, differing;   /* values compared; values whose bits differ */
    uint64_t nonfinite;           /* differences that are NaN or infinite */
} sy_ab_diff;

void sy_ab_diff_add(sy_ab_diff *acc, const sy_ab_diff *more);
/* ||B - A|| / ||A||; 0 when identical, +inf when A is all zeros and B is not, NaN when not finite. */
double sy_ab_diff_rel_l2(const sy_ab_diff *d);

/* Where two checkpoints first differ: B's step and row in it, the sequence, token position and
 * the first differing column of that row. */
typedef struct sy_ab_where {
    uint32_t step, row, seq, pos, col;
} sy_ab_where;

typedef struct sy_ab_layer_numerics {
    uint32_t layer;               /* == layers for the logits */
    sy_ab_diff diff;              /* over the rows compared */
    uint64_t rows_compared, rows_skipped;
    int diverged;
    sy_ab_where first;            /* valid when diverged */
} sy_ab_layer_numerics;

typedef struct sy_ab_checkpoint_numerics {
    uint32_t step, layer;         /* B's step; layer == layers for the logits */
    uint32_t rows;                /* rows compared (rows after a token difference are skipped) */
    sy_ab_diff diff;
} sy_ab_checkpoint_numerics;

typedef struct sy_ab_numerics {
    uint32_t layers, batch, input_len, output_len;
    int synthetic_context;                    /* workload.context: synthetic; no prefill, positions from input_len */
    sy_ab_layer_numerics *per_layer;          /* layers + 1 entries; the last is the logits */
    sy_ab_checkpoint_numerics *checkpoints;   /* every (B step, layer) in stream order */
    size_t n_checkpoints;
    int diverged;                             /* any compared value's bits differ */
    uint32_t first_layer;                     /* first divergence in stream order (step, layer, row) */
    sy_ab_where first;
    uint32_t *tokens[SY_AB_SIDES];            /* batch x output_len generated ids */
    uint64_t tokens_differing;
    int tokens_differ;
    uint32_t first_token_seq, first_token_index;
    double logits_rel_l2;                     /* over every compared logits row */
    double tolerance;
    char tolerance_source[128];               /* "--tolerance" or "default for bf16 vs fp8_e4m3 KV" */
    int within_tolerance;
    uint64_t spill_bytes;                     /* size of A's checkpoint spill */
} sy_ab_numerics;

typedef enum sy_ab_verdict {
    SY_AB_NOT_MEASURED = 0,
    SY_AB_NO_DIFFERENCE = 1,      /* the interval contains 1 */
    SY_AB_B_FASTER = 2,
    SY_AB_B_SLOWER = 3
} sy_ab_verdict;

typedef enum sy_ab_row_kind { SY_AB_ROW_END_TO_END = 0, SY_AB_ROW_PREFILL, SY_AB_ROW_DECODE_STEP, SY_AB_ROW_OP } sy_ab_row_kind;

/* Median and 95% interval of one side's samples. */
typedef struct sy_ab_side_stats {
    double median, ci_low, ci_high;
} sy_ab_side_stats;

typedef struct sy_ab_timing_row {
    char name[40];                /* "end-to-end", "prefill (TTFT)", "decode step (TPOT)", "op attention" */
    int32_t kind;                 /* sy_ab_row_kind */
    int32_t slot;                 /* sy_kind for op rows, SY_OPSLOT_ENGINE for the engine's own time; -1 */
    double *samples[SY_AB_SIDES]; /* one per round, ms */
    sy_ab_side_stats side[SY_AB_SIDES];
    double ratio, ratio_low, ratio_high; /* median B / median A and its interval */
    int32_t verdict;              /* sy_ab_verdict */
    char summary[96];             /* "B faster by 12.3% (10.9–13.8%)" */
} sy_ab_timing_row;

typedef struct sy_ab_timing {
    uint32_t rounds;
    char *order;                  /* "ABBAABBA..." : the run order */
    uint32_t resamples;
    uint64_t seed;
    sy_ab_timing_row *rows;
    size_t n_rows;
} sy_ab_timing;

typedef struct sy_ab_report {
    char *label[SY_AB_SIDES];
    sy_ab_config_change *changes;
    size_t n_changes;
    sy_ab_slot_choice *slots;
    size_t n_slots;
    sy_ab_numerics numerics;
    sy_ab_timing timing;          /* rounds == 0: not measured */
    int exit_code;                /* 0 numerics within tolerance, 1 beyond */
} sy_ab_report;

/* Runs the whole comparison: diffs, numerics pass, timing rounds. Both sides must have passed
 * sy_ab_check_same_inputs. On failure (an engine or I/O error) the report is freed. */
sy_status sy_ab_run(const sy_ab_side sides[SY_AB_SIDES], const sy_ab_options *opts, sy_ab_report *out,
                    sy_error *err);
void sy_ab_report_free(sy_ab_report *r);

/* The pieces sy_ab_run is made of, for tests and embedders. */
void sy_ab_config_diff(const sy_config *a, const sy_config *b, sy_ab_report *r);
void sy_ab_plugin_diff(const sy_composition *a, const sy_composition *b, sy_ab_report *r);
/* Default tolerance for a pair of KV dtypes (sy_dtype); writes why into `why`. */
double sy_ab_default_tolerance(int32_t kv_a, int32_t kv_b, char *why, size_t len);

/* ------------------------------------------------------------------------------------------ */
/* Writers                                                                                     */

void sy_ab_write_text(const sy_ab_report *r, FILE *f);
void sy_ab_write_json(const sy_ab_report *r, FILE *f);
void sy_ab_write_html(const sy_ab_report *r, FILE *f);

const char *sy_ab_verdict_name(int32_t verdict); /* "faster", "slower", "no_significant_difference", ... */
const char *sy_ab_row_kind_name(int32_t kind);  /* "end_to_end", "prefill", "decode_step", "op" */

#endif
