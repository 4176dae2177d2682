/* moe_mxfp4_interleave (cpu): gpt-oss MXFP4 experts in the INTERLEAVE tile layout, the host
 * reference for the GPU kernels that read it. The default gate_up_layout, hence rank 1. */
#if defined(SY_PLUGIN_BACKEND_GPU)
/* The cuda and hip libraries: the same layout, prepared and multiplied on the device. */
#include "moe_mxfp4_gpu.h"

SY_MOE_MXFP4_GPU_PLUGIN("moe_mxfp4_interleave", SY_MOE_GATE_UP_INTERLEAVE,
                        "MXFP4 MoE, gate/up 16-row tiles interleaved (AITER a16w4 shuffle), on the GPU", 1)
#else
#include "cpu.h"
#include "moe_mxfp4_cpu.h"

SY_MOE_MXFP4_CPU_PLUGIN("moe_mxfp4_interleave", SY_MOE_GATE_UP_INTERLEAVE,
                        "MXFP4 MoE, gate/up 16-row tiles interleaved (AITER a16w4 shuffle), host reference", 1,
                        moe_mxfp4_interleave_cpu_init)
#endif
