// skinny_tile in portable C++ (any CPU; compiled with -ffp-contract=off so that a * b + c stays
// two roundings everywhere, see CMakeLists.txt). 8 lanes held in arrays (the compiler may map
// them to SSE/NEON registers); register block 2 token rows x 4 weight rows.
#include "cpu/skinny_kernel.h"

namespace hogwild::cpu {
namespace {

struct Generic {
  struct V {
    float l[8];
  };
  static constexpr int kLanes = 8, kRows = 2, kCols = 4;
  static V zero() { return V{}; }
  static V set1(float x) {
    V v;
    for (int i = 0; i < 8; ++i) v.l[i] = x;
    return v;
  }
  static V load(const float* p) {
    V v;
    for (int i = 0; i < 8; ++i) v.l[i] = p[i];
    return v;
  }
  static void store(float* p, V v) {
    for (int i = 0; i < 8; ++i) p[i] = v.l[i];
  }
  static V mul(V a, V b) {
    for (int i = 0; i < 8; ++i) a.l[i] *= b.l[i];
    return a;
  }
  static V fma(V a, V b, V c) {
    for (int i = 0; i < 8; ++i) c.l[i] = a.l[i] * b.l[i] + c.l[i];
    return c;
  }
  static float fma1(float a, float b, float c) { return a * b + c; }
  static V add(V a, V b) {
    for (int i = 0; i < 8; ++i) a.l[i] += b.l[i];
    return a;
  }
  static V sub(V a, V b) {
    for (int i = 0; i < 8; ++i) a.l[i] -= b.l[i];
    return a;
  }
  static V div(V a, V b) {
    for (int i = 0; i < 8; ++i) a.l[i] /= b.l[i];
    return a;
  }
  static V select_nonneg(V x, V a, V b) {
    for (int i = 0; i < 8; ++i) a.l[i] = x.l[i] >= 0.0f ? a.l[i] : b.l[i];
    return a;
  }
  static V max(V a, V b) {
    for (int i = 0; i < 8; ++i) a.l[i] = a.l[i] > b.l[i] ? a.l[i] : b.l[i];
    return a;
  }
  static V round(V v) {
    for (int i = 0; i < 8; ++i) v.l[i] = __builtin_nearbyintf(v.l[i]);  // ties to even
    return v;
  }
  // 2^t built in the exponent field (t + 127 in [1, 127]: a normal number).
  static V scale2(V y, V t) {
    for (int i = 0; i < 8; ++i) {
      const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(t.l[i]) + 127) << 23;
      float p;
      __builtin_memcpy(&p, &bits, sizeof p);
      y.l[i] *= p;
    }
    return y;
  }
  static void prefetch(const float* p) { __builtin_prefetch(p, 0, 2); }
  // Halving tree: lanes i + 4, then i + 2, i + 1.
  static float sum(V v) {
    for (int n = 4; n >= 1; n /= 2)
      for (int i = 0; i < n; ++i) v.l[i] += v.l[i + n];
    return v.l[0];
  }
  static void sum4(V a, V b, V c, V d, float* out) {
    out[0] = sum(a), out[1] = sum(b), out[2] = sum(c), out[3] = sum(d);
  }
};

}  // namespace

void skinny_tile_generic(const SkinnyArgs& a, int64_t o0, int64_t o1) {
  skinny_tile<Generic>(a, o0, o1);
}

void weighted_sum_heads_generic(const float* v, int64_t n, int64_t stride, int64_t dim,
                                const float* w, int64_t ldw, const float* c, float* const* o,
                                int64_t n_heads) {
  weighted_sum_heads<Generic>(v, n, stride, dim, w, ldw, c, o, n_heads);
}

float softmax_chunk_generic(float* w, int64_t n, float scale, float m_in, float* m_out) {
  return softmax_chunk<Generic>(w, n, scale, m_in, m_out);
}

void silu_mul_generic(const float* gate, const float* up, float* out, int64_t n) {
  silu_mul<Generic>(gate, up, out, n);
}

}  // namespace hogwild::cpu
