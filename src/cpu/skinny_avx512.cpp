// skinny_tile for AVX-512F (compiled with -mavx512f -mfma, see CMakeLists.txt; called only after
// a run-time check, cpu/skinny.cpp). 16 lanes; register block 4 token rows x 6 weight rows.
#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/skinny_kernel.h"

namespace hogwild::cpu {
namespace {

struct Avx512 {
  using V = __m512;
  static constexpr int kLanes = 16, kRows = 4, kCols = 6;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static float fma1(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  // The masked forms with every lane set: GCC 12's unmasked ones read _mm512_undefined_ps() and
  // warn (-Wmaybe-uninitialized, bug 105593).
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V select_nonneg(V x, V a, V b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ), b, a);
  }
  static V max(V a, V b) { return _mm512_mask_max_ps(a, 0xFFFF, a, b); }
  static V round(V v) { return _mm512_mask_roundscale_ps(v, 0xFFFF, v, _MM_FROUND_TO_NEAREST_INT); }
  static V scale2(V y, V t) { return _mm512_mask_scalef_ps(y, 0xFFFF, y, t); }
  static void prefetch(const float* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
  }
  // Halving tree: lanes i + 8, then i + 4, i + 2, i + 1.
  static float sum(V v) {
    // Halves through memory: GCC 12's 512 -> 256 casts warn (-Wuninitialized, bug 105593).
    alignas(64) float t[16];
    _mm512_store_ps(t, v);
    const __m256 s8 = _mm256_add_ps(_mm256_load_ps(t), _mm256_load_ps(t + 8));
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
    return _mm_cvtss_f32(s1);
  }
  // out[k] = sum(v_k) for four vectors at once, the same tree per vector (each addition adds the
  // same two partial sums as sum() does): 128-bit blocks 0 + 2 and 1 + 3 (lanes i + 8), then the
  // two halves left (i + 4), then i + 2 and i + 1 inside each block; vector k ends in block k.
  static void sum4(V a, V b, V c, V d, float* out) {
    const V ab = _mm512_add_ps(_mm512_mask_shuffle_f32x4(a, 0xFFFF, a, b, 0x44),
                               _mm512_mask_shuffle_f32x4(a, 0xFFFF, a, b, 0xEE));
    const V cd = _mm512_add_ps(_mm512_mask_shuffle_f32x4(c, 0xFFFF, c, d, 0x44),
                               _mm512_mask_shuffle_f32x4(c, 0xFFFF, c, d, 0xEE));
    const V x = _mm512_add_ps(_mm512_mask_shuffle_f32x4(ab, 0xFFFF, ab, cd, 0x88),
                              _mm512_mask_shuffle_f32x4(ab, 0xFFFF, ab, cd, 0xDD));
    const V y = _mm512_add_ps(x, _mm512_mask_permute_ps(x, 0xFFFF, x, _MM_SHUFFLE(1, 0, 3, 2)));
    const V z = _mm512_add_ps(y, _mm512_mask_permute_ps(y, 0xFFFF, y, _MM_SHUFFLE(2, 3, 0, 1)));
    alignas(64) float t[16];
    _mm512_store_ps(t, z);
    out[0] = t[0], out[1] = t[4], out[2] = t[8], out[3] = t[12];
  }
};

}  // namespace

void skinny_tile_avx512(const SkinnyArgs& a, int64_t o0, int64_t o1) {
  skinny_tile<Avx512>(a, o0, o1);
}

void weighted_sum_heads_avx512(const float* v, int64_t n, int64_t stride, int64_t dim,
                               const float* w, int64_t ldw, const float* c, float* const* o,
                               int64_t n_heads) {
  weighted_sum_heads<Avx512>(v, n, stride, dim, w, ldw, c, o, n_heads);
}

float softmax_chunk_avx512(float* w, int64_t n, float scale, float m_in, float* m_out) {
  return softmax_chunk<Avx512>(w, n, scale, m_in, m_out);
}

void silu_mul_avx512(const float* gate, const float* up, float* out, int64_t n) {
  silu_mul<Avx512>(gate, up, out, n);
}

}  // namespace hogwild::cpu
#endif
