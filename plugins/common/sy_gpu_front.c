#include "sy_gpu_front.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sy_device_library.h"

#ifndef SY_PLUGIN_BACKEND_NAME
#error "sy_gpu_front.c is part of a GPU plugin's front: the build defines SY_PLUGIN_BACKEND_NAME"
#endif

/* The ctx of a front plugin instance: what its ops forward to. */
typedef struct front_ctx {
    const void *ops;        /* the device descriptor's ops table */
    uint32_t ops_size;      /* its struct_size: which members it has */
    void *device_ctx;       /* from the device descriptor's init (NULL when it has none) */
    void (*device_fini)(void *ctx);
} front_ctx;

static const sy_plugin_desc *find_device_descriptor(int32_t kind, const char *name, sy_error *err)
{
    void *address = NULL;
    if (sy_device_library_symbol(SY_PLUGIN_BACKEND_NAME, SY_DEVICE_PLUGIN_ENTRY_SYMBOL, &address, err) != SY_OK)
        return NULL;
    sy_plugin_entry_fn entry;
    memcpy(&entry, &address, sizeof entry); /* dlsym's object pointer to a function pointer */
    const sy_plugin_desc *const *list = entry(SY_ABI_MAJOR, SY_ABI_MINOR);
    for (size_t i = 0; list && list[i]; i++) {
        const sy_plugin_desc *d = list[i];
        if ((int32_t)d->kind == kind && d->name && strcmp(d->name, name) == 0 && d->backend &&
            strcmp(d->backend, SY_PLUGIN_BACKEND_NAME) == 0) {
            /* Built from the same plugin.c in the same build: a mismatch means mixed installs. */
            if (d->abi_major != SY_ABI_MAJOR || d->struct_size < sizeof(sy_plugin_desc) || !d->ops) {
                snprintf(err->msg, sizeof err->msg,
                         "%s: the device library's plugin '%s' has ABI %u.%u, struct_size %u, ops %s; front and "
                         "device library come from different builds",
                         sy_device_library_front_name(), name, d->abi_major, d->abi_minor, d->struct_size,
                         d->ops ? "present" : "missing");
                return NULL;
            }
            return d;
        }
    }
    snprintf(err->msg, sizeof err->msg, "%s: the device library has no plugin '%s' of kind %d for backend %s",
             sy_device_library_front_name(), name, (int)kind, SY_PLUGIN_BACKEND_NAME);
    return NULL;
}

sy_status sy_gpu_front_init(int32_t kind, const char *name, const sy_host_api *host, void **ctx, sy_error *err)
{
    sy_error scratch;
    if (!err)
        err = &scratch;
    *ctx = NULL;
    const sy_plugin_desc *d = find_device_descriptor(kind, name, err);
    if (!d)
        return SY_E_IO;
    void *device_ctx = NULL;
    if (d->init) {
        sy_status s = d->init(host, &device_ctx, err);
        if (s != SY_OK)
            return s;
    }
    front_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        if (d->fini)
            d->fini(device_ctx);
        snprintf(err->msg, sizeof err->msg, "%s: out of memory for the context of plugin '%s'",
                 sy_device_library_front_name(), name);
        return SY_E_NOMEM;
    }
    c->ops = d->ops;
    c->ops_size = *(const uint32_t *)d->ops;
    c->device_ctx = device_ctx;
    c->device_fini = d->fini;
    *ctx = c;
    return SY_OK;
}

void sy_gpu_front_fini(void *ctx)
{
    front_ctx *c = ctx;
    if (!c)
        return;
    if (c->device_fini)
        c->device_fini(c->device_ctx);
    free(c);
}

static sy_status before_init(const char *op, sy_error *err)
{
    if (err)
        snprintf(err->msg, sizeof err->msg,
                 "%s: %s called before init (ctx is NULL); the plugin's device code is loaded by its init",
                 sy_device_library_front_name(), op);
    return SY_E_INVALID;
}

static sy_status not_in_device_library(const char *op, sy_error *err)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "%s: the device library's ops table has no %s",
                 sy_device_library_front_name(), op);
    return SY_E_UNSUPPORTED;
}

/* Every forwarded op has the shape (ctx, stream, args, err). */
#define SY_GPU_FORWARD(linkage, fn, ops_type, member, args_type)                                     \
    linkage sy_status fn(void *ctx, sy_stream stream, const args_type *args, sy_error *err)           \
    {                                                                                                 \
        const front_ctx *c = ctx;                                                                     \
        if (!c)                                                                                       \
            return before_init(#member, err);                                                         \
        const ops_type *o = c->ops;                                                                   \
        if (!SY_HAS_MEMBER(c->ops_size, ops_type, member) || !o->member)                              \
            return not_in_device_library(#member, err);                                               \
        return o->member(c->device_ctx, stream, args, err);                                           \
    }

SY_GPU_FORWARD(, sy_gpu_front_kv_write, sy_kv_layout_ops, write, sy_kv_write_args)
SY_GPU_FORWARD(, sy_gpu_front_kv_gather, sy_kv_layout_ops, gather, sy_kv_gather_args)
SY_GPU_FORWARD(, sy_gpu_front_moe_prepare, sy_moe_ops, prepare, sy_moe_prepare_args)
SY_GPU_FORWARD(, sy_gpu_front_moe_route, sy_moe_ops, route, sy_moe_route_args)
SY_GPU_FORWARD(, sy_gpu_front_moe_forward, sy_moe_ops, forward, sy_moe_forward_args)
SY_GPU_FORWARD(static, attention_decode_paged, sy_attention_ops, decode_paged, sy_attn_decode_args)
SY_GPU_FORWARD(static, attention_prefill_linear, sy_attention_ops, prefill_linear, sy_attn_prefill_args)
SY_GPU_FORWARD(static, attention_prefill_paged, sy_attention_ops, prefill_paged, sy_attn_prefill_paged_args)
SY_GPU_FORWARD(static, norm_rmsnorm, sy_norm_ops, rmsnorm, sy_norm_args)
SY_GPU_FORWARD(static, rope_rope, sy_rope_ops, rope, sy_rope_args)
SY_GPU_FORWARD(static, rope_kv_write, sy_rope_ops, rope_kv_write, sy_rope_kv_write_args)
SY_GPU_FORWARD(static, linear_linear, sy_linear_ops, linear, sy_linear_args)

const sy_attention_ops sy_gpu_front_attention_ops = {sizeof(sy_attention_ops), 0, attention_decode_paged,
                                                     attention_prefill_linear, attention_prefill_paged};
const sy_norm_ops sy_gpu_front_norm_ops = {sizeof(sy_norm_ops), 0, norm_rmsnorm};
const sy_rope_ops sy_gpu_front_rope_ops = {sizeof(sy_rope_ops), 0, rope_rope, rope_kv_write};
const sy_linear_ops sy_gpu_front_linear_ops = {sizeof(sy_linear_ops), 0, linear_linear};
