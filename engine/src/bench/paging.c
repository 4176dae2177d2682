#include "bench/paging.h"

#include "bench/traffic.h"

uint32_t *sy_bench_shuffled_pages(sy_bench_job *j, uint32_t num_pages)
{
    uint32_t n = num_pages > 1 ? num_pages - 1 : 0;
    uint32_t *pages = sy_bench_job_host(j, (size_t)n * sizeof *pages);
    sy_conf_shuffle_u32(&j->rng, pages, n);
    for (uint32_t i = 0; i < n; i++)
        pages[i] += 1;
    return pages;
}

int32_t *sy_bench_slots(sy_bench_job *j, const uint32_t *pages, uint32_t tokens, uint32_t page_size)
{
    int32_t *slots = sy_bench_job_host(j, (size_t)tokens * sizeof *slots);
    for (uint32_t t = 0; t < tokens; t++)
        slots[t] = (int32_t)(pages[t / page_size] * page_size + t % page_size);
    return slots;
}

int32_t *sy_bench_block_tables(sy_bench_job *j, const uint32_t *pages, uint32_t batch, uint32_t context,
                               int32_t window, uint32_t page_size, uint32_t max_blocks)
{
    int32_t *bt = sy_bench_job_host(j, (size_t)batch * max_blocks * sizeof *bt);
    const uint32_t read = sy_bench_decode_pages(context, window, page_size);
    const uint32_t first = (context - sy_bench_decode_keys(context, window)) / page_size;
    size_t next = 0;
    for (uint32_t b = 0; b < batch; b++)
        for (uint32_t p = first; p < first + read && p < max_blocks; p++)
            bt[(size_t)b * max_blocks + p] = (int32_t)pages[next++];
    return bt;
}
