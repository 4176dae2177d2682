/* Capability records: what a plugin declares it can do, read before init so that listing and config
 * validation never run plugin code. Composition (engine/src/compose) intersects these records; a
 * capability that is not declared means "incompatible", never "anything goes" - a zeroed field is a
 * refusal, not a wildcard.
 * Part of the Switchyard plugin ABI v1. Every record starts with struct_size and is append-only. */
#ifndef SWITCHYARD_CAPS_H
#define SWITCHYARD_CAPS_H

#include "abi.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* KV cache layouts. Ids below SY_LAYOUT_VENDOR_BASE are reserved for layouts documented in
 * docs/plugin-abi.md; a third-party layout picks an id at or above it and a unique name. */
typedef enum sy_kv_layout_id {
    SY_LAYOUT_INVALID = 0,
    SY_LAYOUT_NHD = 1,           /* (pages*P, H, D): s*H*D + h*D + d */
    SY_LAYOUT_VECTORIZED_5D = 2, /* K (pages, H, D/X, P, X), V (pages, H, P/X, D, X) */
    SY_LAYOUT_VENDOR_BASE = 256
} sy_kv_layout_id;

typedef struct sy_kv_layout_caps {
    uint32_t struct_size;
    uint32_t layout;            /* sy_kv_layout_id */
    uint32_t store_dtypes;      /* SY_DTYPE_BIT mask of pool element types */
    uint32_t src_dtypes;        /* SY_DTYPE_BIT mask of K/V input types accepted by write */
    /* Vectorization: X = vector_bytes / sizeof(store dtype); page_size and head_dim must be
     * multiples of X. 0 = no such constraint (X = 1). */
    uint32_t vector_bytes;
    uint32_t default_page_size; /* used when the config leaves kv_cache.page_size unset */
    uint32_t max_page_size;     /* largest supported page size */
    uint32_t max_head_dim;      /* largest supported head dim */
    uint32_t features;          /* SY_KV_FEAT_* */
} sy_kv_layout_caps;

enum {
    SY_KV_FEAT_SLOT_MAP = 1u << 0,   /* write/gather honour a full-to-SWA slot map */
    SY_KV_FEAT_FP8_SCALES = 1u << 1, /* per-tensor k/v scales for an fp8 store */
    SY_KV_FEAT_ANY_TOKEN_STRIDE = 1u << 2 /* write reads K/V with any stride(0) */
};

typedef enum sy_attention_feature {
    SY_ATTN_DECODE_PAGED = 1u << 0,   /* decode_paged over the pool, natively in `layouts` */
    SY_ATTN_PREFILL_LINEAR = 1u << 1, /* prefill_linear over contiguous ragged K/V */
    SY_ATTN_SLIDING_WINDOW = 1u << 2, /* window = W keys including the current token */
    SY_ATTN_SINKS = 1u << 3,          /* one extra logit per q head in the softmax denominator */
    SY_ATTN_FP8_SCALES = 1u << 4,     /* fp8 K/V dequantized with per-tensor k/v scales */
    SY_ATTN_SPLIT_K = 1u << 5,        /* decode split over the context, log-sum-exp combine */
    /* ABI 1.3: q and out (and prefill_linear's k, v) rows with any stride(0) at least the packed
     * row: the engine's q, k and v are then slices of one fused QKV projection's rows. */
    SY_ATTN_ROW_STRIDE = 1u << 6,
    /* ABI 1.5: prefill_paged over the pool, natively in `layouts` (a later prefill chunk then reads
     * its prefix where it lies instead of a gather to contiguous rows). */
    SY_ATTN_PREFILL_PAGED = 1u << 7
} sy_attention_feature;

#define SY_MAX_CAPS_LAYOUTS 8

typedef struct sy_attention_caps {
    uint32_t struct_size;
    uint32_t features;                      /* sy_attention_feature bits */
    uint32_t n_layouts;                     /* entries used in layouts[] */
    uint32_t layouts[SY_MAX_CAPS_LAYOUTS];  /* layouts decode_paged reads natively */
    uint32_t kv_dtypes;                     /* SY_DTYPE_BIT mask of pool (store) dtypes */
    uint32_t q_dtypes;                      /* SY_DTYPE_BIT mask of q / out dtypes */
    uint32_t head_dim_min, head_dim_max, head_dim_multiple;
    uint32_t page_size_min, page_size_max, page_size_multiple;
    uint32_t max_gqa_ratio;                 /* largest q heads / kv heads */
    uint32_t max_tp;                        /* largest parallel.tp it is correct at (>= 1) */
} sy_attention_caps;

enum { SY_ROPE_STYLE_NEOX = 1u << 0, SY_ROPE_STYLE_GPTJ = 1u << 1 };
enum { SY_ROPE_SCALING_NONE = 1u << 0, SY_ROPE_SCALING_YARN = 1u << 1 };

typedef struct sy_rope_caps {
    uint32_t struct_size;
    uint32_t styles;                             /* SY_ROPE_STYLE_* */
    uint32_t scalings;                           /* SY_ROPE_SCALING_* */
    uint32_t head_dim_max;
    uint32_t n_fused_kv_layouts;                 /* 0: no fused rope + KV write */
    uint32_t fused_kv_layouts[SY_MAX_CAPS_LAYOUTS];
    uint32_t fused_kv_dtypes;                    /* store dtypes the fused write supports */
    uint32_t dtypes;                             /* SY_DTYPE_BIT mask of q/k dtypes */
} sy_rope_caps;

enum {
    SY_NORM_RMSNORM = 1u << 0,         /* plain rmsnorm */
    SY_NORM_FUSED_ADD = 1u << 1,       /* residual add fused, residual_out written */
    SY_NORM_PAD_TO_MULTIPLE = 1u << 2  /* output columns zero-padded up to a multiple of pad_to_multiple */
};

typedef struct sy_norm_caps {
    uint32_t struct_size;
    uint32_t features; /* SY_NORM_* */
    uint32_t dtypes;   /* SY_DTYPE_BIT mask of x / out dtypes */
    uint32_t max_pad_multiple;
} sy_norm_caps;

typedef enum sy_moe_weight_format { SY_MOE_WEIGHTS_MXFP4 = 1, SY_MOE_WEIGHTS_BF16 = 2 } sy_moe_weight_format;
typedef enum sy_moe_gate_up_layout {
    SY_MOE_GATE_UP_INTERLEAVE = 1, /* AITER a16w4 shuffle: 16-row tiles alternate gate, up */
    SY_MOE_GATE_UP_SEPARATED = 2   /* AITER (16,16) shuffle: all gate rows, then all up rows */
} sy_moe_gate_up_layout;

typedef struct sy_moe_caps {
    uint32_t struct_size;
    uint32_t weight_format;        /* sy_moe_weight_format */
    uint32_t gate_up_layout;       /* sy_moe_gate_up_layout */
    uint32_t input_alignment;      /* hidden is padded to a multiple of this (256 for MXFP4) */
    uint32_t accepts_padded_input; /* 1: forward takes x already padded to input_alignment */
    uint32_t max_tp;
    uint32_t max_experts;
    uint32_t max_top_k;
    uint32_t act_dtypes;           /* SY_DTYPE_BIT mask of x / out dtypes */
} sy_moe_caps;

typedef enum sy_linear_feature {
    /* ABI 1.4: y given as column parts in arrays of their own (sy_linear_args.n_y_parts) */
    SY_LINEAR_SPLIT_Y = 1u << 0
} sy_linear_feature;

typedef struct sy_linear_caps {
    uint32_t struct_size;
    uint32_t weight_dtypes; /* SY_DTYPE_BIT mask */
    uint32_t act_dtypes;    /* SY_DTYPE_BIT mask of x / y */
    uint32_t has_bias;      /* 1: b is honoured */
    uint32_t features;      /* ABI 1.4: sy_linear_feature bits; read only when struct_size covers it */
} sy_linear_caps;

/* 1 when the plugin takes y as column parts; a record built before 1.4 ends before `features`. */
static inline int sy_linear_split_y(const sy_linear_caps *c)
{
    return SY_HAS_MEMBER(c->struct_size, sy_linear_caps, features) && (c->features & SY_LINEAR_SPLIT_Y) != 0;
}

#ifdef __cplusplus
}
#endif
#endif
