/* The key tree shared by the YAML and INI loaders, and the checks on a file before any parser
 * sees it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/tree.h"
#include "util/strbuf.h"

void sy_tree_init(sy_tree *t, const char *origin)
{
    memset(t, 0, sizeof *t);
    t->origin = origin;
}

static void free_scalar(sy_tree_scalar *s)
{
    free(s->text);
}

static void free_item(sy_tree_item *it)
{
    free(it->key);
    free_scalar(&it->value);
    for (size_t j = 0; j < it->n_values; j++)
        free_scalar(&it->values[j]);
    free(it->values);
}

void sy_tree_free(sy_tree *t)
{
    for (size_t i = 0; i < t->n; i++)
        free_item(&t->items[i]);
    free(t->items);
    t->items = NULL;
    t->n = t->cap = 0;
}

sy_tree_item *sy_tree_add(sy_tree *t, const char *key, sy_mark key_mark, sy_diags *d)
{
    if (t->n >= SY_CFG_MAX_ITEMS) {
        if (!t->too_many)
            sy_diags_add(d, SY_SEV_ERROR, t->origin, key_mark.line, key_mark.col,
                         "more than %u keys in one file (the limit for a config)", SY_CFG_MAX_ITEMS);
        t->too_many = 1;
        return NULL;
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 32;
        t->items = sy_xrealloc(t->items, t->cap * sizeof *t->items);
    }
    sy_tree_item *it = &t->items[t->n++];
    memset(it, 0, sizeof *it);
    it->key = sy_strdup(key);
    it->key_mark = key_mark;
    return it;
}

void sy_tree_item_add_value(sy_tree_item *it, const char *text, int quoted, sy_mark mark)
{
    sy_tree_scalar s = {text ? sy_strdup(text) : NULL, quoted, mark};
    if (!it->is_list) {
        free_scalar(&it->value);
        it->value = s;
        return;
    }
    it->values = sy_xrealloc(it->values, (it->n_values + 1) * sizeof *it->values);
    it->values[it->n_values++] = s;
}

static void drop_item(sy_tree *t, size_t i)
{
    sy_tree_item *it = &t->items[i];
    free_item(it);
    memmove(it, it + 1, (t->n - i - 1) * sizeof *it);
    t->n--;
}

void sy_tree_check_duplicates(sy_tree *t, sy_diags *d)
{
    /* Quadratic, but a config has tens of keys and the item count is capped. */
    for (size_t i = 0; i < t->n; i++) {
        if (t->items[i].is_empty_mapping)
            continue;
        for (size_t j = i + 1; j < t->n;) {
            if (t->items[j].is_empty_mapping || strcmp(t->items[i].key, t->items[j].key) != 0) {
                j++;
                continue;
            }
            const sy_mark *first = &t->items[i].key_mark, *again = &t->items[j].key_mark;
            sy_diags_add(d, SY_SEV_ERROR, t->origin, again->line, again->col,
                         "duplicate key '%s' (first set at %s:%u:%u)", t->items[j].key, t->origin, first->line,
                         first->col);
            sy_diags_add(d, SY_SEV_NOTE, t->origin, first->line, first->col, "'%s' first set here",
                         t->items[i].key);
            drop_item(t, j);
        }
    }
}

/* Column of byte `off` of a line in characters (UTF-8 continuation bytes do not count), 1-based. */
static uint32_t char_col(const char *line_start, size_t off)
{
    uint32_t col = 1;
    for (size_t i = 0; i < off; i++)
        col += ((unsigned char)line_start[i] & 0xC0) != 0x80;
    return col;
}

/* Length of the UTF-8 sequence at p (1..4), or 0 when it is not valid UTF-8. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        n = 2;
        cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3;
        cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4;
        cp = c & 0x07;
    } else
        return 0;
    if (n > left)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0; /* overlong, beyond Unicode, or a surrogate */
    return n;
}

int sy_config_check_text(const char *origin, const char *text, size_t len, sy_diags *d)
{
    if (len > SY_CFG_MAX_FILE_BYTES) {
        sy_diags_add(d, SY_SEV_ERROR, origin, 0, 0, "file is %zu bytes, larger than the %u-byte limit for a config",
                     len, SY_CFG_MAX_FILE_BYTES);
        return 0;
    }
    const unsigned char *p = (const unsigned char *)text;
    uint32_t line = 1;
    size_t line_start = 0;
    int blank = 1;
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        size_t n = utf8_len(p + i, len - i);
        int control = c < 0x20 ? (c != '\t' && c != '\n' && c != '\r') : c == 0x7F;
        if (n == 0 || control) {
            sy_diags_add(d, SY_SEV_ERROR, origin, line, char_col(text + line_start, i - line_start),
                         "binary file: byte 0x%02x is not %s; a config is UTF-8 text", c,
                         n == 0 ? "valid UTF-8" : "text");
            return 0;
        }
        if (c == '\n') {
            line++;
            line_start = i + 1;
        } else if (c != ' ' && c != '\t' && c != '\r')
            blank = 0;
        i += n;
    }
    if (blank) {
        sy_diags_add(d, SY_SEV_ERROR, origin, 0, 0, "empty config file");
        return 0;
    }
    return 1;
}

int sy_config_read_file(const char *path, char **text, size_t *len, sy_diags *d)
{
    struct stat st;
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        sy_diags_add(d, SY_SEV_ERROR, path, 0, 0, "cannot open config: %s", strerror(errno));
        return 0;
    }
    if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode)) {
        sy_diags_add(d, SY_SEV_ERROR, path, 0, 0, "cannot read config: %s",
                     S_ISDIR(st.st_mode) ? "it is a folder" : strerror(errno));
        fclose(f);
        return 0;
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > SY_CFG_MAX_FILE_BYTES) {
        sy_diags_add(d, SY_SEV_ERROR, path, 0, 0, "file is %lld bytes, larger than the %u-byte limit for a config",
                     (long long)st.st_size, SY_CFG_MAX_FILE_BYTES);
        fclose(f);
        return 0;
    }
    /* One byte more than expected tells a file that grew, or a too-large pipe, from a full one. */
    size_t want = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : SY_CFG_MAX_FILE_BYTES + 1;
    char *buf = sy_xcalloc(1, want + 1);
    size_t n = fread(buf, 1, want, f);
    int failed = ferror(f);
    int saved = errno;
    fclose(f);
    if (failed) {
        sy_diags_add(d, SY_SEV_ERROR, path, 0, 0, "cannot read config: %s", strerror(saved));
        free(buf);
        return 0;
    }
    if (!sy_config_check_text(path, buf, n, d)) {
        free(buf);
        return 0;
    }
    buf[n] = '\0';
    *text = sy_xrealloc(buf, n + 1);
    *len = n;
    return 1;
}
