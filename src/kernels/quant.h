// quant.h: weights in fewer bits, multiplied by integer dot products (the decoder's gemv).
//
// A weight format is a row of AW_QFORMATS: its block layout, its quantize, its dot kernel; the
// gemv (aw_qgemv) and the model read the table and never branch on a format's name.
//   q8_0  llama2.c's runq.c (and ggml's Q8_0): int8 in [-127, 127], one float32 scale per group
//         of G values along a row: w = q s with s = max|w| / 127, q = round(w / s).
//   q4_0  ggml's Q4_0 values with float32 scales: groups of 32, s = m / -8 where m is the group's
//         value of largest magnitude (sign kept), u = min(15, (int)(w / s + 8.5)) in [0, 15],
//         w = (u - 8) s. Group g's 16 bytes hold value i in the low nibble of byte i and value
//         i + 16 in the high nibble (ggml's block_q4_0 order).
// Activations are quantized per group of G on the fly, as runq.c does (q8_0's rule, into
// [-127, 127]); a group's dot product is then a sum of integer products, exact in int32 whatever
// the order, and the float scaling runs in one fixed order: y = sum_g ((float)isum_g * sw_g) * sx_g,
// g ascending. So every build (scalar, SIMD128, relaxed SIMD) and every thread count gives the
// same bits.
//
// The kernels (quant.c) take four rows of W at once, one from each quarter of its rows, so every
// load of x serves four rows and each lane streams forwards through its quarter. SIMD128 widens both
// operands to i16 (x once per call, aw_qact.q16) and multiplies with i32x4.dot_i16x8_s. The relaxed
// build uses i16x8.relaxed_dot_i8x16_i7x16_s, whose result every engine defines the same way when
// each element of its second operand lies in [0, 127] (engines may read that operand as signed or
// as unsigned; x86's pmaddubsw reads it unsigned): for q4_0 that operand is the stored nibble u in
// [0, 15], and the -8 comes off as 8 sum_i x_i per group (aw_qact.sum), an exact integer; for q8_0
// it is x's positive part and then its negative part (aw_qact.pos, neg: w x = w pos - w neg), each
// i16 lane w0 x0 + w1 x1 of at most 2 * 128 * 127 in size. A weight of -128 (a version 2 file may
// hold one; quantize never writes it) is exact in both.
//   bf16  not an integer format: the top 16 bits of each float32 (loadHuggingFace's dtype 'bf16'), no
//         scales and no groups. A bf16 matrix keeps its float32 tensor's layout ((in, out) for a
//         linear layer, (out, in) for a tied classifier's copy of wte) and is multiplied by
//         aw_matmul_nn_bf16 / _nt_bf16 (kernels.h), which widen it in registers and give the bits
//         the float32 kernels give; it has no row_dot, and aw_qgemv and aw_qlinear do not take it.
#ifndef AW_QUANT_H
#define AW_QUANT_H

#include <stddef.h>
#include <stdint.h>

enum aw_qformat_id { AW_QF_NONE = 0, AW_QF_Q8_0 = 1, AW_QF_Q4_0 = 2, AW_QF_BF16 = 3, AW_QF_COUNT = 4 };
enum { AW_QGROUP_MAX = 256 }; // the largest group: 256 * 127 * 127 fits int32 with room

// An activation row quantized for aw_qgemv: K values in groups of G.
typedef struct {
    const int8_t *q;    // (K) round(x / s) in [-127, 127]
    const float *s;     // (K / G) each group's scale, max|x| / 127
    const int32_t *sum; // (K / G) each group's sum of q (q4_0's -8)
    const int16_t *q16; // (K) q widened (the SIMD128 kernels; else 0)
    const uint8_t *pos, *neg; // (K) max(q, 0) and max(-q, 0) (the relaxed build's q8_0 kernel; else 0)
    size_t K, G;
} aw_qact;

// A quantized matrix: rows of the output, each of `cols` inputs (W^T of x W).
typedef struct aw_qmat {
    int format;      // enum aw_qformat_id
    size_t rows;     // outputs
    size_t cols;     // inputs (the dot products' length), a multiple of group
    size_t group;    // values per scale
    uint8_t *q;      // (rows, row_bytes(cols)) the values (int8 for q8_0, two nibbles a byte for q4_0; bf16:
                     // rows x cols uint16 in its float32 tensor's layout)
    float *s;        // (rows, cols / group) the scales (bf16: none, NULL)
} aw_qmat;

typedef struct {
    const char *name;        // "q8_0"
    int bits;                // bits per value
    size_t fixed_group;      // 0: any group that divides the rows (a multiple of 16 up to AW_QGROUP_MAX); else that group
    int classifier;          // the classifier's format: llama.cpp keeps output.weight in more bits than its
                             // 4-bit types (Q6_K there); here q4_0 models keep a q8_0 classifier (same group)
    size_t default_group;    // the group when none is asked for (q8_0: 64, halved until it divides every row, as
                             // llama2.c's export.py does)
    // bytes of a row of n values (n a multiple of the group)
    size_t (*row_bytes)(size_t n);
    // quantizes n values of x (n a multiple of G) into q (row_bytes(n)) and s (n / G)
    void (*quantize_row)(uint8_t *q, float *s, const float *x, size_t n, size_t G);
    // dequantizes one row: out (n)
    void (*dequantize_row)(float *out, const uint8_t *q, const float *s, size_t n, size_t G);
    // a row's value against an activation: sum_g ((float)isum_g * ws[g]) * x->s[g], g ascending, isum_g
    // the integer dot product of group g; ws (K / G) the row's scales
    float (*row_dot)(const uint8_t *q, const float *ws, const aw_qact *x);
    float (*row_dot_ref)(const uint8_t *q, const float *ws, const aw_qact *x); // plain C, every build
} aw_qformat;

extern const aw_qformat AW_QFORMATS[AW_QF_COUNT]; // row 0: fp32 (no quantization)
// The format named `name` (AW_QF_NONE when unknown).
int aw_qformat_find(const char *name);
// 1 when `format` takes groups of `group` values: a multiple of 16 up to AW_QGROUP_MAX (the kernels'
// step), and the format's fixed group if it has one (0 for bf16, which has no groups).
int aw_qgroup_valid(int format, size_t group);

// Bytes aw_qact_init needs for K values in groups of G (AW_SIZE_INVALID when it does not fit).
size_t aw_qact_bytes(size_t K, size_t G);
// Quantizes x (K) into an activation carved from mem (aw_qact_bytes(K, G), 16-byte aligned).
void aw_qact_init(aw_qact *a, void *mem, const float *x, size_t K, size_t G);

// y (N rows) (+)= W x for a quantized W (N, K) and an activation row (K); y[j] = (b ? b[j] : 0) +
// sum_g ((float)isum_g * sw_g) * sx_g. Threads: blocks of rows, fixed by N and K alone.
void aw_qgemv(float *y, const aw_qmat *w, const aw_qact *x, const float *b);
// out (N, OC) = x (N, IC) W^T + b for a quantized W (OC rows of IC): each row of x quantized into
// work (aw_qact_bytes(IC, group) bytes, 16-byte aligned: the caller's, so nothing is allocated here), then aw_qgemv.
void aw_qlinear(float *out, const float *x, const aw_qmat *w, const float *b, size_t N, void *work);
// The same through the plain-C dot kernels, one thread: the reference the fast paths must equal bit for bit.
void aw_qlinear_ref(float *out, const float *x, const aw_qmat *w, const float *b, size_t N, void *work);

// Bytes of a quantized matrix's values and scales (bf16: 2 a value; group is not read).
size_t aw_qmat_bytes(int format, size_t rows, size_t cols, size_t group);

#endif
