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
  static void prefetch(const float* p) { __builtin_prefetch(p, 0, 2); }
  // Halving tree: lanes i + 4, then i + 2, i + 1.
  static float sum(V v) {
    for (int n = 4; n >= 1; n /= 2)
      for (int i = 0; i < n; ++i) v.l[i] += v.l[i + n];
    return v.l[0];
  }
};

}  // namespace

void skinny_tile_generic(const SkinnyArgs& a, int64_t o0, int64_t o1) {
  skinny_tile<Generic>(a, o0, o1);
}

void weighted_sum_generic(const float* v, int64_t n, int64_t stride, int64_t dim, const float* w,
                          float c, float* o) {
  weighted_sum<Generic>(v, n, stride, dim, w, c, o);
}

}  // namespace hogwild::cpu
