/* C entry point of the greedy-token kernel (gpu_greedy.cu). */
#ifndef SY_GPU_GREEDY_H
#define SY_GPU_GREEDY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues the choice of each row's greedy token on `stream` (x and out in device memory); returns
 * the runtime's launch status (gpuSuccess = 0). */
int sy_gpu_greedy_rows(void *stream, const float *x, uint32_t rows, uint32_t cols, uint64_t row_stride,
                       uint32_t *out);

#ifdef __cplusplus
}
#endif
#endif
