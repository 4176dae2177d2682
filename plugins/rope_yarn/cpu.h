#ifndef SY_ROPE_YARN_CPU_H
#define SY_ROPE_YARN_CPU_H

#include "switchyard/plugin.h"

enum { SY_ROPE_YARN_CPU_MAX_HEAD_DIM = 512 };

extern const sy_rope_ops sy_rope_yarn_cpu_ops;

#endif
