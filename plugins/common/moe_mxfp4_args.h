/* What the host and GPU MXFP4 MoE plugins (moe_mxfp4_cpu.h, moe_mxfp4_gpu.h) have in common on the
 * host side: their limits and caps, prepared_bytes, and the argument checks every op starts with,
 * so that both refuse the same calls with the same messages. Plain C (moe_mxfp4_args.c), built into
 * the cpu libraries, the GPU device libraries and the GPU fronts, which answer prepared_bytes
 * before init. */
#ifndef SY_MOE_MXFP4_ARGS_H
#define SY_MOE_MXFP4_ARGS_H

#include <stdint.h>

#include "moe_layout.h"
#include "moe_route.h"
#include "switchyard/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Experts: the GPU routing plan is one block of this many threads, one expert each. */
enum { SY_MOE_MXFP4_MAX_EXPERTS = 1024, SY_MOE_MXFP4_MAX_DIM = 65536 };
#define SY_MOE_MXFP4_ACT_DTYPES (SY_DTYPE_BIT(SY_DTYPE_F32) | SY_DTYPE_BIT(SY_DTYPE_BF16))

/* Tensor parallelism: no step of either implementation depends on the slice of the intermediate
 * dimension a rank holds, so both are correct at any tp where the engine (a) cuts the intermediate
 * dimension of the checkpoint at multiples of 32 (whole MXFP4 blocks), and (b) passes the real
 * w2_bias on one rank and zeros on the others (the bias is added once, after the all-reduce, as in
 * gpt-oss MLPBlock.forward). 8 covers gpt-oss deployments. */
#define SY_MOE_MXFP4_MAX_TP 8u

/* The caps of every MXFP4 plugin, host or GPU; only the tile layout differs. */
#define SY_MOE_MXFP4_CAPS(layout)                                                                                      \
    {                                                                                                                  \
        .struct_size = sizeof(sy_moe_caps), .weight_format = SY_MOE_WEIGHTS_MXFP4, .gate_up_layout = (layout),         \
        .input_alignment = SY_MOE_PAD_MULTIPLE, .accepts_padded_input = 1, .max_tp = SY_MOE_MXFP4_MAX_TP,              \
        .max_experts = SY_MOE_MXFP4_MAX_EXPERTS, .max_top_k = SY_MOE_MAX_TOP_K, .act_dtypes = SY_MOE_MXFP4_ACT_DTYPES  \
    }

/* The sy_moe_ops member, the same for both layouts and every backend: a pure function of the shape. */
sy_status sy_moe_mxfp4_prepared_bytes(const sy_moe_shape *shape, uint64_t *bytes, sy_error *err);

/* The checks every op starts with: its ctx (when `needs_ctx`), the args' struct_size against
 * `want` (the size of `args_type`), then the shape. */
sy_status sy_moe_mxfp4_check_call(const char *op, const void *ctx, int needs_ctx, const void *args,
                                  uint32_t struct_size, size_t want, const char *args_type, const sy_moe_shape *shape,
                                  sy_error *err);

/* The checkpoint tensors of prepare: w13 and w2 blocks [E, R, K/32, 16] u8, scales [E, R, K/32] u8,
 * biases [E, R] f32 or bf16, dense, and `prepared` present. */
sy_status sy_moe_mxfp4_check_prepare_tensors(const char *op, const sy_moe_prepare_args *a, sy_error *err);

/* route's logits [T, E] f32 (rows may be padded), topk_ids int32 [T, k] and topk_weights f32 [T, k],
 * dense. Sets *T. */
sy_status sy_moe_mxfp4_check_route_tensors(const char *op, const sy_moe_route_args *a, int64_t *T, sy_error *err);

/* forward's x [T, hidden or hidden padded] and out [T, hidden] (rows may be padded, dtypes of
 * SY_MOE_MXFP4_ACT_DTYPES), and its topk tensors as route writes them. */
sy_status sy_moe_mxfp4_check_forward_tensors(const char *op, const sy_moe_forward_args *a, sy_error *err);

#ifdef __cplusplus
}
#endif
#endif
