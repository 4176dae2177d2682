#include "model/weights.h"

#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/gpt_oss.h"
#include "checkpoint/hf_config.h"
#include "util/strbuf.h"

struct sy_weights {
    sy_model_dims dims;
    uint64_t seed;
    sy_checkpoint *ckpt; /* NULL: synthetic */
};

sy_status sy_weights_open(const sy_model_dims *d, uint64_t seed, const char *checkpoint, sy_weights **out,
                          sy_error *err)
{
    *out = NULL;
    sy_weights *w = sy_xcalloc(1, sizeof *w);
    w->dims = *d;
    w->seed = seed;
    sy_status st = SY_OK;
    if (checkpoint && checkpoint[0]) {
        char *config = sy_asprintf("%s/%s", checkpoint, SY_CKPT_CONFIG_FILE);
        sy_hf_config hf;
        st = sy_hf_config_read(config, &hf, err);
        if (st == SY_OK)
            st = sy_hf_config_agree(&hf, config, d, NULL, err);
        free(config);
        if (st == SY_OK)
            st = sy_checkpoint_open(checkpoint, &w->ckpt, err);
        if (st == SY_OK)
            st = sy_gpt_oss_check(w->ckpt, d, err);
    }
    if (st != SY_OK) {
        sy_weights_close(w);
        return st;
    }
    *out = w;
    return SY_OK;
}

void sy_weights_close(sy_weights *w)
{
    if (!w)
        return;
    sy_checkpoint_close(w->ckpt);
    free(w);
}

uint64_t sy_weights_bytes(const sy_model_dims *d, uint32_t layer, uint32_t kind)
{
    sy_gpt_oss_tensor t = sy_gpt_oss_tensor_of(d, layer, kind);
    return sy_ckpt_numel(d, layer, kind) * sy_st_dtype_size(t.dtype);
}

int sy_weights_synth_spec(const sy_weights *w, uint32_t layer, uint32_t kind, sy_synth_spec *spec)
{
    if (w->ckpt)
        return 0;
    *spec = sy_synth_spec_for(&w->dims, w->seed, layer, kind);
    return 1;
}

/* The checked checkpoint tensor of (layer, kind). */
static const sy_ckpt_ref *find(const sy_weights *w, uint32_t layer, uint32_t kind, sy_error *err)
{
    char name[128];
    const sy_ckpt_ref *r = sy_checkpoint_find(w->ckpt, sy_ckpt_name(layer, kind, name, sizeof name));
    if (!r)
        sy_fail(err, SY_E_INTERNAL, "%s: tensor %s vanished after the check", w->ckpt->dir, name);
    return r;
}

sy_status sy_weights_stream(sy_weights *w, uint32_t layer, uint32_t kind, sy_weights_sink sink, void *user,
                            sy_error *err)
{
    if (!w->ckpt) {
        uint64_t bytes = sy_weights_bytes(&w->dims, layer, kind);
        void *host = sy_xcalloc(bytes ? bytes : 1, 1);
        sy_synth_spec spec = sy_synth_spec_for(&w->dims, w->seed, layer, kind);
        sy_synth_fill_host(&spec, host, sy_ckpt_numel(&w->dims, layer, kind));
        sy_status st = sink(user, 0, host, bytes, err);
        free(host);
        return st;
    }
    const sy_ckpt_ref *r = find(w, layer, kind, err);
    if (!r)
        return SY_E_INTERNAL;
    const sy_st_file *f = &w->ckpt->shards[r->shard];
    const uint8_t *data = sy_st_data(f, r->tensor);
    for (uint64_t done = 0; done < r->tensor->bytes;) {
        uint64_t n = r->tensor->bytes - done < SY_WEIGHTS_PIECE_BYTES ? r->tensor->bytes - done : SY_WEIGHTS_PIECE_BYTES;
        sy_status st = sink(user, done, data + done, (size_t)n, err);
        sy_st_release(f, r->tensor->offset + done, n);
        if (st != SY_OK)
            return st;
        done += n;
    }
    return SY_OK;
}

static sy_status copy_sink(void *user, uint64_t offset, const void *data, size_t bytes, sy_error *err)
{
    (void)err;
    memcpy((uint8_t *)user + offset, data, bytes);
    return SY_OK;
}

sy_status sy_weights_read_host(sy_weights *w, uint32_t layer, uint32_t kind, void *dst, sy_error *err)
{
    if (!w->ckpt) {
        sy_synth_spec spec = sy_synth_spec_for(&w->dims, w->seed, layer, kind);
        sy_synth_fill_host(&spec, dst, sy_ckpt_numel(&w->dims, layer, kind));
        return SY_OK;
    }
    return sy_weights_stream(w, layer, kind, copy_sink, dst, err);
}
