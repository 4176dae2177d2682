/* The host MXFP4 MoE (plugins/common/moe_mxfp4_cpu.c) in AITER's (16,16) layout: all gate rows of
 * W13, then all up rows (GGUU), shuffle_weight(layout=(16,16)) / e8m0_shuffle. */
#include "cpu.h"

#include "moe_mxfp4_cpu.h"

sy_status moe_mxfp4_separated_cpu_init(const sy_host_api *host, void **ctx, sy_error *err)
{
    return sy_moe_mxfp4_cpu_init(host, SY_MOE_GATE_UP_SEPARATED, ctx, err);
}
