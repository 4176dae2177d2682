#include "model/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/hf_config.h"
#include "model/presets.h"
#include "util/strbuf.h"

static uint32_t u32(const sy_config *c, const char *key)
{
    return (uint32_t)sy_config_int(c, key);
}

sy_status sy_plan_from_config(const sy_config *cfg, const sy_composition *comp, sy_plan *p, sy_error *err)
{
    memset(p, 0, sizeof *p);
    if (!sy_composition_ok(comp))
        return sy_fail(err, SY_E_INVALID, "the configuration does not compose (see the diagnostics above)");
    const sy_compose_decisions *d = sy_composition_decisions(comp);
    if (d->act_dtype != SY_DTYPE_F32 && d->act_dtype != SY_DTYPE_BF16)
        return sy_fail(err, SY_E_UNSUPPORTED, "model.dtype: the engine runs f32 or bf16 activations, not %s",
                       sy_dtype_name(d->act_dtype));
    if (sy_config_int(cfg, "parallel.tp") != 1)
        return sy_fail(err, SY_E_UNSUPPORTED,
                       "parallel.tp: the engine runs on one device; tensor parallelism (tp = %lld) is checked by "
                       "`config check` against every plugin's max_tp but not run in this version",
                       (long long)sy_config_int(cfg, "parallel.tp"));
    sy_model_dims_from_config(cfg, &p->dims);
    const char *weights = sy_config_str(cfg, "model.weights");
    if (strcmp(weights, "synthetic") != 0) {
        /* The checkpoint's config.json must describe the model the plugins were composed for. */
        if (strlen(weights) >= sizeof p->checkpoint)
            return sy_fail(err, SY_E_INVALID, "model.weights: a path of %zu bytes (at most %zu)", strlen(weights),
                           sizeof p->checkpoint - 1);
        char *config = sy_asprintf("%s/%s", weights, SY_CKPT_CONFIG_FILE);
        sy_hf_config hf;
        sy_status st = sy_hf_config_read(config, &hf, err);
        if (st == SY_OK)
            st = sy_hf_config_agree(&hf, config, &p->dims, cfg, err);
        free(config);
        if (st != SY_OK)
            return st;
        snprintf(p->checkpoint, sizeof p->checkpoint, "%s", weights);
    }
    p->weight_seed = (uint64_t)sy_config_int(cfg, "model.seed");
    p->backend = sy_composition_backend(comp);
    p->device = (int32_t)sy_config_int(cfg, "device");
    for (size_t i = 0; i < SY_COMPOSE_SLOTS; i++) {
        int32_t kind = sy_compose_slot_kind(i);
        p->slot[kind] = sy_composition_plugin(comp, kind);
    }
    p->layout = d->layout;
    p->kv_dtype = d->kv_dtype;
    p->page_size = d->page_size;
    p->k_scale = d->k_scale;
    p->v_scale = d->v_scale;
    p->fuse_rope_kv = d->fused_rope_kv;
    p->pad_multiple = d->pad_multiple;
    p->fuse_qkv = d->fused_qkv;
    p->qkv_split_y = !d->fused_qkv && d->qkv_linears == 1;
    p->prefill_paged = d->prefill_paged;
    p->act_dtype = d->act_dtype;
    p->attn_num_splits = (int32_t)sy_config_int(cfg, "attention.num_splits");
    p->batch = u32(cfg, "workload.batch");
    p->input_len = u32(cfg, "workload.input_len");
    p->output_len = u32(cfg, "workload.output_len");
    p->prefill_chunk = u32(cfg, "workload.prefill_chunk");
    p->warmup = u32(cfg, "workload.warmup");
    p->repeat = u32(cfg, "workload.repeat");
    p->token_seed = (uint64_t)sy_config_int(cfg, "workload.seed");
    p->synthetic_context = strcmp(sy_config_str(cfg, "workload.context"), "synthetic") == 0;
    p->per_op_timing = sy_config_bool(cfg, "report.per_op");
    p->pool_tokens = u32(cfg, "kv_cache.pool_tokens");
    p->swa_pool_tokens = u32(cfg, "kv_cache.swa_pool_tokens");
    uint64_t budget = (uint64_t)sy_config_int(cfg, "kv_cache.memory_budget_mib") << 20;
    if (budget && !p->pool_tokens) {
        /* The budget bounds both pools: the sliding pool is sized by the window and the chunk and
         * comes first; the full-attention pool gets the rest, its padding page included. */
        uint64_t token_bytes = 2ull * p->dims.kv_heads * p->dims.head_dim * sy_dtype_size(p->kv_dtype);
        uint64_t full_layers = 0;
        for (uint32_t l = 0; l < p->dims.layers; l++)
            full_layers += !sy_layer_is_sliding(&p->dims, l);
        uint64_t swa_bytes =
            (uint64_t)sy_plan_swa_pages(p) * p->page_size * token_bytes * (p->dims.layers - full_layers);
        uint64_t per_token = token_bytes * (full_layers ? full_layers : 1);
        uint64_t tokens = budget > swa_bytes ? (budget - swa_bytes) / per_token : 0;
        tokens = tokens > p->page_size ? (tokens - p->page_size) / p->page_size * p->page_size : 0;
        if (tokens < p->page_size)
            return sy_fail(err, SY_E_INVALID,
                           "kv_cache.memory_budget_mib: %llu MiB leaves %llu tokens for the full-attention pool "
                           "after the sliding-window pool's %.1f MiB, less than one page of %u",
                           (unsigned long long)(budget >> 20), (unsigned long long)tokens,
                           (double)swa_bytes / 1048576.0, p->page_size);
        p->pool_tokens = tokens > 0x7FFFFFFFull ? 0x7FFFFFFFu : (uint32_t)tokens;
    }
    return SY_OK;
}
