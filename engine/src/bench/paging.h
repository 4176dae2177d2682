/* Paged-pool indices of the benchmark cases: pages handed out in a random order over the pool (as
 * a long-running engine's allocator leaves them), block tables of decode sequences and slot lists
 * of written or gathered tokens. Page 0 is the padding page and is never handed out. Rotated input
 * copies take disjoint pages of one pool, so that each copy reads memory the others do not. */
#ifndef SY_BENCH_PAGING_H
#define SY_BENCH_PAGING_H

#include <stdint.h>

#include "bench/job.h"

/* Pages 1 .. num_pages - 1 in a random order (num_pages - 1 entries, job memory). */
uint32_t *sy_bench_shuffled_pages(sy_bench_job *j, uint32_t num_pages);
/* Slots of `tokens` tokens filling pages[0], pages[1], ... in order. */
int32_t *sy_bench_slots(sy_bench_job *j, const uint32_t *pages, uint32_t tokens, uint32_t page_size);
/* Block tables [batch, max_blocks] of sequences holding `context` keys: the pages of the keys a
 * query reads (its window, or all) come from pages[] in order; every other entry is 0, as in the
 * engine's sliding-window tables. */
int32_t *sy_bench_block_tables(sy_bench_job *j, const uint32_t *pages, uint32_t batch, uint32_t context,
                               int32_t window, uint32_t page_size, uint32_t max_blocks);

#endif
