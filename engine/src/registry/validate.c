#include "registry/validate.h"

#include <stdio.h>
#include <string.h>

#include "switchyard/switchyard.h"

/* The 1.0 backend descriptor ended before synth_fill (added in 1.1); a 1.0 backend is still valid. */
#define SY_BACKEND_DESC_V1_0_SIZE offsetof(sy_backend_desc, synth_fill)

/* Sizes as of ABI 1.0: later minors may only grow these structs; members they add are read only
 * when the struct_size covers them. */
static const size_t caps_v1[SY_KIND_COUNT_] = {
    [SY_KIND_KV_LAYOUT] = sizeof(sy_kv_layout_caps), [SY_KIND_ATTENTION] = sizeof(sy_attention_caps),
    [SY_KIND_MOE] = sizeof(sy_moe_caps),             [SY_KIND_NORM] = sizeof(sy_norm_caps),
    [SY_KIND_ROPE] = sizeof(sy_rope_caps),           [SY_KIND_LINEAR] = offsetof(sy_linear_caps, features),
};
static const size_t ops_v1[SY_KIND_COUNT_] = {
    [SY_KIND_KV_LAYOUT] = sizeof(sy_kv_layout_ops), [SY_KIND_ATTENTION] = offsetof(sy_attention_ops, prefill_paged),
    [SY_KIND_MOE] = sizeof(sy_moe_ops),             [SY_KIND_NORM] = sizeof(sy_norm_ops),
    [SY_KIND_ROPE] = sizeof(sy_rope_ops),           [SY_KIND_LINEAR] = sizeof(sy_linear_ops),
};

size_t sy_caps_v1_size(int32_t kind)
{
    return kind > 0 && kind < SY_KIND_COUNT_ ? caps_v1[kind] : 0;
}

size_t sy_ops_v1_size(int32_t kind)
{
    return kind > 0 && kind < SY_KIND_COUNT_ ? ops_v1[kind] : 0;
}

static int fail(char *why, size_t len, int32_t *stage, int32_t st, const char *msg, const char *arg)
{
    snprintf(why, len, msg, arg);
    *stage = st;
    return 0;
}

static int check_version(uint32_t major, uint32_t minor, char *why, size_t len, int32_t *stage)
{
    if (major == 0) {
        snprintf(why, len, "abi_major is 0 (an uninitialized descriptor)");
        *stage = SY_STAGE_ABI;
        return 0;
    }
    if (major != SY_ABI_MAJOR) {
        snprintf(why, len, "built for ABI major %u, this host speaks major %u", major, SY_ABI_MAJOR);
        *stage = SY_STAGE_ABI;
        return 0;
    }
    if (minor > SY_ABI_MINOR) {
        snprintf(why, len, "built for ABI %u.%u, newer than this host's %u.%u; upgrade switchyard", major, minor,
                 SY_ABI_MAJOR, SY_ABI_MINOR);
        *stage = SY_STAGE_ABI;
        return 0;
    }
    return 1;
}

/* Plugin names appear in configs and file names: keep them to [a-z0-9_]. */
static int valid_identifier(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

/* The op pointers every plugin of a kind must provide (some depend on declared features). */
static const char *missing_op(const sy_plugin_desc *d)
{
    switch (d->kind) {
    case SY_KIND_KV_LAYOUT: {
        const sy_kv_layout_ops *o = d->ops;
        if (!o->geometry) return "geometry";
        if (!o->write) return "write";
        if (!o->gather) return "gather";
        return NULL;
    }
    case SY_KIND_ATTENTION: {
        const sy_attention_ops *o = d->ops;
        const sy_attention_caps *c = d->caps;
        if ((c->features & SY_ATTN_DECODE_PAGED) && !o->decode_paged) return "decode_paged (declared in features)";
        if ((c->features & SY_ATTN_PREFILL_LINEAR) && !o->prefill_linear) return "prefill_linear (declared in features)";
        if ((c->features & SY_ATTN_PREFILL_PAGED) && !sy_attention_prefill_paged(o))
            return "prefill_paged (declared in features)";
        if (!o->decode_paged && !o->prefill_linear) return "decode_paged or prefill_linear";
        return NULL;
    }
    case SY_KIND_MOE: {
        const sy_moe_ops *o = d->ops;
        if (!o->prepared_bytes) return "prepared_bytes";
        if (!o->prepare) return "prepare";
        if (!o->route) return "route";
        if (!o->forward) return "forward";
        return NULL;
    }
    case SY_KIND_NORM: {
        const sy_norm_ops *o = d->ops;
        return o->rmsnorm ? NULL : "rmsnorm";
    }
    case SY_KIND_ROPE: {
        const sy_rope_ops *o = d->ops;
        const sy_rope_caps *c = d->caps;
        if (!o->rope) return "rope";
        if (c->n_fused_kv_layouts > 0 && !o->rope_kv_write) return "rope_kv_write (fused layouts declared)";
        return NULL;
    }
    case SY_KIND_LINEAR: {
        const sy_linear_ops *o = d->ops;
        return o->linear ? NULL : "linear";
    }
    default: return "ops";
    }
}

/* Feature bits are promises the composition acts on: one that the ABI minor a plugin claims does not
 * define (a typo, a bit of a newer header, garbage) must not be read as a capability. */
static uint32_t attention_features_of_minor(uint32_t minor)
{
    uint32_t known = SY_ATTN_DECODE_PAGED | SY_ATTN_PREFILL_LINEAR | SY_ATTN_SLIDING_WINDOW | SY_ATTN_SINKS |
                     SY_ATTN_FP8_SCALES | SY_ATTN_SPLIT_K;
    if (minor >= 3)
        known |= SY_ATTN_ROW_STRIDE;
    if (minor >= 5)
        known |= SY_ATTN_PREFILL_PAGED;
    return known;
}

static const char *undefined_bits(const char *field, uint32_t value, uint32_t known, uint32_t minor, char *buf,
                                  size_t len)
{
    if (!(value & ~known))
        return NULL;
    snprintf(buf, len, "%s 0x%x holds bits ABI %d.%u does not define (0x%x)", field, value, SY_ABI_MAJOR, minor,
             value & ~known);
    return buf;
}

static const char *bad_caps(const sy_plugin_desc *d, char *buf, size_t len)
{
    switch (d->kind) {
    case SY_KIND_ATTENTION: {
        const sy_attention_caps *c = d->caps;
        if (c->n_layouts > SY_MAX_CAPS_LAYOUTS) return "n_layouts exceeds SY_MAX_CAPS_LAYOUTS";
        return undefined_bits("features", c->features, attention_features_of_minor(d->abi_minor), d->abi_minor, buf,
                              len);
    }
    case SY_KIND_ROPE: {
        const sy_rope_caps *c = d->caps;
        if (c->n_fused_kv_layouts > SY_MAX_CAPS_LAYOUTS) return "n_fused_kv_layouts exceeds SY_MAX_CAPS_LAYOUTS";
        const char *styles = undefined_bits("styles", c->styles, SY_ROPE_STYLE_NEOX | SY_ROPE_STYLE_GPTJ,
                                            d->abi_minor, buf, len);
        return styles ? styles
                      : undefined_bits("scalings", c->scalings, SY_ROPE_SCALING_NONE | SY_ROPE_SCALING_YARN,
                                       d->abi_minor, buf, len);
    }
    case SY_KIND_KV_LAYOUT: {
        const sy_kv_layout_caps *c = d->caps;
        if (c->layout == SY_LAYOUT_INVALID) return "layout id is 0";
        return undefined_bits("features", c->features,
                              SY_KV_FEAT_SLOT_MAP | SY_KV_FEAT_FP8_SCALES | SY_KV_FEAT_ANY_TOKEN_STRIDE, d->abi_minor,
                              buf, len);
    }
    case SY_KIND_NORM: {
        const sy_norm_caps *c = d->caps;
        return undefined_bits("features", c->features, SY_NORM_RMSNORM | SY_NORM_FUSED_ADD | SY_NORM_PAD_TO_MULTIPLE,
                              d->abi_minor, buf, len);
    }
    case SY_KIND_LINEAR: {
        const sy_linear_caps *c = d->caps;
        if (!SY_HAS_MEMBER(c->struct_size, sy_linear_caps, features))
            return NULL;
        return undefined_bits("features", c->features, d->abi_minor >= 4 ? SY_LINEAR_SPLIT_Y : 0u, d->abi_minor, buf,
                              len);
    }
    default: return NULL;
    }
}

int sy_validate_plugin(const sy_plugin_desc *d, char *why, size_t len, int32_t *stage)
{
    char buf[160];
    if (!d)
        return fail(why, len, stage, SY_STAGE_ABI, "%s", "descriptor pointer is NULL");
    if (!check_version(d->abi_major, d->abi_minor, why, len, stage))
        return 0;
    if (d->struct_size == 0)
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "%s", "struct_size is 0");
    if (d->struct_size < sizeof(sy_plugin_desc)) {
        snprintf(buf, sizeof buf, "struct_size %u is smaller than the v1 descriptor (%zu bytes)", d->struct_size,
                 sizeof(sy_plugin_desc));
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "%s", buf);
    }
    if (!d->name || !d->name[0])
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "%s", "empty name");
    if (!valid_identifier(d->name))
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "name '%s' is not of the form [a-z0-9_]+", d->name);
    if (!d->backend || !d->backend[0])
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "plugin '%s' has an empty backend", d->name);
    if (!valid_identifier(d->backend))
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "backend '%s' is not of the form [a-z0-9_]+", d->backend);
    if (d->kind == SY_KIND_INVALID || d->kind >= SY_KIND_COUNT_) {
        snprintf(buf, sizeof buf, "plugin '%s' has unknown kind %u (known: 1..%d)", d->name, d->kind,
                 SY_KIND_COUNT_ - 1);
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "%s", buf);
    }
    if (!d->caps)
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "plugin '%s' has no caps", d->name);
    uint32_t caps_size = *(const uint32_t *)d->caps;
    if (caps_size < caps_v1[d->kind]) {
        snprintf(buf, sizeof buf, "plugin '%s': %s caps struct_size %u is smaller than v1 (%zu)", d->name,
                 sy_kind_name((int32_t)d->kind), caps_size, caps_v1[d->kind]);
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "%s", buf);
    }
    if (!d->ops)
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "plugin '%s' has no ops", d->name);
    uint32_t ops_size = *(const uint32_t *)d->ops;
    if (ops_size < ops_v1[d->kind]) {
        snprintf(buf, sizeof buf, "plugin '%s': %s ops struct_size %u is smaller than v1 (%zu)", d->name,
                 sy_kind_name((int32_t)d->kind), ops_size, ops_v1[d->kind]);
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "%s", buf);
    }
    char caps_buf[96];
    const char *caps_problem = bad_caps(d, caps_buf, sizeof caps_buf);
    if (caps_problem) {
        snprintf(buf, sizeof buf, "plugin '%s': caps: %s", d->name, caps_problem);
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "%s", buf);
    }
    const char *op = missing_op(d);
    if (op) {
        snprintf(buf, sizeof buf, "plugin '%s': missing op %s", d->name, op);
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "%s", buf);
    }
    if ((d->init == NULL) != (d->fini == NULL))
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "plugin '%s' has only one of init and fini", d->name);
    return 1;
}

int sy_validate_backend(const sy_backend_desc *d, char *why, size_t len, int32_t *stage)
{
    char buf[160];
    if (!d)
        return fail(why, len, stage, SY_STAGE_ABI, "%s", "sy_backend_entry returned NULL for this host's ABI");
    if (!check_version(d->abi_major, d->abi_minor, why, len, stage))
        return 0;
    if (d->struct_size < SY_BACKEND_DESC_V1_0_SIZE) {
        snprintf(buf, sizeof buf, "struct_size %u is smaller than the 1.0 backend descriptor (%zu bytes)",
                 d->struct_size, (size_t)SY_BACKEND_DESC_V1_0_SIZE);
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "%s", buf);
    }
    if (!d->name || !d->name[0])
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "%s", "backend has an empty name");
    if (!valid_identifier(d->name))
        return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "backend name '%s' is not of the form [a-z0-9_]+", d->name);
    const void *required[] = {(const void *)d->probe,         (const void *)d->init,
                              (const void *)d->fini,          (const void *)d->device_info,
                              (const void *)d->alloc,         (const void *)d->free,
                              (const void *)d->memcpy_async,  (const void *)d->memset_async,
                              (const void *)d->stream_create, (const void *)d->stream_destroy,
                              (const void *)d->stream_sync,   (const void *)d->event_create,
                              (const void *)d->event_destroy, (const void *)d->event_record,
                              (const void *)d->event_sync,    (const void *)d->event_elapsed_ms};
    static const char *const names[] = {"probe",          "init",          "fini",        "device_info",
                                        "alloc",          "free",          "memcpy_async", "memset_async",
                                        "stream_create",  "stream_destroy", "stream_sync", "event_create",
                                        "event_destroy",  "event_record",  "event_sync",  "event_elapsed_ms"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i]) {
            snprintf(buf, sizeof buf, "backend '%s': missing function %s", d->name, names[i]);
            return fail(why, len, stage, SY_STAGE_DESCRIPTOR, "%s", buf);
        }
    return 1;
}
