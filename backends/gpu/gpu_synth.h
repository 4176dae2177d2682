/* C entry point of the synthetic-weight kernel (gpu_synth.cu). */
#ifndef SY_GPU_SYNTH_H
#define SY_GPU_SYNTH_H

#include <stdint.h>

#include "switchyard/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues the fill on `stream`; returns the runtime's launch status (gpuSuccess = 0). */
int sy_gpu_synth_fill(void *stream, void *dst, uint64_t count, const sy_synth_spec *spec);

#ifdef __cplusplus
}
#endif
#endif
