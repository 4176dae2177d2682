#include "kv_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls/checks.h"

static sy_status heap_alloc(void *host, size_t bytes, void **ptr, sy_error *err)
{
    sy_test_host *h = host;
    *ptr = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!*ptr) {
        snprintf(err->msg, sizeof err->msg, "test host: out of memory for %zu bytes", bytes);
        return SY_E_NOMEM;
    }
    h->allocs++;
    return SY_OK;
}

static void heap_free(void *host, void *ptr)
{
    sy_test_host *h = host;
    if (ptr)
        h->frees++;
    free(ptr);
}

void sy_test_host_init(sy_test_host *h)
{
    memset(h, 0, sizeof *h);
    h->api.struct_size = sizeof h->api;
    h->api.abi_major = SY_ABI_MAJOR;
    h->api.abi_minor = SY_ABI_MINOR;
    h->api.host = h;
    h->api.workspace_alloc = heap_alloc;
    h->api.workspace_free = heap_free;
}

sy_status sy_test_pool_create(const sy_plugin_desc *kv_plugin, int32_t store_dtype, uint32_t num_pages,
                              uint32_t page_size, uint32_t kv_heads, uint32_t head_dim, sy_test_pool *pool,
                              sy_error *err)
{
    const sy_kv_layout_ops *ops = kv_plugin->ops;
    const sy_kv_layout_caps *caps = kv_plugin->caps;
    memset(pool, 0, sizeof *pool);
    pool->geom.struct_size = sizeof pool->geom;
    pool->geom.layout = caps->layout;
    pool->geom.store_dtype = store_dtype;
    pool->geom.num_pages = num_pages;
    pool->geom.page_size = page_size;
    pool->geom.kv_heads = kv_heads;
    pool->geom.head_dim = head_dim;
    sy_status st = ops->geometry(&pool->geom, err);
    if (st != SY_OK)
        return st;
    pool->bytes = pool->geom.k_elems * sy_dtype_size(store_dtype);
    pool->k = malloc(pool->bytes);
    pool->v = malloc(pool->bytes);
    memset(pool->k, 0xA5, pool->bytes);
    memset(pool->v, 0x5A, pool->bytes);
    pool->k_scale = pool->v_scale = 1.0f;
    return SY_OK;
}

void sy_test_pool_free(sy_test_pool *pool)
{
    free(pool->k);
    free(pool->v);
    memset(pool, 0, sizeof *pool);
}

sy_status sy_test_pool_write(const sy_plugin_desc *kv_plugin, sy_test_pool *pool, const float *k, const float *v,
                             const int32_t *slots, int64_t T, sy_error *err)
{
    const sy_kv_layout_ops *ops = kv_plugin->ops;
    int64_t shape[3] = {T, pool->geom.kv_heads, pool->geom.head_dim}, n[1] = {T};
    sy_kv_write_args a = {0};
    a.struct_size = sizeof a;
    a.geom = pool->geom;
    a.k = sy_tensor_contiguous((void *)k, SY_DTYPE_F32, 3, shape);
    a.v = sy_tensor_contiguous((void *)v, SY_DTYPE_F32, 3, shape);
    a.slots = sy_tensor_contiguous((void *)slots, SY_DTYPE_I32, 1, n);
    a.k_cache = pool->k;
    a.v_cache = pool->v;
    a.k_scale = pool->k_scale;
    a.v_scale = pool->v_scale;
    sy_status st = sy_check_kv_write(&a, slots, NULL, err);
    return st != SY_OK ? st : ops->write(NULL, NULL, &a, err);
}

uint32_t sy_test_pages_for(const int32_t *lens, uint32_t B, uint32_t page_size)
{
    uint32_t pages = 1;
    for (uint32_t b = 0; b < B; b++)
        pages += ((uint32_t)lens[b] + page_size - 1) / page_size;
    return pages;
}

void sy_test_seqs_layout(const int32_t *lens, uint32_t B, uint32_t page_size, uint32_t num_pages, sy_rng *rng,
                         sy_test_seqs *s)
{
    memset(s, 0, sizeof *s);
    s->B = B;
    s->lens = malloc(B * sizeof *s->lens);
    s->first_token = malloc((B + 1) * sizeof *s->first_token);
    s->first_token[0] = 0;
    for (uint32_t b = 0; b < B; b++) {
        s->lens[b] = lens[b];
        s->first_token[b + 1] = s->first_token[b] + lens[b];
        uint32_t pages = ((uint32_t)lens[b] + page_size - 1) / page_size;
        if (pages > s->max_blocks)
            s->max_blocks = pages;
    }
    s->max_blocks += 1; /* one column no sequence reaches: its garbage must never be read */
    uint32_t *order = malloc(num_pages * sizeof *order);
    for (uint32_t i = 0; i + 1 < num_pages; i++)
        order[i] = i + 1;
    for (uint32_t i = num_pages - 2; num_pages > 2 && i > 0; i--) {
        uint32_t j = sy_rng_below(rng, i + 1);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    s->block_tables = malloc((size_t)B * s->max_blocks * sizeof *s->block_tables);
    s->slots = malloc((size_t)(s->first_token[B] ? s->first_token[B] : 1) * sizeof *s->slots);
    uint32_t next = 0;
    for (uint32_t b = 0; b < B; b++) {
        int32_t *row = s->block_tables + (size_t)b * s->max_blocks;
        uint32_t pages = ((uint32_t)lens[b] + page_size - 1) / page_size;
        for (uint32_t j = 0; j < s->max_blocks; j++)
            row[j] = j < pages ? (int32_t)order[next++] : (int32_t)(num_pages + 1000 + j);
        for (int32_t t = 0; t < lens[b]; t++)
            s->slots[s->first_token[b] + t] = row[t / page_size] * (int32_t)page_size + t % (int32_t)page_size;
    }
    free(order);
}

void sy_test_seqs_free(sy_test_seqs *s)
{
    free(s->lens);
    free(s->block_tables);
    free(s->first_token);
    free(s->slots);
    memset(s, 0, sizeof *s);
}
