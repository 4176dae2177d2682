#include "model/kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

static void pool_init(sy_page_pool *p, uint32_t num_pages)
{
    p->num_pages = num_pages;
    p->n_free = num_pages > 0 ? num_pages - 1 : 0;
    p->free_pages = sy_xcalloc(p->n_free ? p->n_free : 1, sizeof *p->free_pages);
    /* Hand out low pages first: keeps a small run's footprint compact and listings readable. */
    for (uint32_t i = 0; i < p->n_free; i++)
        p->free_pages[i] = num_pages - 1 - i;
    p->peak_used = 0;
}

static int32_t pool_alloc(sy_page_pool *p)
{
    if (p->n_free == 0)
        return 0;
    int32_t page = (int32_t)p->free_pages[--p->n_free];
    uint32_t used = p->num_pages - 1 - p->n_free;
    if (used > p->peak_used)
        p->peak_used = used;
    return page;
}

static void pool_release(sy_page_pool *p, int32_t page)
{
    if (page > 0)
        p->free_pages[p->n_free++] = (uint32_t)page;
}

sy_status sy_kv_cache_init(sy_kv_cache *c, uint32_t page_size, uint32_t window, uint32_t n_seq,
                           uint32_t max_tokens_per_seq, uint32_t full_pages, uint32_t swa_pages, sy_error *err)
{
    memset(c, 0, sizeof *c);
    if (page_size == 0)
        return sy_fail(err, SY_E_INVALID, "kv_cache.page_size must be positive");
    if (full_pages < 2 || (window && swa_pages < 2))
        return sy_fail(err, SY_E_INVALID, "the KV pool needs at least one page besides the padding page");
    c->page_size = page_size;
    c->window = window;
    c->n_seq = n_seq;
    c->max_pages_per_seq = (max_tokens_per_seq + page_size - 1) / page_size;
    pool_init(&c->full, full_pages);
    if (window)
        pool_init(&c->swa, swa_pages);
    c->seq = sy_xcalloc(n_seq, sizeof *c->seq);
    for (uint32_t s = 0; s < n_seq; s++) {
        c->seq[s].cap = c->max_pages_per_seq;
        c->seq[s].full = sy_xcalloc(c->max_pages_per_seq, sizeof(int32_t));
        c->seq[s].swa = sy_xcalloc(c->max_pages_per_seq, sizeof(int32_t));
    }
    if (window)
        c->slot_map = sy_xcalloc((size_t)full_pages * page_size, sizeof(int32_t));
    c->slot_map_dirty = c->tables_dirty = 1;
    return SY_OK;
}

void sy_kv_cache_free(sy_kv_cache *c)
{
    for (uint32_t s = 0; s < c->n_seq; s++) {
        free(c->seq[s].full);
        free(c->seq[s].swa);
    }
    free(c->seq);
    free(c->full.free_pages);
    free(c->swa.free_pages);
    free(c->slot_map);
    memset(c, 0, sizeof *c);
}

static void map_page(sy_kv_cache *c, int32_t full_page, int32_t swa_page)
{
    for (uint32_t off = 0; off < c->page_size; off++)
        c->slot_map[(size_t)full_page * c->page_size + off] =
            swa_page ? swa_page * (int32_t)c->page_size + (int32_t)off : 0;
    c->slot_map_dirty = 1;
}

sy_status sy_kv_cache_reserve(sy_kv_cache *c, uint32_t s, uint32_t new_len, sy_error *err)
{
    sy_seq_pages *q = &c->seq[s];
    uint32_t need = (new_len + c->page_size - 1) / c->page_size;
    if (need > q->cap)
        return sy_fail(err, SY_E_INVALID, "sequence %u needs %u tokens, beyond the %u the page table was sized for",
                       s, new_len, q->cap * c->page_size);
    while (q->n_pages < need) {
        int32_t full = pool_alloc(&c->full);
        if (!full)
            return sy_fail(err, SY_E_NOMEM,
                           "KV pool exhausted: sequence %u needs %u tokens (%u pages of %u) and all %u pages "
                           "(%u tokens) of the full-attention pool are in use; the workload needs %u pages (%u "
                           "tokens); raise kv_cache.pool_tokens or kv_cache.memory_budget_mib (0 = sized for the "
                           "workload), or lower workload.batch / input_len / output_len",
                           s, new_len, need, c->page_size, c->full.num_pages - 1, (c->full.num_pages - 1) * c->page_size,
                           c->n_seq * c->max_pages_per_seq, c->n_seq * c->max_pages_per_seq * c->page_size);
        int32_t swa = 0;
        if (c->window) {
            swa = pool_alloc(&c->swa);
            if (!swa) {
                pool_release(&c->full, full);
                return sy_fail(err, SY_E_NOMEM,
                               "sliding-window KV pool exhausted: sequence %u needs a page for %u tokens and all %u "
                               "pages (%u tokens) are in use; each sequence needs the window of %u tokens plus one "
                               "prefill chunk; raise kv_cache.swa_pool_tokens (0 sizes it automatically) or lower "
                               "workload.prefill_chunk",
                               s, new_len, c->swa.num_pages - 1, (c->swa.num_pages - 1) * c->page_size, c->window);
            }
            map_page(c, full, swa);
        }
        q->full[q->n_pages] = full;
        q->swa[q->n_pages] = swa;
        q->n_pages++;
        c->tables_dirty = 1;
    }
    return SY_OK;
}

void sy_kv_cache_release_window(sy_kv_cache *c, uint32_t s, uint32_t first_needed)
{
    if (!c->window)
        return;
    sy_seq_pages *q = &c->seq[s];
    uint32_t first_live_page = first_needed / c->page_size;
    for (; q->swa_live_from < first_live_page && q->swa_live_from < q->n_pages; q->swa_live_from++) {
        uint32_t j = q->swa_live_from;
        pool_release(&c->swa, q->swa[j]);
        map_page(c, q->full[j], 0);
        q->swa[j] = 0;
        c->tables_dirty = 1;
    }
}

sy_status sy_kv_cache_advance(sy_kv_cache *c, uint32_t s, uint32_t start, uint32_t n, sy_error *err)
{
    if (c->window && start + 1 > c->window)
        sy_kv_cache_release_window(c, s, start + 1 - c->window);
    return sy_kv_cache_reserve(c, s, start + n, err);
}

void sy_kv_cache_block_table(const sy_kv_cache *c, int swa, int32_t *out)
{
    for (uint32_t s = 0; s < c->n_seq; s++) {
        const sy_seq_pages *q = &c->seq[s];
        int32_t *row = out + (size_t)s * c->max_pages_per_seq;
        for (uint32_t j = 0; j < c->max_pages_per_seq; j++)
            row[j] = j < q->n_pages ? (swa ? q->swa[j] : q->full[j]) : 0;
    }
}
