#ifndef SY_MOE_MXFP4_INTERLEAVE_CPU_H
#define SY_MOE_MXFP4_INTERLEAVE_CPU_H

#include "switchyard/plugin.h"

/* init of the host plugin: the shared MXFP4 MoE bound to the INTERLEAVE tile layout. */
sy_status moe_mxfp4_interleave_cpu_init(const sy_host_api *host, void **ctx, sy_error *err);

#endif
