/* The loaders and every kind of diagnostic: exact origin, line, column and message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg_test.h"
#include "util/strbuf.h"

static sy_diags load_diags(const char *name, const char *text, sy_config **out)
{
    sy_diags d = {0};
    sy_config *c = cfg_load(name, text, NULL, &d);
    sy_diags_sort(&d);
    if (out)
        *out = c;
    else
        sy_config_free(c);
    return d;
}

START_TEST(yaml_syntax_error_at_parser_mark)
{
    sy_config *c;
    sy_diags d = load_diags("a.yaml", "backend: cpu\nmodel:\n  preset: tiny\n   bad: [\n", &c);
    ck_assert_ptr_null(c);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "a.yaml", 4, 7, "syntax error: mapping values are not allowed in this context");
    sy_diags_free(&d);

    d = load_diags("b.yaml", "model:\n  preset: \"tiny\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "b.yaml", 3, 1,
                "syntax error: found unexpected end of stream (while scanning a quoted scalar at 2:11)");
    sy_diags_free(&d);
}
END_TEST

START_TEST(yaml_unknown_key_type_range_enum_in_one_run)
{
    sy_config *c;
    sy_diags d = load_diags("b.yaml",
                            "parallel:\n  tp: 0\n"                /* 1-2 */
                            "kv_cache:\n  layuot: nhd\n"          /* 3-4 */
                            "model:\n  layers: four\n"            /* 5-6 */
                            "  q_heads: \"4\"\n"                  /* 7 */
                            "  preset: gpt-oss-7b\n"              /* 8 */
                            "report:\n  per_op: maybe\n"          /* 9-10 */
                            "kv_cache.k_scale: -1\n"              /* 11 */
                            "modle.experts: 4\n",                 /* 12 */
                            &c);
    ck_assert_ptr_nonnull(c);
    expect_count(&d, 8);
    expect_diag(&d, 0, SY_SEV_ERROR, "b.yaml", 2, 7, "parallel.tp: 0 is out of range 1..64");
    expect_diag(&d, 1, SY_SEV_ERROR, "b.yaml", 4, 3, "unknown key 'kv_cache.layuot'; did you mean 'kv_cache.layout'?");
    expect_diag(&d, 2, SY_SEV_ERROR, "b.yaml", 6, 11, "model.layers: expected an integer, got 'four'");
    expect_diag(&d, 3, SY_SEV_ERROR, "b.yaml", 7, 12,
                "model.q_heads: expected an integer, got the string \"4\" (a quoted value is text; remove the quotes)");
    expect_diag(&d, 4, SY_SEV_ERROR, "b.yaml", 8, 11,
                "model.preset: 'gpt-oss-7b' is not one of: tiny, gpt-oss-20b, gpt-oss-120b");
    expect_diag(&d, 5, SY_SEV_ERROR, "b.yaml", 10, 11, "report.per_op: expected true or false, got 'maybe'");
    expect_diag(&d, 6, SY_SEV_ERROR, "b.yaml", 11, 19, "kv_cache.k_scale: -1 is out of range: > 0 and <= 1e+30, or unit");
    expect_diag(&d, 7, SY_SEV_ERROR, "b.yaml", 12, 1, "unknown key 'modle.experts'; did you mean 'model.experts'?");
    /* Invalid values keep their defaults. */
    ck_assert_int_eq(sy_config_int(c, "parallel.tp"), 1);
    ck_assert_str_eq(sy_config_str(c, "model.preset"), "tiny");
    sy_config_free(c);
    sy_diags_free(&d);
}
END_TEST

START_TEST(unknown_key_suggestions)
{
    sy_diags d = load_diags("s.yaml", "preset: tiny\nmodel:\n  page_size: 64\nfoo: 1\n", NULL);
    expect_count(&d, 3);
    expect_diag(&d, 0, SY_SEV_ERROR, "s.yaml", 1, 1, "unknown key 'preset'; did you mean 'model.preset'?");
    expect_diag(&d, 1, SY_SEV_ERROR, "s.yaml", 3, 3, "unknown key 'model.page_size'; did you mean 'kv_cache.page_size'?");
    expect_diag(&d, 2, SY_SEV_ERROR, "s.yaml", 4, 1, "unknown key 'foo' (docs/config.md lists every key)");
    sy_diags_free(&d);
}
END_TEST

START_TEST(yaml_shapes_that_do_not_fit_the_schema)
{
    sy_diags d = load_diags("g.yaml", "backend: [cpu]\nplugin_path:\n  x: 1\nmodel: tiny\ndevice:\nreport:\n  json: ~\n",
                            NULL);
    expect_count(&d, 5);
    expect_diag(&d, 0, SY_SEV_ERROR, "g.yaml", 1, 1, "backend: expected a single string value, got a list");
    expect_diag(&d, 1, SY_SEV_ERROR, "g.yaml", 3, 3, "'plugin_path' takes a single value, not a mapping (found 'plugin_path.x')");
    expect_diag(&d, 2, SY_SEV_ERROR, "g.yaml", 4, 1,
                "'model' is a section, not a key: set its keys (model.preset, model.weights, model.seed, ...)");
    expect_diag(&d, 3, SY_SEV_ERROR, "g.yaml", 5, 8, "device: no value; remove the key to keep the default");
    expect_diag(&d, 4, SY_SEV_ERROR, "g.yaml", 7, 9, "report.json: no value; remove the key to keep the default");
    sy_diags_free(&d);

    d = load_diags("m.yaml", "- a\n- b\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "m.yaml", 1, 1, "a config is a mapping of keys (key: value), not a list");
    sy_diags_free(&d);

    d = load_diags("k.yaml", "{[a]: 1, plugin_path: [x, {y: 1}], model: {preset: \"\"}}\n", NULL);
    expect_count(&d, 3);
    expect_diag(&d, 0, SY_SEV_ERROR, "k.yaml", 1, 2, "a key must be a plain name, not a list");
    expect_diag(&d, 1, SY_SEV_ERROR, "k.yaml", 1, 27, "'plugin_path' is a list of plain values; this entry is a mapping");
    expect_diag(&d, 2, SY_SEV_ERROR, "k.yaml", 1, 52, "model.preset: '' is not one of: tiny, gpt-oss-20b, gpt-oss-120b");
    sy_diags_free(&d);
}
END_TEST

START_TEST(duplicate_keys_report_both_places)
{
    sy_config *c;
    sy_diags d = load_diags("c.yaml", "backend: cpu\nbackend: auto\nkv_cache:\n  layout: nhd\nkv_cache.layout: nhd\n", &c);
    /* The first copy counts; the second is only reported. */
    ck_assert_str_eq(sy_config_str(c, "backend"), "cpu");
    ck_assert_str_eq(sy_config_source(c, "backend"), "c.yaml:1:1");
    sy_config_free(c);
    expect_count(&d, 4);
    expect_diag(&d, 0, SY_SEV_NOTE, "c.yaml", 1, 1, "'backend' first set here");
    expect_diag(&d, 1, SY_SEV_ERROR, "c.yaml", 2, 1, "duplicate key 'backend' (first set at c.yaml:1:1)");
    expect_diag(&d, 2, SY_SEV_NOTE, "c.yaml", 4, 3, "'kv_cache.layout' first set here");
    expect_diag(&d, 3, SY_SEV_ERROR, "c.yaml", 5, 1, "duplicate key 'kv_cache.layout' (first set at c.yaml:4:3)");
    sy_diags_free(&d);

    d = load_diags("c.ini", "[model]\npreset = tiny\n[kv_cache]\nlayout = nhd\n[model]\npreset = tiny\n", NULL);
    expect_count(&d, 2);
    expect_diag(&d, 0, SY_SEV_NOTE, "c.ini", 2, 1, "'model.preset' first set here");
    expect_diag(&d, 1, SY_SEV_ERROR, "c.ini", 6, 1, "duplicate key 'model.preset' (first set at c.ini:2:1)");
    sy_diags_free(&d);
}
END_TEST

START_TEST(yaml_documents_anchors_aliases_merge)
{
    sy_config *c;
    sy_diags d = load_diags("d.yaml", "backend: cpu\n---\nbackend: cpu\n", &c);
    ck_assert_ptr_null(c);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "d.yaml", 2, 1, "more than one YAML document: a config is a single document");
    sy_diags_free(&d);

    /* An alias resolves to the anchored value, for scalars and whole lists alike. */
    d = load_diags("e.yaml",
                   "kv_cache:\n  dtype: fp8_e4m3\n  k_scale: &s 0.25\n  v_scale: *s\n"
                   "plugin_path: &dirs [/a, /b]\n",
                   &c);
    expect_count(&d, 0);
    ck_assert(sy_config_float(c, "kv_cache.v_scale") == 0.25);
    ck_assert_str_eq(sy_config_source(c, "kv_cache.v_scale"), "e.yaml:4:3");
    ck_assert_uint_eq(sy_config_list_len(c, "plugin_path"), 2);
    sy_config_free(c);
    sy_diags_free(&d);

    d = load_diags("u.yaml", "kv_cache:\n  layout: *nope\n", &c);
    ck_assert_ptr_null(c);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "u.yaml", 2, 11, "syntax error: found undefined alias");
    sy_diags_free(&d);

    d = load_diags("f.yaml", "kv_cache:\n  layout: &l nhd\nmodel:\n  <<: {preset: tiny}\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "f.yaml", 4, 3,
                "merge keys ('<<') are not supported: write the keys out, or alias a whole value");
    sy_diags_free(&d);
}
END_TEST

START_TEST(yaml_limits)
{
    sy_diags d = load_diags("n.yaml", "a:\n b:\n  c:\n   d:\n    e:\n     f:\n      g:\n       h:\n        i: 1\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "n.yaml", 9, 9, "nesting deeper than 8 levels (the limit for a config)");
    sy_diags_free(&d);

    /* "Billion laughs": mappings of aliases of mappings of a long list (20^5 lists once expanded)
     * stop at the node budget instead of expanding. Each list is one key of 202 nodes, so the budget
     * runs out long before the key limit would stop the walk. */
    sy_str s = {0};
    sy_str_appendf(&s, "l0: &a0 {k: [");
    for (int k = 0; k < 200; k++)
        sy_str_appendf(&s, "%sx", k ? ", " : "");
    sy_str_appendf(&s, "]}\n");
    for (int i = 1; i < 6; i++) {
        sy_str_appendf(&s, "l%d: &a%d {", i, i);
        for (int k = 0; k < 20; k++)
            sy_str_appendf(&s, "%sk%d: *a%d", k ? ", " : "", k, i - 1);
        sy_str_appendf(&s, "}\n");
    }
    d = load_diags("laughs.yaml", s.data, NULL);
    int over = 0;
    for (size_t i = 0; i < d.n; i++)
        over |= strcmp(d.items[i].message, "more than 65536 YAML nodes once aliases are expanded (the limit for a config)") == 0;
    ck_assert(over);
    sy_str_free(&s);
    sy_diags_free(&d);

    sy_str big = {0};
    for (int i = 0; i < 70; i++)
        sy_str_appendf(&big, "%s/p%d", i ? "," : "plugin_path: ", i);
    d = load_diags("list.yaml", big.data, NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "list.yaml", 1, 14, "plugin_path: list has 65 entries, more than the limit of 64");
    sy_str_free(&big);
    sy_diags_free(&d);

    sy_str many = {0};
    for (int i = 0; i < 1100; i++)
        sy_str_appendf(&many, "k%d: 1\n", i);
    d = load_diags("many.yaml", many.data, NULL);
    expect_diag(&d, 0, SY_SEV_ERROR, "many.yaml", 1, 1, "unknown key 'k0' (docs/config.md lists every key)");
    int limit = 0;
    for (size_t i = 0; i < d.n; i++)
        if (strcmp(d.items[i].message, "more than 1024 keys in one file (the limit for a config)") == 0) {
            ck_assert_uint_eq(d.items[i].line, 1025);
            limit = 1;
        }
    ck_assert(limit);
    sy_str_free(&many);
    sy_diags_free(&d);
}
END_TEST

START_TEST(ini_syntax_errors_all_reported)
{
    sy_config *c;
    sy_diags d = load_diags("h.ini",
                            "[model\n"          /* 1 */
                            "preset = tiny\n"   /* 2: no section after the broken header */
                            "bad line\n"        /* 3 */
                            "[model]\n"         /* 4 */
                            "layers =   four\n" /* 5 */
                            "  more\n"          /* 6: continuation */
                            " = 3\n"            /* 7: continuation too (indented) */
                            "=3\n"              /* 8 */
                            "[kv_cache]\n"      /* 9 */
                            "layuot = nhd\n",   /* 10 */
                            &c);
    ck_assert_ptr_nonnull(c);
    expect_count(&d, 8);
    expect_diag(&d, 0, SY_SEV_ERROR, "h.ini", 1, 1, "syntax error: section header has no closing ']'");
    expect_diag(&d, 1, SY_SEV_ERROR, "h.ini", 2, 1, "unknown key 'preset'; did you mean 'model.preset'?");
    expect_diag(&d, 2, SY_SEV_ERROR, "h.ini", 3, 1, "syntax error: expected 'key = value' or '[section]', got 'bad line'");
    expect_diag(&d, 3, SY_SEV_ERROR, "h.ini", 5, 12, "model.layers: expected an integer, got 'four'");
    expect_diag(&d, 4, SY_SEV_ERROR, "h.ini", 6, 3,
                "continuation line: an indented line continues the value of 'model.layers'; write values on one line "
                "(lists comma-separated)");
    expect_diag(&d, 5, SY_SEV_ERROR, "h.ini", 7, 2,
                "continuation line: an indented line continues the value of 'model.layers'; write values on one line "
                "(lists comma-separated)");
    expect_diag(&d, 6, SY_SEV_ERROR, "h.ini", 8, 1, "empty key name before '='");
    expect_diag(&d, 7, SY_SEV_ERROR, "h.ini", 10, 1, "unknown key 'kv_cache.layuot'; did you mean 'kv_cache.layout'?");
    sy_config_free(c);
    sy_diags_free(&d);
}
END_TEST

START_TEST(ini_values_quotes_lists_and_long_lines)
{
    sy_config *c;
    sy_diags d = load_diags("q.ini",
                            "plugin_path = /a, /b ; inline comment\n"
                            "[model]\nlayers = \"4\"\nweights = \"synthetic\"\n"
                            "[report]\njson = \"\"\n",
                            &c);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "q.ini", 3, 10,
                "model.layers: expected an integer, got the string \"4\" (a quoted value is text; remove the quotes)");
    ck_assert_uint_eq(sy_config_list_len(c, "plugin_path"), 2);
    ck_assert_str_eq(sy_config_list_item(c, "plugin_path", 1), "/b");
    ck_assert_str_eq(sy_config_str(c, "model.weights"), "synthetic");
    ck_assert_str_eq(sy_config_str(c, "report.json"), "");
    sy_config_free(c);
    sy_diags_free(&d);

    sy_str s = {0};
    sy_str_appendf(&s, "[report]\njson = ");
    for (int i = 0; i < 200; i++)
        sy_str_appendf(&s, "x");
    sy_str_appendf(&s, "\n[model]\nlayers = x\n");
    d = load_diags("long.ini", s.data, NULL);
    expect_count(&d, 2);
    expect_diag(&d, 0, SY_SEV_ERROR, "long.ini", 2, 197, "line is longer than 196 characters (the limit for an INI line)");
    /* Line numbers after the long line are still right. */
    expect_diag(&d, 1, SY_SEV_ERROR, "long.ini", 4, 10, "model.layers: expected an integer, got 'x'");
    sy_str_free(&s);
    sy_diags_free(&d);
}
END_TEST

START_TEST(empty_and_key_less_files)
{
    sy_diags d = load_diags("i.yaml", "# nothing\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "i.yaml", 0, 0, "config has no keys (only comments or an empty document)");
    sy_diags_free(&d);
    d = load_diags("j.ini", "; nothing\n[model]\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "j.ini", 0, 0, "config has no keys (only comments or section headers)");
    sy_diags_free(&d);
    d = load_diags("k.yaml", "\n  \n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "k.yaml", 0, 0, "empty config file");
    sy_diags_free(&d);
    d = load_diags("x.toml", "backend = \"cpu\"\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "x.toml", 0, 0,
                "cannot tell the syntax from the file name: use .yaml, .yml or .json for YAML, .ini for INI");
    sy_diags_free(&d);
}
END_TEST

START_TEST(binary_text_is_refused_at_the_first_bad_byte)
{
    sy_diags d = load_diags("l.yaml", "backend: cpu\nmo\x01" "del: x\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "l.yaml", 2, 3, "binary file: byte 0x01 is not text; a config is UTF-8 text");
    sy_diags_free(&d);
    /* Columns count characters: "é" is one. */
    d = load_diags("u.ini", "[report]\njson = \xc3\xa9\xff\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "u.ini", 2, 9, "binary file: byte 0xff is not valid UTF-8; a config is UTF-8 text");
    sy_diags_free(&d);
    /* An overlong encoding of '/' is not UTF-8 either. */
    d = load_diags("o.yaml", "backend: \xc0\xaf\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "o.yaml", 1, 10, "binary file: byte 0xc0 is not valid UTF-8; a config is UTF-8 text");
    sy_diags_free(&d);
}
END_TEST

START_TEST(files_missing_folder_unreadable_large)
{
    char dir[64], path[128];
    temp_dir(dir, sizeof dir);
    sy_diags d = {0};

    snprintf(path, sizeof path, "%s/missing.yaml", dir);
    ck_assert_ptr_null(sy_config_load_file(path, NULL, &d));
    char expected[256];
    expect_diag(&d, 0, SY_SEV_ERROR, path, 0, 0, "cannot open config: No such file or directory");
    sy_diags_free(&d);

    snprintf(path, sizeof path, "%s/folder.yaml", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    ck_assert_ptr_null(sy_config_load_file(path, NULL, &d));
    expect_diag(&d, 0, SY_SEV_ERROR, path, 0, 0, "cannot read config: it is a folder");
    sy_diags_free(&d);
    rmdir(path);

    /* A file that opens but cannot be read: /proc/self/mem fails at offset 0 with EIO, even for root. */
    snprintf(path, sizeof path, "%s/unreadable.yaml", dir);
    ck_assert_int_eq(symlink("/proc/self/mem", path), 0);
    ck_assert_ptr_null(sy_config_load_file(path, NULL, &d));
    expect_diag(&d, 0, SY_SEV_ERROR, path, 0, 0, "cannot read config: Input/output error");
    sy_diags_free(&d);
    unlink(path);

    snprintf(path, sizeof path, "%s/large.yaml", dir);
    size_t n = SY_CFG_MAX_FILE_BYTES + 1;
    char *big = malloc(n);
    memset(big, '#', n);
    write_file(path, big, n);
    free(big);
    ck_assert_ptr_null(sy_config_load_file(path, NULL, &d));
    snprintf(expected, sizeof expected, "file is %zu bytes, larger than the %u-byte limit for a config", n,
             SY_CFG_MAX_FILE_BYTES);
    expect_diag(&d, 0, SY_SEV_ERROR, path, 0, 0, expected);
    sy_diags_free(&d);
    unlink(path);

    snprintf(path, sizeof path, "%s/ok.yaml", dir);
    write_file(path, "backend: cpu\n", 13);
    sy_config *c = sy_config_load_file(path, NULL, &d);
    ck_assert_ptr_nonnull(c);
    expect_count(&d, 0);
    snprintf(expected, sizeof expected, "%s:1:1", path);
    ck_assert_str_eq(sy_config_source(c, "backend"), expected);
    sy_config_free(c);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* A nesting bomb is refused at the first collection past the limit, before libyaml scans the
 * rest: its scanner takes time quadratic in the open flow collections (200,000 '[' took minutes).
 * No timing is asserted; the in-time test case's timeout catches a regression. */
START_TEST(yaml_nesting_bomb_stops_at_the_limit)
{
    enum { DEEP = 200000 };
    sy_str s = {0};
    for (int i = 0; i < DEEP; i++)
        sy_str_appendf(&s, "[");
    sy_config *c;
    sy_diags d = load_diags("open.yaml", s.data, &c);
    ck_assert_ptr_null(c);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "open.yaml", 1, 9, "nesting deeper than 8 levels (the limit for a config)");
    sy_diags_free(&d);
    /* Closed again: valid YAML, as deep. */
    for (int i = 0; i < DEEP; i++)
        sy_str_appendf(&s, "]");
    d = load_diags("closed.yaml", s.data, NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "closed.yaml", 1, 9, "nesting deeper than 8 levels (the limit for a config)");
    sy_diags_free(&d);
    sy_str_free(&s);

    /* Flow mappings under a key (the root mapping is the first level), and a deep second document. */
    sy_str_appendf(&s, "model:\n  preset: tiny\nx: ");
    for (int i = 0; i < DEEP; i++)
        sy_str_appendf(&s, "{a: ");
    d = load_diags("map.yaml", s.data, NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "map.yaml", 3, 32, "nesting deeper than 8 levels (the limit for a config)");
    sy_diags_free(&d);
    sy_str_free(&s);
    sy_str_appendf(&s, "backend: cpu\n---\n");
    for (int i = 0; i < DEEP; i++)
        sy_str_appendf(&s, "[");
    d = load_diags("second.yaml", s.data, NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "second.yaml", 3, 9, "nesting deeper than 8 levels (the limit for a config)");
    sy_diags_free(&d);
    sy_str_free(&s);

    /* Eight levels are still fine, and a syntax error before the limit is reported as before. */
    d = load_diags("eight.yaml", "plugin_path: [a]\nm: {b: {c: {d: {e: {f: {g: {}}}}}}}\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "eight.yaml", 2, 25, "unknown key 'm.b.c.d.e.f.g' (docs/config.md lists every key)");
    sy_diags_free(&d);
    d = load_diags("nine.yaml", "m: {b: {c: {d: {e: {f: {g: {h: {}}}}}}}}\n", NULL);
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, "nine.yaml", 1, 32, "nesting deeper than 8 levels (the limit for a config)");
    sy_diags_free(&d);
    d = load_diags("bad.yaml", "a: [[[x]]\nb: 1\n", NULL);
    expect_count(&d, 1);
    ck_assert_uint_eq(d.items[0].line, 2);
    ck_assert(strncmp(d.items[0].message, "syntax error: ", 14) == 0);
    sy_diags_free(&d);
}
END_TEST

/* An empty mapping sets nothing, so nothing used to check its name. */
START_TEST(empty_mappings_and_sections_are_checked_by_name)
{
    sy_config *c;
    sy_diags d = load_diags("e.yaml",
                            "modle: {}\n"                  /* 1: a typo of a section */
                            "model: {}\n"                  /* 2: a section, merely empty */
                            "kv_cache:\n  layout: {}\n"    /* 3-4: a key, which takes a value */
                            "kv_cahce:\n"                  /* 5 */
                            "  {}\n"                       /* 6 */
                            "model.presett: {}\n"          /* 7 */
                            "backend: cpu\n",              /* 8 */
                            &c);
    ck_assert_ptr_nonnull(c);
    expect_count(&d, 4);
    expect_diag(&d, 0, SY_SEV_ERROR, "e.yaml", 1, 1, "unknown key 'modle'; did you mean 'model'?");
    expect_diag(&d, 1, SY_SEV_ERROR, "e.yaml", 4, 3, "'kv_cache.layout' takes a single value, not a mapping");
    expect_diag(&d, 2, SY_SEV_ERROR, "e.yaml", 5, 1, "unknown key 'kv_cahce'; did you mean 'kv_cache'?");
    expect_diag(&d, 3, SY_SEV_ERROR, "e.yaml", 7, 1, "unknown key 'model.presett'; did you mean 'model.preset'?");
    ck_assert_str_eq(sy_config_str(c, "backend"), "cpu");
    sy_config_free(c);
    sy_diags_free(&d);

    /* The same for INI sections without keys; an empty known section is fine there too. */
    d = load_diags("e.ini", "[modle]\n; nothing\n\n[model]\n[kv_cache]\nlayout = nhd\n[ kv_cahce ]\n", &c);
    ck_assert_ptr_nonnull(c);
    expect_count(&d, 2);
    expect_diag(&d, 0, SY_SEV_ERROR, "e.ini", 1, 2, "unknown key 'modle'; did you mean 'model'?");
    expect_diag(&d, 1, SY_SEV_ERROR, "e.ini", 7, 3, "unknown key 'kv_cahce'; did you mean 'kv_cache'?");
    sy_config_free(c);
    sy_diags_free(&d);
    d = load_diags("only.ini", "[modle]\n", NULL);
    expect_count(&d, 2);
    expect_diag(&d, 0, SY_SEV_ERROR, "only.ini", 0, 0, "config has no keys (only comments or section headers)");
    expect_diag(&d, 1, SY_SEV_ERROR, "only.ini", 1, 2, "unknown key 'modle'; did you mean 'model'?");
    sy_diags_free(&d);

    /* Many of them count against the key limit like any key. */
    sy_str many = {0};
    for (int i = 0; i < 32000; i++)
        sy_str_appendf(&many, "k%d: {}\n", i);
    d = load_diags("many.yaml", many.data, NULL);
    expect_diag(&d, 0, SY_SEV_ERROR, "many.yaml", 1, 1, "unknown key 'k0' (docs/config.md lists every key)");
    int limit = 0;
    for (size_t i = 0; i < d.n; i++)
        limit |= strcmp(d.items[i].message, "more than 1024 keys in one file (the limit for a config)") == 0;
    ck_assert(limit);
    ck_assert_uint_eq(d.n, 1025);
    sy_str_free(&many);
    sy_diags_free(&d);
}
END_TEST

/* Duplicates are found by sorting a mapping's keys: every later copy points at the first. */
START_TEST(yaml_duplicates_in_a_large_mapping)
{
    sy_str s = {0};
    sy_str_appendf(&s, "x9: 1\n");
    for (int i = 0; i < 600; i++)
        sy_str_appendf(&s, "k%d: {\"\": 1}\n", 599 - i); /* 2-601: no keys, one error each */
    sy_str_appendf(&s, "x9: 2\nk0: {}\nx9: 3\n");     /* 602-604 */
    sy_diags d = load_diags("big.yaml", s.data, NULL);
    /* The two notes at line 1 are one after sorting (exact repeats are dropped). */
    expect_count(&d, 606);
    expect_diag(&d, 0, SY_SEV_NOTE, "big.yaml", 1, 1, "'x9' first set here");
    expect_diag(&d, 1, SY_SEV_ERROR, "big.yaml", 1, 1, "unknown key 'x9' (docs/config.md lists every key)");
    expect_diag(&d, 2, SY_SEV_ERROR, "big.yaml", 2, 8, "empty key");
    expect_diag(&d, 601, SY_SEV_NOTE, "big.yaml", 601, 1, "'k0' first set here");
    expect_diag(&d, 602, SY_SEV_ERROR, "big.yaml", 601, 6, "empty key");
    expect_diag(&d, 603, SY_SEV_ERROR, "big.yaml", 602, 1, "duplicate key 'x9' (first set at big.yaml:1:1)");
    expect_diag(&d, 604, SY_SEV_ERROR, "big.yaml", 603, 1, "duplicate key 'k0' (first set at big.yaml:601:1)");
    expect_diag(&d, 605, SY_SEV_ERROR, "big.yaml", 604, 1, "duplicate key 'x9' (first set at big.yaml:1:1)");
    sy_str_free(&s);
    sy_diags_free(&d);
}
END_TEST

/* inih ends a value at " ;" even inside quotes: `"out ;x.json"` used to become `"out`. */
START_TEST(ini_quotes_cut_by_a_comment_are_refused)
{
    sy_config *c;
    sy_diags d = load_diags("q.ini",
                            "[report]\njson = \"out ;x.json\"\n"  /* 1-2 */
                            "[model]\nweights = \"ck\n"           /* 3-4 */
                            "preset = \"tiny\" ; a comment\n"      /* 5 */
                            "[kv_cache]\nlayout = \"\n",          /* 6-7 */
                            &c);
    ck_assert_ptr_nonnull(c);
    expect_count(&d, 3);
    expect_diag(&d, 0, SY_SEV_ERROR, "q.ini", 2, 13,
                "report.json: ';' after a space starts a comment in INI, even inside quotes, cutting the value to "
                "'\"out'; INI cannot hold ' ;' in a value: write this config in YAML");
    expect_diag(&d, 1, SY_SEV_ERROR, "q.ini", 4, 11, "model.weights: the quote that opens the value is never closed");
    expect_diag(&d, 2, SY_SEV_ERROR, "q.ini", 7, 10, "kv_cache.layout: the quote that opens the value is never closed");
    ck_assert_str_eq(sy_config_str(c, "report.json"), "");
    ck_assert_str_eq(sy_config_str(c, "model.weights"), "synthetic");
    ck_assert_str_eq(sy_config_source(c, "model.preset"), "q.ini:5:1");
    sy_config_free(c);
    sy_diags_free(&d);

    /* A ';' with no space before it is text, quoted or not. */
    d = load_diags("r.ini", "[report]\njson = \"out;x.json\"\n", &c);
    expect_count(&d, 0);
    ck_assert_str_eq(sy_config_str(c, "report.json"), "out;x.json");
    sy_config_free(c);
    sy_diags_free(&d);
}
END_TEST

/* A missing file or a folder is reported as such whatever its name; extensions in any case. */
START_TEST(file_existence_before_syntax_and_extension_case)
{
    char dir[64], path[128];
    temp_dir(dir, sizeof dir);
    sy_diags d = {0};
    snprintf(path, sizeof path, "%s/nosuchfile", dir);
    ck_assert_ptr_null(sy_config_load_file(path, NULL, &d));
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, path, 0, 0, "cannot open config: No such file or directory");
    sy_diags_free(&d);

    snprintf(path, sizeof path, "%s/folder", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    ck_assert_ptr_null(sy_config_load_file(path, NULL, &d));
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, path, 0, 0, "cannot read config: it is a folder");
    sy_diags_free(&d);
    rmdir(path);

    /* An existing file is judged by its name. */
    snprintf(path, sizeof path, "%s/c.toml", dir);
    write_file(path, "backend = \"cpu\"\n", 16);
    ck_assert_ptr_null(sy_config_load_file(path, NULL, &d));
    expect_count(&d, 1);
    expect_diag(&d, 0, SY_SEV_ERROR, path, 0, 0,
                "cannot tell the syntax from the file name: use .yaml, .yml or .json for YAML, .ini for INI");
    sy_diags_free(&d);
    unlink(path);

    static const struct {
        const char *name, *text;
    } upper[] = {{"C.YAML", "backend: auto\n"}, {"C.Yml", "backend: auto\n"}, {"C.JSON", "{\"backend\": \"auto\"}\n"},
                 {"C.INI", "backend = auto\n"}};
    for (size_t i = 0; i < sizeof upper / sizeof upper[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, upper[i].name);
        write_file(path, upper[i].text, strlen(upper[i].text));
        sy_config *c = sy_config_load_file(path, NULL, &d);
        ck_assert_msg(c != NULL, "%s", upper[i].name);
        expect_count(&d, 0);
        ck_assert_str_eq(sy_config_str(c, "backend"), "auto");
        sy_config_free(c);
        unlink(path);
    }
    rmdir(dir);
}
END_TEST

START_TEST(diagnostics_sort_and_print_in_gnu_form)
{
    sy_diags d = {0};
    sy_diags_add(&d, SY_SEV_ERROR, SY_ORIGIN_SET, 1, 5, "third");
    sy_diags_add(&d, SY_SEV_WARNING, SY_ORIGIN_ENV, 0, 0, "second");
    sy_diags_add(&d, SY_SEV_ERROR, "b.yaml", 3, 1, "first b");
    sy_diags_add(&d, SY_SEV_ERROR, "a.yaml", 7, 2, "a later");
    sy_diags_add(&d, SY_SEV_ERROR, "a.yaml", 7, 1, "a earlier");
    sy_diags_add(&d, SY_SEV_ERROR, "a.yaml", 7, 1, "a earlier");
    sy_diags_sort(&d);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sy_diags_print(&d, f);
    fclose(f);
    ck_assert_str_eq(text, "a.yaml:7:1: error: a earlier\n"
                           "a.yaml:7:2: error: a later\n"
                           "b.yaml:3:1: error: first b\n"
                           "environment: warning: second\n"
                           "--set:1:5: error: third\n");
    free(text);
    ck_assert_uint_eq(sy_diags_count(&d, SY_SEV_ERROR), 4);
    sy_diags_free(&d);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("config_load");
    TCase *t = tcase_create("loaders");
    tcase_add_test(t, yaml_syntax_error_at_parser_mark);
    tcase_add_test(t, yaml_unknown_key_type_range_enum_in_one_run);
    tcase_add_test(t, unknown_key_suggestions);
    tcase_add_test(t, yaml_shapes_that_do_not_fit_the_schema);
    tcase_add_test(t, duplicate_keys_report_both_places);
    tcase_add_test(t, yaml_documents_anchors_aliases_merge);
    tcase_add_test(t, yaml_limits);
    tcase_add_test(t, ini_syntax_errors_all_reported);
    tcase_add_test(t, ini_values_quotes_lists_and_long_lines);
    tcase_add_test(t, empty_and_key_less_files);
    tcase_add_test(t, binary_text_is_refused_at_the_first_bad_byte);
    tcase_add_test(t, files_missing_folder_unreadable_large);
    tcase_add_test(t, diagnostics_sort_and_print_in_gnu_form);
    tcase_add_test(t, empty_mappings_and_sections_are_checked_by_name);
    tcase_add_test(t, yaml_duplicates_in_a_large_mapping);
    tcase_add_test(t, ini_quotes_cut_by_a_comment_are_refused);
    tcase_add_test(t, file_existence_before_syntax_and_extension_case);
    suite_add_tcase(s, t);
    /* Inputs that once took minutes: a timeout far above what they take now, far below what they
     * took then (the suite default is 300 s). */
    TCase *in_time = tcase_create("in_time");
    tcase_set_timeout(in_time, 10);
    tcase_add_test(in_time, yaml_nesting_bomb_stops_at_the_limit);
    suite_add_tcase(s, in_time);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
