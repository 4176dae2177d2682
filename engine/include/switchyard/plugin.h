/* Plugin ABI v1: everything a plugin author needs.
 *
 * A plugin library exports exactly one symbol:
 *
 *     SY_EXPORT const sy_plugin_desc *const *sy_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor);
 *
 * returning a NULL-terminated array of descriptors (usually one) that stay valid until the library
 * is unloaded, or NULL when it cannot serve that host version. The host reads kind, name, backend,
 * version, description, rank and caps without calling anything else; init runs only when the
 * composition selects the plugin.
 *
 * Versioning (abi.h): abi_major and struct_size are never 0 (a zeroed descriptor is invalid);
 * abi_minor counts from 0 within a major. The host accepts
 * abi_major == host major and abi_minor <= host minor. Every struct here is append-only within a
 * major; the struct_size of a descriptor, caps record, ops table or args struct says which members
 * exist.
 *
 * Memory and threading. Tensors (tensor.h) point into memory owned by the engine; for GPU backends
 * they are device pointers. A plugin never allocates device memory except through
 * sy_host_api.workspace_alloc, never frees what it did not allocate, and keeps no pointer to an
 * args struct or tensor past the call. Every op is enqueued on the given stream and may return
 * before the device work finishes; it must not synchronize the device except where documented.
 * The engine calls one plugin context from one thread at a time. Index tensors (slot maps, block
 * tables, lengths, cu_seqlens, expert ids) are int32. Before a kv_layout or attention op the host
 * checks dtypes, shapes and index ranges at the call boundary; expert ids are written by route on
 * the device, so a MoE forward range-checks them itself (an error on the host, NaN outputs on a GPU).
 *
 * Errors. An op returns SY_OK or a sy_status and fills *err with one line naming the argument and
 * the offending values. It never aborts the process and never prints. */
#ifndef SWITCHYARD_PLUGIN_H
#define SWITCHYARD_PLUGIN_H

#include "abi.h"
#include "backend.h"
#include "caps.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Plugin kinds: one slot each in the composition. Values are ABI; 0 is invalid. */
typedef enum sy_kind {
    SY_KIND_INVALID = 0,
    SY_KIND_KV_LAYOUT = 1,
    SY_KIND_ATTENTION = 2,
    SY_KIND_MOE = 3,
    SY_KIND_NORM = 4,
    SY_KIND_ROPE = 5,
    SY_KIND_LINEAR = 6,
    SY_KIND_COUNT_ = 7
} sy_kind;

enum { SY_LOG_ERROR = 0, SY_LOG_WARNING = 1, SY_LOG_INFO = 2, SY_LOG_DEBUG = 3 };

/* What the host gives a plugin at init. Valid until the plugin's fini returns. */
typedef struct sy_host_api {
    uint32_t struct_size;
    uint32_t abi_major, abi_minor;
    uint32_t reserved0;
    void *host;                       /* pass back as the first argument of the calls below */
    const sy_backend_desc *backend;   /* the backend the plugin runs on */
    void *backend_ctx;                /* its context (first argument of the backend's calls) */
    void (*log)(void *host, int32_t level, const char *msg);
    /* Device memory for the plugin's own scratch (split-K partials, staging). Counted in the
     * engine's memory report; released by workspace_free or at engine destruction. */
    sy_status (*workspace_alloc)(void *host, size_t bytes, void **ptr, sy_error *err);
    void (*workspace_free)(void *host, void *ptr);
} sy_host_api;

/* ------------------------------------------------------------------------------------------ */
/* kv_layout                                                                                   */

/* Pool geometry of one layer. The engine fills the inputs; ops.geometry fills vec and the element
 * counts (or rejects the combination). Page 0 is the padding page: dummy writes land there and no
 * sequence owns it. */
typedef struct sy_kv_geometry {
    uint32_t struct_size;
    uint32_t layout;      /* in: sy_kv_layout_id */
    int32_t store_dtype;  /* in: sy_dtype of the pool */
    uint32_t num_pages;   /* in: pages in the pool, the padding page included */
    uint32_t page_size;   /* in: P, tokens per page */
    uint32_t kv_heads;    /* in: H */
    uint32_t head_dim;    /* in: D (K and V alike) */
    uint32_t vec;         /* out: X, elements per 16-byte vector (1 when the layout has none) */
    uint64_t k_elems;     /* out: elements of one layer's K pool */
    uint64_t v_elems;     /* out: elements of one layer's V pool */
} sy_kv_geometry;

/* Scatter K and V of T tokens into one layer's pool. fp8 stores write fp8_e4m3(x / scale); the
 * inputs are never modified. */
typedef struct sy_kv_write_args {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_kv_geometry geom;
    sy_tensor k;          /* [T, H, D] f32 or bf16; any stride(0), stride(1) == D, stride(2) == 1 */
    sy_tensor v;          /* same shape as k */
    sy_tensor slots;      /* int32 [T]: pool slot of each token; slot < 0 is skipped */
    sy_tensor slot_map;   /* optional int32 [N]: slots index it first (full-to-SWA translation);
                             a mapped value of 0 is the padding page's first slot */
    void *k_cache;        /* one layer's K pool, geom.k_elems of geom.store_dtype */
    void *v_cache;
    float k_scale;        /* per-tensor dequant scale of an fp8 store (1 = unit); ignored otherwise */
    float v_scale;
} sy_kv_write_args;

/* Read T slots back to linear [T, H, D] in the store dtype: the exact inverse of write. */
typedef struct sy_kv_gather_args {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_kv_geometry geom;
    sy_tensor slots;       /* int32 [T]: all in range (checked by the host) */
    sy_tensor slot_map;    /* optional, as in write */
    const void *k_cache;
    const void *v_cache;
    sy_tensor k_out;       /* [T, H, D] of geom.store_dtype, contiguous */
    sy_tensor v_out;
} sy_kv_gather_args;

typedef struct sy_kv_layout_ops {
    uint32_t struct_size;
    uint32_t reserved0;
    /* Pure function of its inputs, callable before init (config validation uses it). */
    sy_status (*geometry)(sy_kv_geometry *geom, sy_error *err);
    sy_status (*write)(void *ctx, sy_stream stream, const sy_kv_write_args *args, sy_error *err);
    sy_status (*gather)(void *ctx, sy_stream stream, const sy_kv_gather_args *args, sy_error *err);
} sy_kv_layout_ops;

/* ------------------------------------------------------------------------------------------ */
/* attention                                                                                   */

/* One decode token per sequence against the paged pool, read natively in geom.layout. */
typedef struct sy_attn_decode_args {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_kv_geometry geom;
    sy_tensor q;             /* [B, Hq, D] */
    sy_tensor out;           /* [B, Hq, D], same dtype as q */
    const void *k_cache;
    const void *v_cache;
    sy_tensor block_tables;  /* int32 [B, max_blocks]: page ids of each sequence, in order */
    sy_tensor context_lens;  /* int32 [B]: keys per sequence, the current token included */
    sy_tensor sinks;         /* optional f32 [Hq]: extra logit per q head, denominator only */
    float scale;             /* softmax scale applied to q.k */
    int32_t window;          /* 0 = full context; W > 0 = the last W keys, the current one included */
    float k_scale;           /* fp8 pools: dequant scales (1 = unit); ignored for bf16 / f32 */
    float v_scale;
    int32_t num_splits;      /* split-K partitions of the context; 0 = the plugin chooses */
    uint32_t reserved1;
} sy_attn_decode_args;

/* Ragged batch of new query tokens against contiguous K/V. For sequence b, queries are rows
 * cu_seqlens_q[b] .. cu_seqlens_q[b+1] and keys rows cu_seqlens_k[b] .. cu_seqlens_k[b+1]; with
 * Lq queries and Lk >= Lq keys, query i sits at position Lk - Lq + i (a cached prefix comes first). */
typedef struct sy_attn_prefill_args {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_tensor q;             /* [Tq, Hq, D] */
    sy_tensor k;             /* [Tk, Hkv, D]: f32 / bf16, or fp8_e4m3 with k_scale */
    sy_tensor v;
    sy_tensor out;           /* [Tq, Hq, D], same dtype as q */
    sy_tensor cu_seqlens_q;  /* int32 [B + 1] */
    sy_tensor cu_seqlens_k;  /* int32 [B + 1] */
    sy_tensor sinks;         /* optional f32 [Hq] */
    float scale;
    int32_t causal;          /* 1: key j visible to query at position p only if j <= p */
    int32_t window;          /* 0 = off; W: keys p - W + 1 .. p */
    float k_scale;
    float v_scale;
    uint32_t reserved1;
} sy_attn_prefill_args;

/* ABI 1.5: a ragged batch of new query tokens against K/V read natively from the paged pool, as
 * decode_paged reads it (no gather to contiguous rows first). Sequence b's queries are rows
 * cu_seqlens_q[b] .. cu_seqlens_q[b+1] of q; its keys are positions 0 .. context_lens[b] - 1 of
 * its pages, the queries' own K/V already written; with Lq queries and Lk = context_lens[b] >= Lq
 * keys, query i sits at position Lk - Lq + i, as in prefill_linear. A windowed call reads only the
 * pages its queries' windows cover (a sliding-window table holds 0 for freed pages). */
typedef struct sy_attn_prefill_paged_args {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_kv_geometry geom;
    sy_tensor q;             /* [Tq, Hq, D] */
    sy_tensor out;           /* [Tq, Hq, D], same dtype as q */
    const void *k_cache;
    const void *v_cache;
    sy_tensor block_tables;  /* int32 [B, max_blocks]: page ids of each sequence, in order */
    sy_tensor context_lens;  /* int32 [B]: keys per sequence, this call's queries included */
    sy_tensor cu_seqlens_q;  /* int32 [B + 1] */
    sy_tensor sinks;         /* optional f32 [Hq] */
    float scale;
    int32_t causal;          /* 1: key j visible to query at position p only if j <= p */
    int32_t window;          /* 0 = off; W: keys p - W + 1 .. p */
    float k_scale;           /* fp8 pools: dequant scales (1 = unit); ignored for bf16 / f32 */
    float v_scale;
    uint32_t reserved1;
} sy_attn_prefill_paged_args;

typedef sy_status sy_attn_prefill_paged_fn(void *ctx, sy_stream stream, const sy_attn_prefill_paged_args *args,
                                           sy_error *err);

typedef struct sy_attention_ops {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_status (*decode_paged)(void *ctx, sy_stream stream, const sy_attn_decode_args *args, sy_error *err);
    sy_status (*prefill_linear)(void *ctx, sy_stream stream, const sy_attn_prefill_args *args, sy_error *err);
    sy_attn_prefill_paged_fn *prefill_paged; /* ABI 1.5: read through sy_attention_prefill_paged */
} sy_attention_ops;

/* The plugin's prefill_paged, or NULL where its ops table predates ABI 1.5 or leaves it out. */
static inline sy_attn_prefill_paged_fn *sy_attention_prefill_paged(const sy_attention_ops *ops)
{
    return SY_HAS_MEMBER(ops->struct_size, sy_attention_ops, prefill_paged) ? ops->prefill_paged : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* moe                                                                                         */

typedef struct sy_moe_shape {
    uint32_t struct_size;
    uint32_t num_experts;   /* E */
    uint32_t hidden;        /* H, unpadded (2880 for gpt-oss) */
    uint32_t intermediate;  /* I */
    uint32_t top_k;
    float swiglu_alpha;     /* 1.702 for gpt-oss */
    float swiglu_limit;     /* 7 for gpt-oss: g = min(g, limit), u = clamp(u, -limit, limit) */
    uint32_t reserved0;
} sy_moe_shape;

/* Checkpoint-format experts (HF gpt-oss): rows of w13 interleave gate and up (row 2i gate,
 * 2i+1 up). MXFP4: 32 values a block, low nibble = even element, scale byte e = 2^(e-127). */
typedef struct sy_moe_prepare_args {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_moe_shape shape;
    sy_tensor w13_blocks;  /* u8 [E, 2I, H/32, 16] */
    sy_tensor w13_scales;  /* u8 [E, 2I, H/32] */
    sy_tensor w13_bias;    /* f32 or bf16 [E, 2I] */
    sy_tensor w2_blocks;   /* u8 [E, H, I/32, 16] */
    sy_tensor w2_scales;   /* u8 [E, H, I/32] */
    sy_tensor w2_bias;     /* f32 or bf16 [E, H] */
    void *prepared;        /* out: prepared_bytes(shape) bytes of backend memory */
} sy_moe_prepare_args;

/* Router logits [T, E] to the top_k experts of each token and their weights: the k largest
 * logits (ties to the lower expert id), softmax over those k. */
typedef struct sy_moe_route_args {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_moe_shape shape;
    sy_tensor logits;       /* f32 [T, E] */
    sy_tensor topk_ids;     /* out: int32 [T, top_k], in descending logit order */
    sy_tensor topk_weights; /* out: f32 [T, top_k] */
} sy_moe_route_args;

typedef struct sy_moe_forward_args {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_moe_shape shape;
    const void *prepared;   /* written by prepare */
    sy_tensor x;            /* [T, H] or [T, Hp] already padded (Hp = H rounded up to input_alignment) */
    sy_tensor topk_ids;     /* int32 [T, top_k] */
    sy_tensor topk_weights; /* f32 [T, top_k] */
    sy_tensor out;          /* [T, H]: sum over k of weight * (W2 a + b2), trimmed to H */
} sy_moe_forward_args;

typedef struct sy_moe_ops {
    uint32_t struct_size;
    uint32_t reserved0;
    /* Pure: bytes of prepared weights for a shape; callable before init. */
    sy_status (*prepared_bytes)(const sy_moe_shape *shape, uint64_t *bytes, sy_error *err);
    /* De-interleave, pad and shuffle checkpoint weights into this plugin's tile layout. */
    sy_status (*prepare)(void *ctx, sy_stream stream, const sy_moe_prepare_args *args, sy_error *err);
    sy_status (*route)(void *ctx, sy_stream stream, const sy_moe_route_args *args, sy_error *err);
    sy_status (*forward)(void *ctx, sy_stream stream, const sy_moe_forward_args *args, sy_error *err);
} sy_moe_ops;

/* ------------------------------------------------------------------------------------------ */
/* norm                                                                                        */

/* s = x (+ residual); r = rsqrt(mean over the first N columns of s^2 + eps);
 * out[:, n < N] = s * r * w, out[:, N .. Nout) = 0; residual_out = s rounded once to its dtype. */
typedef struct sy_norm_args {
    uint32_t struct_size;
    uint32_t pad_to_multiple; /* 0 or 1: Nout = N; p > 1: Nout = ceil(N / p) * p */
    sy_tensor x;              /* [M, N] */
    sy_tensor residual;       /* optional [M, N] */
    sy_tensor weight;         /* [N] */
    sy_tensor out;            /* [M, Nout] */
    sy_tensor residual_out;   /* [M, N]; required when residual is given; may alias residual */
    float eps;
    uint32_t reserved0;
} sy_norm_args;

typedef struct sy_norm_ops {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_status (*rmsnorm)(void *ctx, sy_stream stream, const sy_norm_args *args, sy_error *err);
} sy_norm_ops;

/* ------------------------------------------------------------------------------------------ */
/* rope                                                                                        */

typedef struct sy_rope_params {
    uint32_t struct_size;
    uint32_t style;            /* SY_ROPE_STYLE_* (one bit) */
    uint32_t scaling;          /* SY_ROPE_SCALING_* (one bit) */
    uint32_t head_dim;         /* rotated dims == head dim */
    float theta;               /* 150000 for gpt-oss */
    float yarn_factor;         /* 32 */
    float yarn_beta_fast;      /* 32 */
    float yarn_beta_slow;      /* 1 */
    uint32_t yarn_original_max_position; /* 4096 */
    float concentration;       /* multiplied into cos and sin; 0: 0.1 ln(factor) + 1 under YaRN, factor > 1, else 1 */
} sy_rope_params;

/* Rotates q and k in place at the given positions. */
typedef struct sy_rope_args {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_rope_params params;
    sy_tensor q;          /* [T, Hq, D] */
    sy_tensor k;          /* [T, Hkv, D] */
    sy_tensor positions;  /* int32 [T] */
} sy_rope_args;

/* Rope on q and k, then the rotated k and v written to the pool, equal bit for bit to rope
 * followed by kv_layout.write with kv (whose k must alias rope.k). */
typedef struct sy_rope_kv_write_args {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_rope_args rope;
    sy_kv_write_args kv;
} sy_rope_kv_write_args;

typedef struct sy_rope_ops {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_status (*rope)(void *ctx, sy_stream stream, const sy_rope_args *args, sy_error *err);
    /* NULL when caps.n_fused_kv_layouts == 0. */
    sy_status (*rope_kv_write)(void *ctx, sy_stream stream, const sy_rope_kv_write_args *args, sy_error *err);
} sy_rope_ops;

/* ------------------------------------------------------------------------------------------ */
/* linear                                                                                      */

/* ABI 1.4: the most column parts a linear's y may be split into (SY_LINEAR_SPLIT_Y). */
#define SY_LINEAR_MAX_Y_PARTS 4

/* y = x W^T + b with f32 accumulation. */
typedef struct sy_linear_args {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_tensor x;  /* [M, K], row stride >= K */
    sy_tensor w;  /* [N, K] contiguous */
    sy_tensor b;  /* optional [N] */
    sy_tensor y;  /* [M, N]; none (data NULL) when n_y_parts > 0 */
    /* ABI 1.4, passed only to a plugin whose caps declare SY_LINEAR_SPLIT_Y: the product's columns
     * written to n_y_parts arrays of their own, part i taking the next N_i columns ([M, N_i], any
     * row stride, its own dtype; the N_i sum to N). One product for outputs that live apart: the
     * engine's q, k and v where linear.fuse_qkv is off. 0: y, as in 1.0. */
    uint32_t n_y_parts;
    uint32_t reserved1;
    sy_tensor y_parts[SY_LINEAR_MAX_Y_PARTS];
} sy_linear_args;

typedef struct sy_linear_ops {
    uint32_t struct_size;
    uint32_t reserved0;
    sy_status (*linear)(void *ctx, sy_stream stream, const sy_linear_args *args, sy_error *err);
} sy_linear_ops;

/* ------------------------------------------------------------------------------------------ */
/* descriptor                                                                                  */

typedef struct sy_plugin_desc {
    uint32_t abi_major;        /* SY_ABI_MAJOR the plugin was built against; 0 is invalid */
    uint32_t abi_minor;        /* SY_ABI_MINOR the plugin was built against */
    uint32_t struct_size;      /* sizeof(sy_plugin_desc) as the plugin was built */
    uint32_t kind;             /* sy_kind */
    const char *name;          /* unique per (kind, backend): [a-z0-9_]+, e.g. "attn_paged" */
    const char *backend;       /* backend it runs on: "cpu", "cuda", "hip" */
    const char *version;       /* the plugin's own version, free form, e.g. "1.2.0" */
    const char *description;   /* one line */
    int32_t rank;              /* preference under `auto`: higher first, then name */
    uint32_t reserved0;
    const void *caps;          /* the kind's caps record (caps.h), starts with struct_size */
    const void *ops;           /* the kind's ops table (above), starts with struct_size */
    /* Optional. Called once when the plugin is selected; *ctx goes to every op. */
    sy_status (*init)(const sy_host_api *host, void **ctx, sy_error *err);
    void (*fini)(void *ctx);
} sy_plugin_desc;

typedef const sy_plugin_desc *const *(*sy_plugin_entry_fn)(uint32_t host_abi_major, uint32_t host_abi_minor);
#define SY_PLUGIN_ENTRY_SYMBOL "sy_plugin_entry"

#include "abi_v1_layout.h"

/* Members added after 1.0 (abi_v1_layout.h pins the 1.0 ones and is never edited). */
SY_STATIC_ASSERT(offsetof(sy_linear_caps, features) == 16, "sy_linear_caps 1.4 layout");
SY_STATIC_ASSERT(sizeof(sy_linear_caps) == 20, "sy_linear_caps 1.4 layout");
SY_STATIC_ASSERT(offsetof(sy_linear_args, n_y_parts) == 456, "sy_linear_args 1.4 layout");
SY_STATIC_ASSERT(offsetof(sy_linear_args, reserved1) == 460, "sy_linear_args 1.4 layout");
SY_STATIC_ASSERT(offsetof(sy_linear_args, y_parts) == 464, "sy_linear_args 1.4 layout");
SY_STATIC_ASSERT(sizeof(sy_linear_args) == 464 + SY_LINEAR_MAX_Y_PARTS * 112, "sy_linear_args 1.4 layout");

#ifdef __cplusplus
}
#endif
#endif
