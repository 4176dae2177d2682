/* safetensors files: an 8-byte little-endian header length N, N bytes of JSON naming each tensor's
 * dtype, shape and data_offsets [begin, end) (relative to the data that follows the header), then
 * the tensor data. Everything in the header is checked before it is used (docs/checkpoints.md has
 * the list); a file that opens is one whose every tensor lies inside it, without overlap or gap.
 * Files are memory-mapped: tensor data is read in place and released page by page once copied. */
#ifndef SY_CHECKPOINT_SAFETENSORS_H
#define SY_CHECKPOINT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "switchyard/status.h"

#define SY_ST_MAX_HEADER_BYTES (100u << 20) /* 100 MiB; larger headers are refused unread */
#define SY_ST_MAX_RANK 8
#define SY_ST_MAX_TENSORS (1u << 20)
#define SY_ST_MAX_NAME_BYTES 1000

/* The dtypes of the safetensors format; the file spells them as sy_st_dtype_name gives. */
typedef enum sy_st_dtype {
    SY_ST_BOOL, SY_ST_U8, SY_ST_I8, SY_ST_F8_E5M2, SY_ST_F8_E4M3, SY_ST_I16, SY_ST_U16, SY_ST_F16, SY_ST_BF16,
    SY_ST_I32, SY_ST_U32, SY_ST_F32, SY_ST_F64, SY_ST_I64, SY_ST_U64,
    SY_ST_DTYPE_COUNT_
} sy_st_dtype;

const char *sy_st_dtype_name(int32_t dtype);
size_t sy_st_dtype_size(int32_t dtype);

typedef struct sy_st_tensor {
    char *name;
    int32_t dtype;                  /* sy_st_dtype */
    uint32_t rank;
    uint64_t shape[SY_ST_MAX_RANK];
    uint64_t numel;
    uint64_t offset;                /* of the first byte, from the start of the file */
    uint64_t bytes;
} sy_st_tensor;

typedef struct sy_st_file {
    char *path;                     /* as given; names the file in every message */
    const uint8_t *base;            /* the whole file */
    uint64_t size;
    int mapped;                     /* 1: base is this file's mapping (released on close) */
    sy_st_tensor *tensors;          /* sorted by name */
    size_t n_tensors;
    char **meta_keys, **meta_values; /* "__metadata__", in file order */
    size_t n_meta;
} sy_st_file;

/* Opens `path` for reading if it is a regular file, without ever waiting on a FIFO or device:
 * anything else is refused with a message naming the path and what it is. */
sy_status sy_open_regular_file(const char *path, int *fd, uint64_t *size, sy_error *err);
/* Opens and maps a file and checks its header. On failure *f is left closed. */
sy_status sy_st_open(const char *path, sy_st_file *f, sy_error *err);
/* The same checks over a file image in memory (kept by the caller while f is open); `origin`
 * names it in messages. */
sy_status sy_st_parse(const void *data, size_t size, const char *origin, sy_st_file *f, sy_error *err);
void sy_st_close(sy_st_file *f);

const sy_st_tensor *sy_st_find(const sy_st_file *f, const char *name);
static inline const void *sy_st_data(const sy_st_file *f, const sy_st_tensor *t)
{
    return f->base + t->offset;
}
/* Drops the mapped pages of bytes [offset, offset + bytes) of the file from memory (a later read
 * maps them again); nothing for a file image in memory. */
void sy_st_release(const sy_st_file *f, uint64_t offset, uint64_t bytes);
/* "BF16 [2880, 4096]" */
void sy_st_describe(int32_t dtype, uint32_t rank, const uint64_t *shape, char *buf, size_t len);

#endif
