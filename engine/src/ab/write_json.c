/* The machine-readable report; docs/ab-report.schema.json is its schema (keep the two together). */
#include <stdio.h>

#include "ab/ab.h"
#include "ab/report_common.h"
#include "util/json.h"

#define SY_AB_JSON_FORMAT 1

static void key_str(sy_json *j, const char *k, const char *v)
{
    sy_json_key(j, k);
    sy_json_string(j, v);
}

static void key_uint(sy_json *j, const char *k, uint64_t v)
{
    sy_json_key(j, k);
    sy_json_uint(j, v);
}

static void key_double(sy_json *j, const char *k, double v)
{
    sy_json_key(j, k);
    sy_json_double(j, v);
}

static void key_bool(sy_json *j, const char *k, int v)
{
    sy_json_key(j, k);
    sy_json_bool(j, v);
}

static void write_where(sy_json *j, const char *k, int valid, const sy_ab_where *w)
{
    sy_json_key(j, k);
    if (!valid) {
        sy_json_null(j);
        return;
    }
    sy_json_begin_object(j);
    key_uint(j, "step", w->step);
    key_uint(j, "row", w->row);
    key_uint(j, "seq", w->seq);
    key_uint(j, "position", w->pos);
    key_uint(j, "column", w->col);
    sy_json_end_object(j);
}

static void write_diff(sy_json *j, const sy_ab_diff *d)
{
    key_uint(j, "values", d->values);
    key_uint(j, "differing_values", d->differing);
    key_uint(j, "nonfinite_differences", d->nonfinite);
    key_double(j, "max_abs", sy_ab_diff_max_abs(d));
    key_double(j, "rel_l2", sy_ab_diff_rel_l2(d));
    key_bool(j, "bit_exact", d->differing == 0);
}

static void write_sides(const sy_ab_report *r, sy_json *j)
{
    sy_json_key(j, "sides");
    sy_json_begin_object(j);
    key_str(j, "a", r->label[SY_AB_A]);
    key_str(j, "b", r->label[SY_AB_B]);
    sy_json_end_object(j);
}

static void write_config_diff(const sy_ab_report *r, sy_json *j)
{
    sy_json_key(j, "config_diff");
    sy_json_begin_array(j);
    for (size_t i = 0; i < r->n_changes; i++) {
        const sy_ab_config_change *c = &r->changes[i];
        sy_json_begin_object(j);
        key_str(j, "key", c->key);
        for (int s = 0; s < SY_AB_SIDES; s++) {
            sy_json_key(j, s == SY_AB_A ? "a" : "b");
            sy_json_begin_object(j);
            key_str(j, "value", c->value[s]);
            key_str(j, "source", c->source[s]);
            sy_json_end_object(j);
        }
        sy_json_end_object(j);
    }
    sy_json_end_array(j);
}

static void write_plugins(const sy_ab_report *r, sy_json *j)
{
    sy_json_key(j, "plugins");
    sy_json_begin_array(j);
    for (size_t i = 0; i < r->n_slots; i++) {
        const sy_ab_slot_choice *s = &r->slots[i];
        sy_json_begin_object(j);
        key_str(j, "slot", s->slot);
        for (int k = 0; k < SY_AB_SIDES; k++) {
            sy_json_key(j, k == SY_AB_A ? "a" : "b");
            sy_json_begin_object(j);
            key_str(j, "choice", s->choice[k]);
            key_str(j, "file", s->file[k]);
            sy_json_end_object(j);
        }
        key_bool(j, "same", s->same);
        sy_json_end_object(j);
    }
    sy_json_end_array(j);
}

static void write_tokens(const sy_ab_numerics *n, sy_json *j)
{
    sy_json_key(j, "tokens");
    sy_json_begin_object(j);
    key_bool(j, "identical", !n->tokens_differ);
    key_uint(j, "count", (uint64_t)n->batch * n->output_len);
    key_uint(j, "differing", n->tokens_differing);
    sy_json_key(j, "first_difference");
    if (n->tokens_differ) {
        size_t i = (size_t)n->first_token_seq * n->output_len + n->first_token_index;
        sy_json_begin_object(j);
        key_uint(j, "seq", n->first_token_seq);
        key_uint(j, "index", n->first_token_index);
        key_uint(j, "a", n->tokens[SY_AB_A][i]);
        key_uint(j, "b", n->tokens[SY_AB_B][i]);
        sy_json_end_object(j);
    } else {
        sy_json_null(j);
    }
    for (int s = 0; s < SY_AB_SIDES; s++) {
        sy_json_key(j, s == SY_AB_A ? "a" : "b");
        sy_json_begin_array(j);
        for (uint32_t b = 0; b < n->batch; b++) {
            sy_json_begin_array(j);
            for (uint32_t t = 0; t < n->output_len; t++)
                sy_json_uint(j, n->tokens[s][(size_t)b * n->output_len + t]);
            sy_json_end_array(j);
        }
        sy_json_end_array(j);
    }
    sy_json_end_object(j);
}

static void write_numerics(const sy_ab_report *r, sy_json *j)
{
    const sy_ab_numerics *n = &r->numerics;
    char name[24];
    sy_json_key(j, "numerics");
    sy_json_begin_object(j);
    key_str(j, "reference", "a");
    key_uint(j, "layers", n->layers);
    key_uint(j, "batch", n->batch);
    key_uint(j, "input_len", n->input_len);
    key_uint(j, "output_len", n->output_len);
    key_str(j, "context", n->synthetic_context ? "synthetic" : "prefill");
    key_bool(j, "bit_exact", !n->diverged);
    sy_json_key(j, "first_difference");
    if (n->diverged) {
        sy_json_begin_object(j);
        sy_ab_checkpoint_name(n, n->first_layer, name, sizeof name);
        key_str(j, "checkpoint", name);
        key_uint(j, "layer", n->first_layer);
        key_uint(j, "step", n->first.step);
        key_uint(j, "row", n->first.row);
        key_uint(j, "seq", n->first.seq);
        key_uint(j, "position", n->first.pos);
        key_uint(j, "column", n->first.col);
        sy_json_end_object(j);
    } else {
        sy_json_null(j);
    }
    key_double(j, "logits_rel_l2", n->logits_rel_l2);
    key_double(j, "tolerance", n->tolerance);
    key_str(j, "tolerance_source", n->tolerance_source);
    key_bool(j, "within_tolerance", n->within_tolerance);
    key_uint(j, "spill_bytes", n->spill_bytes);
    sy_json_key(j, "per_layer");
    sy_json_begin_array(j);
    for (uint32_t l = 0; l <= n->layers; l++) {
        const sy_ab_layer_numerics *ln = &n->per_layer[l];
        sy_json_begin_object(j);
        sy_ab_checkpoint_name(n, l, name, sizeof name);
        key_str(j, "checkpoint", name);
        key_uint(j, "layer", l);
        key_uint(j, "rows_compared", ln->rows_compared);
        key_uint(j, "rows_skipped", ln->rows_skipped);
        write_diff(j, &ln->diff);
        write_where(j, "first_difference", ln->diverged, &ln->first);
        sy_json_end_object(j);
    }
    sy_json_end_array(j);
    sy_json_key(j, "checkpoints");
    sy_json_begin_array(j);
    for (size_t i = 0; i < n->n_checkpoints; i++) {
        const sy_ab_checkpoint_numerics *cp = &n->checkpoints[i];
        sy_json_begin_object(j);
        key_uint(j, "step", cp->step);
        key_uint(j, "layer", cp->layer);
        key_uint(j, "rows", cp->rows);
        write_diff(j, &cp->diff);
        sy_json_end_object(j);
    }
    sy_json_end_array(j);
    write_tokens(n, j);
    sy_json_end_object(j);
}

static void write_side_stats(sy_json *j, const char *k, const sy_ab_side_stats *s, const double *samples,
                             uint32_t rounds)
{
    sy_json_key(j, k);
    sy_json_begin_object(j);
    key_double(j, "median_ms", s->median);
    key_double(j, "ci_low_ms", s->ci_low);
    key_double(j, "ci_high_ms", s->ci_high);
    sy_json_key(j, "samples_ms");
    sy_json_begin_array(j);
    for (uint32_t i = 0; i < rounds; i++)
        sy_json_double(j, samples[i]);
    sy_json_end_array(j);
    sy_json_end_object(j);
}

static void write_timing(const sy_ab_report *r, sy_json *j)
{
    const sy_ab_timing *t = &r->timing;
    sy_json_key(j, "timing");
    if (!t->rounds) {
        sy_json_null(j);
        return;
    }
    sy_json_begin_object(j);
    key_uint(j, "rounds", t->rounds);
    key_str(j, "order", t->order);
    sy_json_key(j, "bootstrap");
    sy_json_begin_object(j);
    key_uint(j, "resamples", t->resamples);
    char seed[24];
    snprintf(seed, sizeof seed, "%#llx", (unsigned long long)t->seed);
    key_str(j, "seed", seed);
    key_double(j, "confidence", SY_AB_CONFIDENCE);
    key_str(j, "method", "paired percentile bootstrap over rounds");
    sy_json_end_object(j);
    sy_json_key(j, "rows");
    sy_json_begin_array(j);
    for (size_t i = 0; i < t->n_rows; i++) {
        const sy_ab_timing_row *row = &t->rows[i];
        sy_json_begin_object(j);
        key_str(j, "name", row->name);
        key_str(j, "kind", sy_ab_row_kind_name(row->kind));
        sy_json_key(j, "slot");
        if (row->kind != SY_AB_ROW_OP)
            sy_json_null(j);
        else
            sy_json_string(j, row->slot == SY_OPSLOT_ENGINE ? "engine" : sy_kind_name(row->slot));
        write_side_stats(j, "a", &row->side[SY_AB_A], row->samples[SY_AB_A], t->rounds);
        write_side_stats(j, "b", &row->side[SY_AB_B], row->samples[SY_AB_B], t->rounds);
        int measured = row->verdict != SY_AB_NOT_MEASURED;
        sy_json_key(j, "ratio");
        measured ? sy_json_double(j, row->ratio) : sy_json_null(j);
        sy_json_key(j, "ratio_ci_low");
        measured ? sy_json_double(j, row->ratio_low) : sy_json_null(j);
        sy_json_key(j, "ratio_ci_high");
        measured ? sy_json_double(j, row->ratio_high) : sy_json_null(j);
        key_str(j, "verdict", sy_ab_verdict_name(row->verdict));
        key_str(j, "summary", row->summary);
        sy_json_end_object(j);
    }
    sy_json_end_array(j);
    sy_json_end_object(j);
}

void sy_ab_write_json(const sy_ab_report *r, FILE *f)
{
    sy_json j;
    sy_json_init(&j, f, 1);
    sy_json_begin_object(&j);
    key_str(&j, "switchyard", sy_version());
    key_str(&j, "report", "ab");
    key_uint(&j, "format", SY_AB_JSON_FORMAT);
    write_sides(r, &j);
    write_config_diff(r, &j);
    write_plugins(r, &j);
    write_numerics(r, &j);
    write_timing(r, &j);
    sy_json_key(&j, "result");
    sy_json_begin_object(&j);
    key_uint(&j, "exit_code", (uint64_t)r->exit_code);
    key_bool(&j, "numerics_within_tolerance", r->exit_code == 0);
    char sentence[320];
    sy_ab_numerics_sentence(&r->numerics, sentence, sizeof sentence);
    key_str(&j, "summary", sentence);
    sy_json_end_object(&j);
    sy_json_end_object(&j);
    fputc('\n', f);
}
