// `hogwild bench --device cuda` (cuda_bench.h).
#include "bench/cuda_bench.h"

#include <cublasLt.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "core/error.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.h"
#include "cuda/gemm.h"
#include "cuda/pdl.h"
#include "cuda/skinny_gemm.h"
#include "model/make_model.h"
#include "model/weights.h"

namespace hogwild::bench {

// The benchmark drives the backend and its kernels directly.
using namespace hogwild::cuda;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int max_sessions(const CudaBenchOptions& opt) {
  return opt.sessions.empty() ? 1 : *std::max_element(opt.sessions.begin(), opt.sessions.end());
}

void add_model(nlohmann::json& out, CudaBackend& be, const std::string& name,
               const CudaBenchOptions& opt, double bw) {
  DecodeBenchModel m = decode_bench_model(be, name);
  m.step = [&be](const ForwardBatch& b) { be.forward_device(b); };  // synchronizes
  m.require_kv_tokens = [&be](int64_t tokens) { be.require_kv_tokens(tokens); };
  if (be.expert_bytes() > 0)
    m.last_step_reads = [&be]() {
      const std::vector<int32_t> touched = be.last_experts_touched();
      double mean = 0;
      for (int32_t n : touched) mean += n;
      if (!touched.empty()) mean /= static_cast<double>(touched.size());
      return std::make_pair(static_cast<double>(be.last_step_weight_bytes()), mean);
    };
  run_decode_sweep(m, opt, bw / 1e9, out);
  if (opt.invariance_steps > 0) {
    const int sessions = std::max(2, max_sessions(opt));
    nlohmann::json r =
        measure_batch_invariance(be, sessions, 32, opt.invariance_steps, opt.seed + 17);
    r["model"] = name;
    out["invariance"].push_back(std::move(r));
  }
}

// Every algorithm cuBLASLt's heuristic offers (up to 64) for y (rows, out) bf16 = x W^T, the same
// product Gemm::run asks cublasGemmEx for, each timed as `time` times its launches. Returns
// [{"index", "tile_id", "splitk", "stages_id", "us"}] in heuristic order.
template <class TimeFn>
nlohmann::json sweep_cublaslt(cudaStream_t st, const bf16* x, const bf16* W, bf16* y, int64_t rows,
                              int64_t in, int64_t out, void* ws, size_t ws_bytes, TimeFn&& time) {
  cublasLtHandle_t lt = nullptr;
  HOGWILD_CUBLAS_CHECK(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t op = nullptr;
  HOGWILD_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  HOGWILD_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  HOGWILD_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  cublasLtMatrixLayout_t A = nullptr, B = nullptr, C = nullptr;
  HOGWILD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&A, CUDA_R_16BF, in, out, in));
  HOGWILD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&B, CUDA_R_16BF, in, rows, in));
  HOGWILD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&C, CUDA_R_16BF, out, rows, out));
  cublasLtMatmulPreference_t pref = nullptr;
  HOGWILD_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  HOGWILD_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  std::vector<cublasLtMatmulHeuristicResult_t> res(64);
  int n = 0;
  HOGWILD_CUBLAS_CHECK(
      cublasLtMatmulAlgoGetHeuristic(lt, op, A, B, C, C, pref, 64, res.data(), &n));
  nlohmann::json algos = nlohmann::json::array();
  const float alpha = 1.0f, beta = 0.0f;
  for (int i = 0; i < n; ++i) {
    const cublasLtMatmulAlgo_t* algo = &res[i].algo;
    if (res[i].workspaceSize > ws_bytes) continue;
    const double us = time([&](const bf16* w) {
      HOGWILD_CUBLAS_CHECK(
          cublasLtMatmul(lt, op, &alpha, w, A, x, B, &beta, y, C, y, C, algo, ws, ws_bytes, st));
    });
    int32_t tile = 0, splitk = 0, stages = 0;
    size_t got = 0;
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                         &got);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                         sizeof splitk, &got);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                         sizeof stages, &got);
    algos.push_back(
        {{"index", i}, {"tile_id", tile}, {"splitk", splitk}, {"stages_id", stages}, {"us", us}});
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(A);
  cublasLtMatrixLayoutDestroy(B);
  cublasLtMatrixLayoutDestroy(C);
  cublasLtMatmulDescDestroy(op);
  cublasLtDestroy(lt);
  return algos;
}

}  // namespace

double measure_copy_bandwidth() {
  const size_t bytes = size_t(2) << 30;  // 2 GiB each way: far beyond the 60 MB L2
  void *a = nullptr, *b = nullptr;
  HOGWILD_CUDA_CHECK(cudaMalloc(&a, bytes));
  HOGWILD_CUDA_CHECK(cudaMalloc(&b, bytes));
  HOGWILD_CUDA_CHECK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  HOGWILD_CUDA_CHECK(cudaEventCreate(&e0));
  HOGWILD_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> t;
  for (int i = 0; i < 12; ++i) {
    HOGWILD_CUDA_CHECK(cudaEventRecord(e0));
    HOGWILD_CUDA_CHECK(
        cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice));
    HOGWILD_CUDA_CHECK(cudaEventRecord(e1));
    HOGWILD_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    HOGWILD_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (i >= 2) t.push_back(ms);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / (median(t) * 1e-3);
}

std::string cuda_device_name() {
  cudaDeviceProp prop{};
  HOGWILD_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  return prop.name;
}

nlohmann::json run_cuda_bench(const CudaBenchOptions& opt) {
  check_decode_bench_options(opt);
  if (!cuda_device_available()) fail("hogwild bench needs a CUDA GPU and none is usable");
  const std::string device = cuda_device_name();
  const double bw = measure_copy_bandwidth();
  nlohmann::json out;
  out["backend"] = "cuda";
  out["device"] = device;
  out["skinny_gemm"] = opt.skinny_gemm;
  out["programmatic_launch"] = opt.programmatic_launch;
  out["cluster_split"] = opt.cluster_split;
  set_programmatic_launch(opt.programmatic_launch);
  set_skinny_cluster_split(opt.cluster_split);
  out["bandwidth_GBps"] = bw / 1e9;
  out["bandwidth_probe"] = "device-to-device copy";
  out["copy_bandwidth_GBps"] = bw / 1e9;
  out["results"] = nlohmann::json::array();
  CudaOptions co;
  int max_rows = 1;
  for (int S : opt.sessions)
    for (int W : opt.workers) max_rows = std::max(max_rows, S * W);
  co.max_batch_tokens = std::max(64, max_rows);
  if (opt.invariance_steps > 0)  // the prompts of measure_batch_invariance in one forward
    co.max_batch_tokens =
        std::max<int64_t>(co.max_batch_tokens, int64_t{32} * std::max(2, max_sessions(opt)));
  co.max_kv_tokens = opt.kv_tokens;
  co.skinny_gemm = opt.skinny_gemm;
  co.attn_chunk = opt.attn_chunk;
  out["attn_chunk"] = opt.attn_chunk;
  for (const std::string& name : opt.presets) {
    ModelConfig c = preset_named(name).config;
    c.quantization_config = bench_quant_config(opt.quant, opt.group_size, opt.desc_act);
    auto be = std::make_unique<CudaBackend>(c, opt.seed, co);
    std::string label = name;
    if (!opt.quant.empty())
      label += opt.quant == "fp8" ? "-fp8"
                                  : fmt::format("-{}-g{}{}", opt.quant, opt.group_size,
                                                opt.desc_act ? "-act-order" : "");
    add_model(out, *be, label, opt, bw);
  }
  for (const std::string& dir : opt.model_dirs) {
    auto be = std::make_unique<CudaBackend>(dir, co);  // streamed as bf16, no fp32 host copy
    add_model(out, *be, dir, opt, bw);
  }
  return out;
}

QuantConfig bench_quant_config(const std::string& quant, int64_t group_size, bool desc_act) {
  QuantConfig q;
  if (quant.empty()) return q;
  if (quant != "awq" && quant != "gptq" && quant != "fp8")
    fail("--quant {}: not a format; use awq, gptq or fp8", quant);
  if (quant == "fp8") {
    q.method = QuantMethod::fp8;
    q.block_n = q.block_k = 128;
    return q;
  }
  if (group_size != -1 && (group_size <= 0 || group_size % 32 != 0))
    fail("--group-size {}: use -1 or a positive multiple of 32", group_size);
  q.method = quant == "awq" ? QuantMethod::awq : QuantMethod::gptq;
  q.bits = 4;
  q.group_size = group_size;
  q.desc_act = quant == "gptq" && desc_act;
  return q;
}

namespace {

// One projection of a preset's layer in run_gemm_bench: y (rows, out) = x W^T, W (out, in) bf16.
struct GemmShape {
  const char* what;  // qkv, o, gate_up_swiglu (gate and up, then SwiGLU), down, lm_head (fp32 out)
  int64_t in, out;
  bool is(const char* name) const { return what == std::string(name); }
};

std::vector<GemmShape> gemm_shapes(const ModelConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, hd = c.head_dim;
  const int64_t qkv = (c.num_attention_heads + 2 * c.num_key_value_heads) * hd;
  return {GemmShape{"qkv", H, qkv}, GemmShape{"o", c.num_attention_heads * hd, H},
          GemmShape{"gate_up_swiglu", H, 2 * I}, GemmShape{"down", I, H},
          GemmShape{"lm_head", H, c.vocab_size}};
}

// The device buffers of one shape, for up to max_rows rows: `copies` copies of W that together
// exceed the L2, x, the outputs; with --quant, packed copies of the matrix (lm_head stays bf16, as
// in checkpoints), again enough of them to exceed the L2, and their kernel's scratch.
struct GemmOperands {
  int64_t bytes = 0;   // one copy of W
  int64_t copies = 0;  // of W
  bf16 *W = nullptr, *x = nullptr, *y = nullptr, *scratch = nullptr;
  float* yf = nullptr;
  std::vector<QuantWeight> qw;
  void* qscratch = nullptr;
  // Copy i of W, cycling over the copies.
  const bf16* copy(int i) const { return W + (i % copies) * (bytes / 2); }
};

// The packed copies of shape s for opt.quant (none without it, and none for lm_head).
void add_quant_copies(GemmOperands& o, const GemmShape& s, int64_t max_rows,
                      const CudaBenchOptions& opt, cudaStream_t st) {
  const QuantConfig qc = bench_quant_config(opt.quant, opt.group_size, opt.desc_act);
  if (qc.method == QuantMethod::none || s.is("lm_head")) return;
  const WeightFormat f = qc.method == QuantMethod::fp8 ? WeightFormat::fp8 : WeightFormat::int4;
  const int64_t group = f == WeightFormat::fp8 ? 128 : qc.group_size > 0 ? qc.group_size : s.in;
  const QuantWeight one = random_quant_weight(f, s.out, s.in, group, opt.seed, st);
  const int64_t n = std::max<int64_t>(1, (int64_t(512) << 20) / one.bytes() + 1);
  o.qw.push_back(one);
  for (int64_t i = 1; i < n; ++i)
    o.qw.push_back(random_quant_weight(f, s.out, s.in, group, opt.seed + i, st));
  HOGWILD_CUDA_CHECK(cudaMalloc(&o.qscratch, quant_scratch_bytes(one, max_rows)));
}

GemmOperands make_operands(const GemmShape& s, int64_t max_rows, const CudaBenchOptions& opt,
                           cudaStream_t st) {
  GemmOperands o;
  o.bytes = s.in * s.out * 2;
  o.copies = std::max<int64_t>(1, (int64_t(512) << 20) / o.bytes + 1);
  HOGWILD_CUDA_CHECK(cudaMalloc(&o.W, o.copies * o.bytes));
  HOGWILD_CUDA_CHECK(cudaMalloc(&o.x, max_rows * s.in * 2));
  HOGWILD_CUDA_CHECK(cudaMalloc(&o.y, max_rows * s.out * 2));
  HOGWILD_CUDA_CHECK(cudaMalloc(&o.scratch, max_rows * s.out * 2));
  HOGWILD_CUDA_CHECK(cudaMalloc(&o.yf, max_rows * s.out * 4));
  fill_uniform_bf16(o.W, o.copies * o.bytes / 2, opt.seed, 0.02f, 0.0f, st);
  fill_uniform_bf16(o.x, max_rows * s.in, opt.seed + 1, 1.0f, 0.0f, st);
  add_quant_copies(o, s, max_rows, opt, st);
  return o;
}

void free_operands(GemmOperands& o) {
  for (QuantWeight& q : o.qw) free_quant_weight(q);
  if (o.qscratch) cudaFree(o.qscratch);
  cudaFree(o.W);
  cudaFree(o.x);
  cudaFree(o.y);
  cudaFree(o.scratch);
  cudaFree(o.yf);
}

// What every measurement of run_gemm_bench shares: a stream, its Gemm, two timing events and,
// with opt.gemm_algos, cuBLASLt's workspace.
class GemmBench {
 public:
  static constexpr size_t kSweepWorkspace = 32u << 20;  // as Gemm's

  explicit GemmBench(bool gemm_algos) : st_(new_stream()), gemm_(st_) {
    HOGWILD_CUDA_CHECK(cudaEventCreate(&e0_));
    HOGWILD_CUDA_CHECK(cudaEventCreate(&e1_));
    if (gemm_algos) HOGWILD_CUDA_CHECK(cudaMalloc(&ws_, kSweepWorkspace));
  }
  ~GemmBench() {
    cudaEventDestroy(e0_);
    cudaEventDestroy(e1_);
    if (ws_) cudaFree(ws_);
    cudaStreamDestroy(st_);
  }
  GemmBench(const GemmBench&) = delete;
  GemmBench& operator=(const GemmBench&) = delete;

  cudaStream_t stream() const { return st_; }
  Gemm& gemm() { return gemm_; }
  void* workspace() const { return ws_; }

  // Mean us of n back-to-back launch(w) after 5 warm-up ones, w cycling over o's copies of W.
  template <class Launch>
  double mean_us(const GemmOperands& o, int n, Launch&& launch) {
    for (int i = 0; i < 5; ++i) launch(o.copy(i));
    HOGWILD_CUDA_CHECK(cudaEventRecord(e0_, st_));
    for (int i = 0; i < n; ++i) launch(o.copy(i));
    HOGWILD_CUDA_CHECK(cudaEventRecord(e1_, st_));
    HOGWILD_CUDA_CHECK(cudaEventSynchronize(e1_));
    float ms = 0;
    HOGWILD_CUDA_CHECK(cudaEventElapsedTime(&ms, e0_, e1_));
    return 1000.0 * ms / n;
  }

 private:
  static cudaStream_t new_stream() {
    cudaStream_t st;
    HOGWILD_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    return st;
  }
  cudaStream_t st_;
  Gemm gemm_;
  cudaEvent_t e0_ = nullptr, e1_ = nullptr;
  void* ws_ = nullptr;
};

// r's skinny_us / skinny_GBps (where the skinny kernel takes `rows`) and cublas_us / cublas_GBps:
// the bf16 product of shape s as the forward runs it.
void time_bf16(GemmBench& b, const GemmShape& s, const GemmOperands& o, int rows,
               nlohmann::json& r) {
  Gemm& gemm = b.gemm();
  for (bool skinny : {true, false}) {
    if (skinny && !skinny_supported(rows, s.in)) continue;  // cuBLAS only beyond 8 rows
    gemm.set_skinny(skinny);
    const double us = b.mean_us(o, 40, [&](const bf16* w) {
      if (s.is("gate_up_swiglu"))
        gemm.linear_swiglu(o.x, w, o.scratch, o.y, rows, s.in, s.out / 2);
      else if (s.is("lm_head"))
        gemm.linear_f32(o.x, w, o.yf, rows, s.in, s.out);
      else
        gemm.linear(o.x, w, o.y, rows, s.in, s.out);
    });
    r[skinny ? "skinny_us" : "cublas_us"] = us;
    r[skinny ? "skinny_GBps" : "cublas_GBps"] = o.bytes / (us * 1e-6) / 1e9;
  }
}

// --quant: r's quant_us / quant_GBps, the packed weight's kernel (quant_gemm.h) and the bytes it
// reads.
void time_quant(GemmBench& b, const GemmShape& s, const GemmOperands& o, int rows,
                nlohmann::json& r) {
  int i = 0;
  const double us = b.mean_us(o, 40, [&](const bf16*) {
    const QuantWeight& q = o.qw[static_cast<size_t>(i++) % o.qw.size()];
    quant_linear(b.gemm(), o.x, q, nullptr, s.is("gate_up_swiglu") ? o.scratch : o.y, rows,
                 o.qscratch, b.stream());
    if (s.is("gate_up_swiglu")) swiglu(o.scratch, o.y, rows, s.out / 2, b.stream());
  });
  r["quant_us"] = us;
  r["quant_GBps"] = double(o.qw[0].bytes()) / (us * 1e-6) / 1e9;
}

// --gemm-algos: r's cublaslt_algos and cublaslt_best_us, the product alone (gate/up without its
// SwiGLU), as cublasGemmEx computes it in time_bf16.
void time_cublaslt(GemmBench& b, const GemmShape& s, const GemmOperands& o, int rows,
                   nlohmann::json& r) {
  auto time = [&](auto&& launch) { return b.mean_us(o, 30, launch); };
  const nlohmann::json algos = sweep_cublaslt(b.stream(), o.x, o.W, o.scratch, rows, s.in, s.out,
                                              b.workspace(), GemmBench::kSweepWorkspace, time);
  r["cublaslt_algos"] = algos;
  double best = 0;
  for (const auto& a : algos)
    if (best == 0 || a["us"].get<double>() < best) best = a["us"].get<double>();
  if (best > 0) r["cublaslt_best_us"] = best;
}

// The rows of `results` for shape s of preset `model`: one per row count of opt.workers.
void bench_shape(GemmBench& b, const std::string& model, const GemmShape& s,
                 const CudaBenchOptions& opt, int64_t max_rows, nlohmann::json& results) {
  GemmOperands o = make_operands(s, max_rows, opt, b.stream());
  for (int rows : opt.workers) {
    nlohmann::json r;
    r["model"] = model;
    r["matrix"] = s.what;
    r["in"] = s.in;
    r["out"] = s.out;
    r["rows"] = rows;
    time_bf16(b, s, o, rows, r);
    if (!o.qw.empty()) time_quant(b, s, o, rows, r);
    if (opt.gemm_algos && !s.is("lm_head")) time_cublaslt(b, s, o, rows, r);
    results.push_back(r);
  }
  free_operands(o);
}

}  // namespace

nlohmann::json run_gemm_bench(const CudaBenchOptions& opt) {
  if (!cuda_device_available()) fail("bench: needs a CUDA GPU and none is usable");
  set_programmatic_launch(opt.programmatic_launch);
  set_skinny_cluster_split(opt.cluster_split);
  nlohmann::json out;
  out["copy_bandwidth_GBps"] = measure_copy_bandwidth() / 1e9;
  out["results"] = nlohmann::json::array();
  GemmBench b(opt.gemm_algos);
  int64_t max_rows = 1;
  for (int rows : opt.workers) max_rows = std::max<int64_t>(max_rows, rows);
  for (const std::string& name : opt.presets) {
    for (const GemmShape& s : gemm_shapes(preset_named(name).config))
      bench_shape(b, name, s, opt, max_rows, out["results"]);
  }
  return out;
}

std::string gemm_table(const nlohmann::json& j) {
  std::string s =
      fmt::format("copy bandwidth {:.0f} GB/s\n", j["copy_bandwidth_GBps"].get<double>());
  bool quant = false;  // --quant: two more columns
  for (const auto& r : j["results"]) quant = quant || r.contains("quant_us");
  s += "| model | matrix | in | out | rows | skinny us | skinny GB/s | cuBLAS us | cuBLAS GB/s | "
       "cuBLASLt algos | fastest algo us |";
  s += quant ? " quant us | quant GB/s |\n" : "\n";
  s += quant ? "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
             : "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : j["results"]) {
    const bool sk = r.contains("skinny_us");       // absent beyond the skinny kernel's 8 rows
    const bool lt = r.contains("cublaslt_algos");  // --gemm-algos
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.1f} | {:.0f} | {} | {} |\n",
                     r["model"].get<std::string>(), r["matrix"].get<std::string>(),
                     r["in"].get<int64_t>(), r["out"].get<int64_t>(), r["rows"].get<int>(),
                     sk ? fmt::format("{:.1f}", r["skinny_us"].get<double>()) : "-",
                     sk ? fmt::format("{:.0f}", r["skinny_GBps"].get<double>()) : "-",
                     r["cublas_us"].get<double>(), r["cublas_GBps"].get<double>(),
                     lt ? std::to_string(r["cublaslt_algos"].size()) : "-",
                     r.contains("cublaslt_best_us")
                         ? fmt::format("{:.1f}", r["cublaslt_best_us"].get<double>())
                         : "-");
    if (quant) {
      s.pop_back();  // the row's newline
      s += r.contains("quant_us") ? fmt::format(" {:.1f} | {:.0f} |\n", r["quant_us"].get<double>(),
                                                r["quant_GBps"].get<double>())
                                  : " - | - |\n";
    }
  }
  return s;
}

}  // namespace hogwild::bench
