// quant_model.h: a quantized model's matrices (private to src/model/quant_model.c, which reads them
// at run time, and quantize.c, which makes them).
#ifndef AW_QUANT_MODEL_H
#define AW_QUANT_MODEL_H

#include "transformer.h"

#include "../kernels/quant.h"

enum { QMATS = AW_MAX_LAYERS * 7 + 1 }; // q, k, v, o, w1, w2, w3 per layer, and the classifier

typedef struct aw_quant {
    int format;          // enum aw_qformat_id
    size_t group;        // values per scale
    size_t count;        // matrices in mats
    aw_qmat mats[QMATS];
    char names[QMATS][48]; // each matrix's tensor ("dec.0.self.wq", "out.w"; "wte" for a tied classifier's copy)
    unsigned char in_out[QMATS]; // 1: its float32 source is stored (in, out) (a linear layer's); 0: (out, in) (wte)
    const aw_qmat **slot[QMATS]; // where the forward finds it (m->w's qq .. q3, q_out), set again after each walk
    uint8_t *mem;        // the values and scales this owns: every matrix's (model_create_quantized), or
                         // NULL (model_quantize: they sit in the arena after the float32 tensors) or a
                         // tied classifier's copy that did not fit there
    size_t bytes;        // its size
    void *work;          // one activation row's workspace (aw_qact_bytes of the widest input)
    double fp32_bytes;   // the weights' bytes in float32, before
} aw_quant;

#endif
