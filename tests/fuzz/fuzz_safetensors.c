/* libFuzzer target for the safetensors reader: any input is a file image; when the reader accepts
 * it, every tensor it reports must lie inside the input and be found by name. The header bytes are
 * also parsed as a JSON document (the parser of config.json and the shard index).
 *
 * Built with SY_FUZZ_WRITE_SEEDS, the same file is the seed-corpus writer: `fuzz_safetensors_seeds
 * DIR` writes small valid files through the checkpoint writer (every dtype, metadata, escaped and
 * non-ASCII names, scalars, empty tensors, a miniature gpt-oss layer). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/json_value.h"
#include "checkpoint/safetensors.h"

#ifndef SY_FUZZ_WRITE_SEEDS

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sy_st_file f;
    sy_error err = {{0}};
    if (sy_st_parse(data, size, "fuzz.safetensors", &f, &err) == SY_OK) {
        volatile uint8_t touch = 0;
        for (size_t i = 0; i < f.n_tensors; i++) {
            const sy_st_tensor *t = &f.tensors[i];
            if (t->offset > size || t->bytes > size - t->offset)
                abort(); /* accepted a tensor outside the file */
            if (t->bytes)
                touch ^= data[t->offset] ^ data[t->offset + t->bytes - 1];
            if (sy_st_find(&f, t->name) != t)
                abort();
        }
        (void)touch;
        sy_st_close(&f);
    }
    if (size >= 8) {
        uint64_t hlen = 0;
        for (int i = 7; i >= 0; i--)
            hlen = hlen << 8 | data[i];
        sy_jvalue v;
        if (sy_jvalue_parse("fuzz.json", data + 8, hlen < size - 8 ? (size_t)hlen : size - 8, 1u << 16, &v, &err) ==
            SY_OK)
            sy_jvalue_free(&v);
    }
    return 0;
}

#else

#include "checkpoint/st_write.h"

static int write_seed(const char *dir, const char *name, const sy_st_entry *e, size_t n, const char *const *meta,
                      size_t n_meta)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sy_st_writer w;
    sy_error err = {{0}};
    sy_status st = sy_st_writer_begin(&w, path, e, n, meta, n_meta, &err);
    for (size_t i = 0; st == SY_OK && i < n; i++) {
        uint64_t bytes = sy_st_entry_bytes(&e[i]);
        for (uint64_t b = 0; st == SY_OK && b < bytes; b++) {
            uint8_t v = (uint8_t)(b * 31 + i);
            st = sy_st_writer_append(&w, &v, 1, &err);
        }
    }
    if (st == SY_OK)
        st = sy_st_writer_commit(&w, &err);
    else
        sy_st_writer_abort(&w);
    if (st != SY_OK)
        fprintf(stderr, "fuzz_safetensors_seeds: %s\n", err.msg);
    return st == SY_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_safetensors_seeds DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    int failed = 0;
    sy_st_entry all[SY_ST_DTYPE_COUNT_];
    char names[SY_ST_DTYPE_COUNT_][32];
    for (int32_t d = 0; d < SY_ST_DTYPE_COUNT_; d++) {
        snprintf(names[d], sizeof names[d], "t_%s", sy_st_dtype_name(d));
        all[d] = (sy_st_entry){names[d], d, 2, {3, 1 + (uint64_t)d % 3}};
    }
    failed |= write_seed(dir, "dtypes.safetensors", all, SY_ST_DTYPE_COUNT_, NULL, 0);
    const sy_st_entry odd[] = {
        {"scalar", SY_ST_F32, 0, {0}},
        {"empty", SY_ST_BF16, 3, {2, 0, 5}},
        {"quote\"back\\slash/\xc3\xa9\xe2\x82\xac\n", SY_ST_U8, 1, {7}},
        {"model.layers.0.self_attn.q_proj.weight", SY_ST_BF16, 2, {6, 5}},
    };
    const char *meta[] = {"format", "pt", "note", "seed \"1\"\t\xc3\xa9"};
    failed |= write_seed(dir, "odd.safetensors", odd, sizeof odd / sizeof odd[0], meta, 2);
    const sy_st_entry layer[] = {
        {"model.layers.0.mlp.experts.gate_up_proj_blocks", SY_ST_U8, 4, {2, 4, 1, 16}},
        {"model.layers.0.mlp.experts.gate_up_proj_scales", SY_ST_U8, 3, {2, 4, 1}},
        {"model.layers.0.mlp.experts.gate_up_proj_bias", SY_ST_BF16, 2, {2, 4}},
        {"model.layers.0.mlp.experts.down_proj_blocks", SY_ST_U8, 4, {2, 2, 1, 16}},
        {"model.layers.0.mlp.experts.down_proj_scales", SY_ST_U8, 3, {2, 2, 1}},
        {"model.layers.0.mlp.experts.down_proj_bias", SY_ST_BF16, 2, {2, 2}},
        {"model.layers.0.mlp.router.weight", SY_ST_BF16, 2, {2, 32}},
        {"model.layers.0.mlp.router.bias", SY_ST_BF16, 1, {2}},
        {"model.layers.0.self_attn.sinks", SY_ST_BF16, 1, {2}},
    };
    failed |= write_seed(dir, "layer.safetensors", layer, sizeof layer / sizeof layer[0], meta, 1);
    failed |= write_seed(dir, "nothing.safetensors", NULL, 0, NULL, 0);
    /* Whitespace and key order as a hand or another writer might leave them. */
    static const char pretty[] = "{\n  \"__metadata__\": {\"a\": \"b\"},\n  \"y\": {\"shape\": [1], \"dtype\": "
                                 "\"F16\", \"data_offsets\": [8, 10]},\n\t\"x\": {\"dtype\": \"I32\", \"shape\": "
                                 "[2], \"data_offsets\": [0, 8]}\r\n}   ";
    char path[4096];
    snprintf(path, sizeof path, "%s/pretty.safetensors", dir);
    FILE *f = fopen(path, "wb");
    uint8_t len[8] = {(uint8_t)(sizeof pretty - 1)};
    uint8_t data[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    if (!f || fwrite(len, 1, 8, f) != 8 || fwrite(pretty, 1, sizeof pretty - 1, f) != sizeof pretty - 1 ||
        fwrite(data, 1, sizeof data, f) != sizeof data)
        failed = 1;
    if (f && fclose(f) != 0)
        failed = 1;
    return failed;
}

#endif
