#ifndef SY_NORM_RMSNORM_CPU_H
#define SY_NORM_RMSNORM_CPU_H

#include "switchyard/plugin.h"


extern const sy_norm_ops sy_norm_rmsnorm_cpu_ops;

#endif
