// fp32 ops against hand-computed values (python3 math, double precision, quoted per test).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cpu/ops.h"
#include "cpu/skinny.h"

namespace hogwild::cpu {
namespace {

TEST(CpuOps, RmsNormMatchesHandValues) {
  // x=[1,2,3,4], w=[1,.5,2,1], eps=1e-6: x*w/sqrt(mean(x^2)+eps), mean(x^2)=7.5.
  const std::vector<float> x = {1, 2, 3, 4, 1, 2, 3, 4}, w = {1, 0.5f, 2, 1};
  std::vector<float> y(8);
  rmsnorm(x.data(), w.data(), y.data(), 2, 4, 1e-6f);
  const double ref[4] = {0.3651483473268884, 0.3651483473268884, 2.1908900839613303,
                         1.4605933893075536};
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[r * 4 + i], ref[i], 1e-6);
  // In place.
  std::vector<float> z = x;
  rmsnorm(z.data(), w.data(), z.data(), 2, 4, 1e-6f);
  EXPECT_EQ(z, y);
}

TEST(CpuOps, MatmulIsXTimesWTransposedPlusBias) {
  // x (2,3), W (2,3) [out,in]: y = x W^T + b = [[8, 23], [8, 27.5]].
  const std::vector<float> x = {1, 2, 3, 4, 5, 6}, W = {1, 0, -1, 0.5f, 0.5f, 0.5f}, b = {10, 20};
  std::vector<float> y(4, -1);
  matmul(x.data(), W.data(), b.data(), y.data(), 2, 3, 2);
  EXPECT_EQ(y, (std::vector<float>{8, 23, 8, 27.5f}));
  matmul(x.data(), W.data(), nullptr, y.data(), 2, 3, 2);
  EXPECT_EQ(y, (std::vector<float>{-2, 3, -2, 7.5f}));
  std::vector<float> y1(2, -1);
  matmul(x.data() + 3, W.data(), b.data(), y1.data(), 1, 3, 2);
  EXPECT_EQ(y1, (std::vector<float>{8, 27.5f}));
  matmul(x.data(), W.data(), nullptr, y1.data(), 1, 3, 2);
  EXPECT_EQ(y1, (std::vector<float>{-2, 3}));
}

// Every path (the skinny kernel of each instruction set this CPU has for 1..64 rows, in
// register blocks of up to 4 rows; SGEMM for 65+ rows) against a double reference, with
// in = 16k + tail sizes and out not a multiple of the register groups or the 48-feature tiles.
TEST(CpuOps, MatmulPathsMatchDoubleReference) {
  const std::vector<int64_t> row_counts = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 64, 65};
  for (const char* isa : {"avx512", "avx2", "generic"}) {
    if (!select_skinny_isa(isa)) continue;
    for (int64_t in : {1, 7, 16, 37, 200}) {
      for (int64_t out : {1, 5, 33, 101}) {
        for (int64_t rows : row_counts) {
          std::vector<float> x(rows * in), W(out * in), b(out);
          for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * double(i) + 0.1 * rows);
          for (size_t i = 0; i < W.size(); ++i) W[i] = std::cos(0.11 * double(i) + 0.05 * out);
          for (size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * float(i) - 1.0f;
          for (bool with_bias : {false, true}) {
            std::vector<float> y(rows * out, 123.0f);
            matmul(x.data(), W.data(), with_bias ? b.data() : nullptr, y.data(), rows, in, out);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t o = 0; o < out; ++o) {
                double ref = with_bias ? b[o] : 0.0;
                double mag = std::fabs(ref);
                for (int64_t k = 0; k < in; ++k) {
                  ref += double(x[r * in + k]) * W[o * in + k];
                  mag += std::fabs(double(x[r * in + k]) * W[o * in + k]);
                }
                // fp32 accumulation: error within a few ulps of the sum of magnitudes.
                EXPECT_NEAR(y[r * out + o], ref, 1e-6 * mag + 1e-7)
                    << isa << " in " << in << " out " << out << " rows " << rows << " bias "
                    << with_bias;
              }
          }
        }
      }
    }
  }
  for (const char* isa : {"avx512", "avx2", "generic"})
    if (select_skinny_isa(isa)) break;  // back to the best one
}

// The skinny kernel's ORDER OF REDUCTION (cpu/skinny_kernel.h), emulated in scalar code: per
// lane l an FMA chain over k = l, l + L, ... in increasing k, the halving tree over the lanes,
// the scalar tail, then the bias. Every instruction set this CPU has must give these bits for
// every row of 1..9-row batches (all the ways the kernel groups its accumulators for the sums).
TEST(CpuOps, SkinnyFollowsItsOrderOfReductionBitForBit) {
  struct Isa {
    const char* name;
    int lanes;
    bool fused;
  };
  for (const Isa isa : {Isa{"avx512", 16, true}, Isa{"avx2", 8, true}, Isa{"generic", 8, false}}) {
    if (!select_skinny_isa(isa.name)) continue;
    for (int64_t in : {16, 48, 37, 200}) {
      for (int64_t out : {1, 7, 13}) {
        for (int64_t rows = 1; rows <= 9; ++rows) {
          std::vector<float> x(rows * in), W(out * in), b(out);
          for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.71 * double(i) + 0.3 * rows);
          for (size_t i = 0; i < W.size(); ++i) W[i] = std::cos(0.23 * double(i) + 0.7 * out);
          for (size_t i = 0; i < b.size(); ++i) b[i] = 0.5f * float(i) - 2.0f;
          std::vector<float> y(rows * out);
          matmul(x.data(), W.data(), b.data(), y.data(), rows, in, out);
          const int64_t L = isa.lanes, in_l = in / L * L;
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < out; ++o) {
              std::vector<float> p(L, 0.0f);
              for (int64_t l = 0; l < L; ++l)
                for (int64_t k = l; k < in_l; k += L) {
                  const float w = W[o * in + k], v = x[r * in + k];
                  if (isa.fused) {
                    p[l] = std::fma(w, v, p[l]);
                  } else {
                    const volatile float prod = w * v;  // no contraction into an FMA
                    p[l] = prod + p[l];
                  }
                }
              for (int64_t n = L / 2; n >= 1; n /= 2)
                for (int64_t i = 0; i < n; ++i) p[i] += p[i + n];
              float s = p[0];
              for (int64_t k = in_l; k < in; ++k) {
                if (isa.fused) {
                  s = std::fma(W[o * in + k], x[r * in + k], s);
                } else {
                  const volatile float prod = W[o * in + k] * x[r * in + k];
                  s = prod + s;
                }
              }
              s += b[o];
              EXPECT_EQ(y[r * out + o], s) << isa.name << " in " << in << " out " << out << " rows "
                                           << rows << " row " << r << " o " << o;
            }
        }
      }
    }
  }
  for (const char* isa : {"avx512", "avx2", "generic"})
    if (select_skinny_isa(isa)) break;  // back to the best one
}

// Projections sharing one input (q/k/v) give the same bits as one matmul each.
TEST(CpuOps, MatmulSharedEqualsSeparateMatmuls) {
  const int64_t in = 40, rows = 3;
  std::vector<float> x(rows * in), Wq(70 * in), Wk(20 * in), bq(70);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.3 * double(i));
  for (size_t i = 0; i < Wq.size(); ++i) Wq[i] = std::cos(0.07 * double(i));
  for (size_t i = 0; i < Wk.size(); ++i) Wk[i] = std::sin(0.05 * double(i) + 1);
  for (size_t i = 0; i < bq.size(); ++i) bq[i] = 0.1f * float(i);
  std::vector<float> q(rows * 70), k(rows * 20), q1(rows * 70), k1(rows * 20);
  matmul_shared(x.data(), rows, in,
                {{Wq.data(), bq.data(), q.data(), 70}, {Wk.data(), nullptr, k.data(), 20}});
  matmul(x.data(), Wq.data(), bq.data(), q1.data(), rows, in, 70);
  matmul(x.data(), Wk.data(), nullptr, k1.data(), rows, in, 20);
  EXPECT_EQ(q, q1);
  EXPECT_EQ(k, k1);
  EXPECT_NE(q[5], 0.0f);
}

TEST(CpuOps, SiluSwigluEmbedding) {
  // silu(1), silu(-2), silu(0.5) * 3 (python3 math).
  const std::vector<float> g = {1.0f, -2.0f, 0.5f}, u = {1.0f, 1.0f, 3.0f};
  std::vector<float> o(3);
  swiglu(g.data(), u.data(), o.data(), 3);
  EXPECT_NEAR(o[0], 0.7310585786300049, 1e-7);
  EXPECT_NEAR(o[1], -0.2384058440442351, 1e-7);
  EXPECT_NEAR(o[2], 0.933688996802782, 1e-6);
  const std::vector<float> table = {0, 1, 10, 11, 20, 21};
  const int32_t ids[3] = {2, 0, 2};
  std::vector<float> e(6);
  embedding(table.data(), ids, 3, 2, e.data());
  EXPECT_EQ(e, (std::vector<float>{20, 21, 0, 1, 20, 21}));
}

TEST(CpuOps, AttentionPartialsMergeByLogSumExp) {
  // q=[1,0], keys [1,0],[0,1],[2,0] -> scores 1,0,2 (scale 1); values [1,2],[3,4],[5,6].
  // softmax-weighted output = [3.841024969440049, 4.841024969440048]; m=2, d=1.503214724408055.
  const std::vector<float> q = {1, 0}, k = {1, 0, 0, 1, 2, 0}, v = {1, 2, 3, 4, 5, 6};
  std::vector<float> o_all(2), o_a(2), o_b(2), o_e(2), out(2);
  AttnState all{0, 0, o_all.data()}, a{0, 0, o_a.data()}, b{0, 0, o_b.data()}, e{0, 0, o_e.data()};
  attn_state_init(all, 2);
  attn_partial(q.data(), k.data(), v.data(), 3, 2, 2, 1.0f, all);
  EXPECT_FLOAT_EQ(all.m, 2.0f);
  EXPECT_NEAR(all.d, 1.503214724408055, 1e-6);
  attn_state_normalize(all, out.data(), 2);
  EXPECT_NEAR(out[0], 3.841024969440049, 1e-5);
  EXPECT_NEAR(out[1], 4.841024969440048, 1e-5);
  // Split into blocks {0,1} and {2}; merge, with an empty block merged on both sides.
  attn_state_init(a, 2);
  attn_state_init(b, 2);
  attn_state_init(e, 2);
  EXPECT_EQ(e.m, -std::numeric_limits<float>::infinity());
  attn_partial(q.data(), k.data(), v.data(), 2, 2, 2, 1.0f, a);
  attn_partial(q.data(), k.data() + 4, v.data() + 4, 1, 2, 2, 1.0f, b);
  attn_state_merge(e, a, 2);  // empty <- a
  attn_state_merge(e, b, 2);
  AttnState empty{0, 0, o_a.data()};
  attn_state_init(empty, 2);
  attn_state_merge(e, empty, 2);  // a state <- empty: unchanged
  attn_state_normalize(e, out.data(), 2);
  EXPECT_NEAR(e.d, 1.503214724408055, 1e-6);
  EXPECT_NEAR(out[0], 3.841024969440049, 1e-5);
  EXPECT_NEAR(out[1], 4.841024969440048, 1e-5);
}

// More keys than one 64-key chunk, head_dim with a tail past the vector lanes (and one shorter
// than a vector), a row stride, a state that already holds keys, two query heads of one group:
// softmax attention in double as the reference; each head alone gives the same bits.
void attention_partial_matches_double_softmax(const char* isa) {
  for (int64_t hd : {8, 37, 128})
    for (int64_t n : {1, 64, 65, 200}) {
      const int64_t stride = hd + 3;
      std::vector<float> q(hd), k(n * stride), v(n * stride), o(hd), out(hd);
      for (int64_t i = 0; i < hd; ++i) q[i] = std::sin(0.7 * double(i) + 0.2);
      for (size_t i = 0; i < k.size(); ++i) k[i] = std::cos(0.13 * double(i)) * 1.5f;
      for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.29 * double(i) + 1.0);
      const float scale = 1.0f / std::sqrt(float(hd));
      AttnState s{0, 0, o.data()};
      attn_state_init(s, hd);
      const int64_t split = n / 3;  // two calls: the second starts from a non-empty state
      attn_partial(q.data(), k.data(), v.data(), split, stride, hd, scale, s);
      attn_partial(q.data(), k.data() + split * stride, v.data() + split * stride, n - split,
                   stride, hd, scale, s);
      attn_state_normalize(s, out.data(), hd);
      std::vector<double> sc(n), ref(hd, 0.0);
      double m = -1e300, d = 0;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t i = 0; i < hd; ++i) dot += double(q[i]) * k[j * stride + i];
        sc[j] = dot * scale;
        m = std::max(m, sc[j]);
      }
      for (int64_t j = 0; j < n; ++j) {
        const double w = std::exp(sc[j] - m);
        d += w;
        for (int64_t i = 0; i < hd; ++i) ref[i] += w * v[j * stride + i];
      }
      EXPECT_NEAR(s.m, m, 1e-5) << hd << " " << n;
      for (int64_t i = 0; i < hd; ++i)
        EXPECT_NEAR(out[i], ref[i] / d, 1e-5)
            << isa << " head_dim " << hd << " keys " << n << " i " << i;
      // The same head as the second of a group of two (the first: another query).
      std::vector<float> q2(2 * hd), o2(2 * hd);
      for (int64_t i = 0; i < hd; ++i) q2[i] = std::cos(0.3 * double(i)), q2[hd + i] = q[i];
      AttnState s2[2] = {{0, 0, o2.data()}, {0, 0, o2.data() + hd}};
      attn_state_init(s2[0], hd);
      attn_state_init(s2[1], hd);
      attn_partial(q2.data(), 2, k.data(), v.data(), split, stride, hd, scale, s2);
      attn_partial(q2.data(), 2, k.data() + split * stride, v.data() + split * stride, n - split,
                   stride, hd, scale, s2);
      EXPECT_EQ(s2[1].m, s.m);
      EXPECT_EQ(s2[1].d, s.d);
      EXPECT_EQ(std::vector<float>(o2.begin() + hd, o2.end()), o) << isa << " " << hd << " " << n;
    }
}

TEST(CpuOps, AttentionPartialOverChunksMatchesDoubleSoftmax) {
  for (const char* isa : {"avx512", "avx2", "generic"}) {
    if (!select_skinny_isa(isa)) continue;
    attention_partial_matches_double_softmax(isa);
  }
  for (const char* isa : {"avx512", "avx2", "generic"})
    if (select_skinny_isa(isa)) break;  // back to the best one
}

// softmax_chunk (the vectorised exp of attention's softmax) against std::exp in double: every
// weight within 4e-7 relative (the polynomial's ~2e-7 plus the roundings), the max exact, the sum
// within 1e-6; vector bodies and tails (n not a multiple of the 8 or 16 lanes), a running max from
// an earlier chunk above every score, and scores far enough below the max that the clamp at -87
// applies (their weight is then at most 1.7e-38).
TEST(CpuOps, SoftmaxChunkMatchesDoubleExp) {
  for (const char* isa : {"avx512", "avx2", "generic"}) {
    if (!select_skinny_isa(isa)) continue;
    for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 64}) {
      for (float m_in : {-std::numeric_limits<float>::infinity(), 40.0f, -3.0f}) {
        std::vector<float> w(n);
        for (int64_t j = 0; j < n; ++j)
          w[j] = static_cast<float>(30.0 * std::sin(1.7 * double(j) + 0.3 * n) -
                                    (j % 5 == 4 ? 90.0 : 0.0));
        const std::vector<float> raw = w;
        const float scale = 0.75f;
        double m = m_in;
        for (int64_t j = 0; j < n; ++j) m = std::max(m, double(raw[j] * scale));
        float m_out = 0;
        const float sum = softmax_chunk(w.data(), n, scale, m_in, &m_out);
        EXPECT_EQ(m_out, static_cast<float>(m)) << isa << " n " << n;
        double ref_sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          // The argument as the kernel forms it (one fp32 subtraction); the error measured is
          // the exp's own.
          const double x = raw[j] * scale - static_cast<float>(m);
          const double ref = std::exp(x);
          ref_sum += ref;
          if (x >= -87.0)
            EXPECT_NEAR(w[j], ref, 4e-7 * ref) << isa << " n " << n << " j " << j << " x " << x;
          else
            EXPECT_LE(w[j], 1.7e-38f) << isa << " n " << n << " j " << j << " x " << x;
        }
        EXPECT_NEAR(sum, ref_sum, 1e-6 * ref_sum + 1e-37) << isa << " n " << n;
      }
    }
  }
  for (const char* isa : {"avx512", "avx2", "generic"})
    if (select_skinny_isa(isa)) break;  // back to the best one
}

// silu_mul (the MLP's SwiGLU, vectorised) against x / (1 + exp(-x)) * u in double, for each
// instruction set: relative error within 1e-6 for |x| up to 80; beyond 87 the exp is clamped, so
// large negative x give a result within 1e-30 of the (tiny) true one; tails of every length.
TEST(CpuOps, SiluMulMatchesDoubleReference) {
  for (const char* isa : {"avx512", "avx2", "generic"}) {
    if (!select_skinny_isa(isa)) continue;
    for (int64_t n : {1, 5, 8, 16, 23, 100}) {
      std::vector<float> g(n), u(n), out(n);
      for (int64_t i = 0; i < n; ++i) {
        g[i] = static_cast<float>(80.0 * std::sin(0.9 * double(i) + n) * std::cos(0.3 * double(i)));
        u[i] = static_cast<float>(1.5 + std::cos(1.1 * double(i)));
      }
      g[0] = n % 2 ? 0.0f : -100.0f;  // zero; far below the clamp
      silu_mul(g.data(), u.data(), out.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = double(g[i]) / (1.0 + std::exp(-double(g[i]))) * u[i];
        EXPECT_NEAR(out[i], ref, 1e-6 * std::fabs(ref) + 1e-30)
            << isa << " n " << n << " x " << g[i];
      }
      // In place over gate: the same values.
      std::vector<float> g2 = g;
      silu_mul(g2.data(), u.data(), g2.data(), n);
      EXPECT_EQ(g2, out) << isa;
    }
  }
  for (const char* isa : {"avx512", "avx2", "generic"})
    if (select_skinny_isa(isa)) break;  // back to the best one
}

// The attention value sum of several heads at once: each head's bits equal its sum alone (heads
// grouped by 4 in registers, the rest one by one), and the values match a double reference, for
// head counts around the group size and dims with vector and scalar tails, every instruction set.
TEST(CpuOps, WeightedSumHeadsMatchesOneHeadAndDoubleReference) {
  for (const char* isa : {"avx512", "avx2", "generic"}) {
    if (!select_skinny_isa(isa)) continue;
    for (int64_t dim : {128, 64, 72, 100})
      for (int64_t n_heads : {1, 3, 4, 5, 8, 9}) {
        const int64_t n = 37, stride = dim + 3, ldw = 64;
        std::vector<float> v(n * stride), w(n_heads * ldw), c(n_heads);
        for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.37 * double(i)));
        for (size_t i = 0; i < w.size(); ++i)
          w[i] = static_cast<float>(0.5 + 0.5 * std::cos(1.3 * double(i)));
        std::vector<std::vector<float>> o(n_heads, std::vector<float>(dim)), alone = o;
        std::vector<float*> op(n_heads);
        for (int64_t h = 0; h < n_heads; ++h) {
          c[h] = h % 3 == 0 ? 1.0f : static_cast<float>(0.25 * double(h));
          for (int64_t i = 0; i < dim; ++i)
            o[h][i] = static_cast<float>(std::cos(0.11 * double(i + 7 * h)));
          alone[h] = o[h];
          op[h] = o[h].data();
        }
        std::vector<std::vector<double>> want(n_heads, std::vector<double>(dim));
        for (int64_t h = 0; h < n_heads; ++h)
          for (int64_t i = 0; i < dim; ++i) {
            double a = double(o[h][i]) * c[h];
            for (int64_t j = 0; j < n; ++j) a += double(w[h * ldw + j]) * v[j * stride + i];
            want[h][i] = a;
          }
        weighted_sum_heads(v.data(), n, stride, dim, w.data(), ldw, c.data(), op.data(), n_heads);
        for (int64_t h = 0; h < n_heads; ++h) {
          float* one = alone[h].data();
          weighted_sum_heads(v.data(), n, stride, dim, w.data() + h * ldw, ldw, &c[h], &one, 1);
          EXPECT_EQ(o[h], alone[h]) << isa << " dim " << dim << " heads " << n_heads << " h " << h;
          for (int64_t i = 0; i < dim; ++i)
            EXPECT_NEAR(o[h][i], want[h][i], 1e-5 * (1.0 + std::fabs(want[h][i])))
                << isa << " dim " << dim << " h " << h << " i " << i;
        }
      }
  }
  for (const char* isa : {"avx512", "avx2", "generic"})
    if (select_skinny_isa(isa)) break;  // back to the best one
}

}  // namespace
}  // namespace hogwild::cpu
