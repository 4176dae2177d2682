/* What host code that calls the GPU runtime needs, in the backend and in GPU plugins alike (C and
 * .cu): status checking that turns a runtime failure into an sy_error naming the runtime call, its
 * error, the file and the line; and the handle contract between the gpu backend and GPU plugins.
 *
 * Handle contract: an sy_stream of the cuda / hip backend IS the runtime's stream (cudaStream_t /
 * hipStream_t) and an sy_event IS its event; NULL is the runtime's default stream. Plugins convert
 * with sy_gpu_stream() and launch on it directly. */
#ifndef SY_GPU_RUNTIME_H
#define SY_GPU_RUNTIME_H

#include <stdio.h>
#include <string.h>

#include "switchyard/backend.h"
#include "switchyard/status.h"
#include "vendor.h"

#define SY_GPU_STR_(x) #x
/* Expands first, so that gpuMalloc(...) reads cudaMalloc(...) / hipMalloc(...) in messages. */
#define SY_GPU_STR(x) SY_GPU_STR_(x)

static inline gpuStream_t sy_gpu_stream(sy_stream stream)
{
    return (gpuStream_t)(void *)stream;
}

static inline gpuEvent_t sy_gpu_event(sy_event event)
{
    return (gpuEvent_t)(void *)event;
}

/* "cudaErrorMemoryAllocation (out of memory)"; the name alone where the runtime's text repeats it
 * (HIP 5.2 has no separate text for many errors). */
static inline void sy_gpu_describe(gpuError_t status, char *buf, size_t len)
{
    const char *name = gpuGetErrorName(status), *text = gpuGetErrorString(status);
    if (!text || !text[0] || strcmp(name, text) == 0)
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "%s (%s)", name, text);
}

/* Fills err with one line, "cuda: cudaMalloc failed: cudaErrorMemoryAllocation (out of memory)
 * [context] at backends/gpu/gpu_backend.c:<line>", and maps the runtime status to an sy_status. The
 * call text is cut at its argument list: the context says which values were involved. */
static inline sy_status sy_gpu_fail(sy_error *err, gpuError_t status, const char *call_text, const char *context,
                                    const char *file, int line)
{
    if (err) {
        char what[192];
        int name_len = (int)strcspn(call_text, "( ");
        sy_gpu_describe(status, what, sizeof what);
        snprintf(err->msg, sizeof err->msg, "%s: %.*s failed: %s%s%s at %s:%d", SY_GPU_BACKEND_NAME, name_len,
                 call_text, what, context ? " " : "", context ? context : "", file, line);
    }
    /* Reported now: a non-sticky error must not resurface at the next gpuGetLastError() of this
     * runtime instance and be blamed on an unrelated launch. */
    (void)gpuGetLastError();
    return status == gpuErrorMemoryAllocation ? SY_E_NOMEM : SY_E_BACKEND;
}

/* Evaluates a runtime call; on failure returns the sy_status from the enclosing function. */
#define SY_GPU_CHECK(err, call)                                                                     \
    do {                                                                                            \
        gpuError_t sy_gpu_status_ = (call);                                                         \
        if (sy_gpu_status_ != gpuSuccess)                                                           \
            return sy_gpu_fail((err), sy_gpu_status_, SY_GPU_STR(call), NULL, __FILE__, __LINE__); \
    } while (0)

/* The same, with a printf-style context naming the values involved ("for 4096 bytes on device 0"). */
#define SY_GPU_CHECKF(err, call, ...)                                                                  \
    do {                                                                                               \
        gpuError_t sy_gpu_status_ = (call);                                                            \
        if (sy_gpu_status_ != gpuSuccess) {                                                            \
            char sy_gpu_context_[192];                                                                 \
            snprintf(sy_gpu_context_, sizeof sy_gpu_context_, __VA_ARGS__);                            \
            return sy_gpu_fail((err), sy_gpu_status_, SY_GPU_STR(call), sy_gpu_context_, __FILE__, __LINE__); \
        }                                                                                              \
    } while (0)

/* After a kernel launch: a bad configuration surfaces here, not at the next unrelated call. */
#define SY_GPU_CHECK_LAUNCH(err, kernel_name) SY_GPU_CHECKF(err, gpuGetLastError(), "after launching %s", kernel_name)

#endif
