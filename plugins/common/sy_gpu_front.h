/* The front library of a GPU plugin (sy_device_library.h says why there are two libraries): the
 * descriptors and caps of plugin.c, with ops tables that forward to the device library's.
 *
 * plugin.c is compiled for the cpu library, the front and the device library (sy_plugin_role.h). The
 * device build is the GPU plugin as it would be on its own: its descriptors carry the real ops,
 * init and fini, exported under SY_PLUGIN_ENTRY. The front's descriptors carry the same name, kind,
 * caps and text, and:
 *
 *   .init = an init made by SY_GPU_FRONT_INIT: opens the device library (once per process), finds
 *           the device descriptor of the same kind and name, runs its init and wraps its ctx
 *   .fini = sy_gpu_front_fini
 *   .ops  = the forwarding table of the kind, below. Pure functions (kv_layout geometry, moe
 *           prepared_bytes) are the front's own, since they run before init; everything else calls
 *           the device ops with the device ctx. Called before init (a NULL ctx), an op fails with
 *           SY_E_INVALID and says so; nothing is loaded.
 *
 * A plugin whose device descriptor has no init still gets one in its front: init is where the
 * device library is opened. The ctx the front hands out is the front's, not the device plugin's. */
#ifndef SY_GPU_FRONT_H
#define SY_GPU_FRONT_H

#include "switchyard/plugin.h"
#include "sy_plugin_role.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Init of the front descriptor (kind, name): the device library's descriptor of the same kind,
 * name and backend (SY_PLUGIN_BACKEND_NAME), its init with `host`, and a ctx wrapping both. */
sy_status sy_gpu_front_init(int32_t kind, const char *name, const sy_host_api *host, void **ctx, sy_error *err);
void sy_gpu_front_fini(void *ctx);

/* Defines `static sy_status fn(host, ctx, err)`, the init of the front descriptor (kind, name). */
#define SY_GPU_FRONT_INIT(fn, kind, name)                                                \
    static sy_status fn(const sy_host_api *host, void **ctx, sy_error *err)             \
    {                                                                                    \
        return sy_gpu_front_init((kind), (name), host, ctx, err);                        \
    }

/* Forwarding ops tables of the kinds that have no pure function. rope_kv_write is always present:
 * every GPU rope plugin declares fused layouts (plugin.h: NULL only when it declares none). */
extern const sy_attention_ops sy_gpu_front_attention_ops;
extern const sy_norm_ops sy_gpu_front_norm_ops;
extern const sy_rope_ops sy_gpu_front_rope_ops;
extern const sy_linear_ops sy_gpu_front_linear_ops;

/* The forwarders of the kinds with a pure function, for the tables below. */
sy_status sy_gpu_front_kv_write(void *ctx, sy_stream stream, const sy_kv_write_args *args, sy_error *err);
sy_status sy_gpu_front_kv_gather(void *ctx, sy_stream stream, const sy_kv_gather_args *args, sy_error *err);
sy_status sy_gpu_front_moe_prepare(void *ctx, sy_stream stream, const sy_moe_prepare_args *args, sy_error *err);
sy_status sy_gpu_front_moe_route(void *ctx, sy_stream stream, const sy_moe_route_args *args, sy_error *err);
sy_status sy_gpu_front_moe_forward(void *ctx, sy_stream stream, const sy_moe_forward_args *args, sy_error *err);

/* `static const sy_kv_layout_ops ops_name`: the front's geometry, the device's write and gather. */
#define SY_GPU_FRONT_KV_OPS(ops_name, geometry_fn)                                                           \
    static const sy_kv_layout_ops ops_name = {sizeof(sy_kv_layout_ops), 0, geometry_fn, sy_gpu_front_kv_write, \
                                              sy_gpu_front_kv_gather}

/* `static const sy_moe_ops ops_name`: the front's prepared_bytes, the device's other ops. */
#define SY_GPU_FRONT_MOE_OPS(ops_name, prepared_bytes_fn)                                                 \
    static const sy_moe_ops ops_name = {sizeof(sy_moe_ops),     0,                      prepared_bytes_fn, \
                                        sy_gpu_front_moe_prepare, sy_gpu_front_moe_route, sy_gpu_front_moe_forward}

#ifdef __cplusplus
}
#endif
#endif
