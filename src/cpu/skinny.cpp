#include "cpu/skinny.h"

#include <cstring>
#include <vector>

#include "core/error.h"
#include "cpu/parallel.h"

namespace hogwild::cpu {

// Defined in skinny_<isa>.cpp (the x86 ones only on x86-64).
void skinny_tile_avx512(const SkinnyArgs& a, int64_t o0, int64_t o1);
void skinny_tile_avx2(const SkinnyArgs& a, int64_t o0, int64_t o1);
void skinny_tile_generic(const SkinnyArgs& a, int64_t o0, int64_t o1);
void weighted_sum_heads_avx512(const float* v, int64_t n, int64_t stride, int64_t dim,
                               const float* w, int64_t ldw, const float* c, float* const* o,
                               int64_t n_heads);
void weighted_sum_heads_avx2(const float* v, int64_t n, int64_t stride, int64_t dim, const float* w,
                             int64_t ldw, const float* c, float* const* o, int64_t n_heads);
void weighted_sum_heads_generic(const float* v, int64_t n, int64_t stride, int64_t dim,
                                const float* w, int64_t ldw, const float* c, float* const* o,
                                int64_t n_heads);
float softmax_chunk_avx512(float* w, int64_t n, float scale, float m_in, float* m_out);
float softmax_chunk_avx2(float* w, int64_t n, float scale, float m_in, float* m_out);
float softmax_chunk_generic(float* w, int64_t n, float scale, float m_in, float* m_out);
void silu_mul_avx512(const float* gate, const float* up, float* out, int64_t n);
void silu_mul_avx2(const float* gate, const float* up, float* out, int64_t n);
void silu_mul_generic(const float* gate, const float* up, float* out, int64_t n);

namespace {

using TileFn = void (*)(const SkinnyArgs&, int64_t, int64_t);
using WeightedSumFn = void (*)(const float*, int64_t, int64_t, int64_t, const float*, int64_t,
                               const float*, float* const*, int64_t);
using SoftmaxFn = float (*)(float*, int64_t, float, float, float*);
using SiluMulFn = void (*)(const float*, const float*, float*, int64_t);

struct Isa {
  const char* name;
  TileFn tile;
  WeightedSumFn weighted_sum_heads;
  SoftmaxFn softmax_chunk;
  SiluMulFn silu_mul;
};

bool cpu_has(const char* name) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (std::strcmp(name, "avx512") == 0) return __builtin_cpu_supports("avx512f");
  if (std::strcmp(name, "avx2") == 0)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return std::strcmp(name, "generic") == 0;
}

// Best first.
const std::vector<Isa>& isas() {
  static const std::vector<Isa> v = {
#if defined(__x86_64__)
    {"avx512", skinny_tile_avx512, weighted_sum_heads_avx512, softmax_chunk_avx512,
     silu_mul_avx512},
    {"avx2", skinny_tile_avx2, weighted_sum_heads_avx2, softmax_chunk_avx2, silu_mul_avx2},
#endif
    {"generic", skinny_tile_generic, weighted_sum_heads_generic, softmax_chunk_generic,
     silu_mul_generic}
  };
  return v;
}

const Isa*& current() {
  static const Isa* cur = [] {
    for (const Isa& i : isas())
      if (cpu_has(i.name)) return &i;
    return &isas().back();
  }();
  return cur;
}

// Output features per parallel_for item: whole register groups of every instruction set
// (6, 3 and 4 weight rows), 48 rows = 192 KiB of W at in = 1024.
constexpr int64_t kTileOut = 48;
constexpr size_t kMaxProjections = 8;

}  // namespace

const char* skinny_isa() { return current()->name; }

bool select_skinny_isa(const char* name) {
  for (const Isa& i : isas())
    if (std::strcmp(i.name, name) == 0 && cpu_has(name)) {
      current() = &i;
      return true;
    }
  return false;
}

void skinny_dots(const SkinnyArgs& a, int64_t out) {
  if (a.n_rows > 0 && out > 0) current()->tile(a, 0, out);
}

void weighted_sum_heads(const float* v, int64_t n, int64_t stride, int64_t dim, const float* w,
                        int64_t ldw, const float* c, float* const* o, int64_t n_heads) {
  current()->weighted_sum_heads(v, n, stride, dim, w, ldw, c, o, n_heads);
}

float softmax_chunk(float* w, int64_t n, float scale, float m_in, float* m_out) {
  return current()->softmax_chunk(w, n, scale, m_in, m_out);
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  current()->silu_mul(gate, up, out, n);
}

void skinny_matmul(const float* x, int64_t n_rows, int64_t in,
                   std::initializer_list<SkinnyProjection> projections) {
  if (n_rows <= 0) return;
  if (projections.size() > kMaxProjections)
    fail("skinny_matmul: {} projections in one call, at most {}", projections.size(),
         kMaxProjections);
  // Items: the output tiles of every projection, in order.
  int64_t first[kMaxProjections], n_items = 0;
  const SkinnyProjection* proj = projections.begin();
  const int n_proj = static_cast<int>(projections.size());
  for (int p = 0; p < n_proj; ++p) {
    first[p] = n_items;
    n_items += (proj[p].out + kTileOut - 1) / kTileOut;
  }
  const TileFn tile = current()->tile;
  parallel_for(n_items, [&](int64_t item, int) {
    int p = n_proj - 1;
    while (first[p] > item) --p;
    const SkinnyProjection& P = proj[p];
    const int64_t o0 = (item - first[p]) * kTileOut;
    const int64_t o1 = o0 + kTileOut < P.out ? o0 + kTileOut : P.out;
    tile({x, n_rows, in, P.W, in, P.bias, P.y, P.out}, o0, o1);
  });
}

}  // namespace hogwild::cpu
