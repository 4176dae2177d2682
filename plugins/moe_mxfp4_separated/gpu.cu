/* moe_mxfp4_separated on the GPU: the shared MXFP4 MoE kernels of plugins/common/moe_mxfp4_gpu.cuh,
 * which take the tile layout as a parameter; plugin.c binds the separated layout at init. */
#include "moe_mxfp4_gpu.cuh"
