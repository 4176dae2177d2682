#include "bench/copy.h"

#include <stdlib.h>
#include <string.h>

#include "bench/device_data.h"
#include "util/strbuf.h"

enum { MAX_SAMPLE = 64 << 20, DESTINATION_FILL = 0x5A };

typedef struct copy_calls {
    sy_conf_side *side;
    void **src, **dst;
    uint64_t size;
} copy_calls;

static sy_status copy_once(void *user, uint32_t copy, sy_error *err)
{
    const copy_calls *c = user;
    sy_error inner = {{0}};
    if (c->side->be->memcpy_async(c->side->bctx, c->side->stream, c->dst[copy], c->src[copy], (size_t)c->size,
                                  SY_MEMCPY_D2D, &inner) != SY_OK)
        return sy_fail(err, SY_E_BACKEND, "backend %s: device-to-device memcpy_async of %llu bytes failed: %s",
                       c->side->be->name, (unsigned long long)c->size, inner.msg[0] ? inner.msg : "no message");
    return SY_OK;
}

/* The last MAX_SAMPLE bytes (or all) of the last pair, read back and compared. */
static sy_status verify(sy_conf_side *side, const copy_calls *c, uint32_t last, int *same, sy_error *err)
{
    const size_t sample = c->size < MAX_SAMPLE ? (size_t)c->size : MAX_SAMPLE, at = (size_t)c->size - sample;
    unsigned char *want = sy_xcalloc(sample ? sample : 1, 1), *got = sy_xcalloc(sample ? sample : 1, 1);
    sy_status st = sy_conf_side_copy(side, want, (const unsigned char *)c->src[last] + at, sample, SY_MEMCPY_D2H, err);
    if (st == SY_OK)
        st = sy_conf_side_copy(side, got, (const unsigned char *)c->dst[last] + at, sample, SY_MEMCPY_D2H, err);
    *same = st == SY_OK && memcmp(want, got, sample) == 0;
    free(want);
    free(got);
    return st;
}

sy_status sy_bench_measure_copy(sy_conf_side *side, uint64_t size, uint32_t copies, int warmup, int runs,
                                uint64_t seed, sy_bench_copy *out, sy_error *err)
{
    sy_bench_data data;
    sy_bench_data_init(&data, side, seed);
    memset(out, 0, sizeof *out);
    out->size = size;
    out->copies = copies ? copies : 1;
    copy_calls c = {side, sy_xcalloc(out->copies, sizeof(void *)), sy_xcalloc(out->copies, sizeof(void *)), size};
    sy_synth_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.struct_size = sizeof spec;
    spec.kind = SY_SYNTH_BYTES;
    spec.seed = seed;
    sy_status st = SY_OK;
    for (uint32_t i = 0; i < out->copies && st == SY_OK; i++) {
        spec.tensor = sy_bench_next_tensor(&data);
        if ((st = sy_bench_alloc(&data, (size_t)size, &c.src[i], err)) == SY_OK &&
            (st = sy_bench_fill(&data, c.src[i], size, &spec, err)) == SY_OK &&
            (st = sy_bench_alloc(&data, (size_t)size, &c.dst[i], err)) == SY_OK)
            st = sy_conf_side_fill(side, c.dst[i], DESTINATION_FILL, (size_t)size, err);
    }
    if (st == SY_OK)
        st = sy_bench_time_calls(side, copy_once, &c, out->copies, warmup, runs, &out->stats, err);
    if (st == SY_OK)
        st = verify(side, &c, (uint32_t)((warmup + runs - 1) % (int)out->copies), &out->verified, err);
    if (st == SY_OK && !out->verified)
        st = sy_fail(err, SY_E_INTERNAL, "device-to-device copy of %llu bytes: the destination does not match the "
                                         "source afterwards",
                     (unsigned long long)size);
    sy_bench_data_release(&data);
    free(c.src);
    free(c.dst);
    return st;
}
