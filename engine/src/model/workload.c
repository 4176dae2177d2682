/* The workload: `batch` sequences of `input_len` seeded prompt tokens, prefilled in chunks of
 * `prefill_chunk`, then `output_len` greedy tokens (the first from the prefill's logits, the rest
 * from decode steps), repeated `warmup + repeat` times. */
#include <stdlib.h>
#include <string.h>

#include "model/engine_impl.h"
#include "util/strbuf.h"

/* Greedy choice: the largest logit, ties to the lower id (NaN never wins). */
uint32_t sy_greedy_token(const float *x, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[best] || (x[best] != x[best] && x[i] == x[i]))
            best = i;
    return best;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (v[hi] - v[lo]) * (pos - (double)lo);
}

sy_status sy_engine_reset_cache(sy_engine *e, sy_error *err)
{
    const sy_plan *p = &e->plan;
    sy_kv_cache_free(&e->cache);
    return sy_kv_cache_init(&e->cache, p->page_size, e->d.sliding_window, p->batch, p->input_len + p->output_len,
                            e->full_pages, e->swa_pages ? e->swa_pages : 2, err);
}

/* One repetition; fills ttft, step times and tokens. */
static sy_status run_once(sy_engine *e, double *ttft_ms, double *prefill_ms, double *steps_ms, sy_error *err)
{
    const sy_plan *p = &e->plan;
    uint32_t B = p->batch, L = p->input_len;
    uint32_t chunk = p->prefill_chunk && p->prefill_chunk < L ? p->prefill_chunk : L;
    uint32_t *start = sy_xcalloc(B, sizeof *start), *n = sy_xcalloc(B, sizeof *n);
    uint32_t *ids = sy_xcalloc(e->t_max, sizeof *ids);
    uint32_t total_steps = (L + chunk - 1) / chunk + (p->output_len > 1 ? p->output_len - 1 : 0);
    sy_status st = sy_engine_reset_cache(e, err);
    double t0 = sy_now_ms();
    e->step_index = 0;
    for (uint32_t c = 0; st == SY_OK && c < L; c += chunk) {
        uint32_t len = L - c < chunk ? L - c : chunk, t = 0;
        for (uint32_t b = 0; b < B; b++) {
            start[b] = c;
            n[b] = len;
            for (uint32_t i = 0; i < len; i++)
                ids[t++] = sy_workload_token(p->token_seed, e->d.vocab, b, c + i);
        }
        st = sy_forward(e, start, n, ids, 0, err);
        e->step_index++;
        if (e->progress)
            e->progress(e->progress_user, e->step_index, total_steps, sy_now_ms() - t0);
    }
    double t_prefill = sy_now_ms();
    for (uint32_t b = 0; st == SY_OK && b < B && p->output_len > 0; b++)
        e->tokens[(size_t)b * p->output_len] = sy_greedy_token(e->h_logits + (size_t)b * e->d.vocab, e->d.vocab);
    *prefill_ms = t_prefill - t0;
    *ttft_ms = sy_now_ms() - t0;
    for (uint32_t step = 1; st == SY_OK && step < p->output_len; step++) {
        double ts = sy_now_ms();
        for (uint32_t b = 0; b < B; b++) {
            start[b] = L + step - 1;
            n[b] = 1;
            ids[b] = e->tokens[(size_t)b * p->output_len + step - 1];
        }
        st = sy_forward(e, start, n, ids, 1, err);
        for (uint32_t b = 0; st == SY_OK && b < B; b++)
            e->tokens[(size_t)b * p->output_len + step] =
                sy_greedy_token(e->h_logits + (size_t)b * e->d.vocab, e->d.vocab);
        steps_ms[step - 1] = sy_now_ms() - ts;
        e->step_index++;
        if (e->progress)
            e->progress(e->progress_user, e->step_index, total_steps, sy_now_ms() - t0);
    }
    free(start);
    free(n);
    free(ids);
    return st;
}

sy_status sy_engine_run(sy_engine *e, sy_run_metrics *m, sy_error *err)
{
    const sy_plan *p = &e->plan;
    uint32_t reps = p->warmup + (p->repeat ? p->repeat : 1);
    uint32_t steps = p->output_len > 1 ? p->output_len - 1 : 0;
    double *ttft = sy_xcalloc(reps, sizeof *ttft), *prefill = sy_xcalloc(reps, sizeof *prefill);
    double *all_steps = sy_xcalloc((size_t)reps * (steps ? steps : 1), sizeof *all_steps);
    sy_status st = SY_OK;
    memset(m, 0, sizeof *m);
    uint32_t measured = 0;
    double t_measured = 0;
    for (uint32_t r = 0; st == SY_OK && r < reps; r++) {
        int counts = r >= p->warmup;
        if (r == p->warmup) {
            memset(e->op_ms, 0, sizeof e->op_ms);
            memset(e->op_calls, 0, sizeof e->op_calls);
        }
        double t0 = sy_now_ms();
        st = run_once(e, &ttft[measured], &prefill[measured], all_steps + (size_t)measured * steps, err);
        if (counts) {
            t_measured += sy_now_ms() - t0;
            memcpy(e->step_ms, all_steps + (size_t)measured * steps, steps * sizeof(double));
            measured++;
        }
    }
    if (st == SY_OK) {
        uint64_t decode_tokens = (uint64_t)p->batch * steps * measured;
        double decode_ms = 0;
        for (size_t i = 0; i < (size_t)measured * steps; i++)
            decode_ms += all_steps[i];
        m->ttft_ms = quantile(ttft, measured, 0.5);
        double prefill_med = quantile(prefill, measured, 0.5);
        m->prefill_tok_per_s = prefill_med > 0 ? (double)p->batch * p->input_len / (prefill_med * 1e-3) : 0;
        m->decode_tok_per_s = decode_ms > 0 ? (double)decode_tokens / (decode_ms * 1e-3) : 0;
        m->tpot_median_ms = quantile(all_steps, (size_t)measured * steps, 0.5);
        m->tpot_p90_ms = quantile(all_steps, (size_t)measured * steps, 0.9);
        m->total_ms = t_measured;
        double plugin_ms = 0;
        for (int32_t k = 1; k < SY_KIND_COUNT_; k++) {
            m->op_ms[k] = e->op_ms[k];
            m->op_calls[k] = e->op_calls[k];
            plugin_ms += e->op_ms[k];
        }
        m->op_ms[SY_OPSLOT_ENGINE] = p->per_op_timing ? t_measured - plugin_ms : 0;
        m->peak_full_pages = e->cache.full.peak_used;
        m->full_pages = e->full_pages - 1;
        m->peak_swa_pages = e->cache.swa.peak_used;
        m->swa_pages = e->swa_pages ? e->swa_pages - 1 : 0;
        m->pool_bytes = 0;
        for (uint32_t l = 0; l < e->d.layers; l++) {
            const sy_kv_geometry *g = sy_layer_is_sliding(&e->d, l) ? &e->geom_swa : &e->geom_full;
            m->pool_bytes += (g->k_elems + g->v_elems) * sy_dtype_size(p->kv_dtype);
        }
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < (size_t)p->batch * p->output_len; i++) {
            h ^= e->tokens[i];
            h *= 1099511628211ull;
        }
        m->checksum = h;
        m->tokens = e->tokens;
        m->n_steps = steps;
        m->step_ms = e->step_ms;
    }
    free(ttft);
    free(prefill);
    free(all_steps);
    return st;
}
