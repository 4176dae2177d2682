#include "ab/svg_chart.h"

#include <math.h>

enum {
    CHART_WIDTH = 1120,
    LABEL_WIDTH = 190,
    PLOT_WIDTH = 640,
    TOP = 46,
    BAR_HEIGHT = 14,
    ROW_GAP = 12,
    AXIS_HEIGHT = 34
};

static const char *const series_color[2] = {"#3b6fb6", "#e08a1e"};

void sy_html_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A round step for about five ticks up to `top` (1, 2 or 5 times a power of ten). */
static double tick_step(double top)
{
    double raw = top / 5, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

typedef struct axis {
    int log_scale;
    double lo, hi; /* log axes: exponents */
} axis;

static double axis_x(const axis *a, double v)
{
    double t;
    if (a->log_scale)
        t = v > 0 ? (log10(v) - a->lo) / (a->hi - a->lo) : 0;
    else
        t = (v - a->lo) / (a->hi - a->lo);
    if (t < 0)
        t = 0;
    if (t > 1)
        t = 1;
    return LABEL_WIDTH + t * PLOT_WIDTH;
}

static void bar_axis(const sy_svg_bar_chart *c, const sy_svg_bar_row *rows, size_t n, axis *a)
{
    double top = 0, bottom = INFINITY;
    for (size_t i = 0; i < n; i++)
        for (int s = 0; s < c->series; s++) {
            if (rows[i].note)
                continue;
            double hi = rows[i].has_interval && rows[i].high[s] > rows[i].value[s] ? rows[i].high[s] : rows[i].value[s];
            double lo = rows[i].has_interval && rows[i].low[s] > 0 ? rows[i].low[s] : rows[i].value[s];
            if (isfinite(hi) && hi > top)
                top = hi;
            if (isfinite(lo) && lo > 0 && lo < bottom)
                bottom = lo;
        }
    if (c->marker > 0) {
        top = c->marker > top ? c->marker : top;
        bottom = c->marker < bottom ? c->marker : bottom;
    }
    a->log_scale = c->log_scale;
    if (c->log_scale) {
        a->hi = top > 0 ? ceil(log10(top)) : 0;
        a->lo = isfinite(bottom) ? floor(log10(bottom)) : a->hi - 8;
        if (a->hi - a->lo < 2)
            a->lo = a->hi - 2;
    } else {
        a->lo = 0;
        a->hi = top > 0 ? ceil(top * 1.05 / tick_step(top * 1.05)) * tick_step(top * 1.05) : 1;
    }
}

static void draw_ticks(FILE *f, const axis *a, double y0, double y1, const char *unit)
{
    if (a->log_scale) {
        for (double e = a->lo; e <= a->hi + 1e-9; e++) {
            double x = axis_x(a, pow(10, e));
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>\n", x, y0, x, y1);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"middle\">1e%+d</text>\n", x, y1 + 14,
                    (int)e);
        }
    } else {
        double step = tick_step(a->hi);
        for (double v = 0; v <= a->hi + step * 1e-9; v += step) {
            double x = axis_x(a, v);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>\n", x, y0, x, y1);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"middle\">%g</text>\n", x, y1 + 14, v);
        }
    }
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"tick\" text-anchor=\"middle\">", LABEL_WIDTH + PLOT_WIDTH / 2,
            y1 + 29);
    sy_html_escape(f, unit);
    fputs("</text>\n", f);
}

static void open_svg(FILE *f, const char *id, const char *title, double height)
{
    fprintf(f, "<svg id=\"%s\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %.0f\" "
               "width=\"%d\" height=\"%.0f\" role=\"img\" aria-label=\"",
            id, CHART_WIDTH, height, CHART_WIDTH, height);
    sy_html_escape(f, title);
    fputs("\">\n<text x=\"10\" y=\"22\" class=\"title\">", f);
    sy_html_escape(f, title);
    fputs("</text>\n", f);
}

static void row_label(FILE *f, double y, const char *label)
{
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"label\" text-anchor=\"end\">", LABEL_WIDTH - 8, y);
    sy_html_escape(f, label);
    fputs("</text>\n", f);
}

void sy_svg_bars(FILE *f, const sy_svg_bar_chart *c, const sy_svg_bar_row *rows, size_t n)
{
    axis a;
    bar_axis(c, rows, n, &a);
    double row_h = c->series * BAR_HEIGHT + ROW_GAP;
    double plot_bottom = TOP + n * row_h;
    open_svg(f, c->id, c->title, plot_bottom + AXIS_HEIGHT + 8);
    for (int s = 0; s < c->series && c->series > 1; s++) {
        double x = LABEL_WIDTH + s * 120.0;
        fprintf(f, "<rect x=\"%.0f\" y=\"30\" width=\"12\" height=\"10\" fill=\"%s\"/>", x, series_color[s]);
        fprintf(f, "<text x=\"%.0f\" y=\"39\" class=\"tick\">", x + 16);
        sy_html_escape(f, c->series_name[s]);
        fputs("</text>\n", f);
    }
    draw_ticks(f, &a, TOP - 4, plot_bottom, c->unit);
    for (size_t i = 0; i < n; i++) {
        const sy_svg_bar_row *r = &rows[i];
        double y = TOP + i * row_h;
        row_label(f, y + c->series * BAR_HEIGHT / 2.0 + 4, r->label);
        if (r->note) {
            fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"note%s\">", LABEL_WIDTH + 6,
                    y + c->series * BAR_HEIGHT / 2.0 + 4, r->note_good ? " good" : "");
            sy_html_escape(f, r->note);
            fputs("</text>\n", f);
            continue;
        }
        for (int s = 0; s < c->series; s++) {
            double by = y + s * BAR_HEIGHT, x1 = axis_x(&a, r->value[s]);
            fprintf(f, "<rect class=\"bar\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>",
                    LABEL_WIDTH, by, x1 - LABEL_WIDTH, BAR_HEIGHT - 2, series_color[s]);
            sy_html_escape(f, r->label);
            fprintf(f, " %s: %.4g %s</title></rect>\n", c->series > 1 ? c->series_name[s] : "", r->value[s], c->unit);
            if (r->has_interval) {
                double lx = axis_x(&a, r->low[s]), hx = axis_x(&a, r->high[s]), my = by + (BAR_HEIGHT - 2) / 2.0;
                fprintf(f,
                        "<g class=\"whisker\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
                        lx, my, hx, my, lx, my - 4, lx, my + 4, hx, my - 4, hx, my + 4);
            }
            fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"value\">%.4g</text>\n", LABEL_WIDTH + PLOT_WIDTH + 8,
                    by + BAR_HEIGHT - 3, r->value[s]);
        }
    }
    if (c->marker > 0) {
        double x = axis_x(&a, c->marker);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" class=\"marker\"/>\n", x, TOP - 8, x,
                plot_bottom);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"tick\" text-anchor=\"middle\">", x, TOP - 12);
        sy_html_escape(f, c->marker_label);
        fputs("</text>\n", f);
    }
    fputs("</svg>\n", f);
}

/* Ratios on a log axis, symmetric around 1, so that "twice as fast" and "twice as slow" are the
 * same distance from the line and no ratio lands below 0. */
void sy_svg_ratios(FILE *f, const char *id, const char *title, const sy_svg_ratio_row *rows, size_t n)
{
    static const char *const tone_color[3] = {"#777777", "#2e8b3a", "#c0392b"};
    static const double ticks[] = {0.1, 0.2, 0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 0.95, 0.98, 1,
                                   1.02, 1.05, 1.1, 1.25, 1.5, 2, 3, 4, 5, 10};
    double half = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].tone < 0)
            continue;
        if (rows[i].low > 0 && isfinite(rows[i].low))
            half = fmax(half, fabs(log10(rows[i].low)));
        if (rows[i].high > 0 && isfinite(rows[i].high))
            half = fmax(half, fabs(log10(rows[i].high)));
    }
    half = fmin(fmax(half * 1.1, log10(1.05)), 1.0); /* between 1.05x and 10x either way */
    axis a = {1, -half, half};
    double row_h = BAR_HEIGHT + ROW_GAP, plot_bottom = TOP + n * row_h;
    open_svg(f, id, title, plot_bottom + AXIS_HEIGHT + 8);
    for (size_t k = 0; k < sizeof ticks / sizeof ticks[0]; k++) {
        double e = log10(ticks[k]);
        if (e < -half - 1e-12 || e > half + 1e-12)
            continue;
        double x = axis_x(&a, ticks[k]);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>\n", x, TOP - 4, x,
                plot_bottom);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"middle\">%g</text>\n", x,
                plot_bottom + 14, ticks[k]);
    }
    double one = axis_x(&a, 1);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" class=\"marker\"/>\n", one, TOP - 8, one,
            plot_bottom);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"middle\">time B / time A, log scale "
               "(left of 1: B faster)</text>\n",
            one, plot_bottom + 29);
    for (size_t i = 0; i < n; i++) {
        const sy_svg_ratio_row *r = &rows[i];
        double y = TOP + i * row_h + BAR_HEIGHT / 2.0;
        row_label(f, y + 4, r->label);
        if (r->tone >= 0) {
            const char *color = tone_color[r->tone];
            double lx = axis_x(&a, r->low), hx = axis_x(&a, r->high), x = axis_x(&a, r->ratio);
            fprintf(f,
                    "<g class=\"interval\" stroke=\"%s\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
                    color, lx, y, hx, y, lx, y - 5, lx, y + 5, hx, y - 5, hx, y + 5);
            fprintf(f, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"><title>", x, y, color);
            sy_html_escape(f, r->summary);
            fputs("</title></circle>\n", f);
        }
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"value\">", LABEL_WIDTH + PLOT_WIDTH + 8, y + 4);
        sy_html_escape(f, r->summary);
        fputs("</text>\n", f);
    }
    fputs("</svg>\n", f);
}
