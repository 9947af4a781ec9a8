// fuzz_checkpoint.c: the safetensors checkpoint reader (src/model/checkpoint.c) on arbitrary
// bytes. A file it accepts must give a model that runs a forward pass, and saving that model
// (with and without the optimizer state) and reading it back must give the same bytes again.
// Its tensors must have tiled its data (no overlap, gap or trailing byte): the model saved with
// the state the file had holds exactly as many bytes of tensors. The corpus has version-3 files
// (layerForms, options per layer), so the per-layer metadata is fuzzed too.
#include "fuzz_common.h"

#include "../../src/model/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    aw_model *m = NULL;
    aw_clear_error();
    const int st = checkpoint_read(&m, data, size);
    FUZZ_STATUS(st);
    if (st != AW_OK) {
        FUZZ_ASSERT(m == NULL, "a failed read left a model behind");
        return 0;
    }
    // a forward over a few tokens (ids inside the vocabulary, length within maxLen)
    const size_t T = m->cfg.max_len < 5 ? (size_t)m->cfg.max_len : 5, S = aw_arch_has_source(m->cfg.arch) ? T : 0;
    if (model_reserve(m, 1, T, S) == AW_OK) {
        for (size_t i = 0; i < T; i++) m->tokens[i] = (int32_t)(i % (size_t)m->cfg.vocab), m->targets[i] = -1;
        for (size_t i = 0; i < S; i++) m->src[i] = (int32_t)(i % (size_t)m->cfg.vocab);
        aw_clear_error();
        const int fst = model_forward(m, NULL);
        FUZZ_STATUS(fst);
    }
    { // tiled: the data section is the parameters' bytes, once or (with the AdamW state) three times
        uint64_t hlen = 0;
        for (int i = 0; i < 8; i++) hlen |= (uint64_t)data[i] << (8 * i);
        const size_t tensors = (size_t)(size - 8 - hlen), once = m->n_params * sizeof(float);
        FUZZ_ASSERT(tensors == once || tensors == 3 * once,
                    "an accepted file holds %zu bytes of tensors; its model's parameters are %zu bytes (times 1 or 3)",
                    tensors, once);
    }
    for (int optim = 0; optim < 2; optim++) {
        size_t bytes = 0, bytes2 = 0;
        if (checkpoint_size(m, optim, &bytes) != AW_OK) continue;
        uint8_t *buf = malloc(bytes), *buf2 = malloc(bytes);
        aw_model *r = NULL;
        FUZZ_ASSERT(buf && buf2 && checkpoint_write(m, optim, buf, bytes) == AW_OK, "save");
        FUZZ_ASSERT(checkpoint_read(&r, buf, bytes) == AW_OK, "a saved model must load: %s", aw_error_message());
        FUZZ_ASSERT(checkpoint_size(r, optim, &bytes2) == AW_OK && bytes2 == bytes, "the same size again");
        FUZZ_ASSERT(checkpoint_write(r, optim, buf2, bytes2) == AW_OK && memcmp(buf, buf2, bytes) == 0,
                    "save, load, save gives the same bytes");
        model_destroy(r);
        free(buf), free(buf2);
    }
    model_destroy(m);
    return 0;
}
