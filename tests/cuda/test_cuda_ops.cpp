// Each CUDA op against its CPU twin (src/cpu/ops.h, src/cpu/rope.h) over shape sweeps.
// Inputs are rounded to bf16 first so both sides see the same values; the remaining difference
// is the GPU's bf16 output rounding (relative 2^-9) and fp32 summation order.
#include <algorithm>
#include <numeric>
#include <random>

#include "cpu/ops.h"
#include "cpu/rope.h"
#include "cuda/elementwise.h"
#include "cuda/gemm.h"
#include "cuda/norm.h"
#include "cuda/rope.h"
#include "cuda/skinny_gemm.h"
#include "tests/cpu/tiny_model.h"
#include "tests/cuda/cuda_test_util.h"

namespace hogwild::test {
namespace {

using bf16 = __nv_bfloat16;

// |got - want| <= rel * |want| + abs for every element.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                  double abs, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= rel * std::fabs(want[i]) + abs)) {
      if (++bad <= 5)
        ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

TEST(CudaOps, RmsNormMatchesCpu) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(1);
  // dim % 4 == 0 up to 8192 takes the register kernel; 1002 and 8196 the CTA-per-row one.
  for (int64_t dim : {64, 128, 1000, 1002, 4096, 5120, 8192, 8196}) {
    for (int64_t rows : {1, 3, 8, 64}) {
      const auto x = round_bf16(rng.vec(rows * dim, 2.0f));
      const auto w = round_bf16(rng.vec(dim, 0.5f, 1.0f));
      std::vector<float> want(rows * dim);
      cpu::rmsnorm(x.data(), w.data(), want.data(), rows, dim, 1e-6f);
      DeviceArray<float> dx(x);
      DeviceArray<bf16> dw(to_bf16(w)), dy(rows * dim);
      cuda::rmsnorm(dx.p, dw.p, dy.p, rows, dim, 1e-6f, nullptr);
      expect_close(to_f32(dy.download()), want, 4e-3, 1e-5,
                   "rmsnorm dim " + std::to_string(dim) + " rows " + std::to_string(rows));
    }
  }
}

TEST(CudaOps, PerHeadRmsNormMatchesCpuAndLeavesOtherColumns) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(2);
  for (int64_t hd : {64, 128}) {
    const int64_t T = 5, heads = 3,
                  stride = heads * hd + 2 * hd + 7;  // q heads, then other columns
    const auto x = round_bf16(rng.vec(T * stride, 3.0f));
    const auto w = round_bf16(rng.vec(hd, 0.5f, 1.0f));
    std::vector<float> want = x;
    for (int64_t t = 0; t < T; ++t)
      cpu::rmsnorm(&x[t * stride], w.data(), &want[t * stride], heads, hd, 1e-6f);
    DeviceArray<bf16> dx(to_bf16(x)), dw(to_bf16(w));
    cuda::rmsnorm_heads(dx.p, stride, T, heads, dw.p, hd, 1e-6f, nullptr);
    expect_close(to_f32(dx.download()), want, 4e-3, 1e-5, "q/k norm hd " + std::to_string(hd));
  }
}

TEST(CudaOps, FusedAddRmsNormAndQkNormMatchCpu) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(7);
  for (int64_t dim : {96, 4096, 5120, 1002, 8196}) {
    const int64_t rows = dim == 4096 ? 64 : 3;
    const auto x = round_bf16(rng.vec(rows * dim, 2.0f));
    const auto y = round_bf16(rng.vec(rows * dim, 2.0f));
    const auto w = round_bf16(rng.vec(dim, 0.5f, 1.0f));
    std::vector<float> sum = x, want(rows * dim);
    cpu::add_inplace(sum.data(), y.data(), rows * dim);
    cpu::rmsnorm(sum.data(), w.data(), want.data(), rows, dim, 1e-5f);
    DeviceArray<float> dx(x);
    DeviceArray<bf16> dy(to_bf16(y)), dw(to_bf16(w)), dout(rows * dim);
    cuda::add_rmsnorm(dx.p, dy.p, dw.p, dout.p, rows, dim, 1e-5f, nullptr);
    expect_close(dx.download(), sum, 1e-7, 0, "add_rmsnorm residual");
    expect_close(to_f32(dout.download()), want, 4e-3, 1e-5, "add_rmsnorm out");
  }
  for (int64_t hd : {64, 128}) {
    const int64_t T = 4, nq = 5, nk = 1, stride = (nq + 2 * nk) * hd;  // q | k | v columns
    const auto x = round_bf16(rng.vec(T * stride, 3.0f));
    const auto wq = round_bf16(rng.vec(hd, 0.5f, 1.0f)), wk = round_bf16(rng.vec(hd, 0.5f, 1.0f));
    std::vector<float> want = x;
    for (int64_t t = 0; t < T; ++t) {
      cpu::rmsnorm(&x[t * stride], wq.data(), &want[t * stride], nq, hd, 1e-6f);
      cpu::rmsnorm(&x[t * stride + nq * hd], wk.data(), &want[t * stride + nq * hd], nk, hd, 1e-6f);
    }
    DeviceArray<bf16> dx(to_bf16(x)), dwq(to_bf16(wq)), dwk(to_bf16(wk));
    cuda::rmsnorm_qk_heads(dx.p, stride, T, nq, nk, dwq.p, dwk.p, hd, 1e-6f, nullptr);
    expect_close(to_f32(dx.download()), want, 4e-3, 1e-5,
                 "q/k norm fused hd " + std::to_string(hd));
  }
}

TEST(CudaOps, EmbeddingResidualBiasSwigluGather) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(3);
  const int64_t V = 37, H = 300, T = 6, I = 257;
  const auto table = round_bf16(rng.vec(V * H, 1.0f));
  const std::vector<int32_t> ids = {0, 36, 5, 5, 17, 1};
  std::vector<float> want(T * H);
  cpu::embedding(table.data(), ids.data(), T, H, want.data());
  DeviceArray<bf16> dtable(to_bf16(table));
  DeviceArray<int32_t> dids(ids);
  DeviceArray<float> dx(T * H);
  cuda::embedding(dtable.p, dids.p, T, H, V, dx.p, nullptr);
  expect_close(dx.download(), want, 0, 0, "embedding");

  const auto y = round_bf16(rng.vec(T * H, 1.0f));
  cpu::add_inplace(want.data(), y.data(), T * H);
  DeviceArray<bf16> dy(to_bf16(y));
  cuda::add_residual(dx.p, dy.p, T * H, nullptr);
  expect_close(dx.download(), want, 1e-7, 0, "add_residual");

  const auto bias = round_bf16(rng.vec(H, 1.0f));
  std::vector<float> yb(T * H);
  for (int64_t i = 0; i < T * H; ++i) yb[i] = y[i] + bias[i % H];
  DeviceArray<bf16> dbias(to_bf16(bias));
  cuda::add_bias(dy.p, dbias.p, T, H, nullptr);
  expect_close(to_f32(dy.download()), yb, 4e-3, 0, "add_bias");

  const auto gu = round_bf16(rng.vec(T * 2 * I, 4.0f));
  std::vector<float> gate(T * I), up(T * I), act(T * I);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < I; ++i) {
      gate[t * I + i] = gu[t * 2 * I + i];
      up[t * I + i] = gu[t * 2 * I + I + i];
    }
  cpu::swiglu(gate.data(), up.data(), act.data(), T * I);
  DeviceArray<bf16> dgu(to_bf16(gu)), dact(T * I);
  cuda::swiglu(dgu.p, dact.p, T, I, nullptr);
  expect_close(to_f32(dact.download()), act, 5e-3, 1e-6, "swiglu");

  const std::vector<int32_t> rows = {5, 0, 3};
  DeviceArray<int32_t> drows(rows);
  DeviceArray<float> dout(rows.size() * H);
  cuda::gather_rows(dx.p, drows.p, 3, H, dout.p, nullptr);
  std::vector<float> g;
  for (int32_t r : rows) g.insert(g.end(), want.begin() + r * H, want.begin() + (r + 1) * H);
  expect_close(dout.download(), g, 1e-7, 0, "gather_rows");
}

TEST(CudaOps, LinearMatchesCpuMatmul) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(4);
  cuda::Gemm gemm(nullptr);
  gemm.set_skinny(false);  // cuBLAS for every shape here
  for (auto [rows, in, out] : {std::tuple{1, 256, 384},
                               {5, 1000, 77},
                               {8, 4096, 512},
                               {70, 128, 1024},
                               {40, 1024, 96},
                               {40, 1280, 96},
                               {3, 1024, 96},
                               {40, 96, 1792}}) {
    const auto x = round_bf16(rng.vec(rows * in, 1.0f));
    const auto W = round_bf16(rng.vec(int64_t(out) * in, 1.0f / std::sqrt(float(in))));
    std::vector<float> want(rows * out);
    cpu::matmul(x.data(), W.data(), nullptr, want.data(), rows, in, out);
    DeviceArray<bf16> dx(to_bf16(x)), dW(to_bf16(W)), dy(rows * out);
    DeviceArray<float> dyf(rows * out);
    gemm.linear(dx.p, dW.p, dy.p, rows, in, out);
    gemm.linear_f32(dx.p, dW.p, dyf.p, rows, in, out);
    EXPECT_LT(rel_error(to_f32(dy.download()), want), 4e-3) << rows << "x" << in << "x" << out;
    EXPECT_LT(rel_error(dyf.download(), want), 1e-4) << rows << "x" << in << "x" << out;
  }
}

TEST(CudaOps, SkinnyLinearMatchesCpuMatmul) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(8);
  for (int rows = 1; rows <= 8; ++rows)
    for (auto [in, out] : {std::pair{96, 77},
                           {4096, 1029},
                           {27648, 33},
                           {264, 4096},
                           {8, 16},
                           {1000, 50},
                           {12288, 512}}) {
      const auto x = round_bf16(rng.vec(rows * in, 1.0f));
      const auto W = round_bf16(rng.vec(int64_t(out) * in, 1.0f / std::sqrt(float(in))));
      const auto bias = round_bf16(rng.vec(out, 0.5f));
      std::vector<float> want(rows * out), want_b(rows * out);
      cpu::matmul(x.data(), W.data(), nullptr, want.data(), rows, in, out);
      cpu::matmul(x.data(), W.data(), bias.data(), want_b.data(), rows, in, out);
      DeviceArray<bf16> dx(to_bf16(x)), dW(to_bf16(W)), db(to_bf16(bias)), dy(rows * out),
          dyb(rows * out);
      DeviceArray<float> dyf(rows * out);
      // split-K sums merged in a cluster (default on Hopper) and through global memory: the
      // same additions in the same order, so the same bits
      std::vector<float> f32_by_path[2];
      for (bool cluster : {true, false}) {
        cuda::set_skinny_cluster_split(cluster);
        const std::string what = std::to_string(rows) + "x" + std::to_string(in) + "x" +
                                 std::to_string(out) + (cluster ? " cluster" : " global");
        HOGWILD_CUDA_CHECK(cudaMemset(dyf.p, 0xff, rows * out * 4));  // poison (NaN)
        HOGWILD_CUDA_CHECK(cudaMemset(dy.p, 0xff, rows * out * 2));
        cuda::skinny_linear(dx.p, dW.p, nullptr, dy.p, nullptr, rows, in, out, nullptr);
        cuda::skinny_linear(dx.p, dW.p, nullptr, nullptr, dyf.p, rows, in, out, nullptr);
        cuda::skinny_linear(dx.p, dW.p, db.p, dyb.p, nullptr, rows, in, out, nullptr);
        EXPECT_LT(rel_error(to_f32(dy.download()), want), 4e-3) << what;
        f32_by_path[cluster ? 0 : 1] = dyf.download();
        EXPECT_LT(rel_error(f32_by_path[cluster ? 0 : 1], want), 1e-5) << what;
        EXPECT_LT(rel_error(to_f32(dyb.download()), want_b), 4e-3) << "bias " << what;
      }
      cuda::set_skinny_cluster_split(true);
      EXPECT_EQ(f32_by_path[0], f32_by_path[1]) << rows << "x" << in << "x" << out;
    }
}

// CPU reference of the fused gate/up projection: gate and up products in fp32, then SwiGLU.
std::vector<float> cpu_gate_up_swiglu(const std::vector<float>& x, const std::vector<float>& W,
                                      int64_t rows, int64_t in, int64_t I) {
  std::vector<float> gu(rows * 2 * I), gate(rows * I), up(rows * I), act(rows * I);
  cpu::matmul(x.data(), W.data(), nullptr, gu.data(), rows, in, 2 * I);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t i = 0; i < I; ++i) {
      gate[t * I + i] = gu[t * 2 * I + i];
      up[t * I + i] = gu[t * 2 * I + I + i];
    }
  cpu::swiglu(gate.data(), up.data(), act.data(), rows * I);
  return act;
}

TEST(CudaOps, SkinnySwigluMatchesCpuMatmulThenSwiglu) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(10);
  for (int rows = 1; rows <= 8; ++rows)
    for (auto [in, I] : {std::pair{96, 7}, {4096, 1536}, {264, 257}, {5120, 100}}) {
      const auto x = round_bf16(rng.vec(rows * in, 1.0f));
      const auto W = round_bf16(rng.vec(2 * int64_t(I) * in, 2.0f / std::sqrt(float(in))));
      const auto want = cpu_gate_up_swiglu(x, W, rows, in, I);
      DeviceArray<bf16> dx(to_bf16(x)), dW(to_bf16(W)), dact(rows * I);
      HOGWILD_CUDA_CHECK(cudaMemset(dact.p, 0xff, rows * I * 2));  // poison (NaN)
      cuda::skinny_swiglu(dx.p, dW.p, dact.p, rows, in, I, nullptr);
      EXPECT_LT(rel_error(to_f32(dact.download()), want), 4e-3) << rows << "x" << in << "x" << I;
    }
}

// A chain of dependent skinny launches on a stream, captured in a graph (programmatic dependent
// launch: each kernel starts streaming weights before the previous one ends and must still see
// its output), against the CPU composition with the same bf16 roundings.
TEST(CudaOps, SkinnyChainWithProgrammaticLaunchInAGraph) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(11);
  const int64_t H = 2048, I = 3072;
  cudaStream_t st;
  HOGWILD_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int rows : {1, 3, 8}) {
    const auto x = round_bf16(rng.vec(rows * H, 1.0f));
    const auto W1 = round_bf16(rng.vec(H * H, 1.0f / std::sqrt(float(H))));
    const auto W2 = round_bf16(rng.vec(2 * I * H, 2.0f / std::sqrt(float(H))));
    const auto W3 = round_bf16(rng.vec(H * I, 1.0f / std::sqrt(float(I))));
    std::vector<float> y1(rows * H), y3(rows * H);
    cpu::matmul(x.data(), W1.data(), nullptr, y1.data(), rows, H, H);
    const auto act = round_bf16(cpu_gate_up_swiglu(round_bf16(y1), W2, rows, H, I));
    cpu::matmul(act.data(), W3.data(), nullptr, y3.data(), rows, I, H);
    DeviceArray<bf16> dx(to_bf16(x)), dW1(to_bf16(W1)), dW2(to_bf16(W2)), dW3(to_bf16(W3));
    DeviceArray<bf16> dy1(rows * H), dact(rows * I), dy3(rows * H);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    HOGWILD_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    cuda::skinny_linear(dx.p, dW1.p, nullptr, dy1.p, nullptr, rows, H, H, st);
    cuda::skinny_swiglu(dy1.p, dW2.p, dact.p, rows, H, I, st);
    cuda::skinny_linear(dact.p, dW3.p, nullptr, dy3.p, nullptr, rows, I, H, st);
    HOGWILD_CUDA_CHECK(cudaStreamEndCapture(st, &g));
    HOGWILD_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
    for (int rep = 0; rep < 3; ++rep) {
      HOGWILD_CUDA_CHECK(cudaMemsetAsync(dy3.p, 0xff, rows * H * 2, st));  // poison (NaN)
      HOGWILD_CUDA_CHECK(cudaGraphLaunch(ge, st));
      HOGWILD_CUDA_CHECK(cudaStreamSynchronize(st));
      EXPECT_LT(rel_error(to_f32(dy3.download()), y3), 5e-3) << "rows " << rows << " rep " << rep;
    }
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
  }
  cudaStreamDestroy(st);
}

// The fused residual add + RMSNorm across two skinny launches (skinny_residual, then a product
// with SkinnyNormIn) against the CPU: x += bf16(a W1^T); h = rmsnorm(x) * w; out = h W2^T (and the
// gate/up SwiGLU consumer).
TEST(CudaOps, SkinnyFusedNormMatchesAddNormThenProject) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(13);
  const int64_t K = 8192, H = 1024, O = 528, I = 200;  // K long enough for split-K
  const float eps = 1e-6f;
  for (int rows : {1, 3, 8}) {
    const auto x = rng.vec(rows * H, 2.0f);
    const auto a = round_bf16(rng.vec(rows * K, 1.0f));
    const auto W1 = round_bf16(rng.vec(H * K, 1.0f / std::sqrt(float(K))));
    const auto w = round_bf16(rng.vec(H, 0.5f, 1.0f));
    const auto W2 = round_bf16(rng.vec(O * H, 1.0f / std::sqrt(float(H))));
    const auto W3 = round_bf16(rng.vec(2 * I * H, 2.0f / std::sqrt(float(H))));
    std::vector<float> y1(rows * H), xn = x, h(rows * H), out(rows * O);
    cpu::matmul(a.data(), W1.data(), nullptr, y1.data(), rows, K, H);
    cpu::add_inplace(xn.data(), round_bf16(y1).data(), rows * H);
    cpu::rmsnorm(xn.data(), w.data(), h.data(), rows, H, eps);
    cpu::matmul(h.data(), W2.data(), nullptr, out.data(), rows, H, O);
    const auto act = cpu_gate_up_swiglu(h, W3, rows, H, I);

    DeviceArray<float> dx(x), ss(std::vector<float>(rows, 0.0f)),
        ss_next(std::vector<float>(rows, 5.0f));
    DeviceArray<bf16> da(to_bf16(a)), dW1(to_bf16(W1)), dw(to_bf16(w)), dW2(to_bf16(W2)),
        dW3(to_bf16(W3)), dxw(rows * H), dout(rows * O), dact(rows * I);
    cuda::skinny_residual(da.p, dW1.p, rows, K, H, {dx.p, dw.p, ss.p, ss_next.p}, dxw.p, nullptr);
    cuda::skinny_linear(dxw.p, dW2.p, nullptr, dout.p, nullptr, rows, H, O, nullptr,
                        {ss.p, H, eps});
    cuda::skinny_swiglu(dxw.p, dW3.p, dact.p, rows, H, I, nullptr, {ss.p, H, eps});
    EXPECT_LT(rel_error(dx.download(), xn), 1e-3) << "residual rows " << rows;
    EXPECT_LT(rel_error(to_f32(dout.download()), out), 4e-3) << "normed product rows " << rows;
    EXPECT_LT(rel_error(to_f32(dact.download()), act), 4e-3) << "normed swiglu rows " << rows;
    double want_ss = 0;
    for (int64_t i = 0; i < H; ++i) want_ss += double(xn[i]) * xn[i];
    EXPECT_NEAR(ss.download()[0], want_ss, 1e-4 * want_ss) << "sum of squares rows " << rows;
    for (float v : ss_next.download()) EXPECT_EQ(v, 0.0f) << "next slot zeroed, rows " << rows;
  }
}

TEST(CudaOps, LinearOnAStreamAndInAGraph) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(9);
  cudaStream_t st;
  HOGWILD_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cuda::Gemm gemm(st);
  gemm.set_skinny(false);
  for (auto [rows, in, out] : {std::tuple{40, 1024, 96}, {40, 1280, 96}, {40, 768, 96}}) {
    const auto x = round_bf16(rng.vec(rows * in, 0.3f));
    const auto W = round_bf16(rng.vec(int64_t(out) * in, 1.0f / std::sqrt(float(in))));
    std::vector<float> want(rows * out);
    cpu::matmul(x.data(), W.data(), nullptr, want.data(), rows, in, out);
    DeviceArray<bf16> dx(to_bf16(x)), dW(to_bf16(W)), dy(rows * out), dg(rows * out);
    gemm.linear(dx.p, dW.p, dy.p, rows, in, out);
    HOGWILD_CUDA_CHECK(cudaStreamSynchronize(st));
    EXPECT_LT(rel_error(to_f32(dy.download()), want), 4e-3) << "stream " << in;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    HOGWILD_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    gemm.linear(dx.p, dW.p, dg.p, rows, in, out);
    HOGWILD_CUDA_CHECK(cudaStreamEndCapture(st, &g));
    HOGWILD_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
    HOGWILD_CUDA_CHECK(cudaGraphLaunch(ge, st));
    HOGWILD_CUDA_CHECK(cudaStreamSynchronize(st));
    EXPECT_LT(rel_error(to_f32(dg.download()), want), 4e-3) << "graph " << in;
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
  }
  cudaStreamDestroy(st);
}

// RoPE configs: plain, partial rotary (Phi3), YaRN (attention factor != 1), llama3.
std::vector<ModelConfig> rope_configs(int64_t hd) {
  std::vector<ModelConfig> v;
  ModelConfig c;
  c.head_dim = hd, c.num_attention_heads = 4, c.num_key_value_heads = 2;
  c.hidden_size = 4 * hd, c.rope_theta = 1e6, c.max_position_embeddings = 40960;
  v.push_back(c);
  ModelConfig p = c;
  p.partial_rotary_factor = 0.75, p.rope_theta = 10000;
  v.push_back(p);
  ModelConfig y = c;
  y.rope_scaling.rope_type = "yarn", y.rope_scaling.factor = 4.0;
  y.rope_scaling.original_max_position_embeddings = 8192;
  v.push_back(y);
  ModelConfig l = c;
  l.rope_scaling.rope_type = "llama3", l.rope_scaling.factor = 8.0;
  l.rope_scaling.original_max_position_embeddings = 8192, l.rope_theta = 500000;
  v.push_back(l);
  return v;
}

struct DeviceRope {
  cpu::RopeTable table;
  std::unique_ptr<DeviceArray<float2>> cs;
  cuda::RopeTableView view;
  DeviceRope(const ModelConfig& c, int64_t n) : table(cpu::compute_rope_params(c)) {
    table.reserve(n);
    std::vector<float2> h(n * table.half());
    for (int64_t p = 0; p < n; ++p)
      for (int64_t i = 0; i < table.half(); ++i)
        h[p * table.half() + i] = make_float2(table.cos(p)[i], table.sin(p)[i]);
    cs = std::make_unique<DeviceArray<float2>>(h);
    view = {cs->p, static_cast<int32_t>(n), static_cast<int32_t>(table.params().rotary_dim)};
  }
};

// The K/V rows an append wrote into `pool` (got) and what they should be (want): K = the k heads
// of k_src rotated to pos[t], V = the v heads of v_src unchanged.
struct AppendedKv {
  std::vector<float> got_k, want_k, got_v, want_v;
};
AppendedKv appended_kv(const std::vector<float>& pool, const cuda::KvLayout& L,
                       const std::vector<float>& k_src, const std::vector<float>& v_src,
                       int64_t stride, int64_t nh, int64_t T, const std::vector<int32_t>& pos,
                       const std::vector<int32_t>& slot, const DeviceRope& rope, float factor) {
  const int64_t kvh = L.num_key_value_heads, hd = L.head_dim;
  AppendedKv r;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> k(k_src.begin() + t * stride + nh * hd,
                         k_src.begin() + t * stride + (nh + kvh) * hd);
    rope.table.rotate(k.data(), kvh, pos[t], factor);
    for (int64_t h = 0; h < kvh; ++h)
      for (int64_t d = 0; d < hd; ++d) {
        r.got_k.push_back(pool[L.slot_offset(slot[t], 0, h) + d]);
        r.want_k.push_back(k[h * hd + d]);
        r.got_v.push_back(pool[L.slot_offset(slot[t], 1, h) + d]);
        r.want_v.push_back(v_src[t * stride + (nh + kvh) * hd + h * hd + d]);
      }
  }
  return r;
}

TEST(CudaOps, KvAppendRotatesKeysAtBlockPositionsAndCopiesValues) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(5);
  for (int64_t hd : {64, 128}) {
    for (const ModelConfig& c : rope_configs(hd)) {
      DeviceRope rope(c, 20000);
      const float factor = rope.table.params().attention_scaling;
      const int64_t kvh = 2, nh = 4, T = 7, stride = (nh + 2 * kvh) * hd;
      cuda::KvLayout L{6, static_cast<int32_t>(kvh), static_cast<int32_t>(hd)};
      const auto qkv = round_bf16(rng.vec(T * stride, 1.0f));
      const std::vector<int32_t> pos = {0, 1, 63, 64, 200, 16999, 5};
      const std::vector<int32_t> slot = {3 * 64 + 0, 0 * 64 + 1,  5 * 64 + 63, 1 * 64 + 0,
                                         2 * 64 + 8, 4 * 64 + 39, 3 * 64 + 5};
      DeviceArray<bf16> dqkv(to_bf16(qkv)), pool(L.layer_elems());
      DeviceArray<int32_t> dpos(pos), dslot(slot);
      cuda::kv_append(dqkv.p, stride, nh * hd, (nh + kvh) * hd, T, dpos.p, dslot.p, pool.p, L,
                      rope.view, factor, nullptr);
      const AppendedKv kv =
          appended_kv(to_f32(pool.download()), L, qkv, qkv, stride, nh, T, pos, slot, rope, factor);
      expect_close(kv.got_k, kv.want_k, 4e-3, 2e-3, "kv_append K " + c.rope_scaling.rope_type);
      expect_close(kv.got_v, kv.want_v, 0, 0, "kv_append V");
    }
  }
}

TEST(CudaOps, QkNormKvAppendMatchesNormThenAppend) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(12);
  for (int64_t hd : {64, 128}) {
    for (const ModelConfig& c : rope_configs(hd)) {
      DeviceRope rope(c, 20000);
      const float factor = rope.table.params().attention_scaling;
      const int64_t kvh = 2, nh = 6, T = 5, stride = (nh + 2 * kvh) * hd;
      cuda::KvLayout L{6, static_cast<int32_t>(kvh), static_cast<int32_t>(hd)};
      const auto qkv = round_bf16(rng.vec(T * stride, 3.0f));
      const auto wq = round_bf16(rng.vec(hd, 0.5f, 1.0f)), wk = round_bf16(rng.vec(hd, 0.5f, 1.0f));
      const std::vector<int32_t> pos = {0, 63, 64, 16999, 5};
      const std::vector<int32_t> slot = {3 * 64 + 0, 5 * 64 + 63, 1 * 64 + 0, 4 * 64 + 39, 2 * 64};
      std::vector<float> want = qkv;  // q and k normalised in place, v unchanged
      for (int64_t t = 0; t < T; ++t) {
        cpu::rmsnorm(&qkv[t * stride], wq.data(), &want[t * stride], nh, hd, 1e-6f);
        cpu::rmsnorm(&qkv[t * stride + nh * hd], wk.data(), &want[t * stride + nh * hd], kvh, hd,
                     1e-6f);
      }
      DeviceArray<bf16> dqkv(to_bf16(qkv)), dwq(to_bf16(wq)), dwk(to_bf16(wk)),
          pool(L.layer_elems());
      DeviceArray<int32_t> dpos(pos), dslot(slot);
      cuda::qk_norm_kv_append(dqkv.p, stride, nh, T, dwq.p, dwk.p, 1e-6f, dpos.p, dslot.p, pool.p,
                              L, rope.view, factor, nullptr);
      const auto got_qkv = to_f32(dqkv.download());
      expect_close(got_qkv, want, 4e-3, 1e-5, "qk_norm_kv_append q/k " + c.rope_scaling.rope_type);
      // K as the unfused path sees it: the normalised head rounded to bf16, then rotated.
      const AppendedKv kv = appended_kv(to_f32(pool.download()), L, got_qkv, qkv, stride, nh, T,
                                        pos, slot, rope, factor);
      expect_close(kv.got_k, kv.want_k, 4e-3, 2e-3,
                   "qk_norm_kv_append K " + c.rope_scaling.rope_type);
      expect_close(kv.got_v, kv.want_v, 0, 0, "qk_norm_kv_append V");
    }
  }
}

TEST(CudaOps, PromotionIsAPureRotationByTheDestinationLength) {
  HOGWILD_REQUIRE_GPU();
  TestRng rng(6);
  for (int64_t hd : {64, 128}) {
    for (const ModelConfig& c : rope_configs(hd)) {
      DeviceRope rope(c, 20000);
      const int64_t kvh = 3, layers = 2, n = 70;
      cuda::KvLayout L{8, static_cast<int32_t>(kvh), static_cast<int32_t>(hd)};
      const auto init = round_bf16(rng.vec(layers * L.layer_elems(), 1.0f));
      DeviceArray<bf16> pool(to_bf16(init));
      std::vector<int32_t> src(n), dst(n);
      for (int64_t i = 0; i < n; ++i) {
        src[i] = static_cast<int32_t>((i < 64 ? 6 : 2) * 64 + i % 64);  // pages 6, 2
        dst[i] = static_cast<int32_t>((i + 30 < 64 ? 0 : 7) * 64 + (i + 30) % 64);
      }
      const int32_t delta = 16413;
      DeviceArray<int32_t> dsrc(src), ddst(dst);
      cuda::kv_promote(pool.p, L, layers, dsrc.p, ddst.p, n, delta, rope.view, nullptr);
      const auto got = to_f32(pool.download());
      std::vector<float> gk, wk, gv, wv;
      for (int64_t l = 0; l < layers; ++l)
        for (int64_t i = 0; i < n; ++i) {
          const float* base = init.data() + l * L.layer_elems();
          std::vector<float> k(kvh * hd);
          for (int64_t h = 0; h < kvh; ++h)
            for (int64_t d = 0; d < hd; ++d) k[h * hd + d] = base[L.slot_offset(src[i], 0, h) + d];
          rope.table.rotate(k.data(), kvh, delta, 1.0f);
          for (int64_t h = 0; h < kvh; ++h)
            for (int64_t d = 0; d < hd; ++d) {
              gk.push_back(got[l * L.layer_elems() + L.slot_offset(dst[i], 0, h) + d]);
              wk.push_back(k[h * hd + d]);
              gv.push_back(got[l * L.layer_elems() + L.slot_offset(dst[i], 1, h) + d]);
              wv.push_back(base[L.slot_offset(src[i], 1, h) + d]);
            }
        }
      expect_close(gk, wk, 4e-3, 2e-3, "promote K " + c.rope_scaling.rope_type);
      expect_close(gv, wv, 0, 0, "promote V");
    }
  }
}

}  // namespace
}  // namespace hogwild::test
