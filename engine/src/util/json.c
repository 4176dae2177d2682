#include "util/json.h"

#include <math.h>

void sy_json_init(sy_json *j, FILE *f, int pretty)
{
    j->f = f;
    j->depth = 0;
    j->need_comma[0] = 0;
    j->after_key = 0;
    j->pretty = pretty;
}

static void newline(sy_json *j)
{
    if (!j->pretty)
        return;
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

static void before_value(sy_json *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth > 0) {
        if (j->need_comma[j->depth])
            fputc(',', j->f);
        newline(j);
    }
    j->need_comma[j->depth] = 1;
}

static void open(sy_json *j, char c)
{
    before_value(j);
    fputc(c, j->f);
    if (j->depth < 63)
        j->depth++;
    j->need_comma[j->depth] = 0;
}

static void close_(sy_json *j, char c)
{
    int had = j->need_comma[j->depth];
    j->depth--;
    if (had)
        newline(j);
    fputc(c, j->f);
}

void sy_json_begin_object(sy_json *j) { open(j, '{'); }
void sy_json_end_object(sy_json *j) { close_(j, '}'); }
void sy_json_begin_array(sy_json *j) { open(j, '['); }
void sy_json_end_array(sy_json *j) { close_(j, ']'); }

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF), or 0 when p does not start one. */
static size_t utf8_sequence(const unsigned char *p)
{
    unsigned lo = 0x80, hi = 0xBF;
    size_t n;
    if (p[0] >= 0xC2 && p[0] <= 0xDF)
        n = 2;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        n = 3;
        lo = p[0] == 0xE0 ? 0xA0 : 0x80;
        hi = p[0] == 0xED ? 0x9F : 0xBF;
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        n = 4;
        lo = p[0] == 0xF0 ? 0x90 : 0x80;
        hi = p[0] == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* JSON text must be UTF-8: a byte that is not part of a well-formed sequence (a file name in
 * another encoding, say) is written as U+FFFD rather than making the whole document unreadable. */
void sy_json_escape(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) {
                fprintf(f, "\\u%04x", *p);
            } else if (*p < 0x80) {
                fputc(*p, f);
            } else {
                size_t n = utf8_sequence(p);
                if (n) {
                    fwrite(p, 1, n, f);
                    p += n - 1;
                } else {
                    fputs("\\ufffd", f);
                }
            }
        }
    }
}

void sy_json_key(sy_json *j, const char *key)
{
    before_value(j);
    fputc('"', j->f);
    sy_json_escape(j->f, key);
    fputs(j->pretty ? "\": " : "\":", j->f);
    j->after_key = 1;
}

void sy_json_string(sy_json *j, const char *s)
{
    before_value(j);
    if (!s) {
        fputs("null", j->f);
        return;
    }
    fputc('"', j->f);
    sy_json_escape(j->f, s);
    fputc('"', j->f);
}

void sy_json_int(sy_json *j, int64_t v)
{
    before_value(j);
    fprintf(j->f, "%lld", (long long)v);
}

void sy_json_uint(sy_json *j, uint64_t v)
{
    before_value(j);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void sy_json_double(sy_json *j, double v)
{
    before_value(j);
    if (isfinite(v))
        fprintf(j->f, "%.17g", v);
    else
        fputs("null", j->f);
}

void sy_json_bool(sy_json *j, int v)
{
    before_value(j);
    fputs(v ? "true" : "false", j->f);
}

void sy_json_null(sy_json *j)
{
    before_value(j);
    fputs("null", j->f);
}
