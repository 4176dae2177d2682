/* Parsing config text into typed values, and the canonical text of a value. The same rules serve
 * YAML scalars, INI values, environment values and --set, so a value means the same wherever it
 * is written. */
#include <errno.h>
#include <float.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/schema.h"
#include "util/strbuf.h"

void sy_cfg_value_free(sy_cfg_value *v)
{
    free(v->text);
    for (size_t i = 0; i < v->n_list; i++)
        free(v->list[i]);
    free(v->list);
    memset(v, 0, sizeof *v);
}

void sy_cfg_value_copy(sy_cfg_value *dst, const sy_cfg_value *src)
{
    *dst = *src;
    dst->text = src->text ? sy_strdup(src->text) : NULL;
    dst->list = src->n_list ? sy_xcalloc(src->n_list, sizeof *dst->list) : NULL;
    for (size_t i = 0; i < src->n_list; i++)
        dst->list[i] = sy_strdup(src->list[i]);
}

void sy_cfg_format_shortest(double v, bool as_float, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    for (int digits = 1; digits <= (as_float ? 9 : 17); digits++) {
        const int n = snprintf(buf, len, "%.*g", digits, v);
        /* a truncated text reads back as something else at every longer precision too */
        if (n < 0 || (size_t)n >= len)
            return;
        const double back = strtod(buf, NULL);
        if (as_float ? (float)back == (float)v : back == v)
            return;
    }
}

void sy_cfg_format_double(double v, char *buf, size_t len)
{
    sy_cfg_format_shortest(v, false, buf, len);
}

static int fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return 0;
}

static int is_identifier(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(s, yes[i]) == 0) {
            *out = 1;
            return 1;
        }
        if (strcmp(s, no[i]) == 0) {
            *out = 0;
            return 1;
        }
    }
    return 0;
}

/* Decimal only: "010" is ten, hex and octal prefixes are refused rather than guessed. */
static int parse_int(const char *s, int64_t *out)
{
    const char *p = s + (*s == '-' || *s == '+');
    if (!*p)
        return 0;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9')
            return 0;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return 0;
    *out = v;
    return 1;
}

static int parse_float(const char *s, double *out)
{
    char *end;
    if (!*s || strchr(s, 'x') || strchr(s, 'X'))
        return 0; /* strtod would take hex floats */
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno == ERANGE || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

/* Float keys are used as 32-bit floats (schema.h): a nonzero double below FLT_MIN would become 0
 * or a subnormal, one above FLT_MAX infinity, while `config explain` showed the number written. */
static int fits_float(double v)
{
    return v == 0 || (fabs(v) >= FLT_MIN && fabs(v) <= FLT_MAX);
}

static void quote_hint(char *why, size_t len, const char *what, const char *text, int quoted)
{
    if (quoted)
        fail(why, len, "expected %s, got the string \"%s\" (a quoted value is text; remove the quotes)", what, text);
    else
        fail(why, len, "expected %s, got '%s'", what, text);
}

static int parse_scalar(const sy_cfg_key *k, const char *text, int quoted, sy_cfg_value *out, char *why, size_t len)
{
    char allowed[512], num[40];
    memset(out, 0, sizeof *out);
    switch (k->type) {
    case SY_CFG_ENUM:
        for (uint32_t i = 0; k->choices[i]; i++)
            if (strcmp(k->choices[i], text) == 0) {
                out->choice = i;
                out->text = sy_strdup(text);
                out->set = 1;
                return 1;
            }
        sy_schema_allowed(k, allowed, sizeof allowed);
        return fail(why, len, "'%s' is not one of: %s", text, allowed);
    case SY_CFG_INT:
        if (quoted || !parse_int(text, &out->i)) {
            quote_hint(why, len, "an integer", text, quoted);
            return 0;
        }
        if ((double)out->i < k->min || (double)out->i > k->max) {
            sy_schema_allowed(k, allowed, sizeof allowed);
            return fail(why, len, "%s is out of range %s", text, allowed);
        }
        out->text = sy_asprintf("%lld", (long long)out->i);
        out->set = 1;
        return 1;
    case SY_CFG_FLOAT:
        if (k->word && strcmp(text, k->word) == 0) {
            out->f = k->word_value;
            out->is_word = 1;
            out->text = sy_strdup(text);
            out->set = 1;
            return 1;
        }
        if (quoted || !parse_float(text, &out->f)) {
            char what[64];
            snprintf(what, sizeof what, "a number%s%s%s", k->word ? " or '" : "", k->word ? k->word : "",
                     k->word ? "'" : "");
            quote_hint(why, len, what, text, quoted);
            return 0;
        }
        if ((k->flags & SY_CFG_POSITIVE) ? !(out->f > 0 && out->f <= k->max) : (out->f < k->min || out->f > k->max)) {
            sy_schema_allowed(k, allowed, sizeof allowed);
            return fail(why, len, "%s is out of range: %s", text, allowed);
        }
        if (!fits_float(out->f))
            return fail(why, len,
                        "%s is outside float range: the key is used as a 32-bit float, so a value other than 0 must "
                        "be between %.9g and %.9g in magnitude",
                        text, (double)FLT_MIN, (double)FLT_MAX);
        sy_cfg_format_double(out->f, num, sizeof num);
        out->text = sy_strdup(num);
        out->set = 1;
        return 1;
    case SY_CFG_BOOL:
        if (quoted || !parse_bool(text, &out->b)) {
            quote_hint(why, len, "true or false", text, quoted);
            return 0;
        }
        out->text = sy_strdup(out->b ? "true" : "false");
        out->set = 1;
        return 1;
    case SY_CFG_STRING:
        if ((k->flags & SY_CFG_IDENTIFIER) && !is_identifier(text))
            return fail(why, len, "'%s' is not a name (lower-case letters, digits and '_')", text);
        out->text = sy_strdup(text);
        out->set = 1;
        return 1;
    case SY_CFG_LIST:
        break;
    }
    return fail(why, len, "internal: key of type %s parsed as a scalar", sy_cfg_type_name(k->type));
}

static void list_text(sy_cfg_value *out)
{
    sy_str s = {0};
    sy_str_appendf(&s, "[");
    for (size_t i = 0; i < out->n_list; i++)
        sy_str_appendf(&s, "%s%s", i ? ", " : "", out->list[i]);
    sy_str_appendf(&s, "]");
    out->text = s.data;
}

int sy_cfg_parse_list(const sy_cfg_key *k, const char *const *items, size_t n, sy_cfg_value *out, char *why,
                      size_t why_len)
{
    memset(out, 0, sizeof *out);
    if (k->type != SY_CFG_LIST)
        return fail(why, why_len, "expected a single %s value, got a list", sy_cfg_type_name(k->type));
    if (n > SY_CFG_MAX_LIST)
        return fail(why, why_len, "list has %zu entries, more than the limit of %u", n, SY_CFG_MAX_LIST);
    out->list = n ? sy_xcalloc(n, sizeof *out->list) : NULL;
    for (size_t i = 0; i < n; i++) {
        if (!items[i][0]) {
            sy_cfg_value_free(out);
            return fail(why, why_len, "entry %zu of the list is empty", i + 1);
        }
        out->list[out->n_list++] = sy_strdup(items[i]);
    }
    list_text(out);
    out->set = 1;
    return 1;
}

static char *trim_copy(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    char *r = sy_xcalloc(1, n + 1);
    memcpy(r, s, n);
    return r;
}

int sy_cfg_parse(const sy_cfg_key *k, const char *text, int quoted, sy_cfg_value *out, char *why, size_t why_len)
{
    if (k->type != SY_CFG_LIST)
        return parse_scalar(k, text, quoted, out, why, why_len);
    /* Comma-separated: how INI, --set and the environment write a list. Empty text = empty list. */
    char **parts = NULL;
    size_t n = 0;
    if (text[0]) {
        const char *p = text;
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            parts = sy_xrealloc(parts, (n + 1) * sizeof *parts);
            parts[n++] = trim_copy(p, len);
            if (!comma || n > SY_CFG_MAX_LIST)
                break;
            p = comma + 1;
        }
    }
    int ok = sy_cfg_parse_list(k, (const char *const *)parts, n, out, why, why_len);
    for (size_t i = 0; i < n; i++)
        free(parts[i]);
    free(parts);
    return ok;
}
