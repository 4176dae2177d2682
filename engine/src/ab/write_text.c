/* The report for a terminal: the four sections in order, then the result line. */
#include <stdio.h>
#include <string.h>

#include "ab/ab.h"
#include "ab/report_common.h"

static int widest(int w, const char *s)
{
    int n = (int)strlen(s);
    return n > w ? n : w;
}

static void write_config_diff(const sy_ab_report *r, FILE *f)
{
    if (!r->n_changes) {
        fprintf(f, "config diff: none (the resolved configs are identical)\n");
        return;
    }
    fprintf(f, "config diff: %zu key%s differ%s (value, then where it came from)\n", r->n_changes,
            r->n_changes == 1 ? "" : "s", r->n_changes == 1 ? "s" : "");
    int wk = 3, wa = 1;
    char buf[512];
    for (size_t i = 0; i < r->n_changes; i++) {
        wk = widest(wk, r->changes[i].key);
        snprintf(buf, sizeof buf, "%s (%s)", r->changes[i].value[SY_AB_A], r->changes[i].source[SY_AB_A]);
        wa = widest(wa, buf);
    }
    fprintf(f, "  %-*s  %-*s  %s\n", wk, "key", wa, "A", "B");
    for (size_t i = 0; i < r->n_changes; i++) {
        const sy_ab_config_change *c = &r->changes[i];
        snprintf(buf, sizeof buf, "%s (%s)", c->value[SY_AB_A], c->source[SY_AB_A]);
        fprintf(f, "  %-*s  %-*s  %s (%s)\n", wk, c->key, wa, buf, c->value[SY_AB_B], c->source[SY_AB_B]);
    }
}

static void write_plugins(const sy_ab_report *r, FILE *f)
{
    int ws = 4, wa = 1;
    for (size_t i = 0; i < r->n_slots; i++) {
        ws = widest(ws, r->slots[i].slot);
        wa = widest(wa, r->slots[i].choice[SY_AB_A]);
    }
    fprintf(f, "\nplugins:\n  %-*s  %-*s  %s\n", ws, "slot", wa, "A", "B");
    for (size_t i = 0; i < r->n_slots; i++) {
        const sy_ab_slot_choice *s = &r->slots[i];
        fprintf(f, "  %-*s  %-*s  %s%s\n", ws, s->slot, wa, s->choice[SY_AB_A], s->choice[SY_AB_B],
                s->same ? "" : "   <- differs");
    }
}

static void write_numerics(const sy_ab_report *r, FILE *f)
{
    const sy_ab_numerics *n = &r->numerics;
    fprintf(f, "\nnumerics (A is the reference; every layer's output at every step, the logits, the tokens):\n");
    if (n->synthetic_context)
        fprintf(f, "  synthetic context: %u seeded positions, no prefill; positions %u to %u compared\n", n->input_len,
                n->input_len, n->input_len + n->output_len - 1);
    fprintf(f, "  %-10s %8s %10s %10s  %-9s  %s\n", "checkpoint", "rows", "max abs", "rel L2", "bit-exact",
            "first difference");
    uint64_t skipped = 0;
    for (uint32_t l = 0; l <= n->layers; l++) {
        const sy_ab_layer_numerics *ln = &n->per_layer[l];
        char name[24], mx[32], rel[32], where[128] = "-";
        sy_ab_checkpoint_name(n, l, name, sizeof name);
        sy_ab_format_metric(sy_ab_diff_max_abs(&ln->diff), mx, sizeof mx);
        sy_ab_format_metric(sy_ab_diff_rel_l2(&ln->diff), rel, sizeof rel);
        if (ln->diverged)
            snprintf(where, sizeof where, "step %u row %u (seq %u, position %u, column %u)", ln->first.step,
                     ln->first.row, ln->first.seq, ln->first.pos, ln->first.col);
        fprintf(f, "  %-10s %8llu %10s %10s  %-9s  %s\n", name, (unsigned long long)ln->rows_compared, mx, rel,
                ln->diverged ? "no" : "yes", where);
        skipped += ln->rows_skipped;
    }
    if (n->diverged) {
        char name[24];
        sy_ab_checkpoint_name(n, n->first_layer, name, sizeof name);
        fprintf(f, "  first divergence: %s at step %u, row %u (seq %u, position %u, column %u)\n", name, n->first.step,
                n->first.row, n->first.seq, n->first.pos, n->first.col);
    } else {
        fprintf(f, "  first divergence: none\n");
    }
    uint64_t total = (uint64_t)n->batch * n->output_len;
    if (!n->tokens_differ) {
        fprintf(f, "  generated tokens: identical (%u sequences x %u)\n", n->batch, n->output_len);
    } else {
        size_t i = (size_t)n->first_token_seq * n->output_len + n->first_token_index;
        fprintf(f, "  generated tokens: %llu of %llu differ; first at seq %u, index %u (A %u, B %u)\n",
                (unsigned long long)n->tokens_differing, (unsigned long long)total, n->first_token_seq,
                n->first_token_index, n->tokens[SY_AB_A][i], n->tokens[SY_AB_B][i]);
    }
    if (skipped)
        fprintf(f, "  not compared: %llu rows (after a sequence's first differing token its inputs differ)\n",
                (unsigned long long)skipped);
    char sentence[320];
    sy_ab_numerics_sentence(n, sentence, sizeof sentence);
    fprintf(f, "  %s\n", sentence);
}

static void write_timing(const sy_ab_report *r, FILE *f)
{
    const sy_ab_timing *t = &r->timing;
    if (!t->rounds) {
        fprintf(f, "\ntiming: not measured (--rounds 0)\n");
        return;
    }
    fprintf(f, "\ntiming: %u rounds in the order %.8s..., medians in ms, B/A with a %.0f%% bootstrap interval\n",
            t->rounds, t->order, 100 * SY_AB_CONFIDENCE);
    if (r->numerics.synthetic_context)
        fprintf(f, "  prefill (TTFT): not measured (synthetic context: no prefill runs)\n");
    fprintf(f, "  %-20s %10s %10s %7s  %-15s  %s\n", "", "A", "B", "B/A", "interval", "verdict");
    for (size_t i = 0; i < t->n_rows; i++) {
        const sy_ab_timing_row *row = &t->rows[i];
        char ci[48] = "-", ratio[16] = "-";
        if (row->verdict != SY_AB_NOT_MEASURED) {
            snprintf(ratio, sizeof ratio, "%.3f", row->ratio);
            snprintf(ci, sizeof ci, "%.3f\u2013%.3f", row->ratio_low, row->ratio_high);
        }
        /* The en dash is three bytes and one column wide. */
        int ci_width = row->verdict != SY_AB_NOT_MEASURED ? 17 : 15;
        fprintf(f, "  %-20s %10.3f %10.3f %7s  %-*s  %s\n", row->name, row->side[SY_AB_A].median,
                row->side[SY_AB_B].median, ratio, ci_width, ci, row->summary);
    }
}

void sy_ab_write_text(const sy_ab_report *r, FILE *f)
{
    fprintf(f, "switchyard ab\n  A  %s\n  B  %s\n\n", r->label[SY_AB_A], r->label[SY_AB_B]);
    write_config_diff(r, f);
    write_plugins(r, f);
    write_numerics(r, f);
    write_timing(r, f);
    fprintf(f, "\nresult: numerics %s tolerance (exit %d)\n", r->exit_code == 0 ? "within" : "beyond", r->exit_code);
}
