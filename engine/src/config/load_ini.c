/* INI loader: inih parses; sections become the first key level ([kv_cache] layout = nhd is
 * kv_cache.layout). Debian builds libinih with INI_HANDLER_LINENO=1 (its handler call passes the
 * line number as a fifth argument) but installs a header that defaults the macro to 0 and a .pc
 * file without the flag, so the macro is set here before the include.
 *
 * inih gives the line, not the column, and reports only the first bad line; columns come from the
 * raw line, and every line inih did not hand to us is classified here so that all syntax errors
 * are reported. A value in double quotes is a string ("64" is not a number), as in YAML. Lines
 * longer than SY_CFG_MAX_INI_LINE are reported and blanked before inih sees them, because inih
 * would split them into two lines and shift every later line number. */
#define INI_HANDLER_LINENO 1
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/tree.h"
#include "util/strbuf.h"

typedef struct ini_reader_state {
    sy_tree *t;
    sy_diags *d;
    const char *text;
    size_t *line_start; /* byte offset of each line (index 0 = line 1) */
    size_t n_lines;
    unsigned char *handled;
    char *prev_key;
    int prev_line;
    int any_pair; /* inih handed over a key line, good or bad */
} ini_reader_state;

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static uint32_t char_col(const char *line, size_t off)
{
    uint32_t col = 1;
    for (size_t i = 0; i < off; i++)
        col += ((unsigned char)line[i] & 0xC0) != 0x80;
    return col;
}

/* Start of a line's text; line 1 without its byte-order mark, which inih skips too. */
static const char *line_text(const ini_reader_state *s, int lineno)
{
    const char *p = s->text + s->line_start[lineno - 1];
    if (lineno == 1 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF)
        p += 3;
    return p;
}

static size_t line_len(const char *p)
{
    const char *nl = strchr(p, '\n');
    return nl ? (size_t)(nl - p) : strlen(p);
}

static char *trimmed(const char *s)
{
    while (is_space(*s))
        s++;
    size_t n = strlen(s);
    while (n && is_space(s[n - 1]))
        n--;
    char *r = sy_xcalloc(1, n + 1);
    memcpy(r, s, n);
    return r;
}

/* Offset of the ';' that inih takes for an inline comment in a value starting at `from` (one after
 * whitespace, as inih's INI_INLINE_COMMENT_PREFIXES rule), or len when there is none. */
static size_t inline_comment(const char *line, size_t len, size_t from)
{
    int after_space = 0;
    for (size_t i = from; i < len; i++) {
        if (line[i] == ';' && after_space)
            return i;
        after_space = is_space(line[i]); /* the other isspace() bytes never pass the text check */
    }
    return len;
}

static int on_pair(void *user, const char *section, const char *name, const char *value, int lineno)
{
    ini_reader_state *s = user;
    if (lineno < 1 || (size_t)lineno > s->n_lines)
        return 1; /* cannot happen with inih's own counting; never index out of range */
    s->handled[lineno - 1] = 1;
    s->any_pair = 1;
    const char *line = line_text(s, lineno);
    size_t len = line_len(line), key_off = 0;
    while (key_off < len && is_space(line[key_off]))
        key_off++;
    char *sec = trimmed(section);
    char *key = sec[0] ? sy_asprintf("%s.%s", sec, name) : sy_strdup(name);
    free(sec);
    sy_mark key_mark = {s->t->origin, (uint32_t)lineno, char_col(line, key_off)};
    /* inih treats an indented line after a key as more of that key's value. */
    if (key_off > 0 && s->prev_key && strcmp(s->prev_key, key) == 0 && s->prev_line < lineno) {
        sy_diags_add(s->d, SY_SEV_ERROR, s->t->origin, key_mark.line, key_mark.col,
                     "continuation line: an indented line continues the value of '%s'; write values on one line "
                     "(lists comma-separated)",
                     key);
        free(key);
        return 1;
    }
    free(s->prev_key);
    s->prev_key = sy_strdup(key);
    s->prev_line = lineno;
    /* The value starts after the first '=' or ':' (inih splits at the first of either). */
    size_t delim = key_off;
    while (delim < len && line[delim] != '=' && line[delim] != ':')
        delim++;
    size_t value_off = delim + 1;
    while (value_off < len && is_space(line[value_off]))
        value_off++;
    sy_mark value_mark = {s->t->origin, (uint32_t)lineno, char_col(line, value_off < len ? value_off : len)};
    if (!name[0]) {
        sy_diags_add(s->d, SY_SEV_ERROR, s->t->origin, key_mark.line, key_mark.col, "empty key name before '%c'",
                     delim < len ? line[delim] : '=');
        free(key);
        return 1;
    }
    size_t vlen = strlen(value);
    if (vlen && value[0] == '"' && (vlen == 1 || value[vlen - 1] != '"')) {
        /* inih ends a value at a ';' after a space even inside quotes, so `"out ;x.json"` would
         * arrive as `"out`; INI has no escape for it. */
        size_t comment = inline_comment(line, len, delim + 1);
        if (comment < len)
            sy_diags_add(s->d, SY_SEV_ERROR, s->t->origin, (uint32_t)lineno, char_col(line, comment),
                         "%s: ';' after a space starts a comment in INI, even inside quotes, cutting the value to "
                         "'%s'; INI cannot hold ' ;' in a value: write this config in YAML",
                         key, value);
        else
            sy_diags_add(s->d, SY_SEV_ERROR, s->t->origin, value_mark.line, value_mark.col,
                         "%s: the quote that opens the value is never closed", key);
        free(key);
        return 1;
    }
    sy_tree_item *it = sy_tree_add(s->t, key, key_mark, s->d);
    free(key);
    if (!it)
        return 1;
    if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"') {
        char *inner = sy_xcalloc(1, vlen - 1);
        memcpy(inner, value + 1, vlen - 2);
        sy_tree_item_add_value(it, inner, 1, value_mark);
        free(inner);
    } else
        sy_tree_item_add_value(it, vlen ? value : NULL, 0, value_mark);
    return 1;
}

/* A section header that no key follows sets nothing, but its name must still be a section:
 * `[modle]` is a typo. It becomes an empty-mapping item, as YAML's `modle: {}`. */
static void add_empty_section(ini_reader_state *s, size_t header_line)
{
    const char *line = line_text(s, (int)header_line + 1);
    size_t len = line_len(line), open = 0;
    while (open < len && line[open] != '[')
        open++;
    size_t start = open + 1;
    while (start < len && is_space(line[start]))
        start++;
    const char *close = memchr(line + start, ']', len - start);
    size_t end = close ? (size_t)(close - line) : start;
    while (end > start && is_space(line[end - 1]))
        end--;
    if (end == start)
        return; /* "[]": the top level, not a name */
    char *name = sy_xcalloc(1, end - start + 1);
    memcpy(name, line + start, end - start);
    sy_mark at = {s->t->origin, (uint32_t)header_line + 1, char_col(line, start)};
    sy_tree_item *it = sy_tree_add(s->t, name, at, s->d);
    if (it)
        it->is_empty_mapping = 1;
    free(name);
}

static void classify_unhandled(ini_reader_state *s, const unsigned char *too_long)
{
    size_t empty_section = (size_t)-1; /* header line of the section read last, while it has no key */
    for (size_t i = 0; i < s->n_lines; i++) {
        if (s->handled[i] || too_long[i]) {
            empty_section = (size_t)-1;
            continue;
        }
        const char *line = line_text(s, (int)i + 1);
        size_t len = line_len(line), off = 0;
        while (off < len && is_space(line[off]))
            off++;
        if (off == len || line[off] == ';' || line[off] == '#')
            continue;
        uint32_t col = char_col(line, off);
        if (line[off] == '[') {
            if (!memchr(line + off, ']', len - off)) {
                sy_diags_add(s->d, SY_SEV_ERROR, s->t->origin, (uint32_t)i + 1, col,
                             "syntax error: section header has no closing ']'");
                empty_section = (size_t)-1;
                continue;
            }
            if (empty_section != (size_t)-1)
                add_empty_section(s, empty_section);
            empty_section = i;
            continue;
        }
        empty_section = (size_t)-1;
        size_t shown = len - off > 40 ? 40 : len - off;
        while (shown && is_space(line[off + shown - 1]))
            shown--;
        sy_diags_add(s->d, SY_SEV_ERROR, s->t->origin, (uint32_t)i + 1, col,
                     "syntax error: expected 'key = value' or '[section]', got '%.*s%s'", (int)shown, line + off,
                     len - off > 40 ? "..." : "");
    }
    if (empty_section != (size_t)-1)
        add_empty_section(s, empty_section);
}

int sy_load_ini(const char *text, size_t len, sy_tree *t, sy_diags *d)
{
    ini_reader_state s = {0};
    s.t = t;
    s.d = d;
    for (size_t i = 0; i < len; i++)
        s.n_lines += text[i] == '\n';
    s.n_lines += len == 0 || text[len - 1] != '\n';
    s.line_start = sy_xcalloc(s.n_lines + 1, sizeof *s.line_start);
    s.handled = sy_xcalloc(s.n_lines + 1, 1);
    unsigned char *too_long = sy_xcalloc(s.n_lines + 1, 1);
    char *copy = sy_xcalloc(1, len + 1);
    size_t line = 0, start = 0, out = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != '\n')
            continue;
        size_t n = i - start;
        s.line_start[line] = out;
        if (n > SY_CFG_MAX_INI_LINE) {
            too_long[line] = 1;
            sy_diags_add(d, SY_SEV_ERROR, t->origin, (uint32_t)line + 1, SY_CFG_MAX_INI_LINE + 1,
                         "line is longer than %u characters (the limit for an INI line)", SY_CFG_MAX_INI_LINE);
        } else {
            memcpy(copy + out, text + start, n);
            out += n;
        }
        if (i < len)
            copy[out++] = '\n';
        start = i + 1;
        line++;
    }
    copy[out] = '\0';
    s.text = copy;
    int first_bad = ini_parse_string(copy, on_pair, &s);
    size_t before = d->n;
    classify_unhandled(&s, too_long);
    /* Safety net: inih found a bad line that the classification above did not explain. */
    if (first_bad > 0 && d->n == before && !too_long[first_bad - 1])
        sy_diags_add(d, SY_SEV_ERROR, t->origin, (uint32_t)first_bad, 1, "syntax error");
    if (first_bad < 0)
        sy_diags_add(d, SY_SEV_ERROR, t->origin, 0, 0, "out of memory while parsing INI");
    else if (first_bad == 0 && !s.any_pair)
        sy_diags_add(d, SY_SEV_ERROR, t->origin, 0, 0, "config has no keys (only comments or section headers)");
    free(s.prev_key);
    free(s.line_start);
    free(s.handled);
    free(too_long);
    free(copy);
    /* Unlike YAML, a bad INI line leaves the others readable: resolving them still finds more. */
    return first_bad >= 0;
}
