#include "ab/spill.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util/strbuf.h"

static size_t place(const sy_ab_spill *sp, uint32_t layer, uint32_t seq, uint32_t pos)
{
    return ((size_t)layer * sp->shape.batch + seq) * sp->shape.positions + sy_ab_position_index(&sp->shape, pos);
}

static size_t logits_place(const sy_ab_spill *sp, uint32_t seq, uint32_t pos)
{
    return (size_t)seq * sp->shape.positions + sy_ab_position_index(&sp->shape, pos);
}

uint64_t sy_ab_spill_bytes(const sy_model_dims *d, const sy_ab_shape *s)
{
    uint64_t rows = (uint64_t)d->layers * s->batch * s->positions;
    uint64_t logits_rows = (uint64_t)s->batch * s->steps;
    return rows * d->hidden * sizeof(float) + logits_rows * d->vocab * sizeof(float);
}

sy_status sy_ab_spill_open(sy_ab_spill *sp, const char *dir, const sy_model_dims *d, const sy_ab_shape *s,
                           sy_error *err)
{
    memset(sp, 0, sizeof *sp);
    sp->fd = -1;
    if (!dir || !*dir)
        dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    uint64_t need = sy_ab_spill_bytes(d, s);
    struct statvfs fs;
    if (statvfs(dir, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < need)
        return sy_fail(err, SY_E_IO,
                       "A's checkpoints need %.1f MiB in %s, which has %.1f MiB free; point TMPDIR at a larger "
                       "folder or shorten the workload",
                       need / 1048576.0, dir, (double)fs.f_bavail * fs.f_frsize / 1048576.0);
    char *path = sy_asprintf("%s/switchyard-ab-XXXXXX", dir);
    sp->fd = mkstemp(path);
    if (sp->fd < 0) {
        sy_status st = sy_fail(err, SY_E_IO, "cannot create the checkpoint spill %s: %s", path, strerror(errno));
        free(path);
        return st;
    }
    unlink(path); /* gone when closed, whatever happens */
    free(path);
    sp->layers = d->layers;
    sp->hidden = d->hidden;
    sp->vocab = d->vocab;
    sp->shape = *s;
    sp->present = sy_xcalloc((size_t)d->layers * s->batch * s->positions, 1);
    sp->logits_at = sy_xcalloc((size_t)s->batch * s->positions, sizeof *sp->logits_at);
    for (size_t i = 0; i < (size_t)s->batch * s->positions; i++)
        sp->logits_at[i] = -1;
    sp->layer_bytes = (uint64_t)d->layers * s->batch * s->positions * d->hidden * sizeof(float);
    sp->end = sp->layer_bytes;
    return SY_OK;
}

void sy_ab_spill_close(sy_ab_spill *sp)
{
    if (sp->fd >= 0)
        close(sp->fd);
    free(sp->present);
    free(sp->logits_at);
    memset(sp, 0, sizeof *sp);
    sp->fd = -1;
}

static sy_status transfer(int fd, int writing, void *buf, size_t bytes, uint64_t off, sy_error *err)
{
    char *p = buf;
    while (bytes) {
        ssize_t n = writing ? pwrite(fd, p, bytes, (off_t)off) : pread(fd, p, bytes, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return sy_fail(err, SY_E_IO, "checkpoint spill: %s of %zu bytes at offset %llu failed: %s",
                           writing ? "write" : "read", bytes, (unsigned long long)off,
                           n < 0 ? strerror(errno) : "unexpected end of file");
        p += n;
        bytes -= (size_t)n;
        off += (uint64_t)n;
    }
    return SY_OK;
}

static int in_range(const sy_ab_spill *sp, uint32_t layer, uint32_t seq, uint32_t pos, uint32_t n)
{
    return layer <= sp->layers && seq < sp->shape.batch && pos >= sp->shape.first_pos &&
           sy_ab_position_index(&sp->shape, pos) + (uint64_t)n <= sp->shape.positions && (layer < sp->layers || n == 1);
}

sy_status sy_ab_spill_put(sy_ab_spill *sp, uint32_t layer, uint32_t seq, uint32_t pos, uint32_t n, const float *rows,
                          sy_error *err)
{
    if (!in_range(sp, layer, seq, pos, n))
        return sy_fail(err, SY_E_INTERNAL, "checkpoint spill: layer %u, sequence %u, positions %u+%u out of range",
                       layer, seq, pos, n);
    if (layer == sp->layers) {
        int64_t *at = &sp->logits_at[logits_place(sp, seq, pos)];
        if (*at < 0) {
            *at = (int64_t)sp->end;
            sp->end += (uint64_t)sp->vocab * sizeof(float);
        }
        return transfer(sp->fd, 1, (void *)rows, (size_t)sp->vocab * sizeof(float), (uint64_t)*at, err);
    }
    size_t first = place(sp, layer, seq, pos);
    sy_status st = transfer(sp->fd, 1, (void *)rows, (size_t)n * sp->hidden * sizeof(float),
                            (uint64_t)first * sp->hidden * sizeof(float), err);
    if (st == SY_OK)
        memset(sp->present + first, 1, n);
    return st;
}

sy_status sy_ab_spill_get(const sy_ab_spill *sp, uint32_t layer, uint32_t seq, uint32_t pos, uint32_t n, float *rows,
                          int *have, sy_error *err)
{
    *have = 0;
    if (!in_range(sp, layer, seq, pos, n))
        return SY_OK;
    if (layer == sp->layers) {
        int64_t at = sp->logits_at[logits_place(sp, seq, pos)];
        if (at < 0)
            return SY_OK;
        *have = 1;
        return transfer(sp->fd, 0, rows, (size_t)sp->vocab * sizeof(float), (uint64_t)at, err);
    }
    size_t first = place(sp, layer, seq, pos);
    for (uint32_t i = 0; i < n; i++)
        if (!sp->present[first + i])
            return SY_OK;
    *have = 1;
    return transfer(sp->fd, 0, rows, (size_t)n * sp->hidden * sizeof(float),
                    (uint64_t)first * sp->hidden * sizeof(float), err);
}
