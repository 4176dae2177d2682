/* KV pools, paged sequences and a host API for the kv and attention suites and bench/attn_cpu:
 * everything set up through the plugins' own ops and the engine's call-boundary checks, as the
 * engine does it. No Check calls here, so that the bench can use it too. */
#ifndef SY_TEST_KV_POOL_H
#define SY_TEST_KV_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "switchyard/plugin.h"
#include "sy_test.h"

/* A host API whose workspace calls use the C heap and count what they hand out. */
typedef struct sy_test_host {
    sy_host_api api;
    size_t allocs, frees, live_bytes;
} sy_test_host;

void sy_test_host_init(sy_test_host *h);

/* One layer's K and V pools, geometry from the plugin's geometry op, memory poisoned. */
typedef struct sy_test_pool {
    sy_kv_geometry geom;
    void *k;
    void *v;
    size_t bytes; /* of each of k and v */
    float k_scale, v_scale;
} sy_test_pool;

sy_status sy_test_pool_create(const sy_plugin_desc *kv_plugin, int32_t store_dtype, uint32_t num_pages,
                              uint32_t page_size, uint32_t kv_heads, uint32_t head_dim, sy_test_pool *pool,
                              sy_error *err);
void sy_test_pool_free(sy_test_pool *pool);

/* Writes T tokens, K and V packed f32 [T][H][D], to `slots` through the engine's check and the
 * plugin's write. */
sy_status sy_test_pool_write(const sy_plugin_desc *kv_plugin, sy_test_pool *pool, const float *k, const float *v,
                             const int32_t *slots, int64_t T, sy_error *err);

/* Sequences laid out in a pool: pages 1 .. num_pages-1 dealt out in a shuffled order. */
typedef struct sy_test_seqs {
    uint32_t B;
    uint32_t max_blocks;
    int32_t *lens;         /* [B] */
    int32_t *block_tables; /* [B][max_blocks]; unused entries hold out-of-pool garbage */
    int64_t *first_token;  /* [B + 1]: token rows of sequence b are first_token[b] .. first_token[b+1] */
    int32_t *slots;        /* [total tokens]: the pool slot of each token row */
} sy_test_seqs;

/* Pages needed by `lens` at page size P, the padding page included. */
uint32_t sy_test_pages_for(const int32_t *lens, uint32_t B, uint32_t page_size);

/* The pool has num_pages >= sy_test_pages_for(...) pages; rng shuffles them. */
void sy_test_seqs_layout(const int32_t *lens, uint32_t B, uint32_t page_size, uint32_t num_pages, sy_rng *rng,
                         sy_test_seqs *seqs);
void sy_test_seqs_free(sy_test_seqs *seqs);

#endif
