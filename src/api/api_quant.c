// api_quant.c: the quantized linear layer alone (src/kernels/quant.h), for the tests' float64
// reference and the benchmarks: the model's own path is model.quantize (api_model.c).
#include "api.h"

#include "../kernels/quant.h"
#include "../kernels/size.h"
#include "../model/transformer.h"

#include <stdlib.h>
#include <string.h>

// out (N, OC) = x (N, IC) W^T + b (b may be 0) with W (OC, IC) float32 quantized to `format` in groups
// of `group`; ref 1: the plain-C dot kernels on one thread. q (OC row_bytes(IC)) and s (OC IC / group)
// receive the quantized values and scales when not 0.
AW_API int aw_quant_linear(const char *format, int32_t group, const float *w, const float *x, const float *b,
                           int32_t N, int32_t IC, int32_t OC, float *out, int32_t ref, uint8_t *q, float *s) {
    aw_clear_error();
    const int fid = aw_qformat_find(format);
    if (fid == AW_QF_NONE || fid == AW_QF_BF16) return api_done(aw_fail(AW_ERR_ARG, "quantLinear: format must be \"q8_0\" or \"q4_0\""));
    const aw_qformat *f = &AW_QFORMATS[fid];
    if (group < 1 || !aw_qgroup_valid(fid, (size_t)group))
        return api_done(aw_fail(AW_ERR_ARG, "quantLinear: group %d is not one %s takes", (int)group, f->name));
    if (N < 1 || IC < 1 || OC < 1 || IC % group)
        return api_done(aw_fail(AW_ERR_ARG, "quantLinear: N, IC, OC must be >= 1 and IC a multiple of the group"));
    const size_t G = (size_t)group, rb = f->row_bytes((size_t)IC), ng = (size_t)IC / G;
    aw_qmat m = {fid, (size_t)OC, (size_t)IC, G, aw_alloc(aw_size_mul((size_t)OC, rb), 1),
                 aw_alloc_floats(aw_size_mul((size_t)OC, ng))};
    void *work = aw_alloc(aw_qact_bytes((size_t)IC, G), 1);
    int st = AW_OK;
    if (!m.q || !m.s || !work) st = aw_fail(AW_ERR_NOMEM, "quantLinear: out of memory");
    else {
        for (size_t j = 0; j < (size_t)OC; j++) f->quantize_row(m.q + j * rb, m.s + j * ng, w + j * (size_t)IC, (size_t)IC, G);
        if (ref) aw_qlinear_ref(out, x, &m, b, (size_t)N, work);
        else aw_qlinear(out, x, &m, b, (size_t)N, work);
        if (q) memcpy(q, m.q, (size_t)OC * rb);
        if (s) memcpy(s, m.s, (size_t)OC * ng * sizeof(float));
    }
    free(m.q);
    free(m.s);
    free(work);
    return api_done(st);
}

// A quantized model's matrix i: its tensor's name (0 past the last), and in out (6 doubles) its
// format id, rows (outputs), cols (inputs), group, and the addresses of its values and its scales, for
// the llama2.c version 2 reader and writer (wasm/llama2c.js), which copy a file's integers in and out.
AW_API const char *aw_model_qmat(aw_model *m, int32_t i, double *out) {
    aw_qmat *q;
    const char *name = i < 0 ? NULL : model_qmat(m, (size_t)i, &q);
    if (!name) return 0;
    out[0] = q->format, out[1] = (double)q->rows, out[2] = (double)q->cols, out[3] = (double)q->group;
    out[4] = (double)(uintptr_t)q->q, out[5] = (double)(uintptr_t)q->s;
    return name;
}
