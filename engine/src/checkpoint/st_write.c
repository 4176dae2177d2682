#include "checkpoint/st_write.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/json.h"
#include "util/strbuf.h"

uint64_t sy_st_entry_bytes(const sy_st_entry *e)
{
    uint64_t n = sy_st_dtype_size(e->dtype);
    for (uint32_t i = 0; i < e->rank; i++)
        n *= e->shape[i];
    return n;
}

static sy_status io_error(sy_error *err, const char *path, const char *what)
{
    return sy_fail(err, SY_E_IO, "%s: cannot %s: %s", path, what, strerror(errno));
}

/* The process's umask, which Linux reports without it being changed; elsewhere it is read by
 * setting and restoring it, under a lock so that the writer's own threads never see the value
 * set in passing. */
static mode_t current_umask(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    unsigned mask = 0;
    int found = 0;
    char line[128];
    FILE *status = fopen("/proc/self/status", "r");
    while (status && !found && fgets(line, sizeof line, status))
        found = sscanf(line, "Umask: %o", &mask) == 1;
    if (status)
        fclose(status);
    if (found)
        return (mode_t)mask;
    pthread_mutex_lock(&lock);
    mode_t old = umask(022);
    umask(old);
    pthread_mutex_unlock(&lock);
    return old;
}

/* A temporary file beside the final one, so that the rename never crosses file systems. mkstemp
 * makes the name unpredictable and creates the file exclusively (a symlink planted under the name
 * is never followed); the file then gets the permissions of any new file. */
static sy_status create_temp(const char *path, char **tmp_out, FILE **f_out, sy_error *err)
{
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    char *tmp = sy_asprintf("%.*s.%s.tmp-XXXXXX", dir_len, path, slash ? slash + 1 : path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        sy_status st = io_error(err, path, "create a temporary file beside it");
        free(tmp);
        return st;
    }
    FILE *f = NULL;
    sy_status st = SY_OK;
    if (fchmod(fd, 0666 & ~current_umask()) != 0)
        st = io_error(err, tmp, "set the permissions of");
    else if (!(f = fdopen(fd, "wb")))
        st = io_error(err, tmp, "open");
    if (st != SY_OK) {
        close(fd);
        unlink(tmp);
        free(tmp);
        return st;
    }
    *tmp_out = tmp;
    *f_out = f;
    return SY_OK;
}

sy_status sy_sync_dir(const char *dir, sy_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return io_error(err, dir, "open the folder to sync it");
    sy_status st = SY_OK;
    /* EINVAL: a file system that has nothing to sync for folders. */
    if (fsync(fd) != 0 && errno != EINVAL)
        st = io_error(err, dir, "sync the folder");
    close(fd);
    return st;
}

static sy_status sync_parent_dir(const char *path, sy_error *err)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return sy_sync_dir(".", err);
    char *dir = slash == path ? sy_strdup("/") : sy_asprintf("%.*s", (int)(slash - path), path);
    sy_status st = sy_sync_dir(dir, err);
    free(dir);
    return st;
}

/* The file's data is on disk before its name is, and the name before this returns: a crash leaves
 * the old file or the new one, and a file reported written stays written. *tmp is freed and set to
 * NULL once renamed: that name is no longer ours to remove. */
static sy_status sync_and_rename(FILE *f, char **tmp, const char *path, sy_error *err)
{
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        sy_status st = io_error(err, *tmp, "write");
        fclose(f);
        return st;
    }
    if (fclose(f) != 0)
        return io_error(err, *tmp, "close");
    if (rename(*tmp, path) != 0)
        return io_error(err, path, "rename the finished file into place");
    free(*tmp);
    *tmp = NULL;
    return sync_parent_dir(path, err);
}

sy_status sy_st_writer_begin(sy_st_writer *w, const char *path, const sy_st_entry *entries, size_t n_entries,
                             const char *const *meta, size_t n_meta, sy_error *err)
{
    memset(w, 0, sizeof *w);
    w->path = sy_strdup(path);
    w->entries = entries;
    w->n_entries = n_entries;
    w->bytes = sy_xcalloc(n_entries ? n_entries : 1, sizeof *w->bytes);
    char *header = NULL;
    size_t header_len = 0;
    FILE *h = open_memstream(&header, &header_len);
    if (!h)
        return io_error(err, path, "build the header");
    fputc('{', h);
    if (n_meta) {
        fputs("\"__metadata__\":{", h);
        for (size_t i = 0; i < n_meta; i++) {
            fprintf(h, "%s\"", i ? "," : "");
            sy_json_escape(h, meta[2 * i]);
            fputs("\":\"", h);
            sy_json_escape(h, meta[2 * i + 1]);
            fputc('"', h);
        }
        fputc('}', h);
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < n_entries; i++) {
        const sy_st_entry *e = &entries[i];
        w->bytes[i] = sy_st_entry_bytes(e);
        fprintf(h, "%s\"", i || n_meta ? "," : "");
        sy_json_escape(h, e->name);
        fprintf(h, "\":{\"dtype\":\"%s\",\"shape\":[", sy_st_dtype_name(e->dtype));
        for (uint32_t d = 0; d < e->rank; d++)
            fprintf(h, "%s%llu", d ? "," : "", (unsigned long long)e->shape[d]);
        fprintf(h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
                (unsigned long long)(offset + w->bytes[i]));
        offset += w->bytes[i];
    }
    fputc('}', h);
    /* Pad with spaces so that the data starts 8-byte aligned, as the format recommends. */
    long len = ftell(h);
    while ((8 + len) % 8) {
        fputc(' ', h);
        len++;
    }
    fclose(h);
    sy_status st = create_temp(path, &w->tmp, &w->f, err);
    if (st == SY_OK) {
        uint8_t le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (uint8_t)((uint64_t)header_len >> (8 * i));
        if (fwrite(le, 1, 8, w->f) != 8 || fwrite(header, 1, header_len, w->f) != header_len)
            st = io_error(err, w->tmp, "write");
    }
    free(header);
    while (w->current < w->n_entries && w->bytes[w->current] == 0)
        w->current++;
    return st;
}

sy_status sy_st_writer_append(sy_st_writer *w, const void *data, uint64_t bytes, sy_error *err)
{
    const uint8_t *p = data;
    while (bytes > 0) {
        if (w->current >= w->n_entries)
            return sy_fail(err, SY_E_INTERNAL, "%s: more data than the header's tensors hold", w->path);
        uint64_t room = w->bytes[w->current] - w->written;
        uint64_t n = bytes < room ? bytes : room;
        if (fwrite(p, 1, (size_t)n, w->f) != n)
            return io_error(err, w->tmp, "write");
        p += n;
        bytes -= n;
        w->written += n;
        if (w->written == w->bytes[w->current]) {
            w->written = 0;
            do
                w->current++;
            while (w->current < w->n_entries && w->bytes[w->current] == 0);
        }
    }
    return SY_OK;
}

sy_status sy_st_writer_commit(sy_st_writer *w, sy_error *err)
{
    if (w->current < w->n_entries) {
        sy_fail(err, SY_E_INTERNAL, "%s: tensor \"%s\" got %llu of its %llu bytes", w->path,
                w->entries[w->current].name, (unsigned long long)w->written, (unsigned long long)w->bytes[w->current]);
        sy_st_writer_abort(w);
        return SY_E_INTERNAL;
    }
    FILE *f = w->f;
    w->f = NULL;
    sy_status st = sync_and_rename(f, &w->tmp, w->path, err);
    sy_st_writer_abort(w);
    return st;
}

void sy_st_writer_abort(sy_st_writer *w)
{
    if (w->f)
        fclose(w->f);
    if (w->tmp)
        unlink(w->tmp);
    free(w->tmp);
    free(w->path);
    free(w->bytes);
    memset(w, 0, sizeof *w);
}

sy_status sy_write_file_atomic(const char *path, const char *text, size_t len, sy_error *err)
{
    char *tmp = NULL;
    FILE *f = NULL;
    sy_status st = create_temp(path, &tmp, &f, err);
    if (st != SY_OK)
        return st;
    if (fwrite(text, 1, len, f) != len) {
        st = io_error(err, tmp, "write");
        fclose(f);
    } else {
        st = sync_and_rename(f, &tmp, path, err);
    }
    if (tmp)
        unlink(tmp);
    free(tmp);
    return st;
}
