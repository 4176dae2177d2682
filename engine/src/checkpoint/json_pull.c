#include "checkpoint/json_pull.h"

#include <string.h>

#include "util/strbuf.h"

void sy_jreader_init(sy_jreader *r, const char *origin, const void *text, size_t len)
{
    memset(r, 0, sizeof *r);
    r->origin = origin;
    r->text = text;
    r->len = len;
    yaml_parser_initialize(&r->parser);
    /* JSON is UTF-8 only: no byte-order-mark sniffing into UTF-16. */
    yaml_parser_set_encoding(&r->parser, YAML_UTF8_ENCODING);
    yaml_parser_set_input_string(&r->parser, r->text, len);
}

void sy_jreader_free(sy_jreader *r)
{
    if (r->has_event)
        yaml_event_delete(&r->event);
    r->has_event = 0;
    yaml_parser_delete(&r->parser);
}

/* libyaml marks count characters (a CRLF counts two); tokens arrive in input order, so one forward
 * cursor maps them to byte offsets in linear time. */
static size_t byte_at(sy_jreader *r, size_t chr)
{
    if (chr < r->cursor_chr)
        r->cursor_chr = r->cursor_byte = 0;
    while (r->cursor_chr < chr && r->cursor_byte < r->len) {
        r->cursor_byte++;
        while (r->cursor_byte < r->len && (r->text[r->cursor_byte] & 0xC0) == 0x80)
            r->cursor_byte++;
        r->cursor_chr++;
    }
    return r->cursor_byte;
}

static sy_status not_json(sy_jreader *r, size_t at, const char *why, sy_error *err)
{
    return sy_fail(err, SY_E_INVALID, "%s: not JSON at byte %zu: %s", r->origin, at, why);
}

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Between two tokens: whitespace, then `punct` when the grammar needs one, then whitespace. */
static int gap_ok(const unsigned char *s, size_t n, char punct)
{
    size_t i = 0;
    while (i < n && is_ws(s[i]))
        i++;
    if (punct) {
        if (i >= n || s[i] != (unsigned char)punct)
            return 0;
        i++;
        while (i < n && is_ws(s[i]))
            i++;
    }
    return i == n;
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int json_number(const unsigned char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i >= n)
        return 0;
    if (s[i] == '0')
        i++;
    else if (s[i] >= '1' && s[i] <= '9')
        while (i < n && is_digit(s[i]))
            i++;
    else
        return 0;
    if (i < n && s[i] == '.') {
        size_t first = ++i;
        while (i < n && is_digit(s[i]))
            i++;
        if (i == first)
            return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t first = i;
        while (i < n && is_digit(s[i]))
            i++;
        if (i == first)
            return 0;
    }
    return i == n;
}

static int is_hex(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The bytes between a string's quotes as written: only what JSON allows, and nothing that YAML
 * would decode differently from JSON. Returns why not, or NULL. */
static const char *string_problem(const unsigned char *s, size_t n, size_t *at)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        *at = i;
        if (c < 0x20)
            return "a raw control character inside a string (JSON needs a \\u escape)";
        if (c == '\\') {
            unsigned char e = i + 1 < n ? s[i + 1] : 0;
            if (e && strchr("\"\\/bfnrt", e)) {
                i += 2;
            } else if (e == 'u') {
                if (i + 6 > n || !is_hex(s[i + 2]) || !is_hex(s[i + 3]) || !is_hex(s[i + 4]) || !is_hex(s[i + 5]))
                    return "a \\u escape without four hex digits";
                i += 6;
            } else {
                return "an escape that JSON does not have";
            }
            continue;
        }
        if (c == 0xC2 && i + 1 < n && s[i + 1] == 0x85)
            return "a raw U+0085 inside a string (write it as \\u0085)";
        if (c == 0xE2 && i + 2 < n && s[i + 1] == 0x80 && (s[i + 2] == 0xA8 || s[i + 2] == 0xA9))
            return "a raw U+2028 or U+2029 inside a string (write it as a \\u escape)";
        i++;
    }
    return NULL;
}

/* A value (scalar or closed container) is complete: its parent moves on. */
static void value_done(sy_jreader *r)
{
    if (r->depth == 0) {
        r->started = 1;
        return;
    }
    r->want_value[r->depth - 1] = 0;
    r->items[r->depth - 1]++;
}

static sy_status next_event(sy_jreader *r, sy_error *err)
{
    if (r->has_event)
        yaml_event_delete(&r->event);
    r->has_event = 0;
    if (!yaml_parser_parse(&r->parser, &r->event)) {
        size_t at = byte_at(r, r->parser.problem_mark.index);
        return not_json(r, at, r->parser.problem ? r->parser.problem : "unreadable", err);
    }
    r->has_event = 1;
    return SY_OK;
}

sy_status sy_jreader_next(sy_jreader *r, sy_jtoken *t, sy_error *err)
{
    memset(t, 0, sizeof *t);
    for (;;) {
        if (r->finished) {
            t->type = SY_J_END;
            t->offset = r->len;
            return SY_OK;
        }
        sy_status st = next_event(r, err);
        if (st != SY_OK)
            return st;
        yaml_event_t *ev = &r->event;
        size_t start = byte_at(r, ev->start_mark.index);
        switch (ev->type) {
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_END_EVENT:
            continue; /* an explicit "..." is not whitespace: the closing gap check refuses it */
        case YAML_DOCUMENT_START_EVENT:
            if (!ev->data.document_start.implicit || ev->data.document_start.version_directive ||
                ev->data.document_start.tag_directives.start != ev->data.document_start.tag_directives.end)
                return not_json(r, start, "a YAML document marker or directive", err);
            continue;
        case YAML_STREAM_END_EVENT:
            if (!r->started)
                return not_json(r, r->len, "no value", err);
            if (!gap_ok(r->text + r->last_end, r->len - r->last_end, 0))
                return not_json(r, r->last_end, "text after the value", err);
            r->finished = 1;
            continue;
        case YAML_ALIAS_EVENT:
            return not_json(r, start, "a YAML alias", err);
        default:
            break;
        }
        if (r->started && r->depth == 0)
            return not_json(r, start, "a second value", err);

        int closing = ev->type == YAML_MAPPING_END_EVENT || ev->type == YAML_SEQUENCE_END_EVENT;
        int top = r->depth - 1;
        int key = !closing && r->depth > 0 && r->in_object[top] && !r->want_value[top];
        char punct = 0;
        if (!closing && r->depth > 0) {
            if (r->in_object[top] && r->want_value[top])
                punct = ':';
            else if (r->items[top] > 0)
                punct = ',';
        }
        if (start < r->last_end || !gap_ok(r->text + r->last_end, start - r->last_end, punct))
            return not_json(r, r->last_end,
                            punct == ':'   ? "expected ':' between a key and its value"
                            : punct == ',' ? "expected ',' between two items"
                                           : "unexpected text between tokens",
                            err);
        const unsigned char *at = r->text + start;
        t->offset = start;
        t->is_key = key;
        switch (ev->type) {
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT: {
            int object = ev->type == YAML_MAPPING_START_EVENT;
            const yaml_char_t *anchor = object ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
            const yaml_char_t *tag = object ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
            if (start >= r->len || *at != (object ? '{' : '[') || anchor || tag)
                return not_json(r, start, object ? "a YAML mapping that is not a JSON object"
                                                 : "a YAML sequence that is not a JSON array", err);
            if (key)
                return not_json(r, start, "an object key that is not a string", err);
            if (r->depth == SY_JSON_MAX_DEPTH)
                return not_json(r, start, "nested deeper than 32 levels", err);
            r->in_object[r->depth] = (uint8_t)object;
            r->want_value[r->depth] = 0;
            r->items[r->depth] = 0;
            r->depth++;
            r->last_end = start + 1;
            t->type = object ? SY_J_OBJECT : SY_J_ARRAY;
            return SY_OK;
        }
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT: {
            int object = ev->type == YAML_MAPPING_END_EVENT;
            if (start >= r->len || *at != (object ? '}' : ']') || r->depth == 0)
                return not_json(r, start, "a YAML collection end that is not '}' or ']'", err);
            r->depth--;
            r->last_end = start + 1;
            value_done(r);
            t->type = object ? SY_J_OBJECT_END : SY_J_ARRAY_END;
            return SY_OK;
        }
        case YAML_SCALAR_EVENT: {
            size_t end = byte_at(r, ev->end_mark.index);
            const char *value = (const char *)ev->data.scalar.value;
            size_t len = ev->data.scalar.length;
            if (ev->data.scalar.anchor || ev->data.scalar.tag)
                return not_json(r, start, "a YAML anchor or tag", err);
            if (end < start + (ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE ? 2 : 0) || end > r->len)
                return not_json(r, start, "a scalar libyaml placed outside the text", err);
            if (ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE) {
                size_t bad = 0;
                const char *why = at[0] == '"' && r->text[end - 1] == '"'
                                      ? string_problem(at + 1, end - start - 2, &bad)
                                      : "a string without double quotes";
                if (why)
                    return not_json(r, start + 1 + bad, why, err);
                if (memchr(value, 0, len))
                    return not_json(r, start, "a string holding \\u0000", err);
                t->type = SY_J_STRING;
            } else if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !key) {
                size_t n = end - start;
                if (n != len || memcmp(at, value, n) != 0)
                    return not_json(r, start, "a value that is not a JSON number, string, true, false or null", err);
                if (json_number(at, n))
                    t->type = SY_J_NUMBER;
                else if (n == 4 && memcmp(at, "true", 4) == 0)
                    t->type = SY_J_TRUE;
                else if (n == 5 && memcmp(at, "false", 5) == 0)
                    t->type = SY_J_FALSE;
                else if (n == 4 && memcmp(at, "null", 4) == 0)
                    t->type = SY_J_NULL;
                else
                    return not_json(r, start,
                                    n ? "a value that is not a JSON number, string, true, false or null"
                                      : "a missing value",
                                    err);
            } else {
                return not_json(r, start, key ? "an object key that is not a double-quoted string"
                                              : "a string that is not double-quoted", err);
            }
            r->last_end = end;
            t->text = value;
            t->len = len;
            if (key)
                r->want_value[top] = 1;
            else
                value_done(r);
            return SY_OK;
        }
        default:
            return not_json(r, start, "an unexpected YAML event", err);
        }
    }
}

sy_status sy_jreader_skip(sy_jreader *r, const sy_jtoken *first, sy_error *err)
{
    if (first->type != SY_J_OBJECT && first->type != SY_J_ARRAY)
        return SY_OK;
    int open = 1;
    while (open > 0) {
        sy_jtoken t;
        sy_status st = sy_jreader_next(r, &t, err);
        if (st != SY_OK)
            return st;
        if (t.type == SY_J_OBJECT || t.type == SY_J_ARRAY)
            open++;
        else if (t.type == SY_J_OBJECT_END || t.type == SY_J_ARRAY_END)
            open--;
        else if (t.type == SY_J_END)
            return sy_fail(err, SY_E_INTERNAL, "%s: JSON ended inside a value", r->origin);
    }
    return SY_OK;
}

int sy_json_u64(const char *text, size_t len, uint64_t *out)
{
    if (len == 0 || (len > 1 && text[0] == '0'))
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit((unsigned char)text[i]))
            return 0;
        uint64_t d = (uint64_t)(text[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

const char *sy_jtype_name(sy_jtype t)
{
    switch (t) {
    case SY_J_OBJECT: return "an object";
    case SY_J_ARRAY: return "an array";
    case SY_J_STRING: return "a string";
    case SY_J_NUMBER: return "a number";
    case SY_J_TRUE: case SY_J_FALSE: return "a boolean";
    case SY_J_NULL: return "null";
    default: return "nothing";
    }
}
