#include "checkpoint/synth_write.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/gpt_oss.h"
#include "checkpoint/hf_config.h"
#include "checkpoint/st_write.h"
#include "model/weights.h"
#include "util/strbuf.h"

static sy_status append_sink(void *user, uint64_t offset, const void *data, size_t bytes, sy_error *err)
{
    (void)offset; /* pieces come in order */
    return sy_st_writer_append(user, data, bytes, err);
}

static char *shard_name(uint32_t i, uint32_t n)
{
    return n == 1 ? sy_strdup(SY_CKPT_SINGLE_FILE) : sy_asprintf("model-%05u-of-%05u.safetensors", i + 1, n);
}

/* Shard boundaries by bytes: a shard ends once it holds its share, and every shard gets at least
 * one tensor. first[s] is the first tensor of shard s; first[n] = count. */
static void split(const sy_model_dims *d, size_t count, uint32_t n, size_t *first)
{
    uint64_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += sy_weights_bytes(d, sy_gpt_oss_tensor_at(d, i).layer, sy_gpt_oss_tensor_at(d, i).kind);
    uint32_t s = 0;
    uint64_t before = 0;
    first[0] = 0;
    for (size_t i = 0; i < count; i++) {
        int nonempty = i > first[s];
        int share_done = before * n >= (uint64_t)(s + 1) * total;
        int must = count - i == n - 1 - s; /* as many tensors left as shards still empty */
        if (s + 1 < n && nonempty && (share_done || must))
            first[++s] = i;
        sy_gpt_oss_tensor t = sy_gpt_oss_tensor_at(d, i);
        before += sy_weights_bytes(d, t.layer, t.kind);
    }
    first[n] = count;
}

static sy_status write_shard(sy_weights *w, const sy_model_dims *d, const char *path, size_t from, size_t to,
                             const char *const *meta, size_t n_meta, sy_error *err)
{
    size_t n = to - from;
    sy_st_entry *entries = sy_xcalloc(n, sizeof *entries);
    char (*names)[128] = sy_xcalloc(n, sizeof *names);
    for (size_t i = 0; i < n; i++) {
        sy_gpt_oss_tensor t = sy_gpt_oss_tensor_at(d, from + i);
        entries[i].name = sy_ckpt_name(t.layer, t.kind, names[i], sizeof names[i]);
        entries[i].dtype = t.dtype;
        entries[i].rank = t.rank;
        memcpy(entries[i].shape, t.shape, sizeof t.shape);
    }
    sy_st_writer sw;
    sy_status st = sy_st_writer_begin(&sw, path, entries, n, meta, n_meta, err);
    for (size_t i = 0; st == SY_OK && i < n; i++) {
        sy_gpt_oss_tensor t = sy_gpt_oss_tensor_at(d, from + i);
        st = sy_weights_stream(w, t.layer, t.kind, append_sink, &sw, err);
    }
    if (st == SY_OK)
        st = sy_st_writer_commit(&sw, err);
    else
        sy_st_writer_abort(&sw);
    free(entries);
    free(names);
    return st;
}

/* One shard's write, run on a thread of its own. */
typedef struct shard_job {
    sy_weights *w;
    const sy_model_dims *d;
    char *path;
    size_t from, to;
    const char *const *meta;
    size_t n_meta;
    sy_status st;
    sy_error err;
} shard_job;

static void *shard_thread(void *arg)
{
    shard_job *j = arg;
    j->st = write_shard(j->w, j->d, j->path, j->from, j->to, j->meta, j->n_meta, &j->err);
    return NULL;
}

/* Generating the values is what takes the time (about 35 MB/s per core), and the shards are
 * independent files: they are written in parallel, up to one per online CPU, each holding one
 * tensor in memory at a time. The first failing shard's error is the one reported; written[s]
 * says whether shard s is in place, for the cleanup of a failed write. */
static sy_status write_shards(sy_weights *w, const sy_model_dims *d, const char *dir, uint32_t n,
                              const size_t *first, const char *const *meta, size_t n_meta, uint8_t *written,
                              sy_error *err)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t width = cpus > 1 ? (uint32_t)cpus : 1;
    shard_job *jobs = sy_xcalloc(n, sizeof *jobs);
    pthread_t *threads = sy_xcalloc(n, sizeof *threads);
    sy_status st = SY_OK;
    for (uint32_t s = 0; s < n; s++) {
        char *file = shard_name(s, n);
        jobs[s] = (shard_job){w, d, sy_asprintf("%s/%s", dir, file), first[s], first[s + 1], meta, n_meta, SY_OK, {{0}}};
        free(file);
    }
    for (uint32_t base = 0; base < n; base += width) {
        uint32_t end = base + width < n ? base + width : n, started = base;
        for (; started < end; started++)
            if (pthread_create(&threads[started], NULL, shard_thread, &jobs[started]) != 0)
                break;
        for (uint32_t s = started; s < end; s++) /* no thread to spare: this one writes it */
            shard_thread(&jobs[s]);
        for (uint32_t s = base; s < started; s++)
            pthread_join(threads[s], NULL);
    }
    for (uint32_t s = 0; s < n; s++) {
        written[s] = jobs[s].st == SY_OK;
        if (jobs[s].st != SY_OK && st == SY_OK) {
            st = jobs[s].st;
            *err = jobs[s].err;
        }
        free(jobs[s].path);
    }
    free(jobs);
    free(threads);
    return st;
}

/* Shard `index` (from 1) of `count` when `s` is named like a shard, else 0. */
static int parse_shard_name(const char *s, unsigned *index, unsigned *count)
{
    char tail[16];
    return sscanf(s, "model-%5u-of-%5u%15s", index, count, tail) == 3 && strcmp(tail, ".safetensors") == 0;
}

/* config.json marks a checkpoint complete: it goes before any shard is written and comes back
 * last. A write that fails midway then leaves a folder that check and run refuse (no config.json),
 * never this write's shards under the earlier write's index and config. The index and the single
 * file go too: the earlier write's files must not describe the new shards. */
static sy_status unmark_complete(const char *dir, sy_error *err)
{
    static const char *const marks[] = {SY_CKPT_CONFIG_FILE, SY_CKPT_INDEX_FILE, SY_CKPT_SINGLE_FILE};
    sy_status st = SY_OK;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0] && st == SY_OK; i++) {
        char *path = sy_asprintf("%s/%s", dir, marks[i]);
        if (unlink(path) != 0 && errno != ENOENT)
            st = sy_fail(err, SY_E_IO, "%s: cannot remove the earlier checkpoint's file: %s", path, strerror(errno));
        free(path);
    }
    /* The removals reach the disk before any new shard does. */
    return st == SY_OK ? sy_sync_dir(dir, err) : st;
}

/* After a failure: the shards this write put in place, and its index; what stays is a folder
 * without config.json. Best effort: the failure being reported is the one that matters. */
static void remove_this_write(const char *dir, uint32_t n, const uint8_t *written)
{
    for (uint32_t s = 0; s < n; s++) {
        if (!written[s])
            continue;
        char *file = shard_name(s, n);
        char *path = sy_asprintf("%s/%s", dir, file);
        unlink(path);
        free(path);
        free(file);
    }
    char *index = sy_asprintf("%s/%s", dir, SY_CKPT_INDEX_FILE);
    unlink(index);
    free(index);
}

/* Shards of an earlier write with another shard count: they are not this checkpoint's. */
static sy_status remove_stale(const char *dir, uint32_t n, sy_error *err)
{
    sy_status st = SY_OK;
    DIR *dh = opendir(dir);
    for (struct dirent *e; dh && st == SY_OK && (e = readdir(dh));) {
        unsigned index, count;
        if (!parse_shard_name(e->d_name, &index, &count))
            continue;
        int ours = 0;
        if (n > 1 && count == n && index >= 1 && index <= n) {
            char *mine = shard_name(index - 1, n); /* the exact spelling: model-1-of-3 is not ours */
            ours = strcmp(mine, e->d_name) == 0;
            free(mine);
        }
        char *path = sy_asprintf("%s/%s", dir, e->d_name);
        if (!ours && unlink(path) != 0)
            st = sy_fail(err, SY_E_IO, "%s: cannot remove the stale shard: %s", path, strerror(errno));
        free(path);
    }
    if (dh)
        closedir(dh);
    return st;
}

static sy_status write_index(const sy_model_dims *d, const char *dir, uint32_t n, const size_t *first,
                             uint64_t total, sy_error *err)
{
    sy_str s = {0};
    sy_str_appendf(&s, "{\n  \"metadata\": {\"total_size\": %llu},\n  \"weight_map\": {", (unsigned long long)total);
    for (uint32_t sh = 0; sh < n; sh++) {
        char *file = shard_name(sh, n);
        for (size_t i = first[sh]; i < first[sh + 1]; i++) {
            char name[128];
            sy_gpt_oss_tensor t = sy_gpt_oss_tensor_at(d, i);
            sy_str_appendf(&s, "%s\n    \"%s\": \"%s\"", i ? "," : "", sy_ckpt_name(t.layer, t.kind, name, sizeof name),
                           file);
        }
        free(file);
    }
    sy_str_appendf(&s, "\n  }\n}\n");
    char *path = sy_asprintf("%s/%s", dir, SY_CKPT_INDEX_FILE);
    sy_status st = sy_write_file_atomic(path, s.data, s.len, err);
    free(path);
    sy_str_free(&s);
    return st;
}

sy_status sy_checkpoint_write_synth(const sy_model_dims *d, uint64_t seed, uint32_t shards, const char *dir,
                                    const char *label, sy_synth_write_result *out, sy_error *err)
{
    memset(out, 0, sizeof *out);
    sy_status st = sy_model_dims_check(d, err);
    if (st != SY_OK)
        return st;
    size_t count = sy_gpt_oss_tensor_count(d);
    if (shards == 0 || shards > count || shards > 99999)
        return sy_fail(err, SY_E_INVALID, "--shards %u: between 1 and %zu (the model's tensor count)", shards,
                       count < 99999 ? count : 99999);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return sy_fail(err, SY_E_IO, "%s: cannot create the folder: %s", dir, strerror(errno));
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return sy_fail(err, SY_E_IO, "%s: not a folder", dir);
    sy_weights *w = NULL;
    if ((st = sy_weights_open(d, seed, NULL, &w, err)) != SY_OK)
        return st;
    char seed_text[32];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)seed);
    const char *meta[] = {"format", "pt", "generator", "switchyard checkpoint synth", "seed", seed_text,
                          "model", label ? label : "custom"};
    size_t *first = sy_xcalloc(shards + 1, sizeof *first);
    uint8_t *written = sy_xcalloc(shards, sizeof *written);
    split(d, count, shards, first);
    for (size_t i = 0; i < count; i++) {
        sy_gpt_oss_tensor t = sy_gpt_oss_tensor_at(d, i);
        out->bytes += sy_weights_bytes(d, t.layer, t.kind);
    }
    out->tensors = count;
    /* The order is the rule of docs/checkpoints.md: unmark, shards, stale shards, index, config.json. */
    st = unmark_complete(dir, err);
    if (st == SY_OK)
        st = write_shards(w, d, dir, shards, first, meta, 4, written, err);
    for (uint32_t s = 0; s < shards; s++)
        out->files += written[s];
    if (st == SY_OK)
        st = remove_stale(dir, shards, err);
    if (st == SY_OK && shards > 1)
        st = write_index(d, dir, shards, first, out->bytes, err);
    if (st == SY_OK) {
        char *text = sy_hf_config_text(d);
        char *path = sy_asprintf("%s/%s", dir, SY_CKPT_CONFIG_FILE);
        st = sy_write_file_atomic(path, text, strlen(text), err);
        free(path);
        free(text);
    }
    if (st != SY_OK)
        remove_this_write(dir, shards, written);
    free(written);
    free(first);
    sy_weights_close(w);
    return st;
}
