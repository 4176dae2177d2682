/* The index arrays of one forward (positions and pool slots of the new tokens, query offsets,
 * context lengths, page tables, and for a chunk after the first the slots to gather per pool), in
 * one int32 block on the host and its twin on the device, so that a forward uploads them with one
 * copy. The page tables sit first, at a fixed place: they change only when a sequence gains or
 * loses a page (every page_size decode steps), and a decode step whose tables did not change
 * copies only the part after them. The other arrays follow, packed by this forward's sizes.
 *
 * Every region starts at a multiple of 64 entries (256 bytes), the alignment the backends give
 * their allocations, so that a plugin sees each index tensor as aligned as if it had its own. */
#include <string.h>

#include "model/engine_impl.h"

enum { REGION_ALIGN = 64 };

static size_t region(size_t entries)
{
    return (entries + REGION_ALIGN - 1) / REGION_ALIGN * REGION_ALIGN;
}

static size_t tables_entries(const sy_engine *e)
{
    size_t table = region((size_t)e->plan.batch * e->cache.max_pages_per_seq);
    return e->d.sliding_window ? 2 * table : table;
}

size_t sy_index_block_entries(const sy_engine *e, size_t *tables_len)
{
    size_t B = e->plan.batch;
    *tables_len = tables_entries(e);
    return *tables_len + 3 * region(B + 1) + region(B) + 2 * region(e->t_max) + 2 * region(e->max_kv_rows);
}

/* Points the named host array and its device twin at offset *at of the blocks, and moves *at past
 * `entries`. */
static void place(sy_engine *e, size_t *at, size_t entries, int32_t **host, void **device)
{
    *host = e->h_index + *at;
    *device = (int32_t *)e->d_index + *at;
    *at += region(entries);
}

sy_status sy_index_block_upload(sy_engine *e, const uint32_t *start, const uint32_t *n, int decode,
                                uint32_t *T_out, int *has_prefix_out, uint32_t *rows_full_out, uint32_t *rows_swa_out,
                                sy_error *err)
{
    const sy_plan *p = &e->plan;
    uint32_t B = p->batch, W = e->d.sliding_window;
    sy_status st;
    uint32_t T = 0, rows_full = 0, rows_swa = 0;
    int has_prefix = 0;
    for (uint32_t b = 0; b < B; b++) {
        if ((st = sy_kv_cache_advance(&e->cache, b, start[b], n[b], err)) != SY_OK)
            return st;
        T += n[b];
        has_prefix |= start[b] > 0;
    }
    /* A later prefill chunk reads its prefix from the page tables (prefill_paged), or gathers its
     * sequence's whole context from the full pool, and from the sliding pool the last W - 1 keys
     * before the chunk plus the chunk. */
    int reads_pages = decode || (has_prefix && e->plan.prefill_paged);
    int gathers = !decode && has_prefix && !e->plan.prefill_paged;
    for (uint32_t b = 0; gathers && b < B; b++) {
        uint32_t end = start[b] + n[b];
        uint32_t swa_lo = W && start[b] + 1 > W ? start[b] + 1 - W : 0;
        rows_full += end;
        rows_swa += W ? end - swa_lo : 0;
    }
    size_t at = 0;
    size_t table = region((size_t)B * e->cache.max_pages_per_seq);
    e->h_bt_full = e->h_index;
    e->d_bt_full = e->d_index;
    e->h_bt_swa = e->h_index + table;
    e->d_bt_swa = (int32_t *)e->d_index + table;
    at = e->tables_len;
    place(e, &at, B + 1, &e->h_cu_q, &e->d_cu_q);
    place(e, &at, B, &e->h_ctx_lens, &e->d_ctx_lens);
    place(e, &at, T, &e->h_positions, &e->d_positions);
    place(e, &at, T, &e->h_slots, &e->d_slots);
    if (gathers) {
        place(e, &at, B + 1, &e->h_cu_k_full, &e->d_cu_k_full);
        place(e, &at, B + 1, &e->h_cu_k_swa, &e->d_cu_k_swa);
        place(e, &at, rows_full, &e->h_gslots_full, &e->d_gslots_full);
        place(e, &at, rows_swa, &e->h_gslots_swa, &e->d_gslots_swa);
    }
    uint32_t t = 0;
    for (uint32_t b = 0; b < B; b++) {
        e->h_cu_q[b] = (int32_t)t;
        for (uint32_t i = 0; i < n[b]; i++, t++) {
            e->h_positions[t] = (int32_t)(start[b] + i);
            e->h_slots[t] = sy_kv_cache_full_slot(&e->cache, b, start[b] + i);
        }
        e->h_ctx_lens[b] = (int32_t)(start[b] + n[b]);
    }
    e->h_cu_q[B] = (int32_t)T;
    if (gathers) {
        uint32_t rf = 0, rs = 0;
        for (uint32_t b = 0; b < B; b++) {
            uint32_t end = start[b] + n[b];
            uint32_t swa_lo = W && start[b] + 1 > W ? start[b] + 1 - W : 0;
            e->h_cu_k_full[b] = (int32_t)rf;
            e->h_cu_k_swa[b] = (int32_t)rs;
            for (uint32_t pos = 0; pos < end; pos++) {
                int32_t slot = sy_kv_cache_full_slot(&e->cache, b, pos);
                e->h_gslots_full[rf++] = slot;
                if (W && pos >= swa_lo)
                    e->h_gslots_swa[rs++] = slot;
            }
        }
        e->h_cu_k_full[B] = (int32_t)rf;
        e->h_cu_k_swa[B] = (int32_t)rs;
    }
    /* Only decode and a paged later chunk read the page tables; they are rebuilt and sent when
     * they changed. */
    size_t from = e->tables_len;
    if (reads_pages && e->cache.tables_dirty) {
        sy_kv_cache_block_table(&e->cache, 0, e->h_bt_full);
        if (W)
            sy_kv_cache_block_table(&e->cache, 1, e->h_bt_swa);
        from = 0;
        e->cache.tables_dirty = 0;
    }
    if ((st = sy_eng_copy(e, (int32_t *)e->d_index + from, e->h_index + from, (at - from) * sizeof(int32_t),
                          SY_MEMCPY_H2D, err)) != SY_OK)
        return st;
    if (W && e->cache.slot_map_dirty) {
        if ((st = sy_eng_copy(e, e->d_slot_map, e->cache.slot_map, (size_t)e->full_pages * p->page_size * sizeof(int32_t),
                              SY_MEMCPY_H2D, err)) != SY_OK)
            return st;
        e->cache.slot_map_dirty = 0;
    }
    /* New index arrays: their checks run again. */
    memset(e->write_checked, 0, sizeof e->write_checked);
    memset(e->decode_checked, 0, sizeof e->decode_checked);
    *T_out = T;
    *has_prefix_out = has_prefix;
    *rows_full_out = rows_full;
    *rows_swa_out = rows_swa;
    return SY_OK;
}
