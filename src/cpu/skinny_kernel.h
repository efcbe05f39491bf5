// Bodies of the skinny projection kernel and of the attention value sum (cpu/skinny.h), written
// once against a small SIMD interface and compiled once per instruction set: skinny_avx512.cpp,
// skinny_avx2.cpp and skinny_generic.cpp each define an `Isa` struct in an anonymous namespace
// and instantiate skinny_tile<Isa> and weighted_sum_heads<Isa>. Every instantiation therefore has
// internal linkage, so code built with AVX-512 flags can never be picked by the linker for a caller
// on an older CPU. Include only from those files; use no std:: inline helpers here for the same
// reason.
//
// Isa provides:
//   V                         a vector of kLanes fp32 lanes
//   kLanes, kRows, kCols      lanes per vector; register block = kRows token rows x kCols weight
//                             rows (kRows * kCols accumulators + kCols weight vectors + 1)
//   zero(), set1(x), load(p), store(p, v), mul(a, b), fma(a, b, c) = a * b + c (fused, one
//   rounding, where the instruction set has it), sum(v) (fixed tree, below)
//   sum4(a, b, c, d, out)     out[k] = sum(k-th vector), the same bits as four sum() calls
//   fma1(a, b, c)             the scalar twin of fma (fused where the vector one is)
//   add(a, b), sub(a, b), div(a, b), max(a, b), round(v) (to the nearest integer, ties to even),
//   select_nonneg(x, a, b) = lane-wise x >= 0 ? a : b,
//   scale2(y, t) = y * 2^t for integer-valued t in [-126, 0] (exact: a power of two)
//   prefetch(p)               hint that p is read soon, into L2 (prefetcht1: one core streamed
//                             ~25 GB/s against ~19 with prefetcht0 or none on an AMD EPYC
//                             Zen 4 core)
//
// ORDER OF REDUCTION (what makes a row's result independent of the batch): the output y[r][o] of
// token row r and output feature o is
//   P[l]   = fma chain over k = l, l + kLanes, l + 2 kLanes, ... < inL in increasing k, from 0
//            (inL = in rounded down to a multiple of kLanes; l in [0, kLanes));
//   s      = sum(P) by the fixed halving tree: P[i] += P[i + n/2] for n = kLanes, ..., 2;
//   s      = fma1(W[o][k], x[r][k], s) for k = inL .. in - 1 in increasing k (tail);
//   y[r][o] = s (+ bias[o] when given: one addition).
// It reads only x row r and W row o. How rows and features are grouped in registers, how tiles
// are split over threads and how many rows the batch has change which chains run side by side,
// never the operations of one chain.
#pragma once

#include <cstdint>

#include "cpu/skinny.h"

namespace hogwild::cpu {
namespace {

// Dot products of R token rows (x, (R, in) with row stride in) with kCols weight rows w[c] (in
// values each), written to out[r * kCols + c]. next, ldw: the first weight row of the next group
// and the weight row stride, for prefetching the next group while this one streams (nullptr: no
// prefetch, e.g. when the group is re-read from cache).
template <class Isa, int R>
inline void skinny_dots(const float* x, int64_t in, const float* const* w, const float* next,
                        int64_t ldw, float* out) {
  constexpr int C = Isa::kCols, L = Isa::kLanes;
  using V = typename Isa::V;
  V acc[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[r][c] = Isa::zero();
  int64_t k = 0;
  for (; k + L <= in; k += L) {
    V wv[C];
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) wv[c] = Isa::load(w[c] + k);
    if (next) {
      // One cache line of the next group's rows per line of this group's: C rows ahead.
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c) Isa::prefetch(next + c * ldw + k);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const V xv = Isa::load(x + r * in + k);
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c) acc[r][c] = Isa::fma(wv[c], xv, acc[r][c]);
    }
  }
  // The R x C sums, four accumulators at a time (in (r, c) order), then the tails.
  float sums[R * C];
#pragma GCC unroll 16
  for (int i = 0; i + 4 <= R * C; i += 4)
    Isa::sum4(acc[i / C][i % C], acc[(i + 1) / C][(i + 1) % C], acc[(i + 2) / C][(i + 2) % C],
              acc[(i + 3) / C][(i + 3) % C], sums + i);
#pragma GCC unroll 4
  for (int i = R * C / 4 * 4; i < R * C; ++i) sums[i] = Isa::sum(acc[i / C][i % C]);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      float s = sums[r * C + c];
      for (int64_t t = k; t < in; ++t) s = Isa::fma1(w[c][t], x[r * in + t], s);
      out[r * C + c] = s;
    }
}

// Rows [r0, r0 + nr) against one weight group, nr in [1, kRows]: the register block of nr rows.
template <class Isa, int R = Isa::kRows>
inline void skinny_rows(int nr, const float* x, int64_t in, const float* const* w,
                        const float* next, int64_t ldw, float* out) {
  if constexpr (R > 1) {
    if (nr < R) return skinny_rows<Isa, R - 1>(nr, x, in, w, next, ldw, out);
  }
  skinny_dots<Isa, R>(x, in, w, next, ldw, out);
}

// y[r * ldy + o] = x[r] . W[o] (+ bias[o]) for every row r < n_rows and o in [o0, o1) (see
// SkinnyArgs, cpu/skinny.h). Weight rows are taken kCols at a time and streamed from memory once;
// each group is dotted with all n_rows token rows (kRows per pass; passes after the first read
// the group from L1/L2).
template <class Isa>
void skinny_tile(const SkinnyArgs& a, int64_t o0, int64_t o1) {
  constexpr int C = Isa::kCols, RM = Isa::kRows;
  float res[RM * C];
  for (int64_t o = o0; o < o1; o += C) {
    const int nc = o1 - o < C ? static_cast<int>(o1 - o) : C;
    const float* w[C];
    // A short last group repeats its last row (read from cache, results dropped).
    for (int c = 0; c < C; ++c) w[c] = a.W + (o + (c < nc ? c : nc - 1)) * a.ldw;
    const float* next = o + C < o1 ? a.W + (o + C) * a.ldw : nullptr;
    for (int64_t r0 = 0; r0 < a.n_rows; r0 += RM) {
      const int nr = a.n_rows - r0 < RM ? static_cast<int>(a.n_rows - r0) : RM;
      skinny_rows<Isa>(nr, a.x + r0 * a.in, a.in, w, r0 == 0 ? next : nullptr, a.ldw, res);
      for (int r = 0; r < nr; ++r) {
        float* y = a.y + (r0 + r) * a.ldy + o;
        for (int c = 0; c < nc; ++c)
          y[c] = a.bias ? res[r * C + c] + a.bias[o + c] : res[r * C + c];
      }
    }
  }
}

// H heads x B vectors of o (dims i0 ..) in registers while the n value rows stream: each value
// vector loaded once is used by H heads. Every element is one chain, o[h][i] * c[h] first, then
// fma(w[h][j], v[j][i], .) in increasing j, whatever the lane it sits in.
template <class Isa, int H, int B>
inline void weighted_sum_block(const float* v, int64_t n, int64_t stride, int64_t i0,
                               const float* const* w, const float* c, float* const* o) {
  constexpr int L = Isa::kLanes;
  using V = typename Isa::V;
  V acc[H][B];
#pragma GCC unroll 4
  for (int h = 0; h < H; ++h) {
    const V ch = Isa::set1(c[h]);
#pragma GCC unroll 4
    for (int b = 0; b < B; ++b) acc[h][b] = Isa::mul(Isa::load(o[h] + i0 + b * L), ch);
  }
  for (int64_t j = 0; j < n; ++j) {
    V vb[B];
#pragma GCC unroll 4
    for (int b = 0; b < B; ++b) vb[b] = Isa::load(v + j * stride + i0 + b * L);
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
      const V wj = Isa::set1(w[h][j]);
#pragma GCC unroll 4
      for (int b = 0; b < B; ++b) acc[h][b] = Isa::fma(wj, vb[b], acc[h][b]);
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < H; ++h)
#pragma GCC unroll 4
    for (int b = 0; b < B; ++b) Isa::store(o[h] + i0 + b * L, acc[h][b]);
}

// H heads over all dims: register blocks of B vectors, then single vectors, then the scalar tail
// (the same chain per element: fma1 where the vectors use fma).
template <class Isa, int H>
inline void weighted_sum_group(const float* v, int64_t n, int64_t stride, int64_t dim,
                               const float* const* w, const float* c, float* const* o) {
  constexpr int L = Isa::kLanes, B = H == 1 || L >= 16 ? 4 : 2;
  int64_t i0 = 0;
  for (; i0 + B * L <= dim; i0 += B * L) weighted_sum_block<Isa, H, B>(v, n, stride, i0, w, c, o);
  for (; i0 + L <= dim; i0 += L) weighted_sum_block<Isa, H, 1>(v, n, stride, i0, w, c, o);
  for (int h = 0; h < H; ++h)
    for (int64_t i = i0; i < dim; ++i) {
      float a = o[h][i] * c[h];
      for (int64_t j = 0; j < n; ++j) a = Isa::fma1(w[h][j], v[j * stride + i], a);
      o[h][i] = a;
    }
}

// The value sum of n_heads heads over the same n value rows (cpu/skinny.h weighted_sum_heads):
// groups of 4 heads share each value vector load, the heads past the last whole group go one by
// one; a head's bits do not depend on which group it is in.
template <class Isa>
void weighted_sum_heads(const float* v, int64_t n, int64_t stride, int64_t dim, const float* w,
                        int64_t ldw, const float* c, float* const* o, int64_t n_heads) {
  constexpr int H = 4;
  int64_t h0 = 0;
  for (; h0 + H <= n_heads; h0 += H) {
    const float* wp[H];
    for (int h = 0; h < H; ++h) wp[h] = w + (h0 + h) * ldw;
    weighted_sum_group<Isa, H>(v, n, stride, dim, wp, c + h0, o + h0);
  }
  for (; h0 < n_heads; ++h0) {
    const float* wp = w + h0 * ldw;
    weighted_sum_group<Isa, 1>(v, n, stride, dim, &wp, c + h0, o + h0);
  }
}

// exp(x) for x <= 0, lane by lane (the softmax weights of attention, below). Range reduction
// x = t ln 2 + r with t = round(x log2 e), |r| <= ln 2 / 2, ln 2 split in two constants so that r
// is exact; exp(r) by the degree-7 minimax polynomial of the Cephes expf (relative error about
// 2e-7); then times 2^t. x below -87 is taken as -87 (exp = 1.6e-38, not 0: a weight that small
// changes no sum of weights that holds a 1). One fixed sequence of operations per lane.
template <class Isa>
inline typename Isa::V exp_nonpositive(typename Isa::V x) {
  using V = typename Isa::V;
  x = Isa::max(x, Isa::set1(-87.0f));
  const V t = Isa::round(Isa::mul(x, Isa::set1(1.44269504088896341f)));
  V r = Isa::fma(t, Isa::set1(-0.693359375f), x);
  r = Isa::fma(t, Isa::set1(2.12194440e-4f), r);
  V p = Isa::set1(1.9875691500e-4f);
  p = Isa::fma(p, r, Isa::set1(1.3981999507e-3f));
  p = Isa::fma(p, r, Isa::set1(8.3334519073e-3f));
  p = Isa::fma(p, r, Isa::set1(4.1665795894e-2f));
  p = Isa::fma(p, r, Isa::set1(1.6666665459e-1f));
  p = Isa::fma(p, r, Isa::set1(5.0000001201e-1f));
  const V y = Isa::add(Isa::fma(p, Isa::mul(r, r), r), Isa::set1(1.0f));
  return Isa::scale2(y, t);
}

// One chunk of an online softmax (attention, cpu/ops.cpp attn_partial): w[j] = w[j] * scale;
// m = max(m_in, max_j w[j]); w[j] = exp(w[j] - m); returns sum_j w[j] and sets *m_out = m.
// Order: the max is exact in any order; the sum adds lane l's weights j = l, l + kLanes, ... in
// increasing j, then the lanes by the halving tree of sum(), then the last n mod kLanes weights in
// increasing j. It depends on n and the scores only, never on the batch.
template <class Isa>
float softmax_chunk(float* w, int64_t n, float scale, float m_in, float* m_out) {
  constexpr int L = Isa::kLanes;
  using V = typename Isa::V;
  const V sv = Isa::set1(scale);
  V mv = Isa::set1(m_in);
  int64_t j = 0;
  for (; j + L <= n; j += L) {
    const V x = Isa::mul(Isa::load(w + j), sv);
    Isa::store(w + j, x);
    mv = Isa::max(mv, x);
  }
  float lanes[L];
  Isa::store(lanes, mv);
  float m = m_in;
  for (int l = 0; l < L; ++l) m = lanes[l] > m ? lanes[l] : m;
  const int64_t n_full = j;
  for (; j < n; ++j) {
    w[j] *= scale;
    m = w[j] > m ? w[j] : m;
  }
  const V mm = Isa::set1(m);
  V acc = Isa::zero();
  for (j = 0; j < n_full; j += L) {
    const V e = exp_nonpositive<Isa>(Isa::sub(Isa::load(w + j), mm));
    Isa::store(w + j, e);
    acc = Isa::add(acc, e);
  }
  float s = Isa::sum(acc);
  if (n_full < n) {  // the tail through one vector: lanes past n are computed and dropped
    for (int l = 0; l < L; ++l) lanes[l] = n_full + l < n ? w[n_full + l] : m;
    Isa::store(lanes, exp_nonpositive<Isa>(Isa::sub(Isa::load(lanes), mm)));
    for (int64_t k = n_full; k < n; ++k) {
      w[k] = lanes[k - n_full];
      s += w[k];
    }
  }
  *m_out = m;
  return s;
}

// out[i] = silu(gate[i]) * up[i] for i < n (the SwiGLU of the MLP), silu(x) = x sigmoid(x) with
// sigmoid(x) = (x >= 0 ? 1 : e) / (1 + e), e = exp(-|x|) (exp_nonpositive: no overflow for any
// x). Lane by lane; the last n mod kLanes elements go through one padded vector. out may alias
// gate or up.
template <class Isa>
void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  constexpr int L = Isa::kLanes;
  using V = typename Isa::V;
  const V one = Isa::set1(1.0f), zero = Isa::zero();
  auto one_vector = [&](V x, V u) {
    const V e = exp_nonpositive<Isa>(Isa::sub(zero, Isa::max(x, Isa::sub(zero, x))));
    const V s = Isa::div(Isa::select_nonneg(x, one, e), Isa::add(one, e));
    return Isa::mul(Isa::mul(x, s), u);
  };
  int64_t i = 0;
  for (; i + L <= n; i += L)
    Isa::store(out + i, one_vector(Isa::load(gate + i), Isa::load(up + i)));
  if (i < n) {
    float g[L], u[L];
    for (int l = 0; l < L; ++l) {
      g[l] = i + l < n ? gate[i + l] : 0.0f;
      u[l] = i + l < n ? up[i + l] : 0.0f;
    }
    Isa::store(g, one_vector(Isa::load(g), Isa::load(u)));
    for (int64_t k = i; k < n; ++k) out[k] = g[k - i];
  }
}

}  // namespace
}  // namespace hogwild::cpu
