#include "checkpoint/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/json_pull.h"
#include "util/strbuf.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[SY_ST_DTYPE_COUNT_] = {
    [SY_ST_BOOL] = {"BOOL", 1},         [SY_ST_U8] = {"U8", 1},     [SY_ST_I8] = {"I8", 1},
    [SY_ST_F8_E5M2] = {"F8_E5M2", 1},   [SY_ST_F8_E4M3] = {"F8_E4M3", 1},
    [SY_ST_I16] = {"I16", 2},           [SY_ST_U16] = {"U16", 2},   [SY_ST_F16] = {"F16", 2},
    [SY_ST_BF16] = {"BF16", 2},         [SY_ST_I32] = {"I32", 4},   [SY_ST_U32] = {"U32", 4},
    [SY_ST_F32] = {"F32", 4},           [SY_ST_F64] = {"F64", 8},   [SY_ST_I64] = {"I64", 8},
    [SY_ST_U64] = {"U64", 8},
};

const char *sy_st_dtype_name(int32_t dtype)
{
    return dtype >= 0 && dtype < SY_ST_DTYPE_COUNT_ ? dtypes[dtype].name : "?";
}

size_t sy_st_dtype_size(int32_t dtype)
{
    return dtype >= 0 && dtype < SY_ST_DTYPE_COUNT_ ? dtypes[dtype].size : 0;
}

void sy_st_describe(int32_t dtype, uint32_t rank, const uint64_t *shape, char *buf, size_t len)
{
    sy_str s = {0};
    sy_str_appendf(&s, "%s [", sy_st_dtype_name(dtype));
    for (uint32_t i = 0; i < rank; i++)
        sy_str_appendf(&s, "%s%llu", i ? ", " : "", (unsigned long long)shape[i]);
    sy_str_appendf(&s, "]");
    snprintf(buf, len, "%s", s.data);
    sy_str_free(&s);
}

/* ------------------------------------------------------------------------------------------ */
/* the header */

typedef struct header_parser {
    sy_jreader r;
    sy_st_file *f;
    size_t cap;
} header_parser;

static sy_status expect(header_parser *p, sy_jtoken *t, sy_jtype type, const char *what, sy_error *err)
{
    sy_status st = sy_jreader_next(&p->r, t, err);
    if (st == SY_OK && t->type != type)
        st = sy_fail(err, SY_E_INVALID, "%s: header byte %zu: %s must be %s", p->f->path, t->offset, what,
                     type == SY_J_OBJECT ? "an object" : type == SY_J_ARRAY ? "an array" : "a string");
    return st;
}

static int key_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, equal keys are neighbours: O(n log n), where comparing each key with every earlier one
 * would take days on a 100 MiB header of short keys. */
static sy_status check_unique_meta_keys(const sy_st_file *f, sy_error *err)
{
    if (f->n_meta < 2)
        return SY_OK;
    char **sorted = sy_xcalloc(f->n_meta, sizeof *sorted);
    memcpy(sorted, f->meta_keys, f->n_meta * sizeof *sorted);
    qsort(sorted, f->n_meta, sizeof *sorted, key_order);
    sy_status st = SY_OK;
    for (size_t i = 1; i < f->n_meta && st == SY_OK; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            st = sy_fail(err, SY_E_INVALID, "%s: __metadata__ has the key \"%s\" twice", f->path, sorted[i]);
    free(sorted);
    return st;
}

static sy_status parse_metadata(header_parser *p, sy_error *err)
{
    sy_st_file *f = p->f;
    sy_jtoken t;
    sy_status st = sy_jreader_next(&p->r, &t, err);
    if (st != SY_OK || t.type == SY_J_NULL)
        return st;
    if (t.type != SY_J_OBJECT)
        return sy_fail(err, SY_E_INVALID, "%s: header byte %zu: __metadata__ must be an object of strings", f->path,
                       t.offset);
    size_t cap = 0;
    for (;;) {
        if ((st = sy_jreader_next(&p->r, &t, err)) != SY_OK)
            return st;
        if (t.type == SY_J_OBJECT_END)
            return check_unique_meta_keys(f, err);
        if (f->n_meta == cap) {
            cap = cap ? cap * 2 : 8;
            f->meta_keys = sy_xrealloc(f->meta_keys, cap * sizeof *f->meta_keys);
            f->meta_values = sy_xrealloc(f->meta_values, cap * sizeof *f->meta_values);
        }
        char *key = sy_strdup(t.text);
        if ((st = sy_jreader_next(&p->r, &t, err)) != SY_OK) {
            free(key);
            return st;
        }
        if (t.type != SY_J_STRING) {
            st = sy_fail(err, SY_E_INVALID, "%s: __metadata__ \"%s\" must be a string", f->path, key);
            free(key);
            return st;
        }
        f->meta_keys[f->n_meta] = key;
        f->meta_values[f->n_meta++] = sy_strdup(t.text);
    }
}

/* [n, n, ...] of non-negative integers, at most `max` of them. */
static sy_status parse_ints(header_parser *p, const char *name, const char *field, uint64_t *out, uint32_t max,
                            uint32_t *count, sy_error *err)
{
    sy_jtoken t;
    char what[96];
    snprintf(what, sizeof what, "%s of a tensor", field);
    sy_status st = expect(p, &t, SY_J_ARRAY, what, err);
    *count = 0;
    while (st == SY_OK) {
        if ((st = sy_jreader_next(&p->r, &t, err)) != SY_OK)
            return st;
        if (t.type == SY_J_ARRAY_END)
            return SY_OK;
        if (*count == max)
            return sy_fail(err, SY_E_INVALID, "%s: tensor \"%s\": %s has more than %u entries", p->f->path, name,
                           field, max);
        if (t.type != SY_J_NUMBER || !sy_json_u64(t.text, t.len, &out[*count]))
            return sy_fail(err, SY_E_INVALID,
                           "%s: tensor \"%s\": %s entry %u is %s, not an integer from 0 to 2^64 - 1", p->f->path,
                           name, field, *count, t.type == SY_J_NUMBER ? t.text : sy_jtype_name(t.type));
        (*count)++;
    }
    return st;
}

static sy_status parse_tensor(header_parser *p, sy_st_tensor *ten, uint64_t range[2], sy_error *err)
{
    const char *path = p->f->path, *name = ten->name;
    sy_jtoken t;
    sy_status st = sy_jreader_next(&p->r, &t, err);
    if (st != SY_OK)
        return st;
    if (t.type != SY_J_OBJECT)
        return sy_fail(err, SY_E_INVALID, "%s: tensor \"%s\" must be an object with dtype, shape and data_offsets",
                       path, name);
    int have_dtype = 0, have_shape = 0, have_offsets = 0;
    for (;;) {
        if ((st = sy_jreader_next(&p->r, &t, err)) != SY_OK)
            return st;
        if (t.type == SY_J_OBJECT_END)
            break;
        int *seen = strcmp(t.text, "dtype") == 0          ? &have_dtype
                    : strcmp(t.text, "shape") == 0        ? &have_shape
                    : strcmp(t.text, "data_offsets") == 0 ? &have_offsets
                                                          : NULL;
        if (!seen)
            return sy_fail(err, SY_E_INVALID, "%s: tensor \"%s\" has the field \"%s\" (expected dtype, shape, "
                           "data_offsets)", path, name, t.text);
        if (*seen)
            return sy_fail(err, SY_E_INVALID, "%s: tensor \"%s\" has the field \"%s\" twice", path, name, t.text);
        *seen = 1;
        if (seen == &have_dtype) {
            if ((st = sy_jreader_next(&p->r, &t, err)) != SY_OK)
                return st;
            ten->dtype = -1;
            for (int32_t d = 0; t.type == SY_J_STRING && d < SY_ST_DTYPE_COUNT_; d++)
                if (strcmp(t.text, dtypes[d].name) == 0)
                    ten->dtype = d;
            if (ten->dtype < 0)
                return sy_fail(err, SY_E_INVALID, "%s: tensor \"%s\": dtype %s%s%s is not a safetensors dtype "
                               "(BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64)",
                               path, name, t.type == SY_J_STRING ? "\"" : "",
                               t.type == SY_J_STRING ? t.text : sy_jtype_name(t.type),
                               t.type == SY_J_STRING ? "\"" : "");
        } else if (seen == &have_shape) {
            if ((st = parse_ints(p, name, "shape", ten->shape, SY_ST_MAX_RANK, &ten->rank, err)) != SY_OK)
                return st;
        } else {
            uint32_t n = 0;
            if ((st = parse_ints(p, name, "data_offsets", range, 2, &n, err)) != SY_OK)
                return st;
            if (n != 2)
                return sy_fail(err, SY_E_INVALID, "%s: tensor \"%s\": data_offsets has %u entries, expected 2 "
                               "[begin, end]", path, name, n);
        }
    }
    if (!have_dtype || !have_shape || !have_offsets)
        return sy_fail(err, SY_E_INVALID, "%s: tensor \"%s\" lacks %s", path, name,
                       !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return SY_OK;
}

/* Byte sizes and ranges of every tensor against the data section. */
static sy_status check_tensor(const sy_st_file *f, sy_st_tensor *t, const uint64_t range[2], uint64_t data_start,
                              uint64_t data_len, sy_error *err)
{
    char desc[160];
    uint64_t numel = 1, bytes;
    for (uint32_t i = 0; i < t->rank; i++)
        if (__builtin_mul_overflow(numel, t->shape[i], &numel))
            return sy_fail(err, SY_E_INVALID, "%s: tensor \"%s\": the shape's element count overflows 64 bits",
                           f->path, t->name);
    if (__builtin_mul_overflow(numel, (uint64_t)sy_st_dtype_size(t->dtype), &bytes))
        return sy_fail(err, SY_E_INVALID, "%s: tensor \"%s\": the shape's byte count overflows 64 bits", f->path,
                       t->name);
    sy_st_describe(t->dtype, t->rank, t->shape, desc, sizeof desc);
    if (range[0] > range[1])
        return sy_fail(err, SY_E_INVALID, "%s: tensor \"%s\": data_offsets [%llu, %llu] end before they begin",
                       f->path, t->name, (unsigned long long)range[0], (unsigned long long)range[1]);
    if (range[1] > data_len)
        return sy_fail(err, SY_E_INVALID,
                       "%s: tensor \"%s\": data_offsets [%llu, %llu] run past the %llu bytes of data in the file",
                       f->path, t->name, (unsigned long long)range[0], (unsigned long long)range[1],
                       (unsigned long long)data_len);
    if (range[1] - range[0] != bytes)
        return sy_fail(err, SY_E_INVALID, "%s: tensor \"%s\": %s is %llu bytes but data_offsets [%llu, %llu] span %llu",
                       f->path, t->name, desc, (unsigned long long)bytes, (unsigned long long)range[0],
                       (unsigned long long)range[1], (unsigned long long)(range[1] - range[0]));
    t->numel = numel;
    t->bytes = bytes;
    t->offset = data_start + range[0];
    return SY_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const sy_st_tensor *)a)->name, ((const sy_st_tensor *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
    const sy_st_tensor *x = *(const sy_st_tensor *const *)a, *y = *(const sy_st_tensor *const *)b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/* The tensors tile the data section: sorted by offset, each begins where the previous ends. */
static sy_status check_tiling(const sy_st_file *f, uint64_t data_start, uint64_t data_len, sy_error *err)
{
    const sy_st_tensor **order = sy_xcalloc(f->n_tensors ? f->n_tensors : 1, sizeof *order);
    for (size_t i = 0; i < f->n_tensors; i++)
        order[i] = &f->tensors[i];
    qsort(order, f->n_tensors, sizeof *order, by_offset);
    sy_status st = SY_OK;
    uint64_t expect = data_start;
    const sy_st_tensor *prev = NULL;
    for (size_t i = 0; i < f->n_tensors && st == SY_OK; i++) {
        const sy_st_tensor *t = order[i];
        if (t->offset < expect)
            st = sy_fail(err, SY_E_INVALID, "%s: tensors \"%s\" and \"%s\" overlap (data bytes %llu..%llu)", f->path,
                         prev->name, t->name, (unsigned long long)(t->offset - data_start),
                         (unsigned long long)(expect - data_start));
        else if (t->offset > expect)
            st = sy_fail(err, SY_E_INVALID, "%s: data bytes %llu..%llu belong to no tensor (before \"%s\")", f->path,
                         (unsigned long long)(expect - data_start), (unsigned long long)(t->offset - data_start),
                         t->name);
        expect = t->offset + t->bytes;
        prev = t;
    }
    if (st == SY_OK && expect != data_start + data_len)
        st = sy_fail(err, SY_E_INVALID, "%s: the last %llu data bytes belong to no tensor", f->path,
                     (unsigned long long)(data_start + data_len - expect));
    free(order);
    return st;
}

static sy_status parse_json_header(sy_st_file *f, const char *json, size_t len, uint64_t data_start,
                                   uint64_t data_len, sy_error *err)
{
    header_parser p = {.f = f};
    sy_jreader_init(&p.r, f->path, json, len);
    uint64_t (*ranges)[2] = NULL;
    int have_meta = 0;
    sy_jtoken t;
    sy_status st = sy_jreader_next(&p.r, &t, err);
    if (st == SY_OK && t.type != SY_J_OBJECT)
        st = sy_fail(err, SY_E_INVALID, "%s: the header is %s, not a JSON object", f->path, sy_jtype_name(t.type));
    while (st == SY_OK) {
        if ((st = sy_jreader_next(&p.r, &t, err)) != SY_OK || t.type == SY_J_OBJECT_END)
            break;
        if (strcmp(t.text, "__metadata__") == 0) {
            if (have_meta)
                st = sy_fail(err, SY_E_INVALID, "%s: the header has __metadata__ twice", f->path);
            else
                st = parse_metadata(&p, err);
            have_meta = 1;
            continue;
        }
        if (f->n_tensors == SY_ST_MAX_TENSORS) {
            st = sy_fail(err, SY_E_INVALID, "%s: more than %u tensors", f->path, SY_ST_MAX_TENSORS);
            break;
        }
        if (t.len > SY_ST_MAX_NAME_BYTES || t.len == 0) {
            st = sy_fail(err, SY_E_INVALID, "%s: header byte %zu: a tensor name of %zu bytes (1 to %u allowed)",
                         f->path, t.offset, t.len, SY_ST_MAX_NAME_BYTES);
            break;
        }
        if (f->n_tensors == p.cap) {
            p.cap = p.cap ? p.cap * 2 : 64;
            f->tensors = sy_xrealloc(f->tensors, p.cap * sizeof *f->tensors);
            ranges = sy_xrealloc(ranges, p.cap * sizeof *ranges);
        }
        sy_st_tensor *ten = &f->tensors[f->n_tensors];
        memset(ten, 0, sizeof *ten);
        ten->name = sy_strdup(t.text);
        f->n_tensors++;
        if ((st = parse_tensor(&p, ten, ranges[f->n_tensors - 1], err)) == SY_OK)
            st = check_tensor(f, ten, ranges[f->n_tensors - 1], data_start, data_len, err);
    }
    if (st == SY_OK && (st = sy_jreader_next(&p.r, &t, err)) == SY_OK && t.type != SY_J_END)
        st = sy_fail(err, SY_E_INTERNAL, "%s: the header continues after its object", f->path);
    sy_jreader_free(&p.r);
    free(ranges);
    if (st != SY_OK)
        return st;
    if (f->n_tensors)
        qsort(f->tensors, f->n_tensors, sizeof *f->tensors, by_name);
    for (size_t i = 1; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0)
            return sy_fail(err, SY_E_INVALID, "%s: the header names tensor \"%s\" twice", f->path, f->tensors[i].name);
    return check_tiling(f, data_start, data_len, err);
}

sy_status sy_st_parse(const void *data, size_t size, const char *origin, sy_st_file *f, sy_error *err)
{
    memset(f, 0, sizeof *f);
    f->path = sy_strdup(origin);
    f->base = data;
    f->size = size;
    sy_status st = SY_OK;
    if (size < 8) {
        st = sy_fail(err, SY_E_INVALID, "%s: %zu bytes, too short for the 8-byte header length of a safetensors file",
                     origin, size);
    } else {
        const uint8_t *b = data;
        uint64_t hlen = 0;
        for (int i = 7; i >= 0; i--)
            hlen = hlen << 8 | b[i];
        if (hlen > SY_ST_MAX_HEADER_BYTES)
            st = sy_fail(err, SY_E_INVALID, "%s: header length %llu is over the %u MiB limit (not a safetensors file?)",
                         origin, (unsigned long long)hlen, SY_ST_MAX_HEADER_BYTES >> 20);
        else if (hlen > size - 8)
            st = sy_fail(err, SY_E_INVALID, "%s: header length %llu runs past the end of the %zu-byte file", origin,
                         (unsigned long long)hlen, size);
        else
            st = parse_json_header(f, (const char *)b + 8, (size_t)hlen, 8 + hlen, size - 8 - hlen, err);
    }
    if (st != SY_OK) {
        f->base = NULL; /* the caller's memory, or a mapping sy_st_open removes */
        sy_st_close(f);
    }
    return st;
}

static const char *file_kind(mode_t mode)
{
    return S_ISDIR(mode)    ? "a folder"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
                            : "a special file";
}

sy_status sy_open_regular_file(const char *path, int *fd_out, uint64_t *size, sy_error *err)
{
    *fd_out = -1;
    /* Without O_NONBLOCK, opening a FIFO waits for a writer, forever; nothing is read before the
     * file is known to be a regular one. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return sy_fail(err, SY_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    sy_status st = SY_OK;
    int flags;
    if (fstat(fd, &sb) != 0)
        st = sy_fail(err, SY_E_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = sy_fail(err, SY_E_IO, "%s: is %s, not a regular file", path, file_kind(sb.st_mode));
    else if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
        st = sy_fail(err, SY_E_IO, "%s: cannot make reads blocking: %s", path, strerror(errno));
    if (st != SY_OK) {
        close(fd);
        return st;
    }
    *fd_out = fd;
    *size = (uint64_t)sb.st_size;
    return SY_OK;
}

sy_status sy_st_open(const char *path, sy_st_file *f, sy_error *err)
{
    memset(f, 0, sizeof *f);
    int fd;
    uint64_t file_size;
    sy_status st = sy_open_regular_file(path, &fd, &file_size, err);
    if (st != SY_OK)
        return st;
    size_t size = (size_t)file_size;
    void *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    int saved = errno;
    close(fd); /* the mapping keeps the file */
    if (size && map == MAP_FAILED)
        return sy_fail(err, SY_E_IO, "%s: cannot map %zu bytes: %s", path, size, strerror(saved));
    st = sy_st_parse(size ? map : "", size, path, f, err);
    if (st != SY_OK) {
        if (size)
            munmap(map, size);
        return st;
    }
    f->mapped = size > 0;
    /* The header now lives in f: its pages can go. */
    uint64_t hlen = 0;
    memcpy(&hlen, f->base, sizeof hlen); /* checked above; little-endian hosts only (x86_64, aarch64) */
    sy_st_release(f, 0, 8 + hlen);
    return SY_OK;
}

void sy_st_close(sy_st_file *f)
{
    if (f->mapped && f->base)
        munmap((void *)f->base, f->size);
    for (size_t i = 0; i < f->n_tensors; i++)
        free(f->tensors[i].name);
    for (size_t i = 0; i < f->n_meta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_values[i]);
    }
    free(f->tensors);
    free(f->meta_keys);
    free(f->meta_values);
    free(f->path);
    memset(f, 0, sizeof *f);
}

const sy_st_tensor *sy_st_find(const sy_st_file *f, const char *name)
{
    sy_st_tensor key = {.name = (char *)name};
    return f->n_tensors ? bsearch(&key, f->tensors, f->n_tensors, sizeof key, by_name) : NULL;
}

void sy_st_release(const sy_st_file *f, uint64_t offset, uint64_t bytes)
{
    if (!f->mapped || bytes == 0)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t begin = (uintptr_t)(f->base + offset) & ~(page - 1);
    uintptr_t end = (uintptr_t)(f->base + offset + bytes);
    /* Pages shared with a neighbouring tensor go too: the mapping reads them again if needed. */
    madvise((void *)begin, end - begin, MADV_DONTNEED);
}
