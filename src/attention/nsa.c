// nsa.c: Native Sparse Attention, one query row at a time (nsa.h). The forward of a sequence, the
// step of generation and the selection all run nsa_row, so a step gives the forward's numbers.
#include "nsa.h"

#include "../kernels/kernels.h"
#include "../kernels/size.h"

#include <math.h>
#include <string.h>

size_t nsa_max_selected(const aw_nsa_desc *ds) { return 3 + ds->top; }

size_t nsa_blocks(const aw_nsa_desc *ds, size_t T) { return T / ds->block; }

void nsa_block_means(float *kb, float *vb, const float *k, const float *v, size_t T, const aw_nsa_desc *ds) {
    const size_t C = ds->C, bs = ds->block, nb = nsa_blocks(ds, T);
    const float inv = 1.0f / (float)bs;
    for (size_t b = 0; b < nb; b++) {
        float *kr = kb + b * C, *vr = vb + b * C;
        memset(kr, 0, C * sizeof(float)), memset(vr, 0, C * sizeof(float));
        for (size_t i = b * bs; i < (b + 1) * bs; i++) aw_axpy(kr, 1.0f, k + i * C, C), aw_axpy(vr, 1.0f, v + i * C, C);
        for (size_t c = 0; c < C; c++) kr[c] *= inv, vr[c] *= inv;
    }
}

void nsa_block_means_backward(float *dk, float *dv, const float *dkb, const float *dvb, size_t T,
                              const aw_nsa_desc *ds) {
    const size_t C = ds->C, bs = ds->block, nb = nsa_blocks(ds, T);
    const float inv = 1.0f / (float)bs;
    for (size_t b = 0; b < nb; b++)
        for (size_t i = b * bs; i < (b + 1) * bs; i++) aw_axpy(dk + i * C, inv, dkb + b * C, C), aw_axpy(dv + i * C, inv, dvb + b * C, C);
}

// scratch: the compressed branch's weights (H, nb + 1), the importance and the chosen flags (nb + 1
// each), one head's weights by key (T)
size_t nsa_row_scratch_floats(const aw_nsa_desc *ds, size_t T) {
    const size_t nb = nsa_blocks(ds, T) + 1;
    return (ds->H + 2) * nb + T;
}

// The key ranges of the selection branch of row t: each selected block, cut at t.
static size_t selected_ranges(size_t *lo, size_t *hi, const float *sel, size_t S, size_t t, size_t bs) {
    size_t n = 0;
    for (size_t r = 0; r < S && sel[r] >= 0.0f; r++) {
        const size_t b = (size_t)sel[r];
        lo[n] = b * bs, hi[n] = (b + 1) * bs < t + 1 ? (b + 1) * bs : t + 1;
        n++;
    }
    return n;
}

// Softmax attention of one head's query qh (d) over the key rows of the ranges (rows of C floats, the
// head's columns at k, v): o (d) = sum_j p_j v_j, p (by key row) the weights; returns the
// log-sum-exp of the scaled scores, -INFINITY (o zero) when the ranges are empty.
static float attend(float *o, float *p, const float *qh, const float *k, const float *v, const size_t *lo,
                    const size_t *hi, size_t n, size_t C, size_t d, float scale) {
    float mx = -INFINITY;
    for (size_t r = 0; r < n; r++)
        for (size_t j = lo[r]; j < hi[r]; j++) {
            p[j] = aw_dot(qh, k + j * C, d) * scale;
            if (p[j] > mx) mx = p[j];
        }
    memset(o, 0, d * sizeof(float));
    if (mx == -INFINITY) return -INFINITY;
    float sum = 0.0f;
    for (size_t r = 0; r < n; r++)
        for (size_t j = lo[r]; j < hi[r]; j++) sum += (p[j] = expf(p[j] - mx));
    const float inv = 1.0f / sum;
    for (size_t r = 0; r < n; r++)
        for (size_t j = lo[r]; j < hi[r]; j++) aw_axpy(o, (p[j] *= inv), v + j * C, d);
    return mx + logf(sum);
}

// The backward of attend given do (d), D = do . o and its log-sum-exp: p_j = exp(s q.k_j - lse),
// dS_j = p_j (do . v_j - D); dq += s sum_j dS_j k_j, dk_j += s dS_j q, dv_j += p_j do.
static void attend_backward(float *dq, float *dk, float *dv, const float *dout, float D, float lse, const float *qh,
                            const float *k, const float *v, const size_t *lo, const size_t *hi, size_t n, size_t C,
                            size_t d, float scale) {
    if (lse == -INFINITY) return;
    for (size_t r = 0; r < n; r++)
        for (size_t j = lo[r]; j < hi[r]; j++) {
            const float p = expf(aw_dot(qh, k + j * C, d) * scale - lse);
            const float ds = p * (aw_dot(dout, v + j * C, d) - D);
            aw_axpy(dq, scale * ds, k + j * C, d);
            aw_axpy(dk + j * C, scale * ds, qh, d);
            aw_axpy(dv + j * C, p, dout, d);
        }
}

void nsa_row(float *out, float *branch, float *lse, float *sel, float *att, size_t att_stride, const float *q_t,
             const float *k, const float *v, const float *kb, const float *vb, const float *g, size_t t,
             float *scratch, const aw_nsa_desc *ds) {
    const size_t C = ds->C, H = ds->H, d = C / H, bs = ds->block, S = nsa_max_selected(ds);
    const size_t nvis = nsa_blocks(ds, t + 1), cur = t / bs, nb = nvis + 1;
    float *pc = scratch, *imp = pc + H * nb, *chosen = imp + nb, *p = chosen + nb; // p: (t + 1) by key
    float ocmp[C], o3[2][d]; // the compressed branch's output of every head; one head's other two
    for (size_t g0 = 0; g0 < H; g0 += ds->group) {
        // the compressed branch of the group's heads, and the blocks' importance summed over them
        memset(imp, 0, nb * sizeof(float));
        const size_t cmp_lo = 0, cmp_hi = nvis;
        for (size_t h = g0; h < g0 + ds->group; h++) {
            const float l = attend(ocmp + h * d, pc + h * nb, q_t + h * d, kb + h * d, vb + h * d, &cmp_lo, &cmp_hi, 1, C, d,
                                   ds->scale);
            if (branch) memcpy(branch + h * d, ocmp + h * d, d * sizeof(float));
            if (lse) lse[h * 3] = l;
            for (size_t b = 0; b < nvis; b++) imp[b] += pc[h * nb + b];
        }
        // the forced blocks, then the top ones by importance (ties: the lower block)
        memset(chosen, 0, nb * sizeof(float));
        chosen[0] = chosen[cur] = 1.0f;
        if (cur > 0) chosen[cur - 1] = 1.0f;
        for (size_t r = 0; r < ds->top; r++) {
            size_t best = nb;
            for (size_t b = 0; b < nvis; b++)
                if (chosen[b] == 0.0f && (best == nb || imp[b] > imp[best])) best = b;
            if (best == nb) break;
            chosen[best] = 1.0f;
        }
        float selrow[S];
        size_t n = 0;
        for (size_t b = 0; b <= cur; b++)
            if (chosen[b] != 0.0f) selrow[n++] = (float)b;
        for (size_t r = n; r < S; r++) selrow[r] = -1.0f;
        size_t lo[S], hi[S];
        const size_t nr = selected_ranges(lo, hi, selrow, S, t, bs);
        const size_t win_lo = t + 1 > ds->window ? t + 1 - ds->window : 0, win_hi = t + 1;
        for (size_t h = g0; h < g0 + ds->group; h++) {
            const float *qh = q_t + h * d, *gh = g + 3 * h;
            float *ah = att ? att + h * att_stride : NULL;
            if (sel) memcpy(sel + h * S, selrow, S * sizeof(float));
            if (ah) {
                memset(ah, 0, (t + 1) * sizeof(float));
                for (size_t b = 0; b < nvis && ds->mean; b++)
                    for (size_t j = b * bs; j < (b + 1) * bs; j++) ah[j] = gh[0] * pc[h * nb + b] / (float)bs;
            }
            const float ls = attend(o3[0], p, qh, k + h * d, v + h * d, lo, hi, nr, C, d, ds->scale);
            if (ah)
                for (size_t r = 0; r < nr; r++)
                    for (size_t j = lo[r]; j < hi[r]; j++) ah[j] += gh[1] * p[j];
            const float lw = attend(o3[1], p, qh, k + h * d, v + h * d, &win_lo, &win_hi, 1, C, d, ds->scale);
            if (ah)
                for (size_t j = win_lo; j < win_hi; j++) ah[j] += gh[2] * p[j];
            if (branch) memcpy(branch + C + h * d, o3[0], d * sizeof(float)), memcpy(branch + 2 * C + h * d, o3[1], d * sizeof(float));
            if (lse) lse[h * 3 + 1] = ls, lse[h * 3 + 2] = lw;
            float *oh = out + h * d;
            const float *oc = ocmp + h * d;
            for (size_t c = 0; c < d; c++) oh[c] = gh[0] * oc[c] + gh[1] * o3[0][c] + gh[2] * o3[1][c];
        }
    }
}

void nsa_row_backward(float *dq_t, float *dk, float *dv, float *dkb, float *dvb, float *dg, const float *dout_t,
                      const float *branch, const float *lse, const float *sel, const float *q_t, const float *k,
                      const float *v, const float *kb, const float *vb, const float *g, size_t t,
                      const aw_nsa_desc *ds) {
    const size_t C = ds->C, H = ds->H, d = C / H, bs = ds->block, S = nsa_max_selected(ds);
    const size_t nvis = nsa_blocks(ds, t + 1), cmp_lo = 0, cmp_hi = nvis;
    const size_t win_lo = t + 1 > ds->window ? t + 1 - ds->window : 0, win_hi = t + 1;
    float dob[d];
    for (size_t h = 0; h < H; h++) {
        const float *dh = dout_t + h * d, *qh = q_t + h * d, *gh = g + 3 * h;
        float *dqh = dq_t + h * d;
        size_t lo[S], hi[S];
        const size_t nr = selected_ranges(lo, hi, sel + h * S, S, t, bs);
        for (int br = 0; br < 3; br++) {
            const float *o = branch + (size_t)br * C + h * d;
            dg[3 * h + br] += aw_dot(dh, o, d); // out = sum g_br o_br
            for (size_t c = 0; c < d; c++) dob[c] = gh[br] * dh[c];
            const float D = aw_dot(dob, o, d), l = lse[h * 3 + br];
            if (br == 0)
                attend_backward(dqh, dkb + h * d, dvb + h * d, dob, D, l, qh, kb + h * d, vb + h * d, &cmp_lo, &cmp_hi,
                                1, C, d, ds->scale);
            else if (br == 1)
                attend_backward(dqh, dk + h * d, dv + h * d, dob, D, l, qh, k + h * d, v + h * d, lo, hi, nr, C, d,
                                ds->scale);
            else
                attend_backward(dqh, dk + h * d, dv + h * d, dob, D, l, qh, k + h * d, v + h * d, &win_lo, &win_hi, 1,
                                C, d, ds->scale);
        }
    }
}

size_t nsa_mlp_floats(const aw_nsa_desc *ds) {
    const size_t d = ds->C / ds->H, in = aw_size_mul(ds->block, d);
    return aw_size_add(in, aw_size_mul(2 * d, aw_size_add(in, d)));
}

void nsa_mlp_at(aw_nsa_mlp *w, float *p, const aw_nsa_desc *ds) {
    const size_t d = ds->C / ds->H, in = ds->block * d;
    w->pe = p, w->wk1 = p + in, w->wk2 = w->wk1 + d * in, w->wv1 = w->wk2 + d * d, w->wv2 = w->wv1 + d * in;
}

// x (bs d), a (d), da (d), dx (bs d)
size_t nsa_mlp_scratch_floats(const aw_nsa_desc *ds) {
    const size_t d = ds->C / ds->H;
    return aw_size_add(aw_size_mul3(2, ds->block, d), 2 * d);
}

// silu(a) = a sigmoid(a), and its derivative sigmoid(a) (1 + a (1 - sigmoid(a)))
static float silu(float a) { return a / (1.0f + expf(-a)); }
static float silu_grad(float a) {
    const float s = 1.0f / (1.0f + expf(-a));
    return s * (1.0f + a * (1.0f - s));
}

// One block and head: x (bs d) = concat_i(rows_i + pe_i) (rows C apart), a (d) = W1 x, y (d) = W2 silu(a).
static void mlp_one(float *y, float *x, float *a, const float *rows, size_t C, const float *pe, const float *W1,
                    const float *W2, size_t bs, size_t d) {
    for (size_t i = 0; i < bs; i++)
        for (size_t c = 0; c < d; c++) x[i * d + c] = rows[i * C + c] + pe[i * d + c];
    for (size_t o = 0; o < d; o++) a[o] = aw_dot(W1 + o * bs * d, x, bs * d);
    for (size_t o = 0; o < d; o++) {
        float z = 0.0f;
        for (size_t r = 0; r < d; r++) z += W2[o * d + r] * silu(a[r]);
        y[o] = z;
    }
}

// Its backward from dy (d), x and a as mlp_one left them: dW2 += dy silu(a)^T, da = (W2^T dy) silu'(a),
// dW1 += da x^T, dx = W1^T da into drows (rows C apart) and dpe.
static void mlp_one_backward(float *drows, size_t C, float *dpe, float *dW1, float *dW2, const float *dy,
                             const float *x, const float *a, float *da, float *dx, const float *W1, const float *W2,
                             size_t bs, size_t d) {
    const size_t in = bs * d;
    for (size_t r = 0; r < d; r++) {
        float z = 0.0f;
        for (size_t o = 0; o < d; o++) z += W2[o * d + r] * dy[o];
        da[r] = z * silu_grad(a[r]);
    }
    if (dW2)
        for (size_t o = 0; o < d; o++)
            for (size_t r = 0; r < d; r++) dW2[o * d + r] += dy[o] * silu(a[r]);
    memset(dx, 0, in * sizeof(float));
    for (size_t o = 0; o < d; o++) {
        aw_axpy(dx, da[o], W1 + o * in, in);
        if (dW1) aw_axpy(dW1 + o * in, da[o], x, in);
    }
    for (size_t i = 0; i < bs; i++) aw_axpy(drows + i * C, 1.0f, dx + i * d, d);
    if (dpe) aw_axpy(dpe, 1.0f, dx, in);
}

void nsa_block_mlp(float *kb, float *vb, const float *k, const float *v, size_t T, const aw_nsa_mlp *w,
                   float *scratch, const aw_nsa_desc *ds) {
    const size_t C = ds->C, d = C / ds->H, bs = ds->block, nb = nsa_blocks(ds, T);
    float *x = scratch, *a = x + bs * d;
    for (size_t b = 0; b < nb; b++)
        for (size_t h = 0; h < ds->H; h++) {
            mlp_one(kb + b * C + h * d, x, a, k + b * bs * C + h * d, C, w->pe, w->wk1, w->wk2, bs, d);
            mlp_one(vb + b * C + h * d, x, a, v + b * bs * C + h * d, C, w->pe, w->wv1, w->wv2, bs, d);
        }
}

void nsa_block_mlp_backward(float *dk, float *dv, const aw_nsa_mlp *g, const float *dkb, const float *dvb,
                            const float *k, const float *v, size_t T, const aw_nsa_mlp *w, float *scratch,
                            const aw_nsa_desc *ds) {
    const size_t C = ds->C, d = C / ds->H, bs = ds->block, nb = nsa_blocks(ds, T);
    float *x = scratch, *a = x + bs * d, *da = a + d, *dx = da + d, y[d];
    for (size_t b = 0; b < nb; b++)
        for (size_t h = 0; h < ds->H; h++) {
            const size_t row = b * bs * C + h * d, at = b * C + h * d;
            mlp_one(y, x, a, k + row, C, w->pe, w->wk1, w->wk2, bs, d); // x and a again
            mlp_one_backward(dk + row, C, g ? g->pe : NULL, g ? g->wk1 : NULL, g ? g->wk2 : NULL, dkb + at, x, a, da, dx,
                             w->wk1, w->wk2, bs, d);
            mlp_one(y, x, a, v + row, C, w->pe, w->wv1, w->wv2, bs, d);
            mlp_one_backward(dv + row, C, g ? g->pe : NULL, g ? g->wv1 : NULL, g ? g->wv2 : NULL, dvb + at, x, a, da, dx,
                             w->wv1, w->wv2, bs, d);
        }
}
