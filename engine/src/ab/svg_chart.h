/* Inline SVG charts for the HTML report: horizontal bars (one or two series, linear or log axis,
 * optional interval whiskers and a marker line) and a ratio plot (a point and interval per row
 * around a line at 1). Plain SVG elements only, no script, so the page renders anywhere. */
#ifndef SY_AB_SVG_CHART_H
#define SY_AB_SVG_CHART_H

#include <stdio.h>

typedef struct sy_svg_bar_row {
    const char *label;
    double value[2];
    double low[2], high[2];   /* interval whiskers, drawn when has_interval */
    int has_interval;
    const char *note;         /* drawn instead of the bars when set ("bit-exact", "not measured") */
    int note_good;            /* 1: the note is good news (drawn green) */
} sy_svg_bar_row;

typedef struct sy_svg_bar_chart {
    const char *id, *title, *unit;
    int series;               /* 1 or 2 */
    const char *series_name[2];
    int log_scale;            /* 1: log10 axis; values <= 0 need a note */
    double marker;            /* > 0: a dashed vertical line here (a tolerance) */
    const char *marker_label;
} sy_svg_bar_chart;

void sy_svg_bars(FILE *f, const sy_svg_bar_chart *c, const sy_svg_bar_row *rows, size_t n);

typedef struct sy_svg_ratio_row {
    const char *label;
    double ratio, low, high;
    int tone;                 /* 0 neutral, 1 better, 2 worse, -1 not measured */
    const char *summary;
} sy_svg_ratio_row;

void sy_svg_ratios(FILE *f, const char *id, const char *title, const sy_svg_ratio_row *rows, size_t n);

/* Text with <, >, &, " escaped. */
void sy_html_escape(FILE *f, const char *s);

#endif
