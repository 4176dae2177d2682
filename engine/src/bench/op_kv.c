/* kv_layout.write of a prefill's tokens: bf16 K and V [T, Hkv, D] scattered into a bf16 pool page
 * by page, the pages spread over the pool in a random order. */
#include <string.h>

#include "bench/paging.h"
#include "calls/checks.h"
#include "conformance/pool.h"
#include "model/engine_impl.h"

enum { BF16 = SY_DTYPE_BF16, I32 = SY_DTYPE_I32 };

typedef struct write_calls {
    const sy_kv_layout_ops *ops;
    void *ctx;
    sy_stream stream;
    sy_kv_write_args *args; /* one per input copy */
} write_calls;

static sy_status write_once(void *user, uint32_t copy, sy_error *err)
{
    const write_calls *w = user;
    return w->ops->write(w->ctx, w->stream, &w->args[copy], err);
}

void sy_bench_op_kv_write(sy_bench_job *j)
{
    const sy_bench_heads h = sy_bench_job_heads(j);
    const uint32_t P = SY_BENCH_PAGE_SIZE, T = j->s->tokens;
    const size_t es = sy_dtype_size(BF16), elems = (size_t)T * h.kv_heads * h.head_dim;
    void *pctx = NULL;
    const sy_plugin_desc *plugin =
        sy_bench_job_plugin(j, SY_KIND_KV_LAYOUT, sy_conf_layout_reference(j->c->layout), &pctx);
    if (!plugin)
        return;
    sy_bench_job_shape(j, "tokens=%u src=bf16 store=bf16 page=%u kv_heads=%u dim=%u", T, P, h.kv_heads, h.head_dim);
    sy_kv_write_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.k = sy_t3(NULL, BF16, T, h.kv_heads, h.head_dim);
    a.v = sy_t3(NULL, BF16, T, h.kv_heads, h.head_dim);
    a.slots = sy_t1(NULL, I32, T);
    a.k_scale = a.v_scale = 1.0f;
    a.geom.struct_size = sizeof a.geom;
    a.geom.layout = j->c->layout;
    a.geom.store_dtype = BF16;
    sy_error err = {{0}};
    if (!sy_bench_job_check(j, "kv_layout caps", sy_check_kv_write_caps(plugin, &a, &err), &err))
        return;
    const sy_bench_traffic t = sy_bench_kv_write_traffic(&h, T, es, es);
    sy_bench_job_traffic(j, t);
    const uint32_t copies = sy_bench_job_copies(j, t.bytes), pages_per_copy = (T + P - 1) / P;
    if (!sy_bench_job_geometry(j, j->c->layout, BF16, copies * pages_per_copy + 1, P, &a.geom))
        return;
    /* The pool holds random bytes before the first write too: no page is ever all zeros. */
    a.k_cache = sy_bench_job_random(j, BF16, a.geom.k_elems);
    a.v_cache = sy_bench_job_random(j, BF16, a.geom.v_elems);
    const uint32_t *pages = sy_bench_shuffled_pages(j, a.geom.num_pages);
    write_calls calls = {plugin->ops, pctx, j->run->side.stream, sy_bench_job_host(j, copies * sizeof a)};
    for (uint32_t c = 0; c < copies && sy_bench_job_ok(j); c++) {
        sy_kv_write_args *ac = &calls.args[c];
        *ac = a;
        int32_t *slots = sy_bench_slots(j, pages + (size_t)c * pages_per_copy, T, P);
        ac->slots.data = sy_bench_job_upload(j, slots, (size_t)T * sizeof *slots);
        ac->k.data = sy_bench_job_random(j, BF16, elems);
        ac->v.data = sy_bench_job_random(j, BF16, elems);
        if (sy_bench_job_ok(j))
            sy_bench_job_check(j, "host check of kv_layout.write", sy_check_kv_write(ac, slots, NULL, &err), &err);
    }
    sy_bench_job_time(j, write_once, &calls, copies);
}
