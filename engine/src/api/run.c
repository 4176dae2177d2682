/* The embedding API's work calls: the whole workload with its metrics, or single prefill and
 * decode steps on token ids the caller chooses. */
#include <string.h>

#include "api/handle.h"
#include "util/strbuf.h"

SY_STATIC_ASSERT(SY_KIND_COUNT_ <= SY_ENGINE_OP_SLOTS, "sy_engine_metrics.op_ms has a slot per kind");

/* The size of sy_engine_metrics in the first version of the embedding API. */
#define METRICS_FIRST_SIZE (offsetof(sy_engine_metrics, step_ms) + sizeof(const double *))

sy_status sy_engine_run_workload(sy_engine_handle *h, sy_error *err)
{
    if (!h)
        return sy_fail(err, SY_E_INVALID, "sy_engine_run_workload: handle is NULL");
    /* The workload starts its own sequences and leaves the cache full of them. */
    h->seq_len = 0;
    h->has_metrics = 0;
    sy_status st = sy_engine_run(h->engine, &h->metrics, err);
    h->has_metrics = st == SY_OK;
    return st;
}

sy_status sy_engine_get_metrics(const sy_engine_handle *h, sy_engine_metrics *out, sy_error *err)
{
    if (!h || !out)
        return sy_fail(err, SY_E_INVALID, "sy_engine_get_metrics: %s is NULL", h ? "out" : "handle");
    if (out->struct_size < METRICS_FIRST_SIZE)
        return sy_fail(err, SY_E_INVALID, "sy_engine_metrics.struct_size %u is smaller than %zu; set it to sizeof",
                       out->struct_size, (size_t)METRICS_FIRST_SIZE);
    if (!h->has_metrics)
        return sy_fail(err, SY_E_INVALID, "sy_engine_get_metrics: no workload has run on this engine yet "
                                          "(sy_engine_run_workload)");
    const sy_run_metrics *m = &h->metrics;
    sy_engine_metrics full;
    memset(&full, 0, sizeof full);
    full.struct_size = out->struct_size;
    full.n_steps = m->n_steps;
    full.ttft_ms = m->ttft_ms;
    full.tpot_median_ms = m->tpot_median_ms;
    full.tpot_p90_ms = m->tpot_p90_ms;
    full.prefill_tok_per_s = m->prefill_tok_per_s;
    full.decode_tok_per_s = m->decode_tok_per_s;
    full.total_ms = m->total_ms;
    for (int32_t k = 0; k < SY_KIND_COUNT_; k++) {
        full.op_ms[k] = m->op_ms[k];
        full.op_calls[k] = m->op_calls[k];
    }
    full.peak_full_pages = m->peak_full_pages;
    full.full_pages = m->full_pages;
    full.peak_swa_pages = m->peak_swa_pages;
    full.swa_pages = m->swa_pages;
    full.pool_bytes = m->pool_bytes;
    full.checksum = m->checksum;
    full.batch = h->plan.batch;
    full.output_len = h->plan.output_len;
    full.tokens = m->tokens;
    full.step_ms = m->step_ms;
    /* A caller built against a newer header gets zeros in the members this library does not know. */
    size_t n = out->struct_size < sizeof full ? out->struct_size : sizeof full;
    memset(out, 0, out->struct_size);
    memcpy(out, &full, n);
    return SY_OK;
}

static sy_status check_ids(const sy_engine_handle *h, const char *fn, const uint32_t *ids, size_t n, sy_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= h->limits.vocab)
            return sy_fail(err, SY_E_INVALID, "%s: token_ids[%zu] = %u is not below the vocabulary size %u", fn, i,
                           ids[i], h->limits.vocab);
    return SY_OK;
}

/* A step after the workload or a reset begins new sequences: empty the cache first. */
static sy_status begin_sequences(sy_engine_handle *h, sy_error *err)
{
    return h->seq_len == 0 ? sy_steps_reset(h->engine, err) : SY_OK;
}

sy_status sy_engine_prefill(sy_engine_handle *h, const uint32_t *token_ids, uint32_t n_tokens, uint32_t *next_ids,
                            sy_error *err)
{
    static const char fn[] = "sy_engine_prefill";
    if (!h || !token_ids || !next_ids)
        return sy_fail(err, SY_E_INVALID, "%s: %s is NULL", fn, !h ? "handle" : !token_ids ? "token_ids" : "next_ids");
    const sy_step_limits *lim = &h->limits;
    if (n_tokens == 0)
        return sy_fail(err, SY_E_INVALID, "%s: n_tokens is 0; a prefill appends at least one token", fn);
    if ((uint64_t)h->seq_len + n_tokens > lim->max_prompt)
        return sy_fail(err, SY_E_INVALID,
                       "%s: sequences hold %u tokens; %u more exceed the %u a prompt may reach (workload.input_len)",
                       fn, h->seq_len, n_tokens, lim->max_prompt);
    sy_status st = check_ids(h, fn, token_ids, (size_t)lim->batch * n_tokens, err);
    if (st != SY_OK)
        return st;
    st = begin_sequences(h, err);
    for (uint32_t done = 0; st == SY_OK && done < n_tokens;) {
        uint32_t len = n_tokens - done < lim->chunk ? n_tokens - done : lim->chunk;
        for (uint32_t b = 0; b < lim->batch; b++)
            memcpy(h->chunk_ids + (size_t)b * len, token_ids + (size_t)b * n_tokens + done, len * sizeof *token_ids);
        st = sy_steps_forward(h->engine, h->seq_len, len, h->chunk_ids, 0, next_ids, err);
        if (st == SY_OK) {
            h->seq_len += len;
            done += len;
        }
    }
    if (st != SY_OK)
        h->seq_len = 0; /* a failed step leaves the cache half written: the sequences are over */
    return st;
}

sy_status sy_engine_decode(sy_engine_handle *h, const uint32_t *token_ids, uint32_t *next_ids, sy_error *err)
{
    static const char fn[] = "sy_engine_decode";
    if (!h || !token_ids || !next_ids)
        return sy_fail(err, SY_E_INVALID, "%s: %s is NULL", fn, !h ? "handle" : !token_ids ? "token_ids" : "next_ids");
    if (h->seq_len + 1 > h->limits.max_tokens)
        return sy_fail(err, SY_E_INVALID,
                       "%s: sequences hold %u tokens, the most the engine was sized for "
                       "(workload.input_len + workload.output_len = %u)",
                       fn, h->seq_len, h->limits.max_tokens);
    sy_status st = check_ids(h, fn, token_ids, h->limits.batch, err);
    if (st != SY_OK)
        return st;
    st = begin_sequences(h, err);
    if (st == SY_OK)
        st = sy_steps_forward(h->engine, h->seq_len, 1, token_ids, 1, next_ids, err);
    h->seq_len = st == SY_OK ? h->seq_len + 1 : 0;
    return st;
}

uint32_t sy_engine_sequence_length(const sy_engine_handle *h)
{
    return h ? h->seq_len : 0;
}

sy_status sy_engine_reset(sy_engine_handle *h, sy_error *err)
{
    if (!h)
        return sy_fail(err, SY_E_INVALID, "sy_engine_reset: handle is NULL");
    h->seq_len = 0;
    return sy_steps_reset(h->engine, err);
}
