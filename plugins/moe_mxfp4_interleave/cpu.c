/* The host MXFP4 MoE (plugins/common/moe_mxfp4_cpu.c) in AITER's a16w4 layout: rows of W13 in
 * 16-row tiles alternating gate and up (GUGU), shuffle_weight_a16w4 / shuffle_scale_a16w4. */
#include "cpu.h"

#include "moe_mxfp4_cpu.h"

sy_status moe_mxfp4_interleave_cpu_init(const sy_host_api *host, void **ctx, sy_error *err)
{
    return sy_moe_mxfp4_cpu_init(host, SY_MOE_GATE_UP_INTERLEAVE, ctx, err);
}
