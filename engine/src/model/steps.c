#include "model/steps.h"

#include "model/engine_impl.h"
#include "util/strbuf.h"

void sy_steps_limits(const sy_engine *e, sy_step_limits *out)
{
    const sy_plan *p = &e->plan;
    out->batch = p->batch;
    out->vocab = e->d.vocab;
    /* The engine sizes its page tables for input_len + output_len tokens and the buffers a later
     * prefill chunk gathers the prefix into for input_len + 1: prompts are limited to input_len. */
    out->max_prompt = p->input_len;
    out->max_tokens = p->input_len + p->output_len;
    /* An engine made for a synthetic context holds buffers for one token per sequence. */
    out->chunk = p->synthetic_context ? 1 : sy_plan_chunk(p);
}

sy_status sy_steps_reset(sy_engine *e, sy_error *err)
{
    return sy_engine_reset_cache(e, err);
}

sy_status sy_steps_forward(sy_engine *e, uint32_t start, uint32_t n, const uint32_t *ids, int decode, uint32_t *next,
                           sy_error *err)
{
    uint32_t B = e->plan.batch;
    if (e->plan.synthetic_context && !decode)
        return sy_fail(err, SY_E_INVALID,
                       "workload.context is synthetic: the engine was sized for decode steps only; a prefill needs "
                       "workload.context: prefill");
    for (uint32_t b = 0; b < B; b++) {
        e->h_start[b] = start;
        e->h_count[b] = n;
    }
    sy_status st = sy_forward(e, e->h_start, e->h_count, ids, decode, err);
    for (uint32_t b = 0; st == SY_OK && b < B; b++)
        next[b] = e->h_next[b];
    e->step_index++;
    return st;
}
