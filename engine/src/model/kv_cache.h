/* Page allocation for the KV pools: a full-attention pool and, when the model has sliding-window
 * layers, a second pool whose pages are returned once they fall out of every window. Page 0 of each
 * pool is the padding page: no sequence owns it, dummy and freed slots point at it. */
#ifndef SY_KV_CACHE_H
#define SY_KV_CACHE_H

#include <stdint.h>

#include "switchyard/status.h"

typedef struct sy_page_pool {
    uint32_t num_pages; /* including the padding page */
    uint32_t *free_pages;
    uint32_t n_free;
    uint32_t peak_used;
} sy_page_pool;

typedef struct sy_seq_pages {
    int32_t *full;      /* logical page j -> full-pool page */
    int32_t *swa;       /* logical page j -> swa-pool page, 0 once freed */
    uint32_t n_pages;   /* logical pages reserved */
    uint32_t cap;
    uint32_t swa_live_from; /* first logical page still held in the swa pool */
} sy_seq_pages;

typedef struct sy_kv_cache {
    uint32_t page_size;
    uint32_t window;        /* 0: no swa pool */
    uint32_t max_pages_per_seq;
    sy_page_pool full, swa;
    sy_seq_pages *seq;
    uint32_t n_seq;
    int32_t *slot_map;      /* full slot -> swa slot (0 = freed), full.num_pages * page_size entries */
    int slot_map_dirty;
    int tables_dirty;       /* a page table changed since the engine last uploaded them */
} sy_kv_cache;

/* max_tokens_per_seq bounds the page tables; full_pages / swa_pages size the pools (padding page
 * included). */
sy_status sy_kv_cache_init(sy_kv_cache *c, uint32_t page_size, uint32_t window, uint32_t n_seq,
                           uint32_t max_tokens_per_seq, uint32_t full_pages, uint32_t swa_pages, sy_error *err);
void sy_kv_cache_free(sy_kv_cache *c);

/* Make positions [0, new_len) of sequence s addressable in both pools. On exhaustion: an error
 * saying how many pages were needed, how many are free, and which key to raise. */
sy_status sy_kv_cache_reserve(sy_kv_cache *c, uint32_t s, uint32_t new_len, sy_error *err);

/* Return the swa pages of sequence s that hold no position >= first_needed (the oldest key a
 * query from now on can see: next position - window + 1). */
void sy_kv_cache_release_window(sy_kv_cache *c, uint32_t s, uint32_t first_needed);

/* Before a forward of n tokens of sequence s from position start: the sliding pages no query of
 * it can see go back to the pool, then positions up to start + n are reserved. The one rule a
 * prefill chunk, a decode step and a synthetic context all follow, so that they leave the same
 * pages behind. */
sy_status sy_kv_cache_advance(sy_kv_cache *c, uint32_t s, uint32_t start, uint32_t n, sy_error *err);

static inline int32_t sy_kv_cache_full_slot(const sy_kv_cache *c, uint32_t s, uint32_t pos)
{
    return c->seq[s].full[pos / c->page_size] * (int32_t)c->page_size + (int32_t)(pos % c->page_size);
}

/* Rows of int32 page ids, max_pages_per_seq wide, for sequences 0..n_seq-1 (unused entries 0). */
void sy_kv_cache_block_table(const sy_kv_cache *c, int swa, int32_t *out);

#endif
