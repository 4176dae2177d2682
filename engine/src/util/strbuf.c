#include "util/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sy_status sy_fail(sy_error *err, sy_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return status;
}

static void out_of_memory(void)
{
    fputs("switchyard: out of host memory\n", stderr);
    abort();
}

void *sy_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *sy_xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q)
        out_of_memory();
    return q;
}

char *sy_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = sy_xcalloc(n, 1);
    memcpy(d, s, n);
    return d;
}

void sy_str_vappendf(sy_str *s, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if (s->len + (size_t)n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap < s->len + (size_t)n + 1)
            cap *= 2;
        s->data = sy_xrealloc(s->data, cap);
        s->cap = cap;
    }
    vsnprintf(s->data + s->len, s->cap - s->len, fmt, ap);
    s->len += (size_t)n;
}

void sy_str_appendf(sy_str *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sy_str_vappendf(s, fmt, ap);
    va_end(ap);
}

void sy_str_free(sy_str *s)
{
    free(s->data);
    s->data = NULL;
    s->len = s->cap = 0;
}

char *sy_asprintf(const char *fmt, ...)
{
    sy_str s = {0};
    va_list ap;
    va_start(ap, fmt);
    sy_str_vappendf(&s, fmt, ap);
    va_end(ap);
    return s.data ? s.data : sy_strdup("");
}
