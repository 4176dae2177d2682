#include "bench/device_data.h"

#include <stdlib.h>
#include <string.h>

#include "sy_synth.h"
#include "util/strbuf.h"

enum { HOST_CHUNK_ELEMS = 1 << 22 };
enum { FP8_RANDOM_FIRST = 0x30, FP8_RANDOM_CODES = 0x18 };

void sy_bench_data_init(sy_bench_data *d, sy_conf_side *side, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    d->side = side;
    d->seed = seed;
}

void sy_bench_data_release(sy_bench_data *d)
{
    sy_error ignored = {{0}};
    if (d->n_dev)
        sy_conf_side_sync(d->side, &ignored);
    for (size_t i = 0; i < d->n_dev; i++)
        sy_conf_side_free(d->side, d->dev[i]);
    free(d->dev);
    d->dev = NULL;
    d->n_dev = d->cap_dev = 0;
}

sy_status sy_bench_alloc(sy_bench_data *d, size_t bytes, void **ptr, sy_error *err)
{
    sy_status st = sy_conf_side_alloc(d->side, bytes, ptr, err);
    if (st != SY_OK)
        return st;
    if (d->n_dev == d->cap_dev) {
        d->cap_dev = d->cap_dev ? 2 * d->cap_dev : 16;
        d->dev = sy_xrealloc(d->dev, d->cap_dev * sizeof *d->dev);
    }
    d->dev[d->n_dev++] = *ptr;
    return SY_OK;
}

void sy_bench_free(sy_bench_data *d, void *ptr)
{
    sy_error ignored = {{0}};
    for (size_t i = 0; i < d->n_dev; i++)
        if (d->dev[i] == ptr) {
            sy_conf_side_sync(d->side, &ignored);
            sy_conf_side_free(d->side, ptr);
            d->dev[i] = d->dev[--d->n_dev];
            return;
        }
}

uint32_t sy_bench_next_tensor(sy_bench_data *d)
{
    return d->next_tensor++;
}

/* The same elements as the backend's synth_fill, generated here chunk by chunk and copied. */
static sy_status fill_from_host(sy_bench_data *d, void *dst, uint64_t count, const sy_synth_spec *s, sy_error *err)
{
    const size_t es = s->kind == SY_SYNTH_BF16_UNIFORM ? 2 : 1;
    const uint64_t chunk = count < HOST_CHUNK_ELEMS ? count : HOST_CHUNK_ELEMS;
    void *host = sy_xcalloc(chunk ? chunk : 1, es);
    sy_status st = SY_OK;
    for (uint64_t at = 0; at < count && st == SY_OK; at += chunk) {
        uint64_t n = count - at < chunk ? count - at : chunk;
        for (uint64_t i = 0; i < n; i++) {
            uint16_t v = sy_synth_element(s->kind, s->seed, s->tensor, at + i, s->scale, s->offset, s->e8m0_base,
                                          s->e8m0_span);
            if (es == 2)
                ((uint16_t *)host)[i] = v;
            else
                ((uint8_t *)host)[i] = (uint8_t)v;
        }
        st = sy_conf_side_copy(d->side, (char *)dst + at * es, host, n * es, SY_MEMCPY_H2D, err);
    }
    free(host);
    return st;
}

sy_status sy_bench_fill(sy_bench_data *d, void *dst, uint64_t count, const sy_synth_spec *spec, sy_error *err)
{
    const sy_backend_desc *be = d->side->be;
    if (count == 0)
        return SY_OK;
    if (!SY_HAS_MEMBER(be->struct_size, sy_backend_desc, synth_fill) || !be->synth_fill)
        return fill_from_host(d, dst, count, spec, err);
    sy_error inner = {{0}};
    if (be->synth_fill(d->side->bctx, d->side->stream, dst, count, spec, &inner) != SY_OK)
        return sy_fail(err, SY_E_BACKEND, "backend %s: synth_fill of %llu elements failed: %s", be->name,
                       (unsigned long long)count, inner.msg[0] ? inner.msg : "no message");
    return SY_OK;
}

sy_status sy_bench_random(sy_bench_data *d, int32_t dtype, uint64_t count, void **ptr, sy_error *err)
{
    sy_synth_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.struct_size = sizeof spec;
    spec.seed = d->seed;
    spec.tensor = sy_bench_next_tensor(d);
    if (dtype == SY_DTYPE_BF16) {
        spec.kind = SY_SYNTH_BF16_UNIFORM;
        spec.scale = 1.0f;
    } else if (dtype == SY_DTYPE_FP8_E4M3) {
        spec.kind = SY_SYNTH_E8M0; /* any byte range: base .. base + span - 1 */
        spec.e8m0_base = FP8_RANDOM_FIRST;
        spec.e8m0_span = FP8_RANDOM_CODES;
    } else {
        return sy_fail(err, SY_E_INTERNAL, "bench: no random generator for dtype %s", sy_dtype_name(dtype));
    }
    sy_status st = sy_bench_alloc(d, (size_t)count * sy_dtype_size(dtype), ptr, err);
    return st != SY_OK ? st : sy_bench_fill(d, *ptr, count, &spec, err);
}

sy_status sy_bench_upload(sy_bench_data *d, const void *host, size_t bytes, void **ptr, sy_error *err)
{
    sy_status st = sy_bench_alloc(d, bytes, ptr, err);
    return st != SY_OK ? st : sy_conf_side_copy(d->side, *ptr, host, bytes, SY_MEMCPY_H2D, err);
}
