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
  static V load(const float* p) {
    V v;
    for (int i = 0; i < 8; ++i) v.l[i] = p[i];
    return v;
  }
  static V fma(V a, V b, V c) {
    for (int i = 0; i < 8; ++i) c.l[i] = a.l[i] * b.l[i] + c.l[i];
    return c;
  }
  static float fma1(float a, float b, float c) { return a * b + c; }
  static void prefetch(const float* p) { __builtin_prefetch(p); }
  // Halving tree: lanes i + 4, then i + 2, i + 1.
  static float sum(V v) {
    for (int n = 4; n >= 1; n /= 2)
      for (int i = 0; i < n; ++i) v.l[i] += v.l[i + n];
    return v.l[0];
  }
};

}  // namespace

void skinny_tile_generic(const float* x, const float* W, const float* bias, float* y,
                         int64_t n_rows, int64_t in, int64_t out, int64_t o0, int64_t o1) {
  skinny_tile<Generic>(x, W, bias, y, n_rows, in, out, o0, o1);
}

}  // namespace hogwild::cpu
