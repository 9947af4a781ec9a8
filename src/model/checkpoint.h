// checkpoint.h: a model's parameters as safetensors bytes (https://huggingface.co/docs/safetensors):
// 8-byte little-endian header length, a JSON header {"__metadata__": {config as strings},
// "<tensor>": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...} padded with
// spaces to a multiple of 8, then the raw little-endian float32 data in table order.
// The config (and the step count) travel in __metadata__. Version 2 follows PyTorch's
// conventions: a linear layer's weight is stored (out, in) as nn.Linear keeps it, and a form's
// tensors keep their shape (a Synthesizer's R is (heads, L, L)); docs/model.md lists every name
// and shape. Version-1 files (the first release: (in, out) and flat form tensors) still load.
// Optionally AdamW's moments follow as optim.m.<name> and optim.v.<name>.
#ifndef AW_MODEL_CHECKPOINT_H
#define AW_MODEL_CHECKPOINT_H

#include "transformer.h"

// *bytes = the size checkpoint_write will produce. optim: 1 adds AdamW's moments (and the
// training-batch stream's state), so that training resumes exactly where it stopped.
int checkpoint_size(const aw_model *m, int optim, size_t *bytes);
// Writes into buf (cap bytes, at least checkpoint_size). AW_ERR_ARG when cap is too small.
int checkpoint_write(const aw_model *m, int optim, uint8_t *buf, size_t cap);
// Creates a model from safetensors bytes written by checkpoint_write (or any writer that uses the
// same metadata keys and tensor names). AW_ERR_FORMAT for malformed bytes, a missing or extra
// tensor, a wrong dtype or shape; AW_ERR_ARG for a config the model rejects.
int checkpoint_read(aw_model **out, const uint8_t *buf, size_t len);
// inference = 1: the model keeps its parameters only (model_create_ex); an optimizer state in the
// file is skipped.
int checkpoint_read_ex(aw_model **out, const uint8_t *buf, size_t len, int inference);


#endif
