/* moe_mxfp4_separated (cpu): gpt-oss MXFP4 experts in the SEPARATED tile layout, the host
 * reference for the GPU kernels that read it. */
#if defined(SY_PLUGIN_BACKEND_GPU)
/* The cuda and hip libraries: the same layout, prepared and multiplied on the device. */
#include "moe_mxfp4_gpu.h"

SY_MOE_MXFP4_GPU_PLUGIN("moe_mxfp4_separated", SY_MOE_GATE_UP_SEPARATED,
                        "MXFP4 MoE, all gate rows then all up rows (AITER (16,16) shuffle), on the GPU", 0)
#else
#include "cpu.h"
#include "moe_mxfp4_cpu.h"

SY_MOE_MXFP4_CPU_PLUGIN("moe_mxfp4_separated", SY_MOE_GATE_UP_SEPARATED,
                        "MXFP4 MoE, all gate rows then all up rows (AITER (16,16) shuffle), host reference", 0,
                        moe_mxfp4_separated_cpu_init)
#endif
