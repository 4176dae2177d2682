#include "checkpoint/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/json_value.h"
#include "util/strbuf.h"

sy_status sy_read_small_file(const char *path, size_t limit, char **text, size_t *len, sy_error *err)
{
    *text = NULL;
    *len = 0;
    int fd;
    uint64_t size;
    sy_status st = sy_open_regular_file(path, &fd, &size, err);
    if (st != SY_OK)
        return st;
    if (size > limit) {
        close(fd);
        return sy_fail(err, SY_E_INVALID, "%s: %llu bytes, over the %zu MiB limit", path, (unsigned long long)size,
                       limit >> 20);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        st = sy_fail(err, SY_E_IO, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return st;
    }
    char *buf = sy_xcalloc((size_t)size + 1, 1);
    size_t n = fread(buf, 1, (size_t)size, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || n != (size_t)size) {
        free(buf);
        return sy_fail(err, SY_E_IO, "%s: read %zu of %llu bytes", path, n, (unsigned long long)size);
    }
    *text = buf;
    *len = n;
    return SY_OK;
}

static int ref_order(const void *a, const void *b)
{
    return strcmp(((const sy_ckpt_ref *)a)->name, ((const sy_ckpt_ref *)b)->name);
}

const sy_ckpt_ref *sy_checkpoint_find(const sy_checkpoint *c, const char *name)
{
    sy_ckpt_ref key = {.name = name};
    return c->n_refs ? bsearch(&key, c->refs, c->n_refs, sizeof key, ref_order) : NULL;
}

/* Whatever is there: a FIFO or a folder under a checkpoint file's name is refused by the open that
 * follows, naming what it is, rather than taken for a missing file. */
static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Shards live beside the index: a plain file name, never a path. */
static int plain_shard_name(const char *s)
{
    size_t n = strlen(s);
    return n > 12 && !strchr(s, '/') && s[0] != '.' && strcmp(s + n - 12, ".safetensors") == 0;
}

static int str_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static sy_status open_single(sy_checkpoint *c, const char *path, sy_error *err)
{
    c->shards = sy_xcalloc(1, sizeof *c->shards);
    sy_status st = sy_st_open(path, &c->shards[0], err);
    if (st != SY_OK)
        return st;
    c->n_shards = 1;
    c->n_refs = c->shards[0].n_tensors;
    c->refs = sy_xcalloc(c->n_refs ? c->n_refs : 1, sizeof *c->refs);
    for (size_t i = 0; i < c->n_refs; i++)
        c->refs[i] = (sy_ckpt_ref){c->shards[0].tensors[i].name, 0, &c->shards[0].tensors[i]};
    return SY_OK; /* the shard's tensors are sorted by name already */
}

/* The index as (tensor, shard) pairs, checked against what the shards hold in both directions. */
static sy_status open_sharded(sy_checkpoint *c, const char *index_path, sy_error *err)
{
    char *text = NULL;
    size_t len = 0;
    sy_status st = sy_read_small_file(index_path, SY_CKPT_MAX_JSON_BYTES, &text, &len, err);
    if (st != SY_OK)
        return st;
    sy_jvalue root;
    st = sy_jvalue_parse(index_path, text, len, 1u << 24, &root, err);
    free(text);
    if (st != SY_OK)
        return st;
    const sy_jvalue *map = sy_jvalue_get(&root, "weight_map");
    char **files = NULL;
    size_t n_files = 0;
    if (root.type != SY_J_OBJECT || !map || map->type != SY_J_OBJECT)
        st = sy_fail(err, SY_E_INVALID, "%s: expected an object with a \"weight_map\" object of tensor: file",
                     index_path);
    for (size_t i = 0; st == SY_OK && i < root.n; i++)
        if (strcmp(root.keys[i], "weight_map") != 0 && strcmp(root.keys[i], "metadata") != 0)
            st = sy_fail(err, SY_E_INVALID, "%s: unknown key \"%s\" (expected metadata and weight_map)", index_path,
                         root.keys[i]);
    if (st == SY_OK) {
        files = sy_xcalloc(map->n ? map->n : 1, sizeof *files);
        for (size_t i = 0; st == SY_OK && i < map->n; i++) {
            const sy_jvalue *v = &map->items[i];
            if (v->type != SY_J_STRING || !plain_shard_name(v->text))
                st = sy_fail(err, SY_E_INVALID,
                             "%s: weight_map puts \"%s\" in %s%s%s; expected the name of a .safetensors file in the "
                             "same folder",
                             index_path, map->keys[i], v->type == SY_J_STRING ? "\"" : "",
                             v->type == SY_J_STRING ? v->text : sy_jtype_name(v->type),
                             v->type == SY_J_STRING ? "\"" : "");
            else
                files[i] = v->text;
        }
    }
    if (st == SY_OK) {
        /* Distinct shard names, sorted: a tensor's shard is found by binary search. */
        qsort(files, map->n, sizeof *files, str_order);
        for (size_t i = 0; i < map->n; i++)
            if (n_files == 0 || strcmp(files[n_files - 1], files[i]) != 0)
                files[n_files++] = files[i];
        if (n_files > SY_CKPT_MAX_SHARDS)
            st = sy_fail(err, SY_E_INVALID, "%s: %zu shards, more than %u", index_path, n_files, SY_CKPT_MAX_SHARDS);
        if (n_files == 0)
            st = sy_fail(err, SY_E_INVALID, "%s: weight_map lists no tensors", index_path);
    }
    if (st == SY_OK) {
        c->shards = sy_xcalloc(n_files, sizeof *c->shards);
        for (size_t i = 0; st == SY_OK && i < n_files; i++) {
            char *path = sy_asprintf("%s/%s", c->dir, files[i]);
            st = sy_st_open(path, &c->shards[i], err);
            free(path);
            if (st == SY_OK)
                c->n_shards++;
        }
    }
    if (st == SY_OK) {
        c->refs = sy_xcalloc(map->n ? map->n : 1, sizeof *c->refs);
        size_t total = 0;
        for (size_t i = 0; st == SY_OK && i < map->n; i++) {
            char **file = bsearch(&map->items[i].text, files, n_files, sizeof *files, str_order);
            uint32_t shard = (uint32_t)(file - files);
            const sy_st_tensor *t = sy_st_find(&c->shards[shard], map->keys[i]);
            if (!t)
                st = sy_fail(err, SY_E_INVALID, "%s: weight_map puts tensor \"%s\" in %s, which does not hold it",
                             index_path, map->keys[i], c->shards[shard].path);
            else
                c->refs[c->n_refs++] = (sy_ckpt_ref){t->name, shard, t};
        }
        for (size_t s = 0; st == SY_OK && s < c->n_shards; s++)
            total += c->shards[s].n_tensors;
        if (st == SY_OK && total != c->n_refs) {
            /* Some shard holds a tensor the index does not put there. */
            qsort(c->refs, c->n_refs, sizeof *c->refs, ref_order);
            for (size_t s = 0; st == SY_OK && s < c->n_shards; s++)
                for (size_t i = 0; st == SY_OK && i < c->shards[s].n_tensors; i++) {
                    const sy_ckpt_ref *r = sy_checkpoint_find(c, c->shards[s].tensors[i].name);
                    if (!r || r->shard != s)
                        st = sy_fail(err, SY_E_INVALID, "%s holds tensor \"%s\", which %s %s%s", c->shards[s].path,
                                     c->shards[s].tensors[i].name, index_path,
                                     r ? "puts in " : "does not list", r ? c->shards[r->shard].path : "");
                }
        }
        qsort(c->refs, c->n_refs, sizeof *c->refs, ref_order);
    }
    free(files);
    sy_jvalue_free(&root);
    return st;
}

sy_status sy_checkpoint_open(const char *dir, sy_checkpoint **out, sy_error *err)
{
    *out = NULL;
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return sy_fail(err, SY_E_IO, "model.weights: %s is not a folder (expected a checkpoint folder with %s and %s "
                       "or %s)", dir, SY_CKPT_CONFIG_FILE, SY_CKPT_SINGLE_FILE, SY_CKPT_INDEX_FILE);
    sy_checkpoint *c = sy_xcalloc(1, sizeof *c);
    c->dir = sy_strdup(dir);
    char *single = sy_asprintf("%s/%s", dir, SY_CKPT_SINGLE_FILE);
    char *index = sy_asprintf("%s/%s", dir, SY_CKPT_INDEX_FILE);
    int has_single = exists(single), has_index = exists(index);
    sy_status st;
    if (has_single && has_index)
        st = sy_fail(err, SY_E_INVALID, "%s: both %s and %s exist; which one holds the weights is ambiguous: "
                     "remove one", dir, SY_CKPT_SINGLE_FILE, SY_CKPT_INDEX_FILE);
    else if (has_index)
        st = open_sharded(c, index, err);
    else if (has_single)
        st = open_single(c, single, err);
    else
        st = sy_fail(err, SY_E_IO, "%s: neither %s nor %s is there", dir, SY_CKPT_SINGLE_FILE, SY_CKPT_INDEX_FILE);
    free(single);
    free(index);
    if (st != SY_OK) {
        sy_checkpoint_close(c);
        return st;
    }
    *out = c;
    return SY_OK;
}

void sy_checkpoint_close(sy_checkpoint *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_shards; i++)
        sy_st_close(&c->shards[i]);
    free(c->shards);
    free(c->refs);
    free(c->dir);
    free(c);
}
