/* Where the engine's weights come from: the seeded synthetic generator, or a checkpoint folder
 * (model.weights: PATH). Either way a tensor arrives in its checkpoint dtype (bf16, or bytes for the
 * MXFP4 blocks and scales); the engine decides where it goes. */
#ifndef SY_MODEL_WEIGHTS_H
#define SY_MODEL_WEIGHTS_H

#include <stdint.h>

#include "model/model.h"

/* Checkpoint tensors are handed over in pieces of at most this many bytes, each released from host
 * memory once taken: loading holds one piece, not one tensor, whatever the model's size. */
#define SY_WEIGHTS_PIECE_BYTES (64u << 20)

typedef struct sy_weights sy_weights;

/* checkpoint NULL or "": synthetic weights of `seed`. Otherwise the folder is opened, its
 * config.json compared with the dimensions and every tensor checked for name, dtype and shape. */
sy_status sy_weights_open(const sy_model_dims *d, uint64_t seed, const char *checkpoint, sy_weights **out,
                          sy_error *err);
void sy_weights_close(sy_weights *w);

/* Bytes of a tensor in its checkpoint dtype. */
uint64_t sy_weights_bytes(const sy_model_dims *d, uint32_t layer, uint32_t kind);
/* 1 and the generator when the weights are synthetic (a backend can then make the tensor where it
 * lives); 0 for a checkpoint. */
int sy_weights_synth_spec(const sy_weights *w, uint32_t layer, uint32_t kind, sy_synth_spec *spec);

typedef sy_status (*sy_weights_sink)(void *user, uint64_t offset, const void *data, size_t bytes, sy_error *err);
/* Hands the tensor's bytes to `sink` in order, in pieces; a piece is valid only during the call. */
sy_status sy_weights_stream(sy_weights *w, uint32_t layer, uint32_t kind, sy_weights_sink sink, void *user,
                            sy_error *err);
/* The whole tensor into dst (sy_weights_bytes long). */
sy_status sy_weights_read_host(sy_weights *w, uint32_t layer, uint32_t kind, void *dst, sy_error *err);

#endif
