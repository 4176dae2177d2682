/* moe_mxfp4_interleave on the GPU: the shared MXFP4 MoE kernels of plugins/common/moe_mxfp4_gpu.cuh,
 * which take the tile layout as a parameter; plugin.c binds the interleave layout at init. */
#include "moe_mxfp4_gpu.cuh"
