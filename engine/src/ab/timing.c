#include "ab/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab/stats.h"
#include "ab/step_rows.h"
#include "util/strbuf.h"

static sy_ab_timing_row *add_row(sy_ab_timing *t, const char *name, int32_t kind, int32_t slot)
{
    t->rows = sy_xrealloc(t->rows, (t->n_rows + 1) * sizeof *t->rows);
    sy_ab_timing_row *row = &t->rows[t->n_rows++];
    memset(row, 0, sizeof *row);
    snprintf(row->name, sizeof row->name, "%s", name);
    row->kind = kind;
    row->slot = slot;
    for (int s = 0; s < SY_AB_SIDES; s++)
        row->samples[s] = sy_xcalloc(t->rounds, sizeof(double));
    return row;
}

static void make_rows(sy_ab_timing *t, const sy_ab_side sides[SY_AB_SIDES])
{
    sy_ab_shape shape;
    sy_ab_shape_of(&sides[SY_AB_A].plan, &shape);
    add_row(t, "end-to-end", SY_AB_ROW_END_TO_END, -1);
    /* A synthetic context runs no prefill (the engine reports its TTFT as NaN): no row rather than
     * a number that was never measured. Both sides agree on the context (sy_ab_check_same_inputs). */
    if (shape.prefill_steps)
        add_row(t, "prefill (TTFT)", SY_AB_ROW_PREFILL, -1);
    if (shape.steps > shape.prefill_steps)
        add_row(t, "decode step (TPOT)", SY_AB_ROW_DECODE_STEP, -1);
    for (size_t i = 0; i < SY_COMPOSE_SLOTS; i++) {
        int32_t kind = sy_compose_slot_kind(i);
        char name[40];
        snprintf(name, sizeof name, "op %s", sy_kind_name(kind));
        add_row(t, name, SY_AB_ROW_OP, kind);
    }
    add_row(t, "op engine", SY_AB_ROW_OP, SY_OPSLOT_ENGINE);
}

static double sample_of(const sy_ab_timing_row *row, const sy_run_metrics *m)
{
    switch (row->kind) {
    case SY_AB_ROW_END_TO_END: return m->total_ms;
    case SY_AB_ROW_PREFILL: return m->ttft_ms;
    case SY_AB_ROW_DECODE_STEP: return m->tpot_median_ms;
    default: return m->op_ms[row->slot];
    }
}

static void summarize(sy_ab_timing *t, const sy_ab_side sides[SY_AB_SIDES])
{
    int per_op = sides[SY_AB_A].plan.per_op_timing && sides[SY_AB_B].plan.per_op_timing;
    for (size_t i = 0; i < t->n_rows; i++) {
        sy_ab_timing_row *row = &t->rows[i];
        sy_ab_bootstrap(row->samples[SY_AB_A], row->samples[SY_AB_B], t->rounds, t->resamples, t->seed,
                        SY_AB_CONFIDENCE, &row->side[SY_AB_A], &row->side[SY_AB_B], &row->ratio_low,
                        &row->ratio_high);
        double a = row->side[SY_AB_A].median, b = row->side[SY_AB_B].median;
        /* A slot with no time on either side (an op the composition fused away) has no ratio. */
        int measured = (row->kind != SY_AB_ROW_OP || per_op) && a > 0 && b > 0;
        row->ratio = measured ? b / a : 0;
        row->verdict = sy_ab_verdict_of(measured, row->ratio, row->ratio_low, row->ratio_high, row->summary,
                                        sizeof row->summary);
        /* One side spends no time in the slot (the other composition fused the op away): say so. */
        if (!measured && (row->kind != SY_AB_ROW_OP || per_op) && (a > 0) != (b > 0))
            snprintf(row->summary, sizeof row->summary, "not measured: no time on %s", a > 0 ? "B" : "A");
    }
}

sy_status sy_ab_timing_run(sy_engine *const engines[SY_AB_SIDES], const sy_ab_side sides[SY_AB_SIDES],
                           const sy_ab_options *opts, sy_ab_timing *out, sy_error *err)
{
    memset(out, 0, sizeof *out);
    out->rounds = opts->rounds;
    out->resamples = opts->bootstrap_resamples ? opts->bootstrap_resamples : SY_AB_BOOTSTRAP_RESAMPLES;
    out->seed = opts->bootstrap_seed ? opts->bootstrap_seed : SY_AB_BOOTSTRAP_SEED;
    out->order = sy_xcalloc(2 * (size_t)out->rounds + 1, 1);
    make_rows(out, sides);
    sy_run_metrics m;
    sy_status st = SY_OK;
    uint32_t warm[SY_AB_SIDES] = {sides[SY_AB_A].plan.warmup, sides[SY_AB_B].plan.warmup};
    uint32_t most = warm[SY_AB_A] > warm[SY_AB_B] ? warm[SY_AB_A] : warm[SY_AB_B];
    for (uint32_t w = 0; st == SY_OK && w < most; w++)
        for (int s = 0; st == SY_OK && s < SY_AB_SIDES; s++)
            if (w < warm[s])
                st = sy_engine_run(engines[s], &m, err);
    for (uint32_t i = 0; st == SY_OK && i < 2 * out->rounds; i++) {
        int s = sy_ab_round_side(i);
        if (opts->progress)
            opts->progress(opts->progress_user, "timing", i, 2 * out->rounds);
        st = sy_engine_run(engines[s], &m, err);
        if (st != SY_OK)
            break;
        out->order[i] = "AB"[s];
        for (size_t r = 0; r < out->n_rows; r++)
            out->rows[r].samples[s][i / 2] = sample_of(&out->rows[r], &m);
    }
    if (st != SY_OK) {
        sy_ab_timing_free(out);
        return st;
    }
    if (opts->progress)
        opts->progress(opts->progress_user, "timing", 2 * out->rounds, 2 * out->rounds);
    summarize(out, sides);
    return SY_OK;
}

void sy_ab_timing_free(sy_ab_timing *t)
{
    for (size_t i = 0; i < t->n_rows; i++)
        for (int s = 0; s < SY_AB_SIDES; s++)
            free(t->rows[i].samples[s]);
    free(t->rows);
    free(t->order);
    memset(t, 0, sizeof *t);
}
