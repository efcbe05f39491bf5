// Quantized projections on the GPU (cuda/quant_gemm.h) against W computed here from the canonical
// forms' definitions (model/quant.h: Int4Weight, Fp8Weight), for every path of quant_linear: the
// 16-row-CTA kernel (1..32 rows), the wide kernel (33..64 rows, K split over a cluster where
// the tiles are few), 64-row chunks (65..256), the bf16 copy and cuBLAS (> 256),
// with and without an act-order permutation, group sizes 32 / 64 / 128 / one group, scales that
// spread and groups of scale 0, fp8 values including subnormals; and the skinny kernel's quantized
// variants (cuda/skinny_gemm.h: plain, SwiGLU and the fused residual + RMSNorm, split-K merged in a
// cluster and through global memory).
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cpu/ops.h"
#include "cuda/gemm.h"
#include "cuda/quant_gemm.h"
#include "cuda/skinny_gemm.h"
#include "cuda_test_util.h"

namespace hogwild {
namespace {

using test::DeviceArray;
using test::rel_error;
using test::round_bf16;
using test::to_bf16;
using test::to_f32;
using bf16 = __nv_bfloat16;

// float8_e4m3fn by its definition (OCP FP8 spec): bias 7, subnormals at exponent 0, no infinities.
float e4m3(uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  const float mag = e == 0 ? std::ldexp(float(m) / 8.0f, -6) : std::ldexp(1.0f + m / 8.0f, e - 7);
  return s ? -mag : mag;
}

struct Case {
  Int4Weight w4;
  Fp8Weight w8;
  std::vector<float> W;  // (out, in): the dequantized weight, columns in input order
};

// extreme: scales spread over 2^-6 .. 2^6 of the usual and one group in 11 with scale 0 (a group
// of zero weights), for kernels that carry the accumulator in units of a group's scale.
Case int4_case(int64_t out, int64_t in, int64_t G, bool act_order, uint32_t seed,
               bool extreme = false) {
  std::mt19937 rng(seed);
  Case c;
  Int4Weight& w = c.w4;
  w.out = out, w.in = in, w.group_size = G;
  w.packed.resize(out * in / 8);
  for (uint32_t& x : w.packed) x = rng();
  const int64_t ng = in / G;
  w.scales.resize(out * ng);
  w.zeros.resize(out * ng);
  std::uniform_real_distribution<float> us(0.5f, 1.5f);
  for (int64_t i = 0; i < out * ng; ++i) {
    // fp16-exact scales, as AWQ and GPTQ store them
    const float spread = !extreme ? 1.0f : i % 5 == 0 ? 64.0f : i % 5 == 1 ? 1.0f / 64 : 1.0f;
    w.scales[i] = __half2float(__float2half_rn(us(rng) * spread / std::sqrt(float(in)) / 4.6f));
    if (extreme && i % 11 == 3) w.scales[i] = 0.0f;
    w.zeros[i] = float(rng() % 17);  // 0..16: GPTQ v1's stored + 1 reaches 16
  }
  if (act_order) {
    w.perm.resize(in);
    std::iota(w.perm.begin(), w.perm.end(), 0);
    std::shuffle(w.perm.begin(), w.perm.end(), rng);
  }
  c.W.assign(out * in, 0.0f);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = 0; j < in; ++j) {
      const int q = (w.packed[o * in / 8 + j / 8] >> (4 * (j % 8))) & 15;
      const float v = (float(q) - w.zeros[o * ng + j / G]) * w.scales[o * ng + j / G];
      c.W[o * in + (act_order ? w.perm[j] : j)] = v;
    }
  return c;
}

Case fp8_case(int64_t out, int64_t in, int64_t bn, int64_t bk, uint32_t seed) {
  std::mt19937 rng(seed);
  Case c;
  Fp8Weight& w = c.w8;
  w.out = out, w.in = in, w.block_n = bn, w.block_k = bk;
  w.w.resize(out * in);
  for (uint8_t& b : w.w) {
    do b = uint8_t(rng());
    while ((b & 0x7f) == 0x7f);     // no NaN
    if (rng() % 8 == 0) b &= 0x87;  // some subnormals and zeros
  }
  const int64_t nbn = (out + bn - 1) / bn, nbk = (in + bk - 1) / bk;
  w.scale_inv.resize(nbn * nbk);
  std::uniform_real_distribution<float> us(0.5f, 1.5f);
  for (float& s : w.scale_inv) s = us(rng) / (40.0f * std::sqrt(float(in)));
  c.W.resize(out * in);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < in; ++k)
      c.W[o * in + k] = e4m3(w.w[o * in + k]) * w.scale_inv[(o / bn) * nbk + k / bk];
  return c;
}

// per_row: also each output feature on its own (its values over the token rows, from 8 rows on),
// so that rows with small scales are not hidden by the rest.
void check_linear(const Case& c, WeightFormat f, const std::string& what, bool per_row = false) {
  const int64_t out = f == WeightFormat::int4 ? c.w4.out : c.w8.out;
  const int64_t in = f == WeightFormat::int4 ? c.w4.in : c.w8.in;
  cuda::QuantWeight W = cuda::upload_quant_weight(
      f == WeightFormat::int4 ? cuda::repack_int4(c.w4) : cuda::repack_fp8(c.w8), nullptr);
  // The dequantized copy: bf16 of the fp32 value, exactly (columns in the packed order).
  {
    DeviceArray<bf16> d(out * in);
    cuda::dequantize_to_bf16(W, d.p, nullptr);
    const std::vector<float> got = to_f32(d.download());
    int64_t bad = 0;
    for (int64_t o = 0; o < out; ++o)
      for (int64_t j = 0; j < in; ++j) {
        const int64_t k = c.w4.perm.empty() || f != WeightFormat::int4 ? j : c.w4.perm[j];
        bad += got[o * in + j] != round_bf16({c.W[o * in + k]})[0];
      }
    EXPECT_EQ(bad, 0) << what << ": dequantize_to_bf16";
  }
  cuda::Gemm gemm(nullptr);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t rows : {1, 2, 5, 8, 9, 16, 17, 31, 32, 33, 48, 64, 65, 130, 256, 257}) {
    std::vector<float> x(rows * in), bias(out);
    for (float& v : x) v = nd(rng);
    for (float& v : bias) v = 0.5f * nd(rng);
    x = round_bf16(x);
    bias = round_bf16(bias);
    std::vector<float> want(rows * out);
    cpu::matmul(x.data(), c.W.data(), bias.data(), want.data(), rows, in, out);
    DeviceArray<bf16> dx(to_bf16(x)), db(to_bf16(bias)), dy(rows * out);
    DeviceArray<uint8_t> scratch(cuda::quant_scratch_bytes(W, rows));
    HOGWILD_CUDA_CHECK(cudaMemset(dy.p, 0xff, rows * out * 2));  // poison (NaN)
    cuda::quant_linear(gemm, dx.p, W, db.p, dy.p, rows, scratch.p, nullptr);
    const std::vector<float> got = to_f32(dy.download());
    EXPECT_LT(rel_error(got, want), 4e-3) << what << " rows " << rows;
    if (!per_row || rows < 8) continue;
    int64_t bad_rows = 0;
    for (int64_t o = 0; o < out; ++o) {
      std::vector<float> g(rows), w(rows);
      for (int64_t r = 0; r < rows; ++r) g[r] = got[r * out + o], w[r] = want[r * out + o];
      bad_rows += !(rel_error(g, w) < 4e-3);
    }
    EXPECT_EQ(bad_rows, 0) << what << " rows " << rows << ": output features off on their own";
  }
  cuda::free_quant_weight(W);
}

TEST(CudaQuant, Int4LinearMatchesDequantizedWeight) {
  HOGWILD_REQUIRE_GPU();
  struct Shape {
    int64_t out, in, G;
    bool act_order, extreme = false;
  };
  for (const Shape s :
       {Shape{48, 64, 32, false}, Shape{96, 256, 64, true}, Shape{1040, 4096, 128, false},
        Shape{64, 12288, 128, true}, Shape{200, 384, 384, false}, Shape{33, 160, 32, true},
        Shape{300, 1024, 32, false, true}, Shape{256, 2048, 128, true, true}}) {
    const std::string what = "int4 " + std::to_string(s.out) + "x" + std::to_string(s.in) + " g" +
                             std::to_string(s.G) + (s.act_order ? " act-order" : "") +
                             (s.extreme ? " extreme scales" : "");
    check_linear(int4_case(s.out, s.in, s.G, s.act_order, uint32_t(s.out + s.in), s.extreme),
                 WeightFormat::int4, what, s.extreme);
  }
}

TEST(CudaQuant, Fp8LinearMatchesDequantizedWeight) {
  HOGWILD_REQUIRE_GPU();
  struct Shape {
    int64_t out, in, bn, bk;
  };
  for (const Shape s :
       {Shape{48, 64, 32, 32}, Shape{300, 512, 128, 128}, Shape{1040, 4096, 128, 128},
        Shape{64, 12288, 128, 128}, Shape{130, 200, 128, 128}}) {
    const std::string what = "fp8 " + std::to_string(s.out) + "x" + std::to_string(s.in) +
                             " blocks " + std::to_string(s.bn) + "x" + std::to_string(s.bk);
    check_linear(fp8_case(s.out, s.in, s.bn, s.bk, uint32_t(s.out * 3 + s.in)), WeightFormat::fp8,
                 what);
  }
}

cuda::QuantWeight upload(const Case& c, WeightFormat f) {
  return cuda::upload_quant_weight(
      f == WeightFormat::int4 ? cuda::repack_int4(c.w4) : cuda::repack_fp8(c.w8), nullptr);
}

std::vector<float> random_rows(int64_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return round_bf16(v);
}

// skinny_quant_linear (with a bias) and skinny_quant_swiglu (W read as [gate; up]) for 1..8 rows
// against the CPU over the dequantized W; the split-K sums merged in a cluster and through global
// memory give the same bits.
void check_skinny(const Case& c, WeightFormat f, const std::string& what) {
  const int64_t out = f == WeightFormat::int4 ? c.w4.out : c.w8.out;
  const int64_t in = f == WeightFormat::int4 ? c.w4.in : c.w8.in;
  cuda::QuantWeight W = upload(c, f);
  for (int64_t rows : {1, 2, 5, 8}) {
    const std::vector<float> x = random_rows(rows * in, 1.0f, uint32_t(rows));
    const std::vector<float> bias = random_rows(out, 0.5f, 99);
    std::vector<float> want(rows * out);
    cpu::matmul(x.data(), c.W.data(), bias.data(), want.data(), rows, in, out);
    const int64_t I = out / 2;
    std::vector<float> gu(rows * out), gate(rows * I), up(rows * I), act(rows * I);
    cpu::matmul(x.data(), c.W.data(), nullptr, gu.data(), rows, in, out);
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t i = 0; i < I; ++i) {
        gate[t * I + i] = gu[t * out + i];
        up[t * I + i] = gu[t * out + I + i];
      }
    cpu::swiglu(gate.data(), up.data(), act.data(), rows * I);
    DeviceArray<bf16> dx(to_bf16(x)), db(to_bf16(bias)), dy(rows * out), dact(rows * I);
    DeviceArray<uint8_t> scratch(cuda::quant_scratch_bytes(W, rows));
    std::vector<float> by_path[2];
    for (bool cluster : {true, false}) {
      cuda::set_skinny_cluster_split(cluster);
      const std::string at = what + " rows " + std::to_string(rows) + (cluster ? " cluster" : "");
      HOGWILD_CUDA_CHECK(cudaMemset(dy.p, 0xff, rows * out * 2));  // poison (NaN)
      HOGWILD_CUDA_CHECK(cudaMemset(dact.p, 0xff, rows * I * 2));
      cuda::skinny_quant_linear(dx.p, W, db.p, dy.p, rows, scratch.p, nullptr);
      by_path[cluster ? 0 : 1] = to_f32(dy.download());
      EXPECT_LT(rel_error(by_path[cluster ? 0 : 1], want), 4e-3) << at;
      if (out % 2 == 0) {
        cuda::skinny_quant_swiglu(dx.p, W, dact.p, rows, scratch.p, nullptr);
        EXPECT_LT(rel_error(to_f32(dact.download()), act), 4e-3) << "swiglu " << at;
      }
    }
    cuda::set_skinny_cluster_split(true);
    EXPECT_EQ(by_path[0], by_path[1]) << what << " rows " << rows;
  }
  cuda::free_quant_weight(W);
}

TEST(CudaQuant, SkinnyInt4MatchesDequantizedWeight) {
  HOGWILD_REQUIRE_GPU();
  struct Shape {
    int64_t out, in, G;
    bool act_order;
  };
  // (64, 12288) and (96, 4096) have few tiles: split-K
  for (const Shape s :
       {Shape{48, 64, 32, false}, Shape{96, 4096, 64, true}, Shape{1040, 4096, 128, false},
        Shape{64, 12288, 128, true}, Shape{200, 384, 384, false}, Shape{34, 160, 32, true}}) {
    const std::string what = "int4 " + std::to_string(s.out) + "x" + std::to_string(s.in) + " g" +
                             std::to_string(s.G) + (s.act_order ? " act-order" : "");
    check_skinny(int4_case(s.out, s.in, s.G, s.act_order, uint32_t(s.out * 7 + s.in)),
                 WeightFormat::int4, what);
  }
}

TEST(CudaQuant, SkinnyFp8MatchesDequantizedWeight) {
  HOGWILD_REQUIRE_GPU();
  struct Shape {
    int64_t out, in, bn, bk;
  };
  for (const Shape s : {Shape{48, 64, 32, 32}, Shape{300, 512, 128, 128},
                        Shape{64, 12288, 128, 128}, Shape{130, 200, 128, 128}}) {
    const std::string what = "fp8 " + std::to_string(s.out) + "x" + std::to_string(s.in) +
                             " blocks " + std::to_string(s.bn) + "x" + std::to_string(s.bk);
    check_skinny(fp8_case(s.out, s.in, s.bn, s.bk, uint32_t(s.out * 5 + s.in)), WeightFormat::fp8,
                 what);
  }
}

// The fused residual add + RMSNorm over quantized weights: x += bf16(a W1^T); h = rmsnorm(x) * w;
// out = h W2^T, as the forward chains skinny_quant_residual and a SkinnyNormIn consumer.
TEST(CudaQuant, SkinnyFusedNormOverQuantizedWeights) {
  HOGWILD_REQUIRE_GPU();
  const int64_t K = 8192, H = 1024, O = 528;
  const float eps = 1e-6f;
  for (WeightFormat f : {WeightFormat::int4, WeightFormat::fp8}) {
    const Case c1 =
        f == WeightFormat::int4 ? int4_case(H, K, 128, true, 5) : fp8_case(H, K, 128, 128, 5);
    const Case c2 =
        f == WeightFormat::int4 ? int4_case(O, H, 64, false, 6) : fp8_case(O, H, 128, 128, 6);
    cuda::QuantWeight W1 = upload(c1, f), W2 = upload(c2, f);
    for (int rows : {1, 3, 8}) {
      const std::string what =
          std::string(f == WeightFormat::int4 ? "int4" : "fp8") + " rows " + std::to_string(rows);
      const std::vector<float> x = random_rows(rows * H, 2.0f, 11),
                               a = random_rows(rows * K, 1.0f, 12);
      std::vector<float> w = random_rows(H, 0.2f, 13);
      for (float& v : w) v = round_bf16({0.75f + v})[0];
      std::vector<float> y1(rows * H), xn = x, h(rows * H), out(rows * O);
      cpu::matmul(a.data(), c1.W.data(), nullptr, y1.data(), rows, K, H);
      cpu::add_inplace(xn.data(), round_bf16(y1).data(), rows * H);
      cpu::rmsnorm(xn.data(), w.data(), h.data(), rows, H, eps);
      cpu::matmul(h.data(), c2.W.data(), nullptr, out.data(), rows, H, O);
      DeviceArray<float> dx(x), ss(std::vector<float>(rows, 0.0f)),
          ss_next(std::vector<float>(rows, 5.0f));
      DeviceArray<bf16> da(to_bf16(a)), dw(to_bf16(w)), dxw(rows * H), dout(rows * O);
      DeviceArray<uint8_t> scratch(cuda::quant_scratch_bytes(W1, rows));
      cuda::skinny_quant_residual(da.p, W1, rows, {dx.p, dw.p, ss.p, ss_next.p}, dxw.p, scratch.p,
                                  nullptr);
      cuda::skinny_quant_linear(dxw.p, W2, nullptr, dout.p, rows, scratch.p, nullptr,
                                {ss.p, H, eps});
      EXPECT_LT(rel_error(dx.download(), xn), 1e-3) << "residual " << what;
      EXPECT_LT(rel_error(to_f32(dout.download()), out), 4e-3) << "normed product " << what;
      double want_ss = 0;
      for (int64_t i = 0; i < H; ++i) want_ss += double(xn[i]) * xn[i];
      EXPECT_NEAR(ss.download()[0], want_ss, 1e-4 * want_ss) << "sum of squares " << what;
      for (float v : ss_next.download()) EXPECT_EQ(v, 0.0f) << "next slot zeroed, " << what;
    }
    cuda::free_quant_weight(W1);
    cuda::free_quant_weight(W2);
  }
}

TEST(CudaQuant, RepackRefusesWhatTheKernelCannotRead) {
  Int4Weight w;
  w.out = 8, w.in = 48, w.group_size = 16;
  w.packed.assign(8 * 6, 0u);
  w.scales.assign(8 * 3, 1.0f);
  w.zeros.assign(8 * 3, 8.0f);
  EXPECT_THROW(cuda::repack_int4(w), Error);
  Fp8Weight f;
  f.out = 8, f.in = 48, f.block_n = 16, f.block_k = 16;
  f.w.assign(8 * 48, 0);
  f.scale_inv.assign(3, 1.0f);
  EXPECT_THROW(cuda::repack_fp8(f), Error);
}

}  // namespace
}  // namespace hogwild
