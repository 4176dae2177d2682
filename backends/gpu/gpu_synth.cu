/* Synthetic checkpoint tensors generated on the device with the same per-element function as the
 * host (plugins/common/sy_synth.h), so a model of any size is made where it lives, bit for bit
 * equal to host generation. */
/* vendor.h first: it brings the toolkit runtime that defines the qualifiers sy_portable.h uses. */
#include "vendor.h"

#include "gpu_synth.h"
#include "sy_synth.h"

__global__ void sy_synth_fill_kernel(uint8_t *dst, uint64_t count, uint32_t kind, uint64_t seed, uint32_t tensor,
                                     float scale, float offset, uint32_t base, uint32_t span)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        uint16_t v = sy_synth_element(kind, seed, tensor, i, scale, offset, base, span);
        if (kind == SY_SYNTH_BF16_UNIFORM)
            ((uint16_t *)dst)[i] = v;
        else
            dst[i] = (uint8_t)v;
    }
}

extern "C" int sy_gpu_synth_fill(void *stream, void *dst, uint64_t count, const sy_synth_spec *spec)
{
    if (count == 0)
        return (int)gpuSuccess;
    /* A grid-stride loop over a grid that covers the device a few times over. */
    unsigned blocks = (unsigned)((count + 255) / 256 < 65536 ? (count + 255) / 256 : 65536);
    sy_synth_fill_kernel<<<blocks, 256, 0, (gpuStream_t)stream>>>((uint8_t *)dst, count, spec->kind, spec->seed,
                                                                  spec->tensor, spec->scale, spec->offset,
                                                                  spec->e8m0_base, spec->e8m0_span);
    return (int)gpuGetLastError();
}
