/* The safetensors reader and writer: random files round-trip byte for byte; every malformed header
 * field is refused with a message naming the file (and the tensor when there is one); JSON that
 * libyaml would accept as YAML but is not JSON is refused; shard indexes are checked both ways;
 * repeated __metadata__ keys are found in n log n; FIFOs and folders are refused without waiting;
 * writers never follow a link planted under a temporary name. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/json_value.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/st_write.h"
#include "fixture_support.h"
#include "sy_test.h"
#include "util/strbuf.h"

#define ORIGIN "shard.safetensors"

/* A file image: the 8-byte length, the header text as given, then data_len bytes of data. */
static uint8_t *image(const char *header, size_t data_len, size_t *size)
{
    size_t h = strlen(header);
    *size = 8 + h + data_len;
    uint8_t *b = calloc(*size, 1);
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    for (size_t i = 0; i < data_len; i++)
        b[8 + h + i] = (uint8_t)(i * 7 + 1);
    return b;
}

static void expect_refused(const uint8_t *img, size_t size, const char *const *parts)
{
    sy_st_file f;
    sy_error err = {{0}};
    sy_status st = sy_st_parse(img, size, ORIGIN, &f, &err);
    ck_assert_msg(st != SY_OK, "accepted a malformed file (expected an error with '%s')", parts[0]);
    ck_assert_msg(strncmp(err.msg, ORIGIN ": ", strlen(ORIGIN) + 2) == 0, "message does not name the file: %s",
                  err.msg);
    for (size_t i = 0; parts[i]; i++)
        ck_assert_msg(strstr(err.msg, parts[i]) != NULL, "message lacks '%s': %s", parts[i], err.msg);
}

static void expect_header_refused(const char *header, size_t data_len, const char *const *parts)
{
    size_t size;
    uint8_t *img = image(header, data_len, &size);
    expect_refused(img, size, parts);
    free(img);
}

#define T1(name, dtype, shape, offsets) "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":" offsets "}"

static const struct bad_header {
    const char *header;
    size_t data_len;
    const char *parts[4];
} bad_headers[] = {
    /* not JSON, though libyaml reads each as YAML */
    {"{a: 1}", 0, {"not JSON", NULL}},
    {"{" T1("w", "U8", "[2]", "[0,2]") ",}", 2, {"not JSON", NULL}},
    {"{'w': {}}", 0, {"not JSON", NULL}},
    {"{" T1("w", "U8", "[2]", "[0,2]") "} # comment", 2, {"not JSON", NULL}},
    {"{\"w\\x41\":{}}", 0, {"not JSON", "escape", NULL}},
    {"{\"w\tx\":{}}", 0, {"not JSON", "control character", NULL}},
    {"--- {}", 0, {"not JSON", NULL}},
    {"&anchor {}", 0, {"not JSON", NULL}},
    {"w: {}", 0, {"not JSON", NULL}},
    {"{\"w\": {\"shape\": [1 2]}}", 0, {"not JSON", NULL}},
    {"{\"w\" \"x\"}", 0, {"not JSON", NULL}},
    {"{\"w\": {\"dtype\": U8}}", 0, {"not JSON", NULL}},
    {"{\"w\": {\"shape\": [\"a\": 1]}}", 0, {"not JSON", "not a JSON object", NULL}},
    {"{\"a\\u0000b\": {}}", 0, {"not JSON", "u0000", NULL}},
    {"{} {}", 0, {"not JSON", NULL}},
    {"", 0, {"not JSON", NULL}},
    {"[1, 2]", 0, {"not a JSON object", NULL}},
    /* tensor entries */
    {"{" T1("w", "U8", "[2]", "[0,2]") "," T1("w", "U8", "[2]", "[2,4]") "}", 4, {"\"w\"", "twice", NULL}},
    {"{\"w\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, {"\"w\"", "twice", NULL}},
    {"{\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2],\"extra\":1}}", 2, {"\"w\"", "extra", NULL}},
    {"{\"w\":{\"shape\":[2],\"data_offsets\":[0,2]}}", 2, {"\"w\"", "lacks dtype", NULL}},
    {"{\"w\":[1]}", 0, {"\"w\"", "must be an object", NULL}},
    {"{" T1("w", "Q4", "[2]", "[0,2]") "}", 2, {"\"w\"", "\"Q4\"", "not a safetensors dtype", NULL}},
    {"{" T1("w", "U8", "[-1]", "[0,2]") "}", 2, {"\"w\"", "shape entry 0 is -1", NULL}},
    {"{" T1("w", "U8", "[2.0]", "[0,2]") "}", 2, {"\"w\"", "not an integer", NULL}},
    {"{" T1("w", "U8", "[1,1,1,1,1,1,1,1,1]", "[0,1]") "}", 1, {"\"w\"", "more than 8", NULL}},
    {"{" T1("w", "U8", "[2]", "[0,2,4]") "}", 4, {"\"w\"", "more than 2", NULL}},
    {"{" T1("w", "U8", "[2]", "[0]") "}", 2, {"\"w\"", "expected 2", NULL}},
    {"{" T1("w", "U8", "[2]", "[0,18446744073709551616]") "}", 2, {"\"w\"", "18446744073709551616", NULL}},
    {"{" T1("w", "U8", "[2]", "[0,18446744073709551615]") "}", 2, {"\"w\"", "run past the 2 bytes", NULL}},
    {"{" T1("w", "U8", "[4294967296,4294967296,2]", "[0,2]") "}", 2, {"\"w\"", "overflows", NULL}},
    {"{" T1("w", "F32", "[4611686018427387904]", "[0,2]") "}", 2, {"\"w\"", "byte count overflows", NULL}},
    {"{" T1("w", "F32", "[2]", "[0,4]") "}", 4, {"\"w\"", "F32 [2] is 8 bytes", "span 4", NULL}},
    {"{" T1("w", "U8", "[2]", "[4,2]") "}", 4, {"\"w\"", "end before they begin", NULL}},
    {"{" T1("w", "U8", "[8]", "[0,8]") "}", 4, {"\"w\"", "run past the 4 bytes", NULL}},
    {"{" T1("a", "U8", "[4]", "[0,4]") "," T1("b", "U8", "[4]", "[2,6]") "}", 6, {"\"a\" and \"b\" overlap", NULL}},
    {"{" T1("a", "U8", "[2]", "[0,2]") "," T1("b", "U8", "[2]", "[4,6]") "}", 6,
     {"data bytes 2..4 belong to no tensor", "\"b\"", NULL}},
    {"{" T1("a", "U8", "[2]", "[0,2]") "}", 5, {"last 3 data bytes", NULL}},
    {"{\"\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, {"tensor name of 0 bytes", NULL}},
    /* __metadata__ */
    {"{\"__metadata__\":{\"k\":1}}", 0, {"__metadata__ \"k\" must be a string", NULL}},
    {"{\"__metadata__\":[]}", 0, {"__metadata__ must be an object", NULL}},
    {"{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, {"\"k\" twice", NULL}},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, {"__metadata__ twice", NULL}},
};

START_TEST(malformed_headers_are_refused)
{
    const struct bad_header *b = &bad_headers[_i];
    expect_header_refused(b->header, b->data_len, b->parts);
}
END_TEST

START_TEST(lengths_are_checked_before_the_header_is_read)
{
    uint8_t short_file[5] = {1, 0, 0, 0, 0};
    expect_refused(short_file, sizeof short_file, (const char *const[]){"5 bytes, too short", NULL});
    uint8_t huge[16] = {0};
    uint64_t limit = SY_ST_MAX_HEADER_BYTES + 1ull;
    for (int i = 0; i < 8; i++)
        huge[i] = (uint8_t)(limit >> (8 * i));
    expect_refused(huge, sizeof huge, (const char *const[]){"over the 100 MiB limit", NULL});
    memset(huge, 0xFF, 8);
    expect_refused(huge, sizeof huge, (const char *const[]){"over the 100 MiB limit", NULL});
    uint8_t past[20] = {100};
    expect_refused(past, sizeof past, (const char *const[]){"header length 100 runs past the end of the 20-byte file", NULL});
}
END_TEST

/* What JSON allows must be read as JSON means it: escapes, big integers, order, padding. */
START_TEST(valid_headers_are_read_as_json_means_them)
{
    const char *header = "{\n  \"__metadata__\": {\"format\": \"pt\", \"note\": \"a\\\"b\"},\n"
                         "  \"b\\/c\\u00e9\\\"\\\\\\n\xe2\x82\xac\": {\"dtype\": \"BF16\", \"shape\": [3], "
                         "\"data_offsets\": [2, 8]},\n"
                         "  \"a\": {\"data_offsets\": [0, 2], \"shape\": [], \"dtype\": \"I16\"},\n"
                         "  \"z\": {\"dtype\": \"F64\", \"shape\": [0, 5], \"data_offsets\": [8, 8]}\n}      ";
    size_t size;
    uint8_t *img = image(header, 8, &size);
    sy_st_file f;
    sy_error err = {{0}};
    ck_assert_msg(sy_st_parse(img, size, ORIGIN, &f, &err) == SY_OK, "%s", err.msg);
    ck_assert_uint_eq(f.n_tensors, 3);
    const sy_st_tensor *t = sy_st_find(&f, "b/c\xc3\xa9\"\\\n\xe2\x82\xac");
    ck_assert_msg(t != NULL, "escaped name not decoded as JSON decodes it");
    ck_assert_int_eq(t->dtype, SY_ST_BF16);
    ck_assert_uint_eq(t->rank, 1);
    ck_assert_uint_eq(t->shape[0], 3);
    ck_assert_uint_eq(t->offset, 8 + strlen(header) + 2);
    ck_assert_uint_eq(t->bytes, 6);
    ck_assert_uint_eq(((const uint8_t *)sy_st_data(&f, t))[0], 2 * 7 + 1);
    const sy_st_tensor *scalar = sy_st_find(&f, "a");
    ck_assert_uint_eq(scalar->rank, 0);
    ck_assert_uint_eq(scalar->numel, 1);
    const sy_st_tensor *empty = sy_st_find(&f, "z");
    ck_assert_uint_eq(empty->numel, 0);
    ck_assert_uint_eq(f.n_meta, 2);
    ck_assert_str_eq(f.meta_keys[1], "note");
    ck_assert_str_eq(f.meta_values[1], "a\"b");
    sy_st_close(&f);
    free(img);
}
END_TEST

START_TEST(random_files_round_trip)
{
    uint64_t seed = sy_test_seed();
    printf("random_files_round_trip: seed %llu\n", (unsigned long long)seed);
    sy_rng rng = {seed};
    static const int32_t kinds[] = {SY_ST_BF16, SY_ST_F16, SY_ST_F32, SY_ST_U8, SY_ST_I32, SY_ST_F8_E4M3, SY_ST_I64};
    size_t n = 3 + sy_rng_below(&rng, 10);
    sy_st_entry *e = calloc(n, sizeof *e);
    char (*names)[64] = calloc(n, sizeof *names);
    uint8_t **data = calloc(n, sizeof *data);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "model.layers.%zu.t\"\\\xc3\xa9/%u", i, sy_rng_below(&rng, 1000));
        e[i].name = names[i];
        e[i].dtype = kinds[sy_rng_below(&rng, sizeof kinds / sizeof kinds[0])];
        e[i].rank = sy_rng_below(&rng, 5);
        for (uint32_t d = 0; d < e[i].rank; d++)
            e[i].shape[d] = sy_rng_below(&rng, 8) + (i % 4 ? 1 : 0); /* some zero-size tensors */
        uint64_t bytes = sy_st_entry_bytes(&e[i]);
        data[i] = malloc(bytes + 1);
        for (uint64_t b = 0; b < bytes; b++)
            data[i][b] = (uint8_t)sy_rng_next(&rng);
    }
    char *dir = sy_scratch_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/x.safetensors", dir);
    const char *meta[] = {"format", "pt", "k\"\\", "v\n\xc3\xa9"};
    sy_st_writer w;
    sy_error err = {{0}};
    ck_assert_msg(sy_st_writer_begin(&w, path, e, n, meta, 2, &err) == SY_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++) {
        /* Pieces of random length, so that pieces end inside tensors. */
        uint64_t bytes = sy_st_entry_bytes(&e[i]);
        for (uint64_t at = 0; at < bytes;) {
            uint64_t piece = 1 + sy_rng_below(&rng, 40);
            piece = piece < bytes - at ? piece : bytes - at;
            ck_assert_int_eq(sy_st_writer_append(&w, data[i] + at, piece, &err), SY_OK);
            at += piece;
        }
    }
    struct stat sb;
    ck_assert_msg(stat(path, &sb) != 0, "the file appeared under its name before commit");
    ck_assert_msg(sy_st_writer_commit(&w, &err) == SY_OK, "%s", err.msg);
    sy_st_file f;
    ck_assert_msg(sy_st_open(path, &f, &err) == SY_OK, "%s", err.msg);
    ck_assert_uint_eq(f.n_tensors, n);
    uint64_t data_start = UINT64_MAX;
    for (size_t i = 0; i < f.n_tensors; i++)
        data_start = f.tensors[i].offset < data_start ? f.tensors[i].offset : data_start;
    ck_assert_msg(data_start % 8 == 0, "data starts at byte %llu, not 8-aligned", (unsigned long long)data_start);
    for (size_t i = 0; i < n; i++) {
        const sy_st_tensor *t = sy_st_find(&f, names[i]);
        ck_assert_msg(t != NULL, "tensor %s lost", names[i]);
        ck_assert_int_eq(t->dtype, e[i].dtype);
        ck_assert_uint_eq(t->rank, e[i].rank);
        for (uint32_t d = 0; d < t->rank; d++)
            ck_assert_uint_eq(t->shape[d], e[i].shape[d]);
        ck_assert_uint_eq(t->bytes, sy_st_entry_bytes(&e[i]));
        ck_assert_msg(memcmp(sy_st_data(&f, t), data[i], t->bytes) == 0, "tensor %s data differs", names[i]);
        /* Released pages read back from the file. */
        sy_st_release(&f, t->offset, t->bytes);
        ck_assert_msg(memcmp(sy_st_data(&f, t), data[i], t->bytes) == 0, "tensor %s differs after release", names[i]);
    }
    ck_assert_uint_eq(f.n_meta, 2);
    ck_assert_str_eq(f.meta_keys[1], "k\"\\");
    ck_assert_str_eq(f.meta_values[1], "v\n\xc3\xa9");
    sy_st_close(&f);
    /* A short write is refused at commit and leaves no file. */
    char path2[600];
    snprintf(path2, sizeof path2, "%s/short.safetensors", dir);
    e[0].dtype = SY_ST_U8;
    e[0].rank = 1;
    e[0].shape[0] = 3;
    ck_assert_int_eq(sy_st_writer_begin(&w, path2, e, 1, NULL, 0, &err), SY_OK);
    ck_assert_int_eq(sy_st_writer_append(&w, "ab", 2, &err), SY_OK);
    ck_assert_int_ne(sy_st_writer_commit(&w, &err), SY_OK);
    ck_assert_msg(strstr(err.msg, "got 2 of its 3 bytes") != NULL, "%s", err.msg);
    ck_assert_msg(stat(path2, &sb) != 0, "an incomplete file was renamed into place");
    for (size_t i = 0; i < n; i++)
        free(data[i]);
    free(data);
    free(names);
    free(e);
    sy_scratch_remove(dir);
}
END_TEST

START_TEST(json_documents_refuse_duplicate_keys)
{
    sy_jvalue v;
    sy_error err = {{0}};
    const char *dup = "{\"a\": {\"x\": 1, \"y\": 2, \"x\": 3}}";
    ck_assert_int_ne(sy_jvalue_parse("c.json", dup, strlen(dup), 100, &v, &err), SY_OK);
    ck_assert_msg(strstr(err.msg, "c.json") && strstr(err.msg, "\"x\" twice"), "%s", err.msg);
    const char *many = "[1, 2, 3, 4, 5]";
    ck_assert_int_ne(sy_jvalue_parse("c.json", many, strlen(many), 5, &v, &err), SY_OK);
    ck_assert_msg(strstr(err.msg, "more than 5"), "%s", err.msg);
    const char *ok = "{\"n\": 18446744073709551615, \"f\": -1.5e-3, \"s\": [true, false, null]}";
    ck_assert_msg(sy_jvalue_parse("c.json", ok, strlen(ok), 100, &v, &err) == SY_OK, "%s", err.msg);
    uint64_t u = 0;
    double f = 0;
    ck_assert(sy_jvalue_u64(sy_jvalue_get(&v, "n"), &u));
    ck_assert_uint_eq(u, UINT64_MAX);
    ck_assert(sy_jvalue_f64(sy_jvalue_get(&v, "f"), &f));
    ck_assert(f == -1.5e-3);
    ck_assert_int_eq(sy_jvalue_get(&v, "s")->items[2].type, SY_J_NULL);
    sy_jvalue_free(&v);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* sharded folders */

static void write_shard(const char *dir, const char *file, const char *const *names, size_t n)
{
    sy_st_entry e[8] = {{0}};
    for (size_t i = 0; i < n; i++)
        e[i] = (sy_st_entry){names[i], SY_ST_U8, 1, {3}};
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    sy_st_writer w;
    sy_error err = {{0}};
    ck_assert_int_eq(sy_st_writer_begin(&w, path, e, n, NULL, 0, &err), SY_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(sy_st_writer_append(&w, "xyz", 3, &err), SY_OK);
    ck_assert_msg(sy_st_writer_commit(&w, &err) == SY_OK, "%s", err.msg);
}

static void expect_folder(const char *dir, int ok, const char *const *parts)
{
    sy_checkpoint *c = NULL;
    sy_error err = {{0}};
    sy_status st = sy_checkpoint_open(dir, &c, &err);
    if (ok) {
        ck_assert_msg(st == SY_OK, "%s", err.msg);
        ck_assert_uint_eq(c->n_shards, 2);
        ck_assert_uint_eq(c->n_refs, 3);
        const sy_ckpt_ref *r = sy_checkpoint_find(c, "b");
        ck_assert_ptr_nonnull(r);
        ck_assert_str_eq(strrchr(c->shards[r->shard].path, '/') + 1, "s-2.safetensors");
        sy_checkpoint_close(c);
        return;
    }
    ck_assert_msg(st != SY_OK, "accepted a broken folder (expected '%s')", parts[0]);
    for (size_t i = 0; parts[i]; i++)
        ck_assert_msg(strstr(err.msg, parts[i]) != NULL, "message lacks '%s': %s", parts[i], err.msg);
}

START_TEST(shard_index_is_checked_both_ways)
{
    char *dir = sy_scratch_dir();
    write_shard(dir, "s-1.safetensors", (const char *const[]){"a", "c"}, 2);
    write_shard(dir, "s-2.safetensors", (const char *const[]){"b"}, 1);
    free(sy_scratch_write(dir, SY_CKPT_INDEX_FILE,
                          "{\"metadata\": {\"total_size\": 9}, \"weight_map\": {\"a\": \"s-1.safetensors\", "
                          "\"b\": \"s-2.safetensors\", \"c\": \"s-1.safetensors\"}}", 0644));
    expect_folder(dir, 1, NULL);
    free(sy_scratch_write(dir, SY_CKPT_INDEX_FILE,
                          "{\"weight_map\": {\"a\": \"s-1.safetensors\", \"b\": \"s-2.safetensors\"}}", 0644));
    expect_folder(dir, 0, (const char *const[]){"s-1.safetensors holds tensor \"c\"", "does not list", NULL});
    free(sy_scratch_write(dir, SY_CKPT_INDEX_FILE,
                          "{\"weight_map\": {\"a\": \"s-1.safetensors\", \"b\": \"s-1.safetensors\", "
                          "\"c\": \"s-1.safetensors\"}}", 0644));
    expect_folder(dir, 0, (const char *const[]){"tensor \"b\" in", "s-1.safetensors, which does not hold it", NULL});
    free(sy_scratch_write(dir, SY_CKPT_INDEX_FILE,
                          "{\"weight_map\": {\"a\": \"../s-1.safetensors\", \"b\": \"s-2.safetensors\"}}", 0644));
    expect_folder(dir, 0, (const char *const[]){"\"../s-1.safetensors\"", "same folder", NULL});
    free(sy_scratch_write(dir, SY_CKPT_INDEX_FILE, "{\"weight_map\": {}, \"other\": 1}", 0644));
    expect_folder(dir, 0, (const char *const[]){"unknown key \"other\"", NULL});
    free(sy_scratch_write(dir, SY_CKPT_INDEX_FILE, "{\"weight_map\": {\"a\": \"gone.safetensors\"}}", 0644));
    expect_folder(dir, 0, (const char *const[]){"gone.safetensors", "cannot open", NULL});
    write_shard(dir, SY_CKPT_SINGLE_FILE, (const char *const[]){"a"}, 1);
    expect_folder(dir, 0, (const char *const[]){"both", "ambiguous", NULL});
    char *empty = sy_scratch_dir();
    expect_folder(empty, 0, (const char *const[]){"neither", NULL});
    char missing[600];
    snprintf(missing, sizeof missing, "%s/nope", empty);
    expect_folder(missing, 0, (const char *const[]){"is not a folder", NULL});
    sy_scratch_remove(empty);
    sy_scratch_remove(dir);
}
END_TEST

/* 250000 distinct __metadata__ keys and one repeat: comparing each key with every earlier one took
 * minutes here; sorted, it is a fraction of a second. The alarm fails the test long before the
 * 300 s Check timeout. */
START_TEST(many_metadata_keys_are_checked_in_n_log_n)
{
    enum { KEYS = 250000 };
    alarm(20);
    for (int repeat = 0; repeat < 2; repeat++) {
        sy_str h = {0};
        sy_str_appendf(&h, "{\"__metadata__\":{");
        for (size_t i = 0; i < KEYS; i++)
            sy_str_appendf(&h, "%s\"k%06zu\":\"\"", i ? "," : "", i);
        if (repeat)
            sy_str_appendf(&h, ",\"k%06d\":\"again\"", KEYS / 2);
        sy_str_appendf(&h, "}," T1("t", "U8", "[2]", "[0,2]") "}");
        size_t size;
        uint8_t *img = image(h.data, 2, &size);
        sy_st_file f;
        sy_error err = {{0}};
        sy_status st = sy_st_parse(img, size, ORIGIN, &f, &err);
        if (!repeat) {
            ck_assert_msg(st == SY_OK, "%s", err.msg);
            ck_assert_uint_eq(f.n_meta, KEYS);
            ck_assert_str_eq(f.meta_keys[KEYS - 1], "k249999"); /* file order kept */
            sy_st_close(&f);
        } else {
            ck_assert_int_ne(st, SY_OK);
            ck_assert_msg(strstr(err.msg, ORIGIN) && strstr(err.msg, "__metadata__ has the key \"k125000\" twice"),
                          "%s", err.msg);
        }
        free(img);
        sy_str_free(&h);
    }
    alarm(0);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* files that are not regular: refused at once, naming what they are */

static void expect_open_refused(sy_status st, const sy_error *err, const char *path, const char *kind)
{
    ck_assert_msg(st != SY_OK, "opened %s, which is %s", path, kind);
    ck_assert_msg(strstr(err->msg, path) && strstr(err->msg, kind) && strstr(err->msg, "not a regular file"),
                  "message lacks '%s' or '%s': %s", path, kind, err->msg);
}

/* A FIFO would block open() until a writer comes, which none does: a regression hangs, and the alarm
 * turns the hang into a failure long before the 300 s Check timeout. */
START_TEST(fifos_and_folders_are_refused_without_waiting)
{
    alarm(20);
    char *dir = sy_scratch_dir();
    char *config = sy_fixture_printf("%s/%s", dir, SY_CKPT_CONFIG_FILE);
    char *single = sy_fixture_printf("%s/%s", dir, SY_CKPT_SINGLE_FILE);
    char *shard = sy_fixture_printf("%s/s-2.safetensors", dir);
    char *text = NULL;
    size_t len = 0;
    sy_error err = {{0}};
    ck_assert_int_eq(mkfifo(config, 0644), 0);
    expect_open_refused(sy_read_small_file(config, 1 << 20, &text, &len, &err), &err, config, "a FIFO");
    /* The single file: taken for what it is, not for a missing file. */
    ck_assert_int_eq(mkfifo(single, 0644), 0);
    sy_checkpoint *c = NULL;
    expect_open_refused(sy_checkpoint_open(dir, &c, &err), &err, single, "a FIFO");
    sy_st_file f;
    expect_open_refused(sy_st_open(single, &f, &err), &err, single, "a FIFO");
    ck_assert_int_eq(unlink(single), 0);
    ck_assert_int_eq(mkdir(single, 0755), 0);
    expect_open_refused(sy_checkpoint_open(dir, &c, &err), &err, single, "a folder");
    ck_assert_int_eq(rmdir(single), 0);
    /* A shard the index names. */
    write_shard(dir, "s-1.safetensors", (const char *const[]){"a", "c"}, 2);
    ck_assert_int_eq(mkfifo(shard, 0644), 0);
    free(sy_scratch_write(dir, SY_CKPT_INDEX_FILE,
                          "{\"weight_map\": {\"a\": \"s-1.safetensors\", \"b\": \"s-2.safetensors\", "
                          "\"c\": \"s-1.safetensors\"}}", 0644));
    expect_open_refused(sy_checkpoint_open(dir, &c, &err), &err, shard, "a FIFO");
    /* The index itself. */
    char *index = sy_fixture_printf("%s/%s", dir, SY_CKPT_INDEX_FILE);
    ck_assert_int_eq(unlink(index), 0);
    ck_assert_int_eq(mkfifo(index, 0644), 0);
    expect_open_refused(sy_checkpoint_open(dir, &c, &err), &err, index, "a FIFO");
    alarm(0);
    free(index);
    free(config);
    free(single);
    free(shard);
    sy_scratch_remove(dir);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* where the writers put their bytes */

/* The temporary file of a write once had a predictable name opened with fopen("wb"): a symlink
 * planted under it sent the write through to any file the writer could write. Temporary files are
 * now made by mkstemp; the finished files get the permissions of a new file under the umask, and no
 * temporary file is left behind. */
START_TEST(writes_never_follow_a_planted_temp_name)
{
    char *dir = sy_scratch_dir();
    char *victim = sy_scratch_write(dir, "victim", "precious\n", 0644);
    const char *finals[] = {SY_CKPT_SINGLE_FILE, SY_CKPT_CONFIG_FILE};
    for (size_t i = 0; i < 2; i++) {
        char *planted = sy_fixture_printf("%s/.%s.tmp%ld", dir, finals[i], (long)getpid());
        ck_assert_int_eq(symlink(victim, planted), 0);
        free(planted);
    }
    mode_t old_mask = umask(027);
    write_shard(dir, SY_CKPT_SINGLE_FILE, (const char *const[]){"a"}, 1);
    char *config = sy_fixture_printf("%s/%s", dir, SY_CKPT_CONFIG_FILE);
    sy_error err = {{0}};
    ck_assert_msg(sy_write_file_atomic(config, "{}\n", 3, &err) == SY_OK, "%s", err.msg);
    umask(old_mask);
    char *text = NULL;
    size_t len = 0;
    ck_assert_msg(sy_read_small_file(victim, 1 << 20, &text, &len, &err) == SY_OK, "%s", err.msg);
    ck_assert_str_eq(text, "precious\n");
    free(text);
    for (size_t i = 0; i < 2; i++) {
        char *path = sy_fixture_printf("%s/%s", dir, finals[i]);
        struct stat sb;
        ck_assert_int_eq(lstat(path, &sb), 0);
        ck_assert_msg(S_ISREG(sb.st_mode), "%s is not a regular file", path);
        ck_assert_msg((sb.st_mode & 0777) == 0640, "%s has mode %o, expected 0640 under umask 027", path,
                      (unsigned)(sb.st_mode & 0777));
        free(path);
    }
    /* Nothing else appeared: the victim, the two planted links and the two files. */
    size_t entries = 0;
    DIR *dh = opendir(dir);
    for (struct dirent *e; dh && (e = readdir(dh));)
        entries += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(dh);
    ck_assert_uint_eq(entries, 5);
    free(config);
    free(victim);
    sy_scratch_remove(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("safetensors");
    TCase *t = tcase_create("reader");
    tcase_add_loop_test(t, malformed_headers_are_refused, 0, (int)(sizeof bad_headers / sizeof bad_headers[0]));
    tcase_add_test(t, lengths_are_checked_before_the_header_is_read);
    tcase_add_test(t, valid_headers_are_read_as_json_means_them);
    tcase_add_test(t, random_files_round_trip);
    tcase_add_test(t, json_documents_refuse_duplicate_keys);
    tcase_add_test(t, shard_index_is_checked_both_ways);
    tcase_add_test(t, many_metadata_keys_are_checked_in_n_log_n);
    tcase_add_test(t, fifos_and_folders_are_refused_without_waiting);
    tcase_add_test(t, writes_never_follow_a_planted_temp_name);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
