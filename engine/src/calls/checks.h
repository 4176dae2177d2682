/* Host-side checks at the call boundary of kv_layout and attention ops, always on (release builds
 * included): the engine runs them before it calls any such op, its own plugins' and third
 * parties' alike, so that a bad index is a one-line error naming the argument and the values, never
 * an out-of-bounds read or write on the device.
 *
 * Each check takes the args struct plus host-readable copies of its index tensors. For the cpu
 * backend these are the tensors' own data; for GPU backends, the engine's host mirrors of what it
 * uploaded. A host copy is laid out like its tensor (same shape and strides) and is read only
 * where the op itself would read: the block-table entries of the pages a sequence's (windowed)
 * context covers, the slot map entries the slots name.
 *
 * What is checked:
 *   geometry   struct size, positive dims, a known store dtype, int32-addressable slots, filled
 *              element counts
 *   tensors    presence, dtype (index tensors int32, sinks f32), rank, shape against the geometry
 *              and each other (head dims equal, Hq % Hkv == 0), innermost dims contiguous
 *   indices    slots and mapped slots within the pool (write skips negatives, gather does not),
 *              block-table entries of the pages read within 1 .. num_pages-1 (page 0 is the padding
 *              page no sequence owns), ceil(context_len / P) <= max_blocks, cu_seqlens starting at
 *              0, non-decreasing, within the rows, Lk >= Lq per sequence
 *   scalars    finite scale, window >= 0, num_splits >= 0, fp8 stores: finite positive k/v scales
 *
 * sy_check_*_caps additionally hold a call against what the plugin declared (layouts, dtypes,
 * features used by the call), for the engine to run once per plan or per call. */
#ifndef SY_CALLS_CHECKS_H
#define SY_CALLS_CHECKS_H

#include <stdint.h>

#include "switchyard/plugin.h"

/* A geometry as ops.geometry filled it. `op` names the call in the message. */
sy_status sy_check_kv_geometry(const char *op, const sy_kv_geometry *geom, sy_error *err);

/* kv_layout.write: slot_map_host is read only when args->slot_map is present. */
sy_status sy_check_kv_write(const sy_kv_write_args *args, const int32_t *slots_host, const int32_t *slot_map_host,
                            sy_error *err);

/* kv_layout.gather: every slot must resolve to a pool slot (gather skips nothing). */
sy_status sy_check_kv_gather(const sy_kv_gather_args *args, const int32_t *slots_host, const int32_t *slot_map_host,
                             sy_error *err);

/* attention.decode_paged. */
sy_status sy_check_decode_args(const sy_attn_decode_args *args, const int32_t *block_tables_host,
                               const int32_t *context_lens_host, sy_error *err);

/* attention.prefill_linear. */
sy_status sy_check_prefill_args(const sy_attn_prefill_args *args, const int32_t *cu_seqlens_q_host,
                                const int32_t *cu_seqlens_k_host, sy_error *err);

/* attention.prefill_paged: q/out/sinks as prefill_linear's, the pool's geometry, cu_seqlens_q (host copy
 * cu_q), and block_tables / context_lens as decode_paged checks them, each sequence's context at
 * least its queries and the pages its first query's window starts at inside the pool. */
sy_status sy_check_prefill_paged_args(const sy_attn_prefill_paged_args *args, const int32_t *block_tables_host,
                                      const int32_t *context_lens_host, const int32_t *cu_q, sy_error *err);

/* The call against the plugin's declared caps: decode_paged declared, the layout read natively,
 * store / q dtypes, head dim and page size ranges, GQA ratio, and the features the call uses
 * (window, sinks, fp8 scales, more than one split). */
sy_status sy_check_decode_caps(const sy_plugin_desc *plugin, const sy_attn_decode_args *args, sy_error *err);
sy_status sy_check_prefill_caps(const sy_plugin_desc *plugin, const sy_attn_prefill_args *args, sy_error *err);
sy_status sy_check_prefill_paged_caps(const sy_plugin_desc *plugin, const sy_attn_prefill_paged_args *args,
                                      sy_error *err);

/* kv_layout write / gather against the layout plugin's caps: same layout id, store and source
 * dtypes, slot map support. */
sy_status sy_check_kv_write_caps(const sy_plugin_desc *plugin, const sy_kv_write_args *args, sy_error *err);
sy_status sy_check_kv_gather_caps(const sy_plugin_desc *plugin, const sy_kv_gather_args *args, sy_error *err);

#endif
