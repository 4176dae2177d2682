/* Names of the ABI's enumerations, as used in configs, listings and messages. */
#include <string.h>

#include "switchyard/switchyard.h"

const char *sy_status_name(sy_status s)
{
    switch (s) {
    case SY_OK: return "ok";
    case SY_E_INVALID: return "invalid argument";
    case SY_E_UNSUPPORTED: return "unsupported";
    case SY_E_NOMEM: return "out of memory";
    case SY_E_BACKEND: return "backend error";
    case SY_E_INTERNAL: return "internal error";
    case SY_E_IO: return "i/o error";
    default: return "unknown status";
    }
}

const char *sy_dtype_name(int32_t dt)
{
    switch (dt) {
    case SY_DTYPE_F32: return "f32";
    case SY_DTYPE_BF16: return "bf16";
    case SY_DTYPE_F16: return "f16";
    case SY_DTYPE_FP8_E4M3: return "fp8_e4m3";
    case SY_DTYPE_U8: return "u8";
    case SY_DTYPE_I32: return "i32";
    case SY_DTYPE_I64: return "i64";
    default: return "invalid";
    }
}

static const char *const kind_names[SY_KIND_COUNT_] = {
    [SY_KIND_INVALID] = "invalid", [SY_KIND_KV_LAYOUT] = "kv_layout", [SY_KIND_ATTENTION] = "attention",
    [SY_KIND_MOE] = "moe",         [SY_KIND_NORM] = "norm",           [SY_KIND_ROPE] = "rope",
    [SY_KIND_LINEAR] = "linear",
};

const char *sy_kind_name(int32_t kind)
{
    if (kind <= SY_KIND_INVALID || kind >= SY_KIND_COUNT_)
        return "invalid";
    return kind_names[kind];
}

int32_t sy_kind_from_name(const char *name)
{
    for (int32_t k = 1; k < SY_KIND_COUNT_; k++)
        if (strcmp(kind_names[k], name) == 0)
            return k;
    return SY_KIND_INVALID;
}

const char *sy_layout_name(uint32_t layout)
{
    switch (layout) {
    case SY_LAYOUT_NHD: return "nhd";
    case SY_LAYOUT_VECTORIZED_5D: return "vectorized_5d";
    default: return layout >= SY_LAYOUT_VENDOR_BASE ? "vendor" : "invalid";
    }
}

const char *sy_version(void)
{
    return SY_VERSION_STRING;
}

void sy_abi_version(uint32_t *major, uint32_t *minor)
{
    if (major)
        *major = SY_ABI_MAJOR;
    if (minor)
        *minor = SY_ABI_MINOR;
}
