/* The GPU MXFP4 MoE shared by moe_mxfp4_interleave and moe_mxfp4_separated: what their plugin.c
 * needs (caps, descriptor, ops). The ops are in moe_mxfp4_gpu.cuh, built into each plugin's GPU
 * libraries by its one-line gpu.cu; the tile layout is bound at init, nothing else differs.
 *
 * Same contract as the host version (moe_mxfp4_cpu.h): prepare writes the same bytes (on CUDA with
 * each 4-byte group's codes in the tensor-core order and the header saying so), route picks
 * the same ids, forward computes the same sums in f32 (in another order). What only the host
 * version can do: read the prepared buffer's header, the routing ids and the device's verdicts
 * before returning. Here those checks run on the device and a failed one turns the outputs they
 * govern into NaN instead of an error code (a wrong buffer or an expert id out of range never
 * gives plausible numbers), as plugin.h allows for ids written on the device. */
#ifndef SY_MOE_MXFP4_GPU_H
#define SY_MOE_MXFP4_GPU_H

#include "moe_mxfp4_args.h"
#include "switchyard/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const sy_moe_ops sy_moe_mxfp4_gpu_ops;

/* ctx of one plugin instance; `gate_up_layout` is SY_MOE_GATE_UP_INTERLEAVE or _SEPARATED. */
sy_status sy_moe_mxfp4_gpu_init(const sy_host_api *host, uint32_t gate_up_layout, void **ctx, sy_error *err);
void sy_moe_mxfp4_gpu_fini(void *ctx);

#ifdef __cplusplus
}
#endif

/* What differs between the two GPU libraries (sy_plugin_role.h): the device library binds the tile
 * layout in its init and runs the ops; the front opens the device library in its init, forwards the
 * ops and answers prepared_bytes itself. */
#if defined(SY_PLUGIN_GPU_FRONT)
#include "sy_gpu_front.h"
#define SY_MOE_MXFP4_GPU_LIBRARY(plugin_name, layout)                                                                 \
    SY_GPU_FRONT_INIT(moe_gpu_init, SY_KIND_MOE, plugin_name)                                                          \
    SY_GPU_FRONT_MOE_OPS(moe_gpu_ops, sy_moe_mxfp4_prepared_bytes);
#define SY_MOE_MXFP4_GPU_OPS moe_gpu_ops
#define SY_MOE_MXFP4_GPU_FINI sy_gpu_front_fini
#else
#include "sy_plugin_role.h"
#define SY_MOE_MXFP4_GPU_LIBRARY(plugin_name, layout)                                                                 \
    static sy_status moe_gpu_init(const sy_host_api *host, void **ctx, sy_error *err)                                  \
    {                                                                                                                  \
        return sy_moe_mxfp4_gpu_init(host, (layout), ctx, err);                                                        \
    }
#define SY_MOE_MXFP4_GPU_OPS sy_moe_mxfp4_gpu_ops
#define SY_MOE_MXFP4_GPU_FINI sy_moe_mxfp4_gpu_fini
#endif

/* Defines the caps, the descriptor and the entry point of one GPU MXFP4 plugin (backend from the
 * build: SY_PLUGIN_BACKEND_NAME), in the front or the device library. */
#define SY_MOE_MXFP4_GPU_PLUGIN(plugin_name, layout, summary, plugin_rank)                                             \
    SY_MOE_MXFP4_GPU_LIBRARY(plugin_name, layout)                                                                      \
    static const sy_moe_caps caps = SY_MOE_MXFP4_CAPS(layout);                                                         \
    static const sy_plugin_desc desc = {.abi_major = SY_ABI_MAJOR,                                                     \
                                        .abi_minor = SY_ABI_MINOR,                                                     \
                                        .struct_size = sizeof(sy_plugin_desc),                                         \
                                        .kind = SY_KIND_MOE,                                                           \
                                        .name = plugin_name,                                                           \
                                        .backend = SY_PLUGIN_BACKEND_NAME,                                             \
                                        .version = "1.0.0",                                                            \
                                        .description = summary,                                                        \
                                        .rank = plugin_rank,                                                           \
                                        .caps = &caps,                                                                 \
                                        .ops = &SY_MOE_MXFP4_GPU_OPS,                                                  \
                                        .init = moe_gpu_init,                                                          \
                                        .fini = SY_MOE_MXFP4_GPU_FINI};                                                \
    static const sy_plugin_desc *const descriptors[] = {&desc, NULL};                                                  \
    SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor);          \
    SY_EXPORT const sy_plugin_desc *const *SY_PLUGIN_ENTRY(uint32_t host_abi_major, uint32_t host_abi_minor)           \
    {                                                                                                                  \
        (void)host_abi_minor;                                                                                          \
        return host_abi_major == SY_ABI_MAJOR ? descriptors : NULL;                                                    \
    }

#endif
