#include "checkpoint/gpt_oss.h"

#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

sy_gpt_oss_tensor sy_gpt_oss_tensor_of(const sy_model_dims *d, uint32_t layer, uint32_t kind)
{
    uint64_t H = d->hidden, Q = (uint64_t)d->q_heads * d->head_dim, KV = (uint64_t)d->kv_heads * d->head_dim;
    uint64_t E = d->experts, I = d->intermediate;
    sy_gpt_oss_tensor t = {.layer = layer, .kind = kind, .dtype = SY_ST_BF16, .rank = 1};
#define SHAPE(...)                                                    \
    do {                                                              \
        const uint64_t s_[] = {__VA_ARGS__};                          \
        t.rank = (uint32_t)(sizeof s_ / sizeof s_[0]);                \
        memcpy(t.shape, s_, sizeof s_);                               \
    } while (0)
    if (layer == SY_GLOBAL_LAYER) {
        if (kind == SY_T_FINAL_NORM)
            SHAPE(H);
        else
            SHAPE(d->vocab, H); /* embedding and lm_head */
        return t;
    }
    switch (kind) {
    case SY_T_Q_W: SHAPE(Q, H); break;
    case SY_T_K_W: case SY_T_V_W: SHAPE(KV, H); break;
    case SY_T_O_W: SHAPE(H, Q); break;
    case SY_T_Q_B: SHAPE(Q); break;
    case SY_T_K_B: case SY_T_V_B: SHAPE(KV); break;
    case SY_T_O_B: case SY_T_ATTN_NORM: case SY_T_MLP_NORM: SHAPE(H); break;
    case SY_T_SINKS: SHAPE(d->q_heads); break;
    case SY_T_ROUTER_W: SHAPE(E, H); break;
    case SY_T_ROUTER_B: SHAPE(E); break;
    case SY_T_W13_BLOCKS: SHAPE(E, 2 * I, H / 32, 16); t.dtype = SY_ST_U8; break;
    case SY_T_W13_SCALES: SHAPE(E, 2 * I, H / 32); t.dtype = SY_ST_U8; break;
    case SY_T_W13_BIAS: SHAPE(E, 2 * I); break;
    case SY_T_W2_BLOCKS: SHAPE(E, H, I / 32, 16); t.dtype = SY_ST_U8; break;
    case SY_T_W2_SCALES: SHAPE(E, H, I / 32); t.dtype = SY_ST_U8; break;
    case SY_T_W2_BIAS: SHAPE(E, H); break;
    default: break;
    }
#undef SHAPE
    return t;
}

size_t sy_gpt_oss_tensor_count(const sy_model_dims *d)
{
    return (size_t)d->layers * SY_T_PER_LAYER_COUNT_ + 3;
}

sy_gpt_oss_tensor sy_gpt_oss_tensor_at(const sy_model_dims *d, size_t i)
{
    size_t per_layer = (size_t)d->layers * SY_T_PER_LAYER_COUNT_;
    if (i == 0)
        return sy_gpt_oss_tensor_of(d, SY_GLOBAL_LAYER, SY_T_EMBED);
    if (i <= per_layer)
        return sy_gpt_oss_tensor_of(d, (uint32_t)((i - 1) / SY_T_PER_LAYER_COUNT_),
                                    (uint32_t)((i - 1) % SY_T_PER_LAYER_COUNT_));
    return sy_gpt_oss_tensor_of(d, SY_GLOBAL_LAYER, i == per_layer + 1 ? SY_T_FINAL_NORM : SY_T_LM_HEAD);
}

static int name_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

sy_status sy_gpt_oss_check(const sy_checkpoint *c, const sy_model_dims *d, sy_error *err)
{
    size_t n = sy_gpt_oss_tensor_count(d), named = 0;
    char **expected = sy_xcalloc(n, sizeof *expected);
    sy_status st = SY_OK;
    /* The first error ends the check: the names of the rest are needed only when all are there. */
    for (size_t i = 0; i < n && st == SY_OK; i++) {
        sy_gpt_oss_tensor t = sy_gpt_oss_tensor_at(d, i);
        char name[128], want[160], got[160];
        expected[named++] = sy_strdup(sy_ckpt_name(t.layer, t.kind, name, sizeof name));
        sy_st_describe(t.dtype, t.rank, t.shape, want, sizeof want);
        const sy_ckpt_ref *r = sy_checkpoint_find(c, name);
        if (!r) {
            st = sy_fail(err, SY_E_INVALID, "%s: tensor %s is missing (expected %s)", c->dir, name, want);
            continue;
        }
        const sy_st_tensor *f = r->tensor;
        int same = f->dtype == t.dtype && f->rank == t.rank;
        for (uint32_t k = 0; same && k < t.rank; k++)
            same = f->shape[k] == t.shape[k];
        if (!same) {
            sy_st_describe(f->dtype, f->rank, f->shape, got, sizeof got);
            st = sy_fail(err, SY_E_INVALID, "%s: tensor %s is %s, expected %s for the configured model", 
                         c->shards[r->shard].path, name, got, want);
        }
    }
    if (st == SY_OK)
        qsort(expected, n, sizeof *expected, name_order);
    for (size_t i = 0; st == SY_OK && i < c->n_refs; i++) {
        const char *name = c->refs[i].name;
        if (!bsearch(&name, expected, n, sizeof *expected, name_order))
            st = sy_fail(err, SY_E_INVALID, "%s: tensor %s is not part of gpt-oss with %u layers (model.layers); "
                         "expected only the embedding, %u layers of 19 tensors, the final norm and lm_head",
                         c->shards[c->refs[i].shard].path, name, d->layers, d->layers);
    }
    for (size_t i = 0; i < named; i++)
        free(expected[i]);
    free(expected);
    return st;
}
