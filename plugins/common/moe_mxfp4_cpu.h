/* Host implementation of the MXFP4 MoE ops, shared by moe_mxfp4_interleave and moe_mxfp4_separated:
 * the tile layout is the gate_up_layout given at init (moe_layout.h), nothing else differs.
 *
 * Forward, per expert e with tokens routed to it (gpt-oss MLPBlock; docs/plugin-abi.md, moe):
 *   h = W13 x + b13; g = min(h_gate, limit), u = clamp(h_up, -limit, limit);
 *   a = g * sigmoid(alpha * g) * (u + 1); y = W2 a + b2; out[t] += weight(t, e) * y.
 * Rows of W13 and W2 are decoded from the prepared (shuffled) buffer in storage order, 16-row tile
 * by tile (mxfp4_decode_cpu.h). An expert with one token (SY_MXFP4_DOT_MAX_TOKENS) multiplies each
 * decoded block straight away; with more, a 64-row f32 tile is decoded and multiplied with all
 * of the expert's tokens by OpenBLAS sgemm. Either way each weight byte is read once per call, and
 * padding (hidden and intermediate beyond the model's sizes, zeros) is skipped. The result does not
 * depend on the layout: the same values reach the same arithmetic in the same order, so INTERLEAVE
 * and SEPARATED agree bit for bit.
 * Activations: x f32 or bf16, [T, H] or already padded [T, Hp]; out f32 or bf16 [T, H],
 * accumulated in f32 and rounded once. */
#ifndef SY_MOE_MXFP4_CPU_H
#define SY_MOE_MXFP4_CPU_H

#include <stdint.h>

#include "moe_mxfp4_args.h"
#include "switchyard/plugin.h"

/* The ops of both; the layout travels in the ctx made by sy_moe_mxfp4_cpu_init. */
extern const sy_moe_ops sy_moe_mxfp4_cpu_ops;

/* Defines the caps, the descriptor and sy_plugin_entry of one host MXFP4 plugin: a name, its
 * layout, a description, a rank and its init (which binds the layout). */
#define SY_MOE_MXFP4_CPU_PLUGIN(plugin_name, layout, summary, plugin_rank, init_fn)                                    \
    static const sy_moe_caps caps = SY_MOE_MXFP4_CAPS(layout);                                                          \
    static const sy_plugin_desc desc = {                                                                               \
        .abi_major = SY_ABI_MAJOR,                                                                                     \
        .abi_minor = SY_ABI_MINOR,                                                                                     \
        .struct_size = sizeof(sy_plugin_desc),                                                                         \
        .kind = SY_KIND_MOE,                                                                                           \
        .name = plugin_name,                                                                                           \
        .backend = "cpu",                                                                                              \
        .version = "1.0.0",                                                                                            \
        .description = summary,                                                                                        \
        .rank = plugin_rank,                                                                                           \
        .caps = &caps,                                                                                                 \
        .ops = &sy_moe_mxfp4_cpu_ops,                                                                                  \
        .init = init_fn,                                                                                               \
        .fini = sy_moe_mxfp4_cpu_fini,                                                                                 \
    };                                                                                                                 \
    static const sy_plugin_desc *const descriptors[] = {&desc, NULL};                                                  \
    SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor);          \
    SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor)           \
    {                                                                                                                  \
        (void)host_abi_minor;                                                                                          \
        return host_abi_major == SY_ABI_MAJOR ? descriptors : NULL;                                                    \
    }

/* ctx of one plugin instance; `gate_up_layout` is SY_MOE_GATE_UP_INTERLEAVE or _SEPARATED. */
sy_status sy_moe_mxfp4_cpu_init(const sy_host_api *host, uint32_t gate_up_layout, void **ctx, sy_error *err);
void sy_moe_mxfp4_cpu_fini(void *ctx);

/* The sy_moe_ops members (plugin.h); prepared_bytes is sy_moe_mxfp4_prepared_bytes (moe_mxfp4_args.h). */
sy_status sy_moe_mxfp4_cpu_prepare(void *ctx, sy_stream stream, const sy_moe_prepare_args *args, sy_error *err);
sy_status sy_moe_mxfp4_cpu_route(void *ctx, sy_stream stream, const sy_moe_route_args *args, sy_error *err);
sy_status sy_moe_mxfp4_cpu_forward(void *ctx, sy_stream stream, const sy_moe_forward_args *args, sy_error *err);

/* The two matrices of an expert. */
enum { SY_MOE_MATRIX_W13 = 0, SY_MOE_MATRIX_W2 = 1 };

/* Decodes rows[0..n) of one expert's matrix from a prepared buffer, through its layout, into
 * dst[n][K] f32, K the unpadded width (hidden for w13, intermediate for w2). Rows are logical:
 * de-interleaved g*Ip + i for w13 (g = 0 gate, 1 up), output rows for w2. What forward multiplies. */
sy_status sy_moe_mxfp4_cpu_decode_rows(const void *prepared, uint32_t expert, int matrix, const uint32_t *rows,
                                       uint32_t n, float *dst, sy_error *err);
/* The same with the decoder level capped at max_level (mxfp4_decode_cpu.h: 0 the portable table). */
sy_status sy_moe_mxfp4_cpu_decode_rows_with(const void *prepared, uint32_t expert, int matrix, const uint32_t *rows,
                                            uint32_t n, int max_level, float *dst, sy_error *err);

/* The checkpoint tensors back from a prepared buffer (exact inverse of prepare; biases as f32):
 * w13_blocks [E, 2I, H/32, 16], w13_scales [E, 2I, H/32], w13_bias [E, 2I], w2_blocks
 * [E, H, I/32, 16], w2_scales [E, H, I/32], w2_bias [E, H], all contiguous. */
sy_status sy_moe_mxfp4_cpu_unprepare(const void *prepared, uint8_t *w13_blocks, uint8_t *w13_scales, float *w13_bias,
                                     uint8_t *w2_blocks, uint8_t *w2_scales, float *w2_bias, sy_error *err);

#endif
