#include "ab/numerics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ab/spill.h"
#include "ab/step_rows.h"
#include "util/strbuf.h"

enum { ROW_NONE = 0, ROW_COMPARED = 1, ROW_NO_REFERENCE = 2 };

/* What B's stream left for one (layer, sequence, position): 48 bytes, so a long workload on a big
 * model stays in the megabytes ((layers + 1) x batch x positions of them). */
typedef struct row_stat {
    double sum_sq_diff, sum_sq_ref;
    float max_abs;
    uint32_t differing, nonfinite, first_col;
    uint32_t step, row;
    uint8_t state;
} row_stat;

typedef struct pass {
    const sy_model_dims *dims;
    sy_ab_shape shape[SY_AB_SIDES];
    sy_ab_spill spill;
    row_stat *rows;
    float *ref;
    sy_status st;
    sy_error err;
} pass;

void sy_ab_compare_values(const float *ref, const float *x, uint32_t n, sy_ab_diff *d, uint32_t *first_col)
{
    double ssd = 0, ssr = 0, max_abs = d->max_abs;
    uint64_t differing = 0, nonfinite = 0;
    for (uint32_t i = 0; i < n; i++) {
        double r = ref[i];
        if (isfinite(r))
            ssr += r * r;
        uint32_t br, bx;
        memcpy(&br, &ref[i], sizeof br);
        memcpy(&bx, &x[i], sizeof bx);
        if (br == bx)
            continue;
        if (!differing)
            *first_col = i;
        differing++;
        double diff = (double)x[i] - r;
        if (!isfinite(diff)) {
            nonfinite++;
            continue;
        }
        ssd += diff * diff;
        if (fabs(diff) > max_abs)
            max_abs = fabs(diff);
    }
    d->sum_sq_diff += ssd;
    d->sum_sq_ref += ssr;
    d->max_abs = max_abs;
    d->values += n;
    d->differing += differing;
    d->nonfinite += nonfinite;
}

void sy_ab_diff_add(sy_ab_diff *acc, const sy_ab_diff *more)
{
    acc->sum_sq_diff += more->sum_sq_diff;
    acc->sum_sq_ref += more->sum_sq_ref;
    if (more->max_abs > acc->max_abs)
        acc->max_abs = more->max_abs;
    acc->values += more->values;
    acc->differing += more->differing;
    acc->nonfinite += more->nonfinite;
}

double sy_ab_diff_rel_l2(const sy_ab_diff *d)
{
    if (d->nonfinite)
        return NAN;
    if (d->sum_sq_diff == 0)
        return 0;
    return d->sum_sq_ref > 0 ? sqrt(d->sum_sq_diff / d->sum_sq_ref) : INFINITY;
}

static row_stat *stat_at(pass *p, uint32_t layer, uint32_t seq, uint32_t pos)
{
    const sy_ab_shape *s = &p->shape[SY_AB_A];
    return &p->rows[((size_t)layer * s->batch + seq) * s->positions + sy_ab_position_index(s, pos)];
}

/* The step's place in the workload, or an error when the engine's stream is not the workload's
 * (the two would have to be changed together). */
static int locate(pass *p, int side, uint32_t step, uint32_t layer, uint32_t rows, uint32_t cols, sy_ab_step *st)
{
    const sy_ab_shape *s = &p->shape[side];
    int logits = layer == p->dims->layers;
    uint32_t want_cols = logits ? p->dims->vocab : p->dims->hidden;
    if (layer > p->dims->layers || !sy_ab_step_of(s, step, st) || rows != sy_ab_step_rows(s, st, logits) ||
        cols != want_cols) {
        if (p->st == SY_OK)
            p->st = sy_fail(&p->err, SY_E_INTERNAL,
                            "side %c: checkpoint of step %u, layer %u has %u x %u values, the workload (%u steps, "
                            "batch %u, chunk %u) defines %u x %u",
                            "AB"[side], step, layer, rows, cols, s->steps, s->batch, s->chunk,
                            st->len ? sy_ab_step_rows(s, st, logits) : 0, want_cols);
        return 0;
    }
    return 1;
}

/* What to do with one sequence's rows of a checkpoint: n rows of consecutive positions from pos,
 * rows first_row .. first_row + n - 1 of the step. */
typedef void (*run_fn)(pass *p, uint32_t step, uint32_t layer, uint32_t seq, uint32_t pos, uint32_t n,
                       uint32_t first_row, const float *rows, uint32_t cols);

/* Splits a checkpoint into its sequences' runs of positions (one row each for the logits). */
static void each_run(pass *p, int side, uint32_t step, uint32_t layer, const float *data, uint32_t rows, uint32_t cols,
                     run_fn fn)
{
    sy_ab_step st = {0, 0};
    if (p->st != SY_OK || !locate(p, side, step, layer, rows, cols, &st))
        return;
    int logits = layer == p->dims->layers;
    uint32_t run = logits ? 1 : st.len;
    for (uint32_t b = 0; p->st == SY_OK && b < p->shape[side].batch; b++) {
        uint32_t seq, pos;
        sy_ab_row_place(&st, logits, b * run, &seq, &pos);
        fn(p, step, layer, seq, pos, run, b * run, data + (size_t)b * run * cols, cols);
    }
}

static void store_run(pass *p, uint32_t step, uint32_t layer, uint32_t seq, uint32_t pos, uint32_t n,
                      uint32_t first_row, const float *rows, uint32_t cols)
{
    (void)step, (void)first_row, (void)cols;
    p->st = sy_ab_spill_put(&p->spill, layer, seq, pos, n, rows, &p->err);
}

static void compare_run(pass *p, uint32_t step, uint32_t layer, uint32_t seq, uint32_t pos, uint32_t n,
                        uint32_t first_row, const float *rows, uint32_t cols)
{
    int have = 0;
    p->st = sy_ab_spill_get(&p->spill, layer, seq, pos, n, p->ref, &have, &p->err);
    for (uint32_t i = 0; p->st == SY_OK && i < n; i++) {
        row_stat *rs = stat_at(p, layer, seq, pos + i);
        rs->step = step;
        rs->row = first_row + i;
        if (!have) {
            rs->state = ROW_NO_REFERENCE;
            continue;
        }
        sy_ab_diff d = {0};
        uint32_t first = UINT32_MAX;
        sy_ab_compare_values(p->ref + (size_t)i * cols, rows + (size_t)i * cols, cols, &d, &first);
        rs->state = ROW_COMPARED;
        rs->sum_sq_diff = d.sum_sq_diff;
        rs->sum_sq_ref = d.sum_sq_ref;
        rs->max_abs = (float)d.max_abs;
        rs->differing = (uint32_t)d.differing;
        rs->nonfinite = (uint32_t)d.nonfinite;
        rs->first_col = first;
    }
}

static void store_a(void *user, uint32_t step, uint32_t layer, const float *data, uint32_t rows, uint32_t cols)
{
    each_run(user, SY_AB_A, step, layer, data, rows, cols, store_run);
}

static void compare_b(void *user, uint32_t step, uint32_t layer, const float *data, uint32_t rows, uint32_t cols)
{
    each_run(user, SY_AB_B, step, layer, data, rows, cols, compare_run);
}

static sy_status run_side(pass *p, sy_engine *e, sy_checkpoint_fn fn, uint32_t **tokens, sy_error *err)
{
    const sy_plan *plan = sy_engine_plan(e);
    sy_run_metrics m;
    sy_engine_set_checkpoint(e, fn, p);
    sy_status st = sy_engine_run(e, &m, err);
    sy_engine_set_checkpoint(e, NULL, NULL);
    if (st != SY_OK)
        return st;
    if (p->st != SY_OK) {
        *err = p->err;
        return p->st;
    }
    size_t n = (size_t)plan->batch * plan->output_len;
    *tokens = sy_xcalloc(n ? n : 1, sizeof **tokens);
    memcpy(*tokens, m.tokens, n * sizeof **tokens);
    return SY_OK;
}

/* Earlier in B's stream: by step, then layer (the logits last), then row. */
static int earlier(uint32_t step, uint32_t layer, uint32_t row, const sy_ab_where *w, uint32_t w_layer)
{
    if (step != w->step)
        return step < w->step;
    if (layer != w_layer)
        return layer < w_layer;
    return row < w->row;
}

static void compare_tokens(sy_ab_numerics *n, uint32_t *same_until)
{
    for (uint32_t b = 0; b < n->batch; b++) {
        same_until[b] = n->output_len;
        for (uint32_t t = 0; t < n->output_len; t++) {
            size_t i = (size_t)b * n->output_len + t;
            if (n->tokens[SY_AB_A][i] == n->tokens[SY_AB_B][i])
                continue;
            n->tokens_differing++;
            if (same_until[b] == n->output_len)
                same_until[b] = t;
            if (!n->tokens_differ || t < n->first_token_index) {
                n->tokens_differ = 1;
                n->first_token_seq = b;
                n->first_token_index = t;
            }
        }
    }
}

/* Folds the row summaries into per-layer and per-checkpoint results. A row at position pos of
 * sequence b saw the same input on both sides when pos < first_fed + (index of b's first
 * differing token): position first_fed + j is fed generated token j. */
static void finalize(pass *p, sy_ab_numerics *n)
{
    const sy_ab_shape *sb = &p->shape[SY_AB_B];
    uint32_t L = n->layers, per_step = L + 1;
    uint32_t *same_until = sy_xcalloc(n->batch, sizeof *same_until);
    compare_tokens(n, same_until);
    n->per_layer = sy_xcalloc(per_step, sizeof *n->per_layer);
    sy_ab_checkpoint_numerics *cps = sy_xcalloc((size_t)sb->steps * per_step, sizeof *cps);
    for (uint32_t layer = 0; layer <= L; layer++) {
        sy_ab_layer_numerics *ln = &n->per_layer[layer];
        ln->layer = layer;
        const sy_ab_shape *sa = &p->shape[SY_AB_A];
        for (uint32_t b = 0; b < n->batch; b++)
            for (uint32_t pos = sa->first_pos; pos < sa->first_pos + sa->positions; pos++) {
                const row_stat *rs = stat_at(p, layer, b, pos);
                if (rs->state == ROW_NONE)
                    continue;
                if (rs->state == ROW_NO_REFERENCE || pos >= sa->first_fed + same_until[b]) {
                    ln->rows_skipped++;
                    continue;
                }
                sy_ab_diff d = {.sum_sq_diff = rs->sum_sq_diff,
                                .sum_sq_ref = rs->sum_sq_ref,
                                .max_abs = rs->max_abs,
                                .values = layer < L ? p->dims->hidden : p->dims->vocab,
                                .differing = rs->differing,
                                .nonfinite = rs->nonfinite};
                sy_ab_diff_add(&ln->diff, &d);
                ln->rows_compared++;
                sy_ab_checkpoint_numerics *cp = &cps[(size_t)rs->step * per_step + layer];
                cp->rows++;
                sy_ab_diff_add(&cp->diff, &d);
                if (!rs->differing)
                    continue;
                sy_ab_where w = {rs->step, rs->row, b, pos, rs->first_col};
                if (!ln->diverged || earlier(w.step, layer, w.row, &ln->first, layer)) {
                    ln->diverged = 1;
                    ln->first = w;
                }
            }
        if (ln->diverged && (!n->diverged || earlier(ln->first.step, layer, ln->first.row, &n->first, n->first_layer))) {
            n->diverged = 1;
            n->first = ln->first;
            n->first_layer = layer;
        }
    }
    /* Checkpoints whose every row was skipped are left out: nothing of them was compared. */
    n->checkpoints = sy_xcalloc((size_t)sb->steps * per_step, sizeof *n->checkpoints);
    for (uint32_t s = 0; s < sb->steps; s++)
        for (uint32_t layer = 0; layer <= L; layer++) {
            sy_ab_checkpoint_numerics *cp = &cps[(size_t)s * per_step + layer];
            if (!cp->rows)
                continue;
            cp->step = s;
            cp->layer = layer;
            n->checkpoints[n->n_checkpoints++] = *cp;
        }
    free(cps);
    free(same_until);
    n->logits_rel_l2 = sy_ab_diff_rel_l2(&n->per_layer[L].diff);
}

sy_status sy_ab_numerics_run(sy_engine *const engines[SY_AB_SIDES], const sy_ab_side sides[SY_AB_SIDES],
                             const sy_ab_options *opts, sy_ab_numerics *out, sy_error *err)
{
    memset(out, 0, sizeof *out);
    pass p;
    memset(&p, 0, sizeof p);
    p.dims = &sides[SY_AB_A].plan.dims;
    for (int s = 0; s < SY_AB_SIDES; s++)
        sy_ab_shape_of(&sides[s].plan, &p.shape[s]);
    out->layers = p.dims->layers;
    out->batch = p.shape[SY_AB_A].batch;
    out->input_len = p.shape[SY_AB_A].input_len;
    out->output_len = p.shape[SY_AB_A].output_len;
    out->synthetic_context = sides[SY_AB_A].plan.synthetic_context;
    out->spill_bytes = sy_ab_spill_bytes(p.dims, &p.shape[SY_AB_A]);
    sy_status st = sy_ab_spill_open(&p.spill, opts->spill_dir, p.dims, &p.shape[SY_AB_A], err);
    if (st != SY_OK)
        return st;
    const sy_ab_shape *sa = &p.shape[SY_AB_A];
    p.rows = sy_xcalloc((size_t)(p.dims->layers + 1) * sa->batch * sa->positions, sizeof *p.rows);
    size_t widest = (size_t)p.shape[SY_AB_B].chunk * p.dims->hidden;
    p.ref = sy_xcalloc(widest > p.dims->vocab ? widest : p.dims->vocab, sizeof *p.ref);
    if (opts->progress)
        opts->progress(opts->progress_user, "numerics A", 0, 2);
    st = run_side(&p, engines[SY_AB_A], store_a, &out->tokens[SY_AB_A], err);
    if (st == SY_OK && opts->progress)
        opts->progress(opts->progress_user, "numerics B", 1, 2);
    if (st == SY_OK)
        st = run_side(&p, engines[SY_AB_B], compare_b, &out->tokens[SY_AB_B], err);
    if (st == SY_OK)
        finalize(&p, out);
    free(p.rows);
    free(p.ref);
    sy_ab_spill_close(&p.spill);
    if (st != SY_OK)
        sy_ab_numerics_free(out);
    return st;
}

void sy_ab_numerics_free(sy_ab_numerics *n)
{
    free(n->per_layer);
    free(n->checkpoints);
    for (int s = 0; s < SY_AB_SIDES; s++)
        free(n->tokens[s]);
    memset(n, 0, sizeof *n);
}
