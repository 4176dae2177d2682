/* The host-only part of the GPU MXFP4 MoE (moe_mxfp4_gpu.h): the shape check every op starts with and
 * prepared_bytes, which is pure and must answer before init. Plain C, so that the front library of
 * the GPU plugins (sy_gpu_front.h) serves prepared_bytes itself and the device code checks shapes
 * with the same function. */
#include "moe_mxfp4_gpu.h"
#include "sy_op_check.h"

sy_status sy_moe_mxfp4_gpu_check_shape(const char *op, const sy_moe_shape *s, sy_error *err)
{
    if (!s || s->struct_size < sizeof(sy_moe_shape))
        return sy_op_fail(err, SY_E_INVALID, "%s: shape struct_size %u is smaller than sy_moe_shape (%zu)", op,
                          s ? s->struct_size : 0u, sizeof(sy_moe_shape));
    const struct {
        const char *name;
        uint32_t value, limit;
        sy_status status;
    } dims[] = {{"num_experts", s->num_experts, SY_MOE_MXFP4_GPU_MAX_EXPERTS, SY_E_UNSUPPORTED},
                {"hidden", s->hidden, SY_MOE_MXFP4_GPU_MAX_DIM, SY_E_INVALID},
                {"intermediate", s->intermediate, SY_MOE_MXFP4_GPU_MAX_DIM, SY_E_INVALID}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        uint32_t multiple = i == 0 ? 1u : (uint32_t)SY_MXFP4_BLOCK;
        if (dims[i].value == 0 || dims[i].value % multiple || dims[i].value > dims[i].limit)
            return sy_op_fail(err, dims[i].status, "%s: shape.%s %u must be a positive multiple of %u up to %u", op,
                              dims[i].name, dims[i].value, multiple, dims[i].limit);
    }
    if (s->top_k == 0 || s->top_k > s->num_experts || s->top_k > SY_MOE_MAX_TOP_K)
        return sy_op_fail(err, SY_E_INVALID, "%s: shape.top_k %u is outside 1..min(num_experts %u, %d)", op, s->top_k,
                          s->num_experts, SY_MOE_MAX_TOP_K);
    return SY_OK;
}

sy_status sy_moe_mxfp4_gpu_prepared_bytes(const sy_moe_shape *shape, uint64_t *bytes, sy_error *err)
{
    sy_status st = sy_moe_mxfp4_gpu_check_shape("moe prepared_bytes", shape, err);
    if (st != SY_OK)
        return st;
    sy_moe_dims d = sy_moe_dims_of(shape->num_experts, shape->hidden, shape->intermediate);
    *bytes = sy_moe_sections_of(&d).total;
    return SY_OK;
}
