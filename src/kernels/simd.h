// simd.h: the thin layer between kernels and the vector instruction set.
//
// One f32x4 vocabulary, three back ends chosen at compile time:
//   __wasm_simd128__  WebAssembly SIMD128 (the shipped attention.wasm); with __wasm_relaxed_simd__
//                     (attention-relaxed.wasm, built by clang-19) aw_madd is the fused
//                     f32x4.relaxed_madd, which an engine runs as one FMA where the CPU has it
//   __SSE2__          x86-64 SSE2, so the native sanitizer suite runs the same vector code
//   (neither)         AW_SIMD == 0: kernels take their scalar paths (attention-scalar.wasm)
// Every vector loop in the kernels keeps a scalar tail, and every kernel keeps a complete
// scalar path, so AW_SIMD == 0 builds are whole.
#ifndef AW_SIMD_H
#define AW_SIMD_H

#include <stdint.h>

#if defined(AW_FORCE_SCALAR)
#define AW_SIMD 0
#elif defined(__wasm_simd128__)
#define AW_SIMD 1
#include <wasm_simd128.h>
typedef v128_t aw_f32x4;
typedef v128_t aw_i32x4;
#define aw_load(p) wasm_v128_load(p)
#define aw_store(p, x) wasm_v128_store((p), (x))
#define aw_splat(x) wasm_f32x4_splat(x)
#define aw_add(a, b) wasm_f32x4_add((a), (b))
#define aw_sub(a, b) wasm_f32x4_sub((a), (b))
#define aw_mul(a, b) wasm_f32x4_mul((a), (b))
#define aw_div(a, b) wasm_f32x4_div((a), (b))
#define aw_max(a, b) wasm_f32x4_pmax((a), (b))
#define aw_min(a, b) wasm_f32x4_pmin((a), (b))
#if defined(__wasm_relaxed_simd__)
#define AW_RELAXED 1
#define aw_madd(acc, a, b) wasm_f32x4_relaxed_madd((a), (b), (acc))
#else
#define aw_madd(acc, a, b) wasm_f32x4_add((acc), wasm_f32x4_mul((a), (b)))
#endif
#define aw_lt(a, b) wasm_f32x4_lt((a), (b))
#define aw_gt(a, b) wasm_f32x4_gt((a), (b))
#define aw_select(mask, a, b) wasm_v128_bitselect((a), (b), (mask)) // mask ? a : b
#define aw_and(a, b) wasm_v128_and((a), (b))
#define aw_round(x) wasm_f32x4_nearest(x)
#define aw_cvt_i32(x) wasm_i32x4_trunc_sat_f32x4(x) // x already integral
#define aw_i32_add(a, b) wasm_i32x4_add((a), (b))
#define aw_i32_splat(x) wasm_i32x4_splat(x)
#define aw_i32_shl(a, n) wasm_i32x4_shl((a), (n))
#define aw_cast_f32(x) (x)
static inline float aw_hsum(aw_f32x4 x) {
    return wasm_f32x4_extract_lane(x, 0) + wasm_f32x4_extract_lane(x, 1) +
           wasm_f32x4_extract_lane(x, 2) + wasm_f32x4_extract_lane(x, 3);
}
static inline float aw_hmax(aw_f32x4 x) {
    float a = wasm_f32x4_extract_lane(x, 0), b = wasm_f32x4_extract_lane(x, 1);
    float c = wasm_f32x4_extract_lane(x, 2), d = wasm_f32x4_extract_lane(x, 3);
    a = a > b ? a : b;
    c = c > d ? c : d;
    return a > c ? a : c;
}
#elif defined(__SSE2__)
#define AW_SIMD 1
#include <emmintrin.h>
typedef __m128 aw_f32x4;
typedef __m128i aw_i32x4;
#define aw_load(p) _mm_loadu_ps(p)
#define aw_store(p, x) _mm_storeu_ps((p), (x))
#define aw_splat(x) _mm_set1_ps(x)
#define aw_add(a, b) _mm_add_ps((a), (b))
#define aw_sub(a, b) _mm_sub_ps((a), (b))
#define aw_mul(a, b) _mm_mul_ps((a), (b))
#define aw_div(a, b) _mm_div_ps((a), (b))
#define aw_max(a, b) _mm_max_ps((a), (b))
#define aw_min(a, b) _mm_min_ps((a), (b))
#define aw_madd(acc, a, b) _mm_add_ps((acc), _mm_mul_ps((a), (b)))
#define aw_lt(a, b) _mm_cmplt_ps((a), (b))
#define aw_gt(a, b) _mm_cmpgt_ps((a), (b))
#define aw_select(mask, a, b) _mm_or_ps(_mm_and_ps((mask), (a)), _mm_andnot_ps((mask), (b)))
#define aw_and(a, b) _mm_and_ps((a), (b))
#define aw_round(x) _mm_cvtepi32_ps(_mm_cvtps_epi32(x)) // |x| < 2^31 here
#define aw_cvt_i32(x) _mm_cvttps_epi32(x)
#define aw_i32_add(a, b) _mm_add_epi32((a), (b))
#define aw_i32_splat(x) _mm_set1_epi32(x)
#define aw_i32_shl(a, n) _mm_slli_epi32((a), (n))
#define aw_cast_f32(x) _mm_castsi128_ps(x)
static inline float aw_hsum(aw_f32x4 x) {
    float t[4];
    _mm_storeu_ps(t, x);
    return t[0] + t[1] + t[2] + t[3];
}
static inline float aw_hmax(aw_f32x4 x) {
    float t[4];
    _mm_storeu_ps(t, x);
    float a = t[0] > t[1] ? t[0] : t[1], c = t[2] > t[3] ? t[2] : t[3];
    return a > c ? a : c;
}
#else
#define AW_SIMD 0
#endif
#ifndef AW_RELAXED
#define AW_RELAXED 0
#endif

// BF16 (the top 16 bits of a float32) widened to float32: a 16-bit shift, exact. aw_bf16 one value
// (every build); with AW_SIMD, aw_load_bf16x8 widens 8 values (16 bytes) into two vectors by
// interleaving them with zeros, and aw_load_bf16x4 widens 4 (8 bytes).
static inline float aw_bf16(uint16_t h) {
    union { uint32_t u; float f; } v = {(uint32_t)h << 16};
    return v.f;
}
#if AW_SIMD && defined(__wasm_simd128__)
static inline void aw_load_bf16x8(const uint16_t *p, aw_f32x4 *lo, aw_f32x4 *hi) {
    const v128_t v = wasm_v128_load(p), z = wasm_i32x4_splat(0);
    *lo = wasm_i16x8_shuffle(z, v, 0, 8, 1, 9, 2, 10, 3, 11);
    *hi = wasm_i16x8_shuffle(z, v, 4, 12, 5, 13, 6, 14, 7, 15);
}
static inline aw_f32x4 aw_load_bf16x4(const uint16_t *p) { return wasm_i32x4_shl(wasm_u32x4_load16x4(p), 16); }
#elif AW_SIMD
static inline void aw_load_bf16x8(const uint16_t *p, aw_f32x4 *lo, aw_f32x4 *hi) {
    const __m128i v = _mm_loadu_si128((const __m128i *)p), z = _mm_setzero_si128();
    *lo = _mm_castsi128_ps(_mm_unpacklo_epi16(z, v));
    *hi = _mm_castsi128_ps(_mm_unpackhi_epi16(z, v));
}
static inline aw_f32x4 aw_load_bf16x4(const uint16_t *p) {
    return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), _mm_loadl_epi64((const __m128i *)p)));
}
#endif

#endif
