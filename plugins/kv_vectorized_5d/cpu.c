/* The vectorized_5d layout's ops: the shared host implementation with the layout fixed. */
#include "kv_plugin_cpu.h"

SY_KV_CPU_DEFINE_OPS(sy_kv_5d_cpu_ops, SY_LAYOUT_VECTORIZED_5D);
