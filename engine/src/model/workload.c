/* The workload: `batch` sequences of `input_len` tokens of context, then greedy tokens. With a
 * prefill context the seeded prompt is prefilled in chunks of `prefill_chunk` and the first of the
 * `output_len` tokens comes from the prefill's logits, the rest from decode steps; with a synthetic
 * context (context.h) the pools are filled without a prefill and all `output_len` tokens come from
 * decode steps, the first fed the seeded token at position input_len. Repeated `warmup + repeat`
 * times. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/context.h"
#include "model/engine_impl.h"
#include "util/strbuf.h"

uint32_t sy_plan_chunk(const sy_plan *p)
{
    return p->prefill_chunk && p->prefill_chunk < p->input_len ? p->prefill_chunk : p->input_len;
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

static void add_transfers(sy_transfer_counts *sum, const sy_transfer_counts *after, const sy_transfer_counts *before)
{
    sum->h2d_copies += after->h2d_copies - before->h2d_copies;
    sum->h2d_bytes += after->h2d_bytes - before->h2d_bytes;
    sum->d2h_copies += after->d2h_copies - before->d2h_copies;
    sum->d2h_bytes += after->d2h_bytes - before->d2h_bytes;
    sum->syncs += after->syncs - before->syncs;
}

/* Tokens of the workload a decode step makes: all of them after a synthetic context, all but the
 * first (the prefill's) otherwise. */
static uint32_t decode_steps(const sy_plan *p)
{
    return p->synthetic_context ? p->output_len : p->output_len - 1;
}

/* One repetition; fills ttft and prefill time (NaN for a synthetic context), the decode step
 * times, the tokens, the time it measured (everything but making a synthetic context) and the
 * decode steps' transfers. */
static sy_status run_once(sy_engine *e, double *ttft_ms, double *prefill_ms, double *steps_ms, double *run_ms,
                          sy_transfer_counts *decode_transfers, sy_error *err)
{
    const sy_plan *p = &e->plan;
    uint32_t B = p->batch, L = p->input_len, out = p->output_len;
    uint32_t chunk = sy_plan_chunk(p);
    uint32_t *start = e->h_start, *n = e->h_count;
    uint32_t *ids = sy_xcalloc(e->t_max, sizeof *ids);
    uint32_t first_decoded = out - decode_steps(p); /* 0 or 1: index of the first token a decode step makes */
    uint32_t n_prefill = p->synthetic_context ? 0 : (L + chunk - 1) / chunk;
    uint32_t total_steps = n_prefill + decode_steps(p);
    e->step_index = 0;
    sy_status st = p->synthetic_context ? sy_context_fill(e, err) : sy_engine_reset_cache(e, err);
    double t0 = sy_now_ms();
    for (uint32_t c = 0; st == SY_OK && c < n_prefill * chunk; c += chunk) {
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
    if (p->synthetic_context) {
        *prefill_ms = *ttft_ms = NAN;
    } else {
        double t_prefill = sy_now_ms();
        for (uint32_t b = 0; st == SY_OK && b < B; b++)
            e->tokens[(size_t)b * out] = e->h_next[b];
        *prefill_ms = t_prefill - t0;
        *ttft_ms = sy_now_ms() - t0;
    }
    sy_transfer_counts before = e->transfers;
    for (uint32_t step = first_decoded; st == SY_OK && step < out; step++) {
        double ts = sy_now_ms();
        for (uint32_t b = 0; b < B; b++) {
            start[b] = L + step - first_decoded;
            n[b] = 1;
            /* After a synthetic context the first step reads the seeded token at position L. */
            ids[b] = step == 0 ? sy_workload_token(p->token_seed, e->d.vocab, b, L)
                               : e->tokens[(size_t)b * out + step - 1];
        }
        st = sy_forward(e, start, n, ids, 1, err);
        for (uint32_t b = 0; st == SY_OK && b < B; b++)
            e->tokens[(size_t)b * out + step] = e->h_next[b];
        steps_ms[step - first_decoded] = sy_now_ms() - ts;
        e->step_index++;
        if (e->progress)
            e->progress(e->progress_user, e->step_index, total_steps, sy_now_ms() - t0);
    }
    add_transfers(decode_transfers, &e->transfers, &before);
    *run_ms = sy_now_ms() - t0;
    free(ids);
    return st;
}

sy_status sy_engine_run(sy_engine *e, sy_run_metrics *m, sy_error *err)
{
    const sy_plan *p = &e->plan;
    uint32_t reps = p->warmup + (p->repeat ? p->repeat : 1);
    uint32_t steps = decode_steps(p);
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
        double run_ms = 0;
        sy_transfer_counts transfers = {0};
        st = run_once(e, &ttft[measured], &prefill[measured], all_steps + (size_t)measured * steps, &run_ms,
                      &transfers, err);
        if (counts) {
            t_measured += run_ms;
            add_transfers(&m->decode_transfers, &transfers, &(sy_transfer_counts){0});
            m->decode_steps_measured += steps;
            memcpy(e->step_ms, all_steps + (size_t)measured * steps, steps * sizeof(double));
            measured++;
        }
    }
    if (st == SY_OK) {
        uint64_t decode_tokens = (uint64_t)p->batch * steps * measured;
        double decode_ms = 0;
        for (size_t i = 0; i < (size_t)measured * steps; i++)
            decode_ms += all_steps[i];
        if (p->synthetic_context) {
            m->ttft_ms = m->prefill_tok_per_s = NAN; /* no prefill ran: not measured */
        } else {
            m->ttft_ms = quantile(ttft, measured, 0.5);
            double prefill_med = quantile(prefill, measured, 0.5);
            m->prefill_tok_per_s = prefill_med > 0 ? (double)p->batch * p->input_len / (prefill_med * 1e-3) : 0;
        }
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
