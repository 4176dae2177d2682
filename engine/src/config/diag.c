/* Diagnostics: collected during a run, sorted and printed once in the GNU form. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "util/strbuf.h"

void sy_diags_add(sy_diags *d, int32_t severity, const char *origin, uint32_t line, uint32_t col, const char *fmt, ...)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 16;
        d->items = sy_xrealloc(d->items, d->cap * sizeof *d->items);
    }
    sy_str msg = {0};
    va_list ap;
    va_start(ap, fmt);
    sy_str_vappendf(&msg, fmt, ap);
    va_end(ap);
    sy_diag *g = &d->items[d->n];
    g->severity = severity;
    g->origin = sy_strdup(origin && origin[0] ? origin : "<config>");
    g->line = line;
    g->col = line ? (col ? col : 1) : 0;
    g->message = msg.data ? msg.data : sy_strdup("");
    g->seq = d->n;
    d->n++;
}

void sy_diags_add_at(sy_diags *d, int32_t severity, sy_mark at, const char *fmt, ...)
{
    sy_str msg = {0};
    va_list ap;
    va_start(ap, fmt);
    sy_str_vappendf(&msg, fmt, ap);
    va_end(ap);
    sy_diags_add(d, severity, at.origin, at.line, at.col, "%s", msg.data ? msg.data : "");
    sy_str_free(&msg);
}

/* Files sort before the layers that override them, in precedence order. */
static int origin_rank(const char *origin)
{
    if (strcmp(origin, SY_ORIGIN_ENV) == 0)
        return 1;
    if (strncmp(origin, "--", 2) == 0) /* --set and the other options that set keys */
        return 2;
    return 0;
}

static int cmp_diag(const void *pa, const void *pb)
{
    const sy_diag *a = pa, *b = pb;
    int ra = origin_rank(a->origin), rb = origin_rank(b->origin);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    int c = strcmp(a->origin, b->origin);
    if (c)
        return c;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int same_diag(const sy_diag *a, const sy_diag *b)
{
    return a->severity == b->severity && a->line == b->line && a->col == b->col && strcmp(a->origin, b->origin) == 0 &&
           strcmp(a->message, b->message) == 0;
}

void sy_diags_sort(sy_diags *d)
{
    if (d->n < 2)
        return;
    qsort(d->items, d->n, sizeof *d->items, cmp_diag);
    /* Checking several files reports each environment warning once per file: keep one. */
    size_t kept = 1;
    for (size_t i = 1; i < d->n; i++) {
        if (same_diag(&d->items[i], &d->items[kept - 1])) {
            free(d->items[i].origin);
            free(d->items[i].message);
            continue;
        }
        d->items[kept++] = d->items[i];
    }
    d->n = kept;
}

size_t sy_diags_count(const sy_diags *d, int32_t severity)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        n += d->items[i].severity == severity;
    return n;
}

static const char *severity_name(int32_t s)
{
    return s == SY_SEV_ERROR ? "error" : s == SY_SEV_WARNING ? "warning" : "note";
}

void sy_diag_format(const sy_diag *g, char *buf, size_t len)
{
    if (g->line)
        snprintf(buf, len, "%s:%u:%u: %s: %s", g->origin, g->line, g->col, severity_name(g->severity), g->message);
    else
        snprintf(buf, len, "%s: %s: %s", g->origin, severity_name(g->severity), g->message);
}

void sy_diags_print(const sy_diags *d, FILE *f)
{
    for (size_t i = 0; i < d->n; i++) {
        const sy_diag *g = &d->items[i];
        if (g->line)
            fprintf(f, "%s:%u:%u: %s: %s\n", g->origin, g->line, g->col, severity_name(g->severity), g->message);
        else
            fprintf(f, "%s: %s: %s\n", g->origin, severity_name(g->severity), g->message);
    }
}

void sy_diags_free(sy_diags *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->items[i].origin);
        free(d->items[i].message);
    }
    free(d->items);
    memset(d, 0, sizeof *d);
}
