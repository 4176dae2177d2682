/* Internals of the engine shared by its files: creation (engine.c), the forward (forward.c) and the
 * workload loop (workload.c). */
#ifndef SY_ENGINE_IMPL_H
#define SY_ENGINE_IMPL_H

#include "model/engine.h"

typedef struct layer_weights {
    /* q_w, k_w, v_w (and their biases) are consecutive rows of one allocation wherever one linear
     * makes q, k and v (linear.fuse_qkv, or unfused through the linear plugin's split_y). */
    void *q_w, *k_w, *v_w, *o_w, *router_w;          /* bf16 [N, K] */
    void *q_b, *k_b, *v_b, *o_b, *router_b;          /* f32 [N] */
    void *sinks, *attn_norm, *mlp_norm;               /* f32 */
    void *moe;                                        /* the MoE plugin's prepared weights */
    void *k_cache, *v_cache;                          /* this layer's pool (full or sliding) */
} layer_weights;

typedef struct allocation {
    void *ptr;
    size_t bytes;
} allocation;

struct sy_engine {
    sy_plan plan;
    sy_model_dims d;
    const sy_backend_desc *be;
    void *bctx;
    sy_stream stream;
    sy_host_api host;
    const sy_plugin_desc *pd[SY_KIND_COUNT_];
    void *ctx[SY_KIND_COUNT_];
    const sy_kv_layout_ops *kv;
    const sy_attention_ops *attn;
    const sy_moe_ops *moe;
    const sy_norm_ops *norm;
    const sy_rope_ops *rope;
    const sy_linear_ops *lin;

    sy_kv_geometry geom_full, geom_swa;
    sy_moe_shape moe_shape;
    uint32_t hp;          /* hidden padded for the MoE input (== hidden without fused pad) */
    uint32_t t_max;       /* most tokens in one forward */
    uint32_t max_kv_rows; /* most gathered K/V rows in one prefill */

    layer_weights *layer;
    uint16_t *embed_host;  /* bf16 [vocab, hidden] */
    void *final_norm, *lm_head;

    /* activations (device) */
    /* The residual stream, the router's logits and the output logits are f32; hidden, normed, q, k,
     * v and attn_out are activations of dtype `act` (model.dtype). */
    void *residual, *hidden, *normed, *q, *k, *v, *attn_out, *router_logits, *topk_w, *topk_ids, *logits;
    int32_t act;
    /* Elements from one token's q (k and v) to the next: the packed head width, or with
     * linear.fuse_qkv the width of the one linear's rows, of which q, k and v are slices. */
    uint32_t q_row, kv_row;
    void *k_lin, *v_lin;
    /* Index arrays of one forward, packed into one host block and its device twin (index_block.c):
     * the page tables at a fixed place first, then the arrays of this forward. The pointers below
     * point into the blocks and are set by every forward. */
    int32_t *h_index;
    void *d_index;
    size_t index_cap;    /* int32 entries of each block */
    size_t tables_len;   /* entries of the page-table region at the start */
    void *d_slots, *d_positions, *d_cu_q, *d_cu_k_full, *d_cu_k_swa, *d_gslots_full, *d_gslots_swa;
    void *d_bt_full, *d_bt_swa, *d_ctx_lens;
    int32_t *h_slots, *h_positions, *h_cu_q, *h_cu_k_full, *h_cu_k_swa, *h_gslots_full, *h_gslots_swa;
    int32_t *h_bt_full, *h_bt_swa, *h_ctx_lens;
    void *d_slot_map;
    /* Call-boundary checks already passed by this forward's index arrays, [0] for the full layers,
     * [1] for the sliding ones: every layer of a kind reads the same arrays in one forward. */
    int write_checked[2], decode_checked[2];
    float *h_rows;    /* t_max x hidden staging (embeddings in, checkpoints out) */
    float *h_rows2;
    float *h_logits;  /* batch x vocab, when the logits come back (forward.c) */
    void *d_next;     /* uint32 [batch]: greedy tokens chosen on the device */
    uint32_t *h_next; /* [batch]: each sequence's greedy token after a forward */

    sy_kv_cache cache;
    uint32_t full_pages, swa_pages;

    allocation *allocs;
    size_t n_allocs, cap_allocs;
    uint64_t device_bytes;

    /* Per-op timing: a pair of events around each plugin call, read after the forward's one
     * synchronization instead of waiting for the device after every op. */
    sy_event *op_events;    /* 2 per pending op */
    int32_t *op_kinds;      /* slot of each pending op */
    uint32_t n_pending_ops, cap_pending_ops;
    double op_ms[SY_KIND_COUNT_];
    uint32_t op_calls[SY_KIND_COUNT_];
    sy_transfer_counts transfers;

    /* synthetic context (context.c) */
    void *ctx_stage_k, *ctx_stage_v; /* bf16 [input_len, kv_heads, head_dim]: one sequence's K or V */
    uint16_t *h_ctx_stage;           /* host staging where the backend has no synth_fill */
    void *d_ctx_slots;               /* int32 [batch, input_len]: full-pool slot of every context token */
    int32_t *h_ctx_slots;

    sy_checkpoint_fn checkpoint;
    void *checkpoint_user;
    uint32_t step_index;
    void (*progress)(void *, uint32_t, uint32_t, double);
    void *progress_user;

    uint32_t *tokens;
    double *step_ms;
    uint32_t *h_start, *h_count; /* batch entries: per-sequence start and token count of a forward */
};


double sy_now_ms(void);
sy_status sy_eng_copy(sy_engine *e, void *dst, const void *src, size_t bytes, int32_t kind, sy_error *err);
sy_status sy_eng_sync(sy_engine *e, sy_error *err);
sy_tensor sy_t1(void *p, int32_t dt, int64_t a);
sy_tensor sy_t2(void *p, int32_t dt, int64_t a, int64_t b);
sy_tensor sy_t3(void *p, int32_t dt, int64_t a, int64_t b, int64_t c);
sy_tensor sy_tnone(void);
sy_tensor sy_t2_strided(void *p, int32_t dt, int64_t rows, int64_t cols, int64_t stride);
sy_status sy_op_begin(sy_engine *e, sy_error *err);
void sy_op_end(sy_engine *e, int32_t kind);
/* Adds the device time of the ops timed since the last call to their slots; the stream must have
 * been synchronized after the last of them. */
void sy_op_times_collect(sy_engine *e);
/* Prefixes err with the plugin that failed (kind, name, file) and the op. */
sy_status sy_op_failed(sy_engine *e, int32_t kind, const char *op, sy_status st, sy_error *err);
/* One linear whose n[0] + ... columns go to `parts` arrays y[i] of [rows, n[i]] (split_y when parts > 1). */
sy_status sy_eng_linear_parts(sy_engine *e, sy_tensor x, void *w, void *b, uint32_t parts, const uint32_t *n,
                              void *const *y, int32_t y_dtype, sy_error *err);
/* y [x rows, n] of y_dtype = x W^T + b, W bf16 [n, x cols], b f32 [n] or NULL. */
sy_status sy_eng_linear(sy_engine *e, sy_tensor x, void *w, void *b, uint32_t n, void *y, int32_t y_dtype,
                        sy_error *err);
/* e->normed = rmsnorm(x (+ residual)) * w, padded to `pad` columns; residual (f32) updated in place. */
sy_status sy_eng_rmsnorm(sy_engine *e, uint32_t T, void *x, int32_t x_dtype, void *residual, void *w, uint32_t pad,
                         sy_error *err);

/* Empties every sequence and returns its pages to the pools. */
sy_status sy_engine_reset_cache(sy_engine *e, sy_error *err);

/* Index block (index_block.c): entries it needs for this plan, and the packing of one forward
 * into it. */
size_t sy_index_block_entries(const sy_engine *e, size_t *tables_len);
sy_status sy_index_block_upload(sy_engine *e, const uint32_t *start, const uint32_t *n, int decode,
                                uint32_t *T, int *has_prefix, uint32_t *rows_full, uint32_t *rows_swa, sy_error *err);

/* One forward over `n[b]` new tokens of each sequence b starting at position `start[b]`, then the
 * greedy token of each sequence's last position in e->h_next (and its logits in e->h_logits when a
 * checkpoint callback is set or the backend chooses no tokens). */
sy_status sy_forward(sy_engine *e, const uint32_t *start, const uint32_t *n, const uint32_t *token_ids, int decode,
                     sy_error *err);

/* Time a plugin call into its slot; on failure, return the error prefixed with the plugin. */
#define CALL(e, kind, opname, expr)                                   \
    do {                                                              \
        sy_status st_ = sy_op_begin(e, err);                          \
        if (st_ != SY_OK)                                             \
            return st_;                                               \
        st_ = (expr);                                                 \
        sy_op_end(e, kind);                                           \
        if (st_ != SY_OK)                                             \
            return sy_op_failed(e, kind, opname, st_, err);           \
    } while (0)

#endif
