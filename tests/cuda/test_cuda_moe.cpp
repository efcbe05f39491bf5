// The mixture-of-experts kernels (cuda/moe.h) against the sparse block computed here from its
// definition (transformers models/qwen3_moe/modeling_qwen3_moe.py, Qwen3MoeSparseMoeBlock):
// softmax over the router logits in fp32, top-k (ties: lower expert index), renormalised when
// norm_topk_prob, the weighted sum of the chosen experts' SwiGLU MLPs. Row counts cover the one,
// two and four n-tile kernels and experts with more rows than one pass; batch invariance is
// checked bit for bit. Quantized experts (int4, fp8) against the same definition over their
// dequantized weights.
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "cpu/ops.h"
#include "cuda/moe.h"
#include "cuda/quant_gemm.h"
#include "cuda_test_util.h"
#include "model/quant.h"

namespace hogwild {
namespace {

using test::DeviceArray;
using test::rel_error;
using test::round_bf16;
using test::to_bf16;
using test::to_f32;
using bf16 = __nv_bfloat16;

struct Shape {
  int64_t T, H, I, E, k;
  bool norm;
};

struct Inputs {
  std::vector<float> x, logits, wgu, wd;  // x, weights already bf16-exact
};

Inputs make_inputs(const Shape& s, uint32_t seed, bool ties = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Inputs in;
  in.x.resize(s.T * s.H);
  for (float& v : in.x) v = nd(rng);
  in.x = round_bf16(in.x);
  in.logits.resize(s.T * s.E);
  for (float& v : in.logits) v = 2.0f * nd(rng);
  if (ties)  // equal logits: the lower expert index must win
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t e = 0; e < s.E; ++e) in.logits[t * s.E + e] = float((e * 7 + t) % 3);
  in.wgu.resize(s.E * 2 * s.I * s.H);
  for (float& v : in.wgu) v = nd(rng) / std::sqrt(float(s.H));
  in.wgu = round_bf16(in.wgu);
  in.wd.resize(s.E * s.H * s.I);
  for (float& v : in.wd) v = nd(rng) / std::sqrt(float(s.I));
  in.wd = round_bf16(in.wd);
  return in;
}

struct Choice {
  std::vector<int32_t> expert;  // (T, k) ascending
  std::vector<float> weight;
};

Choice route_ref(const Shape& s, const std::vector<float>& logits) {
  Choice c;
  for (int64_t t = 0; t < s.T; ++t) {
    const float* l = &logits[t * s.E];
    const float mx = *std::max_element(l, l + s.E);
    std::vector<double> p(s.E);
    double sum = 0;
    for (int64_t e = 0; e < s.E; ++e) sum += p[e] = std::exp(double(l[e]) - mx);
    for (double& v : p) v /= sum;
    std::vector<int32_t> idx(s.E);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
    idx.resize(s.k);
    double ws = 0;
    for (int32_t e : idx) ws += p[e];
    std::sort(idx.begin(), idx.end());
    for (int32_t e : idx) {
      c.expert.push_back(e);
      c.weight.push_back(float(s.norm ? p[e] / ws : p[e]));
    }
  }
  return c;
}

// out (T, H) in double from the reference routing; act rounded to bf16 as the kernel stores it.
std::vector<float> moe_ref(const Shape& s, const Inputs& in, const Choice& c) {
  std::vector<float> out(s.T * s.H, 0.0f);
  for (int64_t t = 0; t < s.T; ++t) {
    std::vector<double> acc(s.H, 0.0);
    for (int64_t j = 0; j < s.k; ++j) {
      const int64_t e = c.expert[t * s.k + j];
      const float* wg = &in.wgu[e * 2 * s.I * s.H];
      const float* wu = wg + s.I * s.H;
      std::vector<float> act(s.I);
      for (int64_t i = 0; i < s.I; ++i) {
        double g = 0, u = 0;
        for (int64_t h = 0; h < s.H; ++h) {
          g += double(in.x[t * s.H + h]) * wg[i * s.H + h];
          u += double(in.x[t * s.H + h]) * wu[i * s.H + h];
        }
        act[i] = __bfloat162float(__float2bfloat16(float(g / (1.0 + std::exp(-g)) * u)));
      }
      const float* wd = &in.wd[e * s.H * s.I];
      for (int64_t h = 0; h < s.H; ++h) {
        double y = 0;
        for (int64_t i = 0; i < s.I; ++i) y += double(act[i]) * wd[h * s.I + i];
        acc[h] += c.weight[t * s.k + j] * y;
      }
    }
    for (int64_t h = 0; h < s.H; ++h) out[t * s.H + h] = float(acc[h]);
  }
  return out;
}

struct GpuResult {
  std::vector<int32_t> expert, rows, assign, active, counts, offsets;
  std::vector<float> weight;
  int32_t n_active = 0;
  std::vector<float> out;
};

GpuResult run_gpu(const Shape& s, const Inputs& in) {
  DeviceArray<float> logits(in.logits);
  DeviceArray<bf16> x(to_bf16(in.x)), wgu(to_bf16(in.wgu)), wd(to_bf16(in.wd));
  DeviceArray<char> mem(cuda::moe_route_bytes(s.T, s.E, s.k));
  DeviceArray<bf16> act(s.T * s.k * s.I), out(s.T * s.H);
  DeviceArray<float> y(s.T * s.k * s.H);
  const cuda::MoeRoute r = cuda::moe_route_view(mem.p, s.T, s.E, s.k);
  cuda::moe_route(logits.p, s.T, s.E, s.k, s.norm, r, nullptr);
  cuda::moe_expert_swiglu(x.p, wgu.p, r, act.p, s.T, s.H, s.I, s.E, s.k, nullptr);
  cuda::moe_expert_down(act.p, wd.p, r, y.p, s.T, s.H, s.I, s.E, s.k, nullptr);
  cuda::moe_combine(y.p, r, out.p, s.T, s.H, s.k, nullptr);
  HOGWILD_CUDA_CHECK(cudaDeviceSynchronize());
  auto get_i = [](const int32_t* p, int64_t n) {
    std::vector<int32_t> h(n);
    HOGWILD_CUDA_CHECK(cudaMemcpy(h.data(), p, n * 4, cudaMemcpyDeviceToHost));
    return h;
  };
  GpuResult g;
  const int64_t tk = s.T * s.k;
  g.expert = get_i(r.expert, tk);
  g.rows = get_i(r.rows, tk);
  g.assign = get_i(r.assign, tk);
  g.n_active = get_i(r.n_active, 1)[0];
  g.active = get_i(r.active, g.n_active);
  g.counts = get_i(r.counts, g.n_active);
  g.offsets = get_i(r.offsets, g.n_active);
  g.weight.resize(tk);
  HOGWILD_CUDA_CHECK(cudaMemcpy(g.weight.data(), r.weight, tk * 4, cudaMemcpyDeviceToHost));
  g.out = to_f32(out.download());
  return g;
}

void check_shape(const Shape& s, uint32_t seed, bool ties = false) {
  SCOPED_TRACE(::testing::Message() << "T=" << s.T << " H=" << s.H << " I=" << s.I << " E=" << s.E
                                    << " k=" << s.k << " norm=" << s.norm << " ties=" << ties);
  const Inputs in = make_inputs(s, seed, ties);
  const Choice c = route_ref(s, in.logits);
  const GpuResult g = run_gpu(s, in);
  ASSERT_EQ(g.expert, c.expert);
  for (size_t i = 0; i < c.weight.size(); ++i) EXPECT_NEAR(g.weight[i], c.weight[i], 1e-6f) << i;
  // grouping: every expert chosen, ascending, with its assignments contiguous and complete
  std::vector<int32_t> used(c.expert);
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  ASSERT_EQ(g.n_active, static_cast<int32_t>(used.size()));
  EXPECT_EQ(g.active, used);
  int32_t next = 0;
  for (int32_t i = 0; i < g.n_active; ++i) {
    EXPECT_EQ(g.offsets[i], next);
    next += g.counts[i];
  }
  EXPECT_EQ(next, s.T * s.k);
  for (int64_t a = 0; a < s.T * s.k; ++a) {
    const int32_t p = g.assign[a];
    ASSERT_GE(p, 0);
    ASSERT_LT(p, s.T * s.k);
    EXPECT_EQ(g.rows[p], a / s.k);
    const int32_t slot = static_cast<int32_t>(
        std::find(g.active.begin(), g.active.end(), c.expert[a]) - g.active.begin());
    EXPECT_GE(p, g.offsets[slot]);
    EXPECT_LT(p, g.offsets[slot] + g.counts[slot]);
  }
  const std::vector<float> ref = moe_ref(s, in, c);
  // bf16 output (2^-8 relative) over fp32 sums of bf16-exact products
  EXPECT_LT(rel_error(g.out, ref), 4e-3) << "moe output";
}

TEST(CudaMoe, MatchesDefinitionAcrossRowCounts) {
  HOGWILD_REQUIRE_GPU();
  uint32_t seed = 1;
  for (int64_t T : {1, 3, 8, 9, 16, 17, 40, 130}) check_shape(Shape{T, 64, 32, 8, 2, true}, seed++);
}

TEST(CudaMoe, QwenShapesAndNoRenormalisation) {
  HOGWILD_REQUIRE_GPU();
  check_shape(Shape{4, 256, 96, 128, 8, true}, 11);
  check_shape(Shape{33, 256, 96, 128, 8, false}, 12);
  check_shape(Shape{5, 136, 40, 60, 4, false}, 13);  // K not a multiple of 128 (Qwen2-MoE-like E)
}

TEST(CudaMoe, TiesPickTheLowerExpert) {
  HOGWILD_REQUIRE_GPU();
  check_shape(Shape{6, 64, 32, 8, 3, true}, 21, /*ties=*/true);
}

// A random int4 (group_size G) or fp8 (128 x 128 blocks) weight (out, in) in its canonical form,
// and W = its dequantized values (model/quant.h dequantize: the formats' definitions, checked
// against hand-made words in tests/model/test_quant.cpp).
struct QuantExpert {
  cuda::QuantWeightHost host;
  std::vector<float> W;
};

QuantExpert quant_expert(WeightFormat f, int64_t out, int64_t in, int64_t G, std::mt19937& rng) {
  QuantExpert q;
  q.W.resize(out * in);
  std::uniform_real_distribution<float> us(0.5f, 1.5f);
  if (f == WeightFormat::int4) {
    Int4Weight w;
    w.out = out, w.in = in, w.group_size = G;
    w.packed.resize(out * in / 8);
    for (uint32_t& v : w.packed) v = rng();
    w.scales.resize(out * (in / G));
    w.zeros.resize(out * (in / G));
    for (size_t i = 0; i < w.scales.size(); ++i) {
      w.scales[i] = __half2float(__float2half_rn(us(rng) / (4.6f * std::sqrt(float(in)))));
      w.zeros[i] = float(rng() % 17);
    }
    dequantize(w, q.W.data());
    q.host = cuda::repack_int4(w);
  } else {
    Fp8Weight w;
    w.out = out, w.in = in, w.block_n = 128, w.block_k = 128;
    w.w.resize(out * in);
    for (uint8_t& b : w.w) {
      do b = uint8_t(rng());
      while ((b & 0x7f) == 0x7f);  // no NaN
    }
    w.scale_inv.resize(((out + 127) / 128) * ((in + 127) / 128));
    for (float& v : w.scale_inv) v = us(rng) / (40.0f * std::sqrt(float(in)));
    dequantize(w, q.W.data());
    q.host = cuda::repack_fp8(w);
  }
  return q;
}

// The sparse block over quantized experts: the expert kernels' packed variants against moe_ref
// over the dequantized weights, for 1-, 2- and 4-n-tile row counts and group sizes that are and
// are not whole 128-k blocks.
void check_quantized(const Shape& s, WeightFormat f, int64_t G, uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << "T=" << s.T << " H=" << s.H << " I=" << s.I << " E=" << s.E << " k=" << s.k
               << " format=" << weight_format_name(f) << " G=" << G);
  Inputs in = make_inputs(s, seed);
  std::mt19937 rng(seed);
  std::vector<cuda::QuantWeightHost> gu_parts, d_parts;
  for (int64_t e = 0; e < s.E; ++e) {
    for (int half = 0; half < 2; ++half) {  // gate_proj then up_proj
      QuantExpert q = quant_expert(f, s.I, s.H, G, rng);
      std::copy(q.W.begin(), q.W.end(), in.wgu.begin() + (e * 2 + half) * s.I * s.H);
      gu_parts.push_back(std::move(q.host));
    }
    QuantExpert q = quant_expert(f, s.H, s.I, G, rng);
    std::copy(q.W.begin(), q.W.end(), in.wd.begin() + e * s.H * s.I);
    d_parts.push_back(std::move(q.host));
  }
  auto concat = [](const std::vector<cuda::QuantWeightHost>& parts) {
    std::vector<const cuda::QuantWeightHost*> p;
    for (const auto& h : parts) p.push_back(&h);
    return cuda::upload_quant_weight(cuda::concat_rows(p), nullptr);
  };
  cuda::QuantWeight Wgu = concat(gu_parts), Wd = concat(d_parts);
  DeviceArray<float> logits(in.logits);
  DeviceArray<bf16> x(to_bf16(in.x));
  DeviceArray<char> mem(cuda::moe_route_bytes(s.T, s.E, s.k));
  DeviceArray<bf16> act(s.T * s.k * s.I), out(s.T * s.H);
  DeviceArray<float> y(s.T * s.k * s.H);
  const cuda::MoeRoute r = cuda::moe_route_view(mem.p, s.T, s.E, s.k);
  HOGWILD_CUDA_CHECK(cudaMemset(out.p, 0xff, s.T * s.H * 2));  // poison (NaN)
  cuda::moe_route(logits.p, s.T, s.E, s.k, s.norm, r, nullptr);
  cuda::moe_expert_swiglu(x.p, Wgu, r, act.p, s.T, s.H, s.I, s.E, s.k, nullptr);
  cuda::moe_expert_down(act.p, Wd, r, y.p, s.T, s.H, s.I, s.E, s.k, nullptr);
  cuda::moe_combine(y.p, r, out.p, s.T, s.H, s.k, nullptr);
  HOGWILD_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> ref = moe_ref(s, in, route_ref(s, in.logits));
  EXPECT_LT(rel_error(to_f32(out.download()), ref), 4e-3) << "quantized moe output";
  cuda::free_quant_weight(Wgu);
  cuda::free_quant_weight(Wd);
}

TEST(CudaMoe, QuantizedExpertsMatchTheirDequantizedDefinition) {
  HOGWILD_REQUIRE_GPU();
  uint32_t seed = 41;
  for (int64_t T : {1, 9, 20}) {
    check_quantized(Shape{T, 256, 128, 16, 4, true}, WeightFormat::int4, 128, seed++);
    check_quantized(Shape{T, 256, 128, 16, 4, true}, WeightFormat::int4, 32, seed++);
    check_quantized(Shape{T, 256, 256, 16, 4, false}, WeightFormat::fp8, 128, seed++);
    // a down projection narrower than one 128-k block (in = I = 64, padded with zero weights)
    check_quantized(Shape{T, 128, 64, 8, 2, true}, WeightFormat::int4, 64, seed++);
    check_quantized(Shape{T, 128, 64, 8, 2, true}, WeightFormat::int4, 32, seed++);
    check_quantized(Shape{T, 128, 64, 8, 2, true}, WeightFormat::fp8, 128, seed++);
  }
  // decode sizes (T <= 8) whose K spans several rounds of the quantized tile (quant_tile.cuh:
  // 32 blocks of 128 k for int4, 16 for fp8): hidden 4224 = 33 blocks, intermediate 2176 = 17
  for (int64_t T : {1, 5, 8}) {
    check_quantized(Shape{T, 4224, 256, 2, 2, true}, WeightFormat::int4, 128, seed++);
    check_quantized(Shape{T, 4224, 256, 2, 2, true}, WeightFormat::int4, 64, seed++);
    check_quantized(Shape{T, 256, 2176, 2, 2, false}, WeightFormat::fp8, 128, seed++);
  }
}

// The fused RMSNorm around the sparse block, as the forward chains it for 1-8 rows: the expert
// SwiGLU consumes x_res * w with the rows' sums of squares (SkinnyNormIn), and the combine
// produces the next norm's input (moe_combine_residual) — against rmsnorm, the definition, the
// residual add and the next rmsnorm on the CPU.
TEST(CudaMoe, FusedNormAroundTheBlockMatchesNormThenBlockThenAdd) {
  HOGWILD_REQUIRE_GPU();
  const float eps = 1e-6f;
  // hidden 256: one column block of the combine per row; 320 and 2048: several, the last one
  // partial at 320 (each block adds its part of the sums of squares).
  for (int64_t H : {256, 320, 2048})
    for (int64_t T : {1, 3, 8}) {
      const Shape s{T, H, 96, 16, 4, true};
      SCOPED_TRACE(::testing::Message() << "T=" << T << " H=" << H);
      Inputs in = make_inputs(s, uint32_t(50 + T));
      std::mt19937 rng{static_cast<uint32_t>(T)};
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<float> x_res(T * s.H), w(s.H), w_next(s.H);
      for (float& v : x_res) v = 3.0f * nd(rng);
      for (float& v : w) v = 0.8f + 0.1f * nd(rng);
      for (float& v : w_next) v = 0.8f + 0.1f * nd(rng);
      w = round_bf16(w);
      w_next = round_bf16(w_next);
      // CPU: h = rmsnorm(x_res) * w (bf16), the block over h, x += bf16(out), h' = rmsnorm(x) w'
      std::vector<float> h(T * s.H), ss(T, 0.0f);
      cpu::rmsnorm(x_res.data(), w.data(), h.data(), T, s.H, eps);
      in.x = round_bf16(h);
      const std::vector<float> out = moe_ref(s, in, route_ref(s, in.logits));
      std::vector<float> x_new = x_res, want_ss(T, 0.0f), want_xw(T * s.H);
      const std::vector<float> out_b = round_bf16(out);
      for (int64_t i = 0; i < T * s.H; ++i) x_new[i] += out_b[i];
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < s.H; ++j) {
          const float v = x_new[t * s.H + j];
          want_ss[t] += v * v;
          want_xw[t * s.H + j] = v * w_next[j];
          ss[t] += x_res[t * s.H + j] * x_res[t * s.H + j];
        }
      std::vector<float> xw_in(T * s.H);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < s.H; ++j) xw_in[t * s.H + j] = x_res[t * s.H + j] * w[j];
      DeviceArray<float> logits(in.logits), dss(ss), dx(x_res), ss2(std::vector<float>(T, 0.0f)),
          ss_zero(std::vector<float>(T, 7.0f));
      DeviceArray<bf16> dxw(to_bf16(round_bf16(xw_in))), wgu(to_bf16(in.wgu)), wd(to_bf16(in.wd)),
          dwn(to_bf16(w_next)), xw_out(T * s.H), act(T * s.k * s.I);
      DeviceArray<char> mem(cuda::moe_route_bytes(T, s.E, s.k));
      DeviceArray<float> y(T * s.k * s.H);
      const cuda::MoeRoute r = cuda::moe_route_view(mem.p, T, s.E, s.k);
      cuda::moe_route(logits.p, T, s.E, s.k, s.norm, r, nullptr);
      cuda::moe_expert_swiglu(dxw.p, wgu.p, r, act.p, T, s.H, s.I, s.E, s.k, nullptr,
                              {dss.p, s.H, eps});
      cuda::moe_expert_down(act.p, wd.p, r, y.p, T, s.H, s.I, s.E, s.k, nullptr);
      cuda::moe_combine_residual(y.p, r, T, s.H, s.k, {dx.p, dwn.p, ss2.p, ss_zero.p}, xw_out.p,
                                 nullptr);
      HOGWILD_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<float> delta = dx.download(), want_delta = out_b;
      for (int64_t i = 0; i < T * s.H; ++i) delta[i] -= x_res[i];
      // The reference rounds the normalised input to bf16 before the block; the fused path rounds
      // x_res * w and scales the fp32 products: two bf16 roundings apart, 2 * 2^-8.
      EXPECT_LT(rel_error(delta, want_delta), 8e-3) << "the block's output added to the residual";
      EXPECT_LT(rel_error(to_f32(xw_out.download()), want_xw), 4e-3) << "next norm input";
      // The sums of squares are those of the residual the kernel wrote (the next norm divides by
      // them), summed in fp32 as a tree of warp sums and per-CTA atomics: within a few ulps x
      // log2(H) of the exact sum. Against the CPU's residual they would differ by what the block's
      // output may (the 8e-3 above), far more than the summation.
      const std::vector<float> got_ss = ss2.download(), x_gpu = dx.download();
      for (int64_t t = 0; t < T; ++t) {
        double exact = 0.0;
        for (int64_t j = 0; j < s.H; ++j) exact += double(x_gpu[t * s.H + j]) * x_gpu[t * s.H + j];
        EXPECT_NEAR(got_ss[t], exact, 1e-5 * exact) << "sum of squares, row " << t;
        EXPECT_NEAR(got_ss[t], want_ss[t], 2e-3 * want_ss[t]) << "against the CPU's residual";
      }
      for (float v : ss_zero.download()) EXPECT_EQ(v, 0.0f) << "the next slot is zeroed";
    }
}

TEST(CudaMoe, RowsDoNotDependOnTheirNeighbours) {
  HOGWILD_REQUIRE_GPU();
  // one row alone, then the same row beside 15 others: the same bits
  const Shape big{16, 256, 96, 128, 8, true};
  const Inputs all = make_inputs(big, 31);
  Shape one = big;
  one.T = 1;
  Inputs first;
  first.x.assign(all.x.begin(), all.x.begin() + big.H);
  first.logits.assign(all.logits.begin(), all.logits.begin() + big.E);
  first.wgu = all.wgu;
  first.wd = all.wd;
  const GpuResult a = run_gpu(one, first);
  const GpuResult b = run_gpu(big, all);
  for (int64_t h = 0; h < big.H; ++h) ASSERT_EQ(a.out[h], b.out[h]) << h;
}

}  // namespace
}  // namespace hogwild
