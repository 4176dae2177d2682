/* One-line capability summaries for listings and `config explain`. */
#include <stdio.h>
#include <string.h>

#include "switchyard/switchyard.h"
#include "util/strbuf.h"

static void dtype_list(sy_str *s, const char *label, uint32_t mask)
{
    sy_str_appendf(s, " %s=", label);
    int first = 1;
    for (int32_t dt = 1; dt < SY_DTYPE_COUNT_; dt++)
        if (mask & SY_DTYPE_BIT(dt)) {
            sy_str_appendf(s, "%s%s", first ? "" : ",", sy_dtype_name(dt));
            first = 0;
        }
    if (first)
        sy_str_appendf(s, "none");
}

static void layout_list(sy_str *s, const char *label, const uint32_t *layouts, uint32_t n)
{
    sy_str_appendf(s, " %s=", label);
    for (uint32_t i = 0; i < n && i < SY_MAX_CAPS_LAYOUTS; i++)
        sy_str_appendf(s, "%s%s", i ? "," : "", sy_layout_name(layouts[i]));
    if (n == 0)
        sy_str_appendf(s, "none");
}

static void flag(sy_str *s, uint32_t mask, uint32_t bit, const char *name)
{
    if (mask & bit)
        sy_str_appendf(s, " %s", name);
}

/* " label=a,b" for the set bits of mask, " label=none" when none is set. */
static void bit_list(sy_str *s, const char *label, uint32_t mask, const uint32_t *bits, const char *const *names,
                     size_t n)
{
    sy_str_appendf(s, " %s=", label);
    int first = 1;
    for (size_t i = 0; i < n; i++)
        if (mask & bits[i]) {
            sy_str_appendf(s, "%s%s", first ? "" : ",", names[i]);
            first = 0;
        }
    if (first)
        sy_str_appendf(s, "none");
}

void sy_caps_summary(const sy_plugin_desc *d, char *buf, size_t len)
{
    sy_str s = {0};
    switch (d->kind) {
    case SY_KIND_KV_LAYOUT: {
        const sy_kv_layout_caps *c = d->caps;
        sy_str_appendf(&s, "layout=%s", sy_layout_name(c->layout));
        dtype_list(&s, "store", c->store_dtypes);
        if (c->vector_bytes)
            sy_str_appendf(&s, " vector_bytes=%u", c->vector_bytes);
        sy_str_appendf(&s, " default_page=%u", c->default_page_size);
        break;
    }
    case SY_KIND_ATTENTION: {
        const sy_attention_caps *c = d->caps;
        layout_list(&s, "layouts", c->layouts, c->n_layouts);
        dtype_list(&s, "kv", c->kv_dtypes);
        sy_str_appendf(&s, " head_dim=%u..%u page=%u..%u max_tp=%u", c->head_dim_min, c->head_dim_max,
                       c->page_size_min, c->page_size_max, c->max_tp);
        flag(&s, c->features, SY_ATTN_DECODE_PAGED, "decode_paged");
        flag(&s, c->features, SY_ATTN_PREFILL_LINEAR, "prefill_linear");
        flag(&s, c->features, SY_ATTN_SLIDING_WINDOW, "sliding_window");
        flag(&s, c->features, SY_ATTN_SINKS, "sinks");
        flag(&s, c->features, SY_ATTN_FP8_SCALES, "fp8_scales");
        flag(&s, c->features, SY_ATTN_SPLIT_K, "split_k");
        flag(&s, c->features, SY_ATTN_ROW_STRIDE, "row_stride");
        break;
    }
    case SY_KIND_MOE: {
        const sy_moe_caps *c = d->caps;
        sy_str_appendf(&s, "weights=%s gate_up=%s align=%u padded_input=%s max_tp=%u",
                       c->weight_format == SY_MOE_WEIGHTS_MXFP4  ? "mxfp4"
                       : c->weight_format == SY_MOE_WEIGHTS_BF16 ? "bf16"
                                                                 : "none",
                       c->gate_up_layout == SY_MOE_GATE_UP_INTERLEAVE  ? "interleave"
                       : c->gate_up_layout == SY_MOE_GATE_UP_SEPARATED ? "separated"
                                                                       : "none",
                       c->input_alignment, c->accepts_padded_input ? "yes" : "no", c->max_tp);
        break;
    }
    case SY_KIND_NORM: {
        const sy_norm_caps *c = d->caps;
        static const uint32_t bits[] = {SY_NORM_RMSNORM, SY_NORM_FUSED_ADD, SY_NORM_PAD_TO_MULTIPLE};
        static const char *const names[] = {"rmsnorm", "fused_add", "pad"};
        bit_list(&s, "features", c->features, bits, names, 3);
        dtype_list(&s, "dtypes", c->dtypes);
        break;
    }
    case SY_KIND_ROPE: {
        const sy_rope_caps *c = d->caps;
        static const uint32_t style_bits[] = {SY_ROPE_STYLE_NEOX, SY_ROPE_STYLE_GPTJ};
        static const char *const style_names[] = {"neox", "gptj"};
        static const uint32_t scaling_bits[] = {SY_ROPE_SCALING_NONE, SY_ROPE_SCALING_YARN};
        static const char *const scaling_names[] = {"none", "yarn"};
        bit_list(&s, "style", c->styles, style_bits, style_names, 2);
        bit_list(&s, "scaling", c->scalings, scaling_bits, scaling_names, 2);
        layout_list(&s, "fused_kv", c->fused_kv_layouts, c->n_fused_kv_layouts);
        break;
    }
    case SY_KIND_LINEAR: {
        const sy_linear_caps *c = d->caps;
        dtype_list(&s, "weights", c->weight_dtypes);
        dtype_list(&s, "act", c->act_dtypes);
        sy_str_appendf(&s, " bias=%s", c->has_bias ? "yes" : "no");
        if (sy_linear_split_y(c))
            sy_str_appendf(&s, " split_y");
        break;
    }
    default: sy_str_appendf(&s, "?"); break;
    }
    const char *text = s.data ? s.data : "";
    if (*text == ' ')
        text++;
    snprintf(buf, len, "%s", text);
    sy_str_free(&s);
}
