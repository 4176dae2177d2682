#ifndef SY_LINEAR_CPU_H
#define SY_LINEAR_CPU_H

#include "switchyard/plugin.h"

extern const sy_linear_ops sy_linear_cpu_ops;

sy_status sy_linear_cpu_init(const sy_host_api *host, void **ctx, sy_error *err);
void sy_linear_cpu_fini(void *ctx);

#endif
