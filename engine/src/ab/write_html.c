/* The report for people: one self-contained page (inline CSS and SVG, no script, nothing fetched).
 * Element ids are stable (docs/ab.md lists them): summary, config-diff, plugins, numerics, tokens,
 * chart-numerics, timing, chart-ratio, chart-phases, chart-ops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab.h"
#include "ab/report_common.h"
#include "ab/svg_chart.h"
#include "util/strbuf.h"

static const char style[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1140px;color:#222}"
    "h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;font-size:13px;margin:6px 0}"
    "th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.differs td{background:#fff4e0}.ok{color:#2e8b3a;font-weight:600}.bad{color:#c0392b;font-weight:600}"
    ".badge{display:inline-block;padding:4px 10px;border-radius:4px;color:#fff;font-weight:600}"
    ".badge.ok{background:#2e8b3a;color:#fff}.badge.bad{background:#c0392b;color:#fff}"
    "code{font-size:12px}svg.chart{display:block;max-width:100%;height:auto;margin:10px 0}"
    "svg .title{font-size:15px;font-weight:600}svg .label,svg .value,svg .note{font-size:12px}"
    "svg .tick{font-size:11px;fill:#555}svg .grid{stroke:#e4e4e4}svg .note{fill:#666}svg .note.good{fill:#2e8b3a;font-weight:600}"
    "svg .marker{stroke:#444;stroke-dasharray:4 3}svg .whisker line{stroke:#222;stroke-width:1.2}"
    "svg .interval line{stroke-width:2}p.legend{font-size:13px;color:#555}";

static void esc(FILE *f, const char *s)
{
    sy_html_escape(f, s);
}

static void cell(FILE *f, const char *s)
{
    fputs("<td>", f);
    esc(f, s);
    fputs("</td>", f);
}

static void num_cell(FILE *f, const char *s)
{
    fputs("<td class=\"num\">", f);
    esc(f, s);
    fputs("</td>", f);
}

static void write_summary(const sy_ab_report *r, FILE *f)
{
    char sentence[320];
    sy_ab_numerics_sentence(&r->numerics, sentence, sizeof sentence);
    fputs("<section id=\"summary\"><h1>switchyard ab</h1>\n<table>", f);
    fputs("<tr><th>A</th>", f);
    cell(f, r->label[SY_AB_A]);
    fputs("</tr><tr><th>B</th>", f);
    cell(f, r->label[SY_AB_B]);
    fputs("</tr></table>\n", f);
    fprintf(f, "<p><span id=\"result\" class=\"badge %s\">numerics %s tolerance (exit %d)</span> ",
            r->exit_code == 0 ? "ok" : "bad", r->exit_code == 0 ? "within" : "beyond", r->exit_code);
    esc(f, sentence);
    fputs("</p></section>\n", f);
}

static void write_config_diff(const sy_ab_report *r, FILE *f)
{
    fputs("<section><h2>Config diff</h2>\n", f);
    fputs("<table id=\"config-diff\"><tr><th>key</th><th>A</th><th>source A</th><th>B</th><th>source B</th></tr>\n",
          f);
    for (size_t i = 0; i < r->n_changes; i++) {
        const sy_ab_config_change *c = &r->changes[i];
        fputs("<tr class=\"differs\">", f);
        cell(f, c->key);
        cell(f, c->value[SY_AB_A]);
        cell(f, c->source[SY_AB_A]);
        cell(f, c->value[SY_AB_B]);
        cell(f, c->source[SY_AB_B]);
        fputs("</tr>\n", f);
    }
    if (!r->n_changes)
        fputs("<tr><td colspan=\"5\">none: the resolved configs are identical</td></tr>\n", f);
    fputs("</table></section>\n", f);
}

static void write_plugins(const sy_ab_report *r, FILE *f)
{
    fputs("<section><h2>Plugins</h2>\n<table id=\"plugins\"><tr><th>slot</th><th>A</th><th>B</th></tr>\n", f);
    for (size_t i = 0; i < r->n_slots; i++) {
        const sy_ab_slot_choice *s = &r->slots[i];
        fprintf(f, "<tr%s>", s->same ? "" : " class=\"differs\"");
        cell(f, s->slot);
        for (int k = 0; k < SY_AB_SIDES; k++) {
            fputs("<td title=\"", f);
            esc(f, s->file[k]);
            fputs("\">", f);
            esc(f, s->choice[k]);
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table></section>\n", f);
}

static void write_numerics(const sy_ab_report *r, FILE *f)
{
    const sy_ab_numerics *n = &r->numerics;
    fputs("<section><h2>Numerics</h2>\n<p class=\"legend\">A is the reference. Every layer's output at every "
          "step and the logits are compared where both sides saw the same tokens.</p>\n",
          f);
    if (n->synthetic_context)
        fprintf(f,
                "<p class=\"legend\">Synthetic context: %u seeded positions per sequence and no prefill; positions "
                "%u to %u are compared.</p>\n",
                n->input_len, n->input_len, n->input_len + n->output_len - 1);
    fputs("<table id=\"numerics\"><tr><th>checkpoint</th><th>rows compared</th><th>rows skipped</th><th>max abs</th>"
          "<th>rel L2</th><th>bit-exact</th><th>first difference (step, row: seq, position, column)</th></tr>\n",
          f);
    sy_svg_bar_row *bars = sy_xcalloc(n->layers + 1, sizeof *bars);
    char (*names)[24] = sy_xcalloc(n->layers + 1, sizeof *names);
    for (uint32_t l = 0; l <= n->layers; l++) {
        const sy_ab_layer_numerics *ln = &n->per_layer[l];
        char mx[32], rel[32], buf[128];
        sy_ab_checkpoint_name(n, l, names[l], sizeof names[l]);
        sy_ab_format_metric(sy_ab_diff_max_abs(&ln->diff), mx, sizeof mx);
        double rel_l2 = sy_ab_diff_rel_l2(&ln->diff);
        sy_ab_format_metric(rel_l2, rel, sizeof rel);
        fprintf(f, "<tr%s>", ln->diverged ? " class=\"differs\"" : "");
        cell(f, names[l]);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)ln->rows_compared);
        num_cell(f, buf);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)ln->rows_skipped);
        num_cell(f, buf);
        num_cell(f, mx);
        num_cell(f, rel);
        fprintf(f, "<td class=\"%s\">%s</td>", ln->diverged ? "bad" : "ok", ln->diverged ? "no" : "yes");
        if (ln->diverged)
            snprintf(buf, sizeof buf, "step %u, row %u: seq %u, position %u, column %u", ln->first.step,
                     ln->first.row, ln->first.seq, ln->first.pos, ln->first.col);
        else
            snprintf(buf, sizeof buf, "-");
        cell(f, buf);
        fputs("</tr>\n", f);
        bars[l].label = names[l];
        bars[l].value[0] = rel_l2;
        if (rel_l2 == 0) {
            bars[l].note = "bit-exact";
            bars[l].note_good = 1;
        }
        else if (isnan(rel_l2))
            bars[l].note = "not finite (NaN or infinity)";
    }
    fputs("</table>\n", f);
    fputs("<p id=\"tokens\">", f);
    if (!n->tokens_differ) {
        fprintf(f, "Generated tokens: <span class=\"ok\">identical</span> (%u sequences &times; %u).", n->batch,
                n->output_len);
    } else {
        size_t i = (size_t)n->first_token_seq * n->output_len + n->first_token_index;
        fprintf(f,
                "Generated tokens: <span class=\"bad\">%llu of %llu differ</span>; the first at sequence %u, index %u "
                "(A %u, B %u).",
                (unsigned long long)n->tokens_differing, (unsigned long long)n->batch * n->output_len,
                n->first_token_seq, n->first_token_index, n->tokens[SY_AB_A][i], n->tokens[SY_AB_B][i]);
    }
    if (n->diverged) {
        char name[24];
        sy_ab_checkpoint_name(n, n->first_layer, name, sizeof name);
        fprintf(f, " First divergence: <b>%s</b> at step %u, row %u (sequence %u, position %u).", name, n->first.step,
                n->first.row, n->first.seq, n->first.pos);
    } else {
        fputs(" Every compared checkpoint is bit-exact.", f);
    }
    fputs("</p>\n", f);
    char marker[64];
    snprintf(marker, sizeof marker, "tolerance %g", n->tolerance);
    sy_svg_bar_chart chart = {.id = "chart-numerics",
                              .title = "Relative L2 difference per checkpoint (log scale; dashed: the logits tolerance)",
                              .unit = "||B - A|| / ||A||",
                              .series = 1,
                              .series_name = {"B vs A", ""},
                              .log_scale = 1,
                              .marker = n->tolerance,
                              .marker_label = marker};
    sy_svg_bars(f, &chart, bars, n->layers + 1);
    free(bars);
    free(names);
    fputs("</section>\n", f);
}

static void timing_bars(const sy_ab_timing *t, FILE *f, const char *id, const char *title, int ops)
{
    sy_svg_bar_row *bars = sy_xcalloc(t->n_rows, sizeof *bars);
    size_t n = 0;
    for (size_t i = 0; i < t->n_rows; i++) {
        const sy_ab_timing_row *row = &t->rows[i];
        if ((row->kind == SY_AB_ROW_OP) != ops)
            continue;
        sy_svg_bar_row *b = &bars[n++];
        b->label = row->name;
        b->has_interval = 1;
        for (int s = 0; s < SY_AB_SIDES; s++) {
            b->value[s] = row->side[s].median;
            b->low[s] = row->side[s].ci_low;
            b->high[s] = row->side[s].ci_high;
        }
        if (row->verdict == SY_AB_NOT_MEASURED && row->side[SY_AB_A].median == 0 && row->side[SY_AB_B].median == 0)
            b->note = "not measured";
    }
    sy_svg_bar_chart chart = {.id = id,
                              .title = title,
                              .unit = "ms per workload repetition (median over rounds; whiskers: 95% interval)",
                              .series = 2,
                              .series_name = {"A", "B"}};
    if (!ops)
        chart.unit = "ms (median over rounds; whiskers: 95% interval)";
    sy_svg_bars(f, &chart, bars, n);
    free(bars);
}

static void write_timing(const sy_ab_report *r, FILE *f)
{
    const sy_ab_timing *t = &r->timing;
    fputs("<section><h2>Timing</h2>\n", f);
    if (!t->rounds) {
        fputs("<p id=\"timing\">Not measured (--rounds 0).</p></section>\n", f);
        return;
    }
    fprintf(f,
            "<p class=\"legend\">%u rounds in the order <code>%.16s&hellip;</code>; medians over rounds, ratio of "
            "medians B/A with a %.0f%% paired bootstrap interval (%u resamples).</p>\n",
            t->rounds, t->order, 100 * SY_AB_CONFIDENCE, t->resamples);
    fputs("<table id=\"timing\"><tr><th>row</th><th>A median ms</th><th>B median ms</th><th>B/A</th>"
          "<th>95% interval</th><th>verdict</th></tr>\n",
          f);
    sy_svg_ratio_row *ratios = sy_xcalloc(t->n_rows, sizeof *ratios);
    for (size_t i = 0; i < t->n_rows; i++) {
        const sy_ab_timing_row *row = &t->rows[i];
        char a[32], b[32], ratio[32] = "-", ci[48] = "-";
        snprintf(a, sizeof a, "%.3f", row->side[SY_AB_A].median);
        snprintf(b, sizeof b, "%.3f", row->side[SY_AB_B].median);
        int measured = row->verdict != SY_AB_NOT_MEASURED;
        if (measured) {
            snprintf(ratio, sizeof ratio, "%.3f", row->ratio);
            snprintf(ci, sizeof ci, "%.3f\u2013%.3f", row->ratio_low, row->ratio_high);
        }
        const char *cls = row->verdict == SY_AB_B_FASTER ? "ok" : row->verdict == SY_AB_B_SLOWER ? "bad" : "";
        fputs("<tr>", f);
        cell(f, row->name);
        num_cell(f, a);
        num_cell(f, b);
        num_cell(f, ratio);
        num_cell(f, ci);
        fprintf(f, "<td class=\"%s\">", cls);
        esc(f, row->summary);
        fputs("</td></tr>\n", f);
        ratios[i] = (sy_svg_ratio_row){row->name, row->ratio, row->ratio_low, row->ratio_high,
                                       !measured                           ? -1
                                       : row->verdict == SY_AB_B_FASTER    ? 1
                                       : row->verdict == SY_AB_B_SLOWER    ? 2
                                                                           : 0,
                                       row->summary};
    }
    fputs("</table>\n", f);
    sy_svg_ratios(f, "chart-ratio", "Ratio B/A per row with its 95% interval (green: B faster, red: B slower)", ratios,
                  t->n_rows);
    free(ratios);
    timing_bars(t, f, "chart-phases",
                r->numerics.synthetic_context ? "End-to-end and decode step (synthetic context: no prefill)"
                                              : "End-to-end, prefill and decode step",
                0);
    timing_bars(t, f, "chart-ops", "Time per op slot", 1);
    fputs("</section>\n", f);
}

void sy_ab_write_html(const sy_ab_report *r, FILE *f)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
          "img-src data:\">\n<title>switchyard ab: ",
          f);
    esc(f, r->label[SY_AB_A]);
    fputs(" vs ", f);
    esc(f, r->label[SY_AB_B]);
    fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n", style);
    write_summary(r, f);
    write_config_diff(r, f);
    write_plugins(r, f);
    write_numerics(r, f);
    write_timing(r, f);
    fprintf(f, "<p class=\"legend\">switchyard %s</p>\n</body></html>\n", sy_version());
}
