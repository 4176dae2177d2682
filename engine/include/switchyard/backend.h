/* Backend ABI v1: the device a set of plugins runs on (host memory for "cpu", a GPU for "cuda" and
 * "hip"). A backend library exports exactly one symbol:
 *
 *     SY_EXPORT const sy_backend_desc *sy_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor);
 *
 * It may return NULL when it cannot serve that host version. Everything in the descriptor is
 * readable without calling init; probe() must not create a device context it keeps. */
#ifndef SWITCHYARD_BACKEND_H
#define SWITCHYARD_BACKEND_H

#include "abi.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles owned by the backend. The cpu backend's streams are synchronous but keep the
 * ordering contract: work submitted to one stream runs in submission order. A NULL stream is the
 * backend's default stream. */
typedef struct sy_stream_s *sy_stream;
typedef struct sy_event_s *sy_event;

typedef struct sy_device_info {
    uint32_t struct_size;
    char name[128];           /* "NVIDIA H200", "host (x86_64, 2 cores)" */
    uint64_t total_memory;    /* bytes */
    uint64_t free_memory;     /* bytes, at the time of the call */
    uint32_t multiprocessors; /* SMs, CUs, or CPU cores */
    uint32_t warp_size;       /* 32 on NVIDIA, 64 on CDNA, 1 on the cpu */
    uint32_t cc_major;        /* compute capability or gfx major; 0 on the cpu */
    uint32_t cc_minor;
    uint64_t l2_bytes;        /* 0 when unknown */
} sy_device_info;

SY_STATIC_ASSERT(offsetof(sy_device_info, struct_size) == 0, "sy_device_info v1 layout");
SY_STATIC_ASSERT(offsetof(sy_device_info, name) == 4, "sy_device_info v1 layout");
SY_STATIC_ASSERT(offsetof(sy_device_info, total_memory) == 136, "sy_device_info v1 layout");
SY_STATIC_ASSERT(offsetof(sy_device_info, free_memory) == 144, "sy_device_info v1 layout");
SY_STATIC_ASSERT(offsetof(sy_device_info, multiprocessors) == 152, "sy_device_info v1 layout");
SY_STATIC_ASSERT(offsetof(sy_device_info, warp_size) == 156, "sy_device_info v1 layout");
SY_STATIC_ASSERT(offsetof(sy_device_info, cc_major) == 160, "sy_device_info v1 layout");
SY_STATIC_ASSERT(offsetof(sy_device_info, cc_minor) == 164, "sy_device_info v1 layout");
SY_STATIC_ASSERT(offsetof(sy_device_info, l2_bytes) == 168, "sy_device_info v1 layout");

typedef enum sy_memcpy_kind {
    SY_MEMCPY_H2D = 1,
    SY_MEMCPY_D2H = 2,
    SY_MEMCPY_D2D = 3
} sy_memcpy_kind;

/* Synthetic tensors made where they live (see sy_backend_desc.synth_fill). Element i of tensor
 * `tensor` under `seed` is a pure function of (seed, tensor, i); the formulas are those of
 * plugins/common/sy_synth.h, which every backend must reproduce bit for bit. */
typedef enum sy_synth_kind {
    SY_SYNTH_BF16_UNIFORM = 1, /* bf16(offset + scale * u), u uniform in [-1, 1) */
    SY_SYNTH_BYTES = 2,        /* uniform bytes (MXFP4 blocks: two E2M1 codes each) */
    SY_SYNTH_E8M0 = 3          /* e8m0 scale bytes uniform in base .. base + span - 1 */
} sy_synth_kind;

typedef struct sy_synth_spec {
    uint32_t struct_size;
    uint32_t kind;        /* sy_synth_kind */
    uint64_t seed;
    uint32_t tensor;      /* tensor id (the engine's checkpoint numbering) */
    float scale;          /* SY_SYNTH_BF16_UNIFORM */
    float offset;
    uint32_t e8m0_base;   /* SY_SYNTH_E8M0 */
    uint32_t e8m0_span;
    uint32_t reserved0;
} sy_synth_spec;

typedef struct sy_backend_desc {
    uint32_t abi_major;   /* SY_ABI_MAJOR the backend was built against; 0 is invalid */
    uint32_t abi_minor;   /* SY_ABI_MINOR the backend was built against */
    uint32_t struct_size; /* sizeof(sy_backend_desc) as the backend was built; gates later members */
    uint32_t reserved0;   /* 0 */
    const char *name;        /* "cpu", "cuda", "hip": what plugins name in their `backend` field */
    const char *version;     /* the backend's own version, free form */
    const char *description; /* one line for `switchyard plugins` */

    /* Returns 0 when the backend cannot run here (writing why into reason), otherwise a score:
     * higher is preferred when the config says `backend: auto`. Must be cheap and must not keep
     * any device state. */
    int32_t (*probe)(char *reason, size_t reason_len);

    /* Open device `device` (0-based). *ctx is passed to every call below. */
    sy_status (*init)(int32_t device, void **ctx, sy_error *err);
    void (*fini)(void *ctx);
    sy_status (*device_info)(void *ctx, sy_device_info *out, sy_error *err);

    /* Device memory. alloc returns memory aligned to at least 256 bytes; free(NULL) is a no-op. */
    sy_status (*alloc)(void *ctx, size_t bytes, void **ptr, sy_error *err);
    void (*free)(void *ctx, void *ptr);
    /* Asynchronous with respect to the host for GPU backends; ordered within the stream. Host
     * memory passed to H2D / D2H must stay valid until the stream is synchronized. */
    sy_status (*memcpy_async)(void *ctx, sy_stream stream, void *dst, const void *src, size_t bytes,
                              int32_t kind, sy_error *err);
    sy_status (*memset_async)(void *ctx, sy_stream stream, void *dst, int value, size_t bytes, sy_error *err);

    sy_status (*stream_create)(void *ctx, sy_stream *out, sy_error *err);
    void (*stream_destroy)(void *ctx, sy_stream stream);
    sy_status (*stream_sync)(void *ctx, sy_stream stream, sy_error *err);

    /* Events mark a point in a stream; elapsed time is measured on the device's clock (a monotonic
     * host clock on the cpu backend). */
    sy_status (*event_create)(void *ctx, sy_event *out, sy_error *err);
    void (*event_destroy)(void *ctx, sy_event event);
    sy_status (*event_record)(void *ctx, sy_event event, sy_stream stream, sy_error *err);
    sy_status (*event_sync)(void *ctx, sy_event event, sy_error *err);
    sy_status (*event_elapsed_ms)(void *ctx, sy_event start, sy_event end, float *ms, sy_error *err);

    /* ABI 1.1. Optional (NULL: the engine generates synthetic weights on the host and copies them). Fills
     * `count` elements at dst (bf16 for SY_SYNTH_BF16_UNIFORM, bytes otherwise) on the stream, so a
     * large synthetic model never passes through host memory. */
    sy_status (*synth_fill)(void *ctx, sy_stream stream, void *dst, uint64_t count, const sy_synth_spec *spec,
                            sy_error *err);

    /* ABI 1.2. Optional (NULL: the engine copies every logit back and chooses on the host). On the
     * stream, for each of `rows` rows of `cols` f32 values in device memory (row r at
     * x + r * row_stride), writes to out[r] (device memory) the greedy token: the index of the
     * largest value, ties to the lower index, NaN never chosen, 0 for a row of NaN only (the rule
     * of plugins/common/sy_greedy.h). A decode step then copies back 4 bytes a sequence instead of
     * its vocab's logits. */
    sy_status (*greedy_rows)(void *ctx, sy_stream stream, const float *x, uint32_t rows, uint32_t cols,
                             uint64_t row_stride, uint32_t *out, sy_error *err);
} sy_backend_desc;

SY_STATIC_ASSERT(offsetof(sy_backend_desc, abi_major) == 0, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, abi_minor) == 4, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, struct_size) == 8, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, name) == 16, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, version) == 24, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, description) == 32, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, probe) == 40, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, init) == 48, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, fini) == 56, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, device_info) == 64, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, alloc) == 72, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, free) == 80, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, memcpy_async) == 88, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, memset_async) == 96, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, stream_create) == 104, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, stream_destroy) == 112, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, stream_sync) == 120, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, event_create) == 128, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, event_destroy) == 136, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, event_record) == 144, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, event_sync) == 152, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, event_elapsed_ms) == 160, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, synth_fill) == 168, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_backend_desc, greedy_rows) == 176, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(sizeof(sy_backend_desc) == 184, "sy_backend_desc v1 layout");
SY_STATIC_ASSERT(offsetof(sy_synth_spec, kind) == 4, "sy_synth_spec v1 layout");
SY_STATIC_ASSERT(offsetof(sy_synth_spec, seed) == 8, "sy_synth_spec v1 layout");
SY_STATIC_ASSERT(offsetof(sy_synth_spec, tensor) == 16, "sy_synth_spec v1 layout");
SY_STATIC_ASSERT(offsetof(sy_synth_spec, scale) == 20, "sy_synth_spec v1 layout");
SY_STATIC_ASSERT(offsetof(sy_synth_spec, offset) == 24, "sy_synth_spec v1 layout");
SY_STATIC_ASSERT(offsetof(sy_synth_spec, e8m0_base) == 28, "sy_synth_spec v1 layout");
SY_STATIC_ASSERT(offsetof(sy_synth_spec, e8m0_span) == 32, "sy_synth_spec v1 layout");
SY_STATIC_ASSERT(sizeof(sy_synth_spec) == 40, "sy_synth_spec v1 layout");

typedef const sy_backend_desc *(*sy_backend_entry_fn)(uint32_t host_abi_major, uint32_t host_abi_minor);
#define SY_BACKEND_ENTRY_SYMBOL "sy_backend_entry"

#ifdef __cplusplus
}
#endif
#endif
