// skinny_tile for AVX2 + FMA (compiled with -mavx2 -mfma, see CMakeLists.txt; called only after a
// run-time check, cpu/skinny.cpp). 8 lanes; register block 4 token rows x 3 weight rows.
#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/skinny_kernel.h"

namespace hogwild::cpu {
namespace {

struct Avx2 {
  using V = __m256;
  static constexpr int kLanes = 8, kRows = 4, kCols = 3;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float fma1(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V select_nonneg(V x, V a, V b) {
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
  }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V round(V v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^t built in the exponent field (t + 127 in [1, 127]: a normal number).
  static V scale2(V y, V t) {
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(t), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  }
  static void prefetch(const float* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
  }
  // Halving tree: lanes i + 4, then i + 2, i + 1.
  static float sum(V v) {
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
    return _mm_cvtss_f32(s1);
  }
  static void sum4(V a, V b, V c, V d, float* out) {
    out[0] = sum(a), out[1] = sum(b), out[2] = sum(c), out[3] = sum(d);
  }
};

}  // namespace

void skinny_tile_avx2(const SkinnyArgs& a, int64_t o0, int64_t o1) { skinny_tile<Avx2>(a, o0, o1); }

void weighted_sum_heads_avx2(const float* v, int64_t n, int64_t stride, int64_t dim, const float* w,
                             int64_t ldw, const float* c, float* const* o, int64_t n_heads) {
  weighted_sum_heads<Avx2>(v, n, stride, dim, w, ldw, c, o, n_heads);
}

float softmax_chunk_avx2(float* w, int64_t n, float scale, float m_in, float* m_out) {
  return softmax_chunk<Avx2>(w, n, scale, m_in, m_out);
}

void silu_mul_avx2(const float* gate, const float* up, float* out, int64_t n) {
  silu_mul<Avx2>(gate, up, out, n);
}

}  // namespace hogwild::cpu
#endif
