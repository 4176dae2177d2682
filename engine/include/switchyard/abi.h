/* ABI versioning shared by plugins and backends.
 *
 * Every descriptor starts with {abi_major, abi_minor, struct_size}; 0 is never valid for any of
 * them. A host accepts a descriptor when abi_major equals the host's major and abi_minor is not
 * newer than the host's minor. Structs are append-only within a major version: a member added in
 * minor N is read only when struct_size covers it (SY_HAS_MEMBER). */
#ifndef SWITCHYARD_ABI_H
#define SWITCHYARD_ABI_H

#include <stddef.h>
#include <stdint.h>

#define SY_ABI_MAJOR 1u
#define SY_ABI_MINOR 5u /* 1.1: sy_backend_desc.synth_fill; 1.2: sy_backend_desc.greedy_rows;
                           1.3: SY_ATTN_ROW_STRIDE; 1.4: sy_linear_caps.features (SY_LINEAR_SPLIT_Y),
                           sy_linear_args.n_y_parts and y_parts; 1.5: SY_ATTN_PREFILL_PAGED,
                           sy_attention_ops.prefill_paged */

/* True when a struct of the given struct_size contains `member` entirely. */
#define SY_HAS_MEMBER(struct_size, type, member) \
    ((size_t)(struct_size) >= offsetof(type, member) + sizeof(((type *)0)->member))

/* C11 _Static_assert, or static_assert when a C++ compiler (nvcc, hipcc) includes the headers. */
#ifdef __cplusplus
#define SY_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define SY_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* Symbol visibility for the entry points of plugin and backend libraries. */
#if defined(__GNUC__) || defined(__clang__)
#define SY_EXPORT __attribute__((visibility("default")))
#else
#define SY_EXPORT
#endif

#endif
