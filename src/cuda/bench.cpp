// `hogwild bench` sweep (bench.h).
#include "cuda/bench.h"

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
#include "hogwild/kv_budget.h"
#include "hogwild/layout.h"
#include "model/make_model.h"
#include "model/weights.h"

namespace hogwild::cuda {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One (context, workers, sessions) point on a backend: S independent problems, each with its own
// shared context of ctx tokens and W workers, every worker feeding one token per step, all in
// one forward (as the Engine batches sessions).
nlohmann::json bench_point(CudaBackend& be, const std::string& model, int64_t ctx, int W, int S,
                           const BenchOptions& opt) {
  const int64_t steps_total = opt.warmup + opt.repeat;
  be.require_kv_tokens(S * run_kv_tokens({ctx, W, opt.step_tokens + steps_total, 0, 0}));
  std::vector<BlockId> owned;
  auto block = [&](int64_t len, uint64_t seed) {
    owned.push_back(be.new_block());
    be.fill_block_random(owned.back(), len, seed);
    return owned.back();
  };
  ForwardBatch b;
  std::vector<BlockId> step(static_cast<size_t>(S) * W);
  for (int s = 0; s < S; ++s) {
    const uint64_t seed = opt.seed + 1000 * static_cast<uint64_t>(s);
    const BlockId shared = block(ctx, seed + 1);
    for (int w = 0; w < W; ++w) step[s * W + w] = block(opt.step_tokens, seed + 100 + w);
    // The combined layout of hogwild/layout.h, as a session builds it. Session layout: the
    // constant blocks too, header 8 tokens, separator 2, separator + own header 10 (Qwen3 tokens
    // of the default formatting are of that order); else only the context and the steps.
    LayoutState st;
    st.layout = Layout::combined;
    st.history = shared;
    st.current.assign(step.begin() + s * W, step.begin() + (s + 1) * W);
    st.text.others_header.assign(W, -1);
    st.text.sep_own_header.assign(W, -1);
    if (opt.session_layout && W > 1) {
      st.text.others_header.assign(W, block(8, seed + 2));
      st.text.sep = block(2, seed + 3);
      for (int w = 0; w < W; ++w) st.text.sep_own_header[w] = block(10, seed + 200 + w);
    }
    for (std::vector<BlockId>& v : build_views(st)) b.views.push_back(std::move(v));
  }
  // Tokens of the constant blocks the views read (each distinct block once).
  int64_t const_tokens = 0;
  {
    std::vector<BlockId> seen;
    for (const auto& v : b.views)
      for (BlockId x : v)
        if (std::find(seen.begin(), seen.end(), x) == seen.end()) {
          seen.push_back(x);
          if (std::find(step.begin(), step.end(), x) == step.end()) const_tokens += be.block_len(x);
        }
  }

  std::vector<double> ms;
  int64_t kv_tokens_read = 0;
  const int rows = S * W;
  for (int64_t t = 0; t < steps_total; ++t) {
    b.tokens.clear();
    for (int r = 0; r < rows; ++r)
      b.tokens.push_back(
          {static_cast<int32_t>((t * 131 + r * 17) % be.config().vocab_size), r, step[r], true});
    const auto t0 = std::chrono::steady_clock::now();
    be.forward_device(b);  // synchronizes
    const auto t1 = std::chrono::steady_clock::now();
    if (t >= opt.warmup) {
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      // every distinct block once: the contexts and constants, and the steps as they grow
      kv_tokens_read += const_tokens + S * W * (opt.step_tokens + t + 1);
    }
  }
  for (BlockId x : owned) be.free_block(x);

  const double step_ms = median(ms);
  const double kv_bytes = double(kv_tokens_read) / opt.repeat * be.kv_bytes_per_token();
  const double bytes = double(be.weight_bytes_per_step()) + kv_bytes;
  nlohmann::json r;
  r["model"] = model;
  r["context"] = ctx;
  r["workers"] = W;
  r["sessions"] = S;
  r["rows"] = rows;
  r["layout"] = opt.session_layout ? "session" : "bench";
  r["step_ms"] = step_ms;
  r["step_ms_min"] = *std::min_element(ms.begin(), ms.end());
  r["tok_s_per_worker"] = 1000.0 / step_ms;
  r["tok_s_aggregate"] = rows * 1000.0 / step_ms;
  r["weight_bytes"] = be.weight_bytes_per_step();
  r["kv_bytes"] = kv_bytes;
  r["GBps"] = bytes / (step_ms * 1e-3) / 1e9;
  // The roofline: weights once + every KV block once per step, at the measured copy bandwidth.
  return r;
}

void add_model(nlohmann::json& out, CudaBackend& be, const std::string& name,
               const BenchOptions& opt, double bw) {
  for (int S : opt.sessions)
    for (int64_t ctx : opt.contexts) {
      double base = 0;
      for (int W : opt.workers) {
        nlohmann::json r = bench_point(be, name, ctx, W, S, opt);
        if (W == 1) base = r["tok_s_aggregate"].get<double>();
        r["pct_of_copy_bw"] = 100.0 * r["GBps"].get<double>() * 1e9 / bw;
        r["speedup_vs_1_worker"] = base > 0 ? r["tok_s_aggregate"].get<double>() / base : 0.0;
        if (opt.progress)
          std::fprintf(stderr,
                       "bench %s ctx %ld workers %d sessions %d: %.2f ms/step, %.1f tok/s\n",
                       name.c_str(), static_cast<long>(ctx), W, S, r["step_ms"].get<double>(),
                       r["tok_s_aggregate"].get<double>());
        out["results"].push_back(r);
      }
    }
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

nlohmann::json run_bench(const BenchOptions& opt) {
  if (!cuda_device_available()) fail("hogwild bench needs a CUDA GPU and none is usable");
  cudaDeviceProp prop{};
  HOGWILD_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const double bw = measure_copy_bandwidth();
  nlohmann::json out;
  out["device"] = prop.name;
  out["skinny_gemm"] = opt.skinny_gemm;
  out["programmatic_launch"] = opt.programmatic_launch;
  out["cluster_split"] = opt.cluster_split;
  set_programmatic_launch(opt.programmatic_launch);
  set_skinny_cluster_split(opt.cluster_split);
  out["copy_bandwidth_GBps"] = bw / 1e9;
  out["results"] = nlohmann::json::array();
  CudaOptions co;
  int max_rows = 1;
  for (int S : opt.sessions)
    for (int W : opt.workers) max_rows = std::max(max_rows, S * W);
  co.max_batch_tokens = std::max(64, max_rows);
  co.max_kv_tokens = opt.kv_tokens;
  co.skinny_gemm = opt.skinny_gemm;
  for (const std::string& name : opt.presets) {
    const auto& all = model_presets();
    auto it =
        std::find_if(all.begin(), all.end(), [&](const ModelPreset& p) { return p.name == name; });
    if (it == all.end()) fail("bench: unknown preset '{}'; see `hogwild make-model --help`", name);
    auto be = std::make_unique<CudaBackend>(it->config, opt.seed, co);
    add_model(out, *be, name, opt, bw);
  }
  for (const std::string& dir : opt.model_dirs) {
    auto be = std::make_unique<CudaBackend>(dir, co);  // streamed as bf16, no fp32 host copy
    add_model(out, *be, dir, opt, bw);
  }
  return out;
}

nlohmann::json run_gemm_bench(const BenchOptions& opt) {
  if (!cuda_device_available()) fail("bench: needs a CUDA GPU and none is usable");
  set_programmatic_launch(opt.programmatic_launch);
  set_skinny_cluster_split(opt.cluster_split);
  nlohmann::json out;
  out["copy_bandwidth_GBps"] = measure_copy_bandwidth() / 1e9;
  out["results"] = nlohmann::json::array();
  cudaStream_t st;
  HOGWILD_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  Gemm gemm(st);
  cudaEvent_t e0, e1;
  HOGWILD_CUDA_CHECK(cudaEventCreate(&e0));
  HOGWILD_CUDA_CHECK(cudaEventCreate(&e1));
  int64_t max_rows = 1;
  for (int rows : opt.workers) max_rows = std::max<int64_t>(max_rows, rows);
  for (const std::string& name : opt.presets) {
    const auto& all = model_presets();
    auto it =
        std::find_if(all.begin(), all.end(), [&](const ModelPreset& p) { return p.name == name; });
    if (it == all.end()) fail("bench: unknown preset '{}'", name);
    const ModelConfig& c = it->config;
    const int64_t H = c.hidden_size, I = c.intermediate_size, hd = c.head_dim;
    const int64_t qkv = (c.num_attention_heads + 2 * c.num_key_value_heads) * hd;
    struct Shape {
      const char* what;
      int64_t in, out;
    };
    for (const Shape& s : {Shape{"qkv", H, qkv}, Shape{"o", c.num_attention_heads * hd, H},
                           Shape{"gate_up_swiglu", H, 2 * I}, Shape{"down", I, H},
                           Shape{"lm_head", H, c.vocab_size}}) {
      const int64_t bytes = s.in * s.out * 2;
      const int64_t copies = std::max<int64_t>(1, (int64_t(512) << 20) / bytes + 1);
      bf16 *W = nullptr, *x = nullptr, *y = nullptr, *scratch = nullptr;
      float* yf = nullptr;
      HOGWILD_CUDA_CHECK(cudaMalloc(&W, copies * bytes));
      HOGWILD_CUDA_CHECK(cudaMalloc(&x, max_rows * s.in * 2));
      HOGWILD_CUDA_CHECK(cudaMalloc(&y, max_rows * s.out * 2));
      HOGWILD_CUDA_CHECK(cudaMalloc(&scratch, max_rows * s.out * 2));
      HOGWILD_CUDA_CHECK(cudaMalloc(&yf, max_rows * s.out * 4));
      fill_uniform_bf16(W, copies * bytes / 2, opt.seed, 0.02f, 0.0f, st);
      fill_uniform_bf16(x, max_rows * s.in, opt.seed + 1, 1.0f, 0.0f, st);
      for (int rows : opt.workers) {
        nlohmann::json r;
        r["model"] = name;
        r["matrix"] = s.what;
        r["in"] = s.in;
        r["out"] = s.out;
        r["rows"] = rows;
        for (bool skinny : {true, false}) {
          if (skinny && !skinny_supported(rows, s.in)) continue;  // cuBLAS only beyond 8 rows
          gemm.set_skinny(skinny);
          const int n = 40;
          auto one = [&](int i) {
            const bf16* w = W + (i % copies) * (bytes / 2);
            if (s.what == std::string("gate_up_swiglu"))
              gemm.linear_swiglu(x, w, scratch, y, rows, s.in, s.out / 2);
            else if (s.what == std::string("lm_head"))
              gemm.linear_f32(x, w, yf, rows, s.in, s.out);
            else
              gemm.linear(x, w, y, rows, s.in, s.out);
          };
          for (int i = 0; i < 5; ++i) one(i);
          HOGWILD_CUDA_CHECK(cudaEventRecord(e0, st));
          for (int i = 0; i < n; ++i) one(i);
          HOGWILD_CUDA_CHECK(cudaEventRecord(e1, st));
          HOGWILD_CUDA_CHECK(cudaEventSynchronize(e1));
          float ms = 0;
          HOGWILD_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
          const double us = 1000.0 * ms / n;
          r[skinny ? "skinny_us" : "cublas_us"] = us;
          r[skinny ? "skinny_GBps" : "cublas_GBps"] = bytes / (us * 1e-6) / 1e9;
        }
        out["results"].push_back(r);
      }
      cudaFree(W);
      cudaFree(x);
      cudaFree(y);
      cudaFree(scratch);
      cudaFree(yf);
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(st);
  return out;
}

std::string gemm_table(const nlohmann::json& j) {
  std::string s =
      fmt::format("copy bandwidth {:.0f} GB/s\n", j["copy_bandwidth_GBps"].get<double>());
  s += "| model | matrix | in | out | rows | skinny us | skinny GB/s | cuBLAS us | cuBLAS GB/s |\n";
  s += "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : j["results"]) {
    const bool sk = r.contains("skinny_us");  // absent beyond the skinny kernel's 8 rows
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.1f} | {:.0f} |\n",
                     r["model"].get<std::string>(), r["matrix"].get<std::string>(),
                     r["in"].get<int64_t>(), r["out"].get<int64_t>(), r["rows"].get<int>(),
                     sk ? fmt::format("{:.1f}", r["skinny_us"].get<double>()) : "-",
                     sk ? fmt::format("{:.0f}", r["skinny_GBps"].get<double>()) : "-",
                     r["cublas_us"].get<double>(), r["cublas_GBps"].get<double>());
  }
  return s;
}

std::string bench_table(const nlohmann::json& j) {
  std::string s =
      fmt::format("device: {}, copy bandwidth {:.0f} GB/s\n", j["device"].get<std::string>(),
                  j["copy_bandwidth_GBps"].get<double>());
  s += fmt::format(
      "| {:<10} | {:>8} | {:>7} | {:>7} | {:>8} | {:>10} | {:>10} | {:>8} | {:>6} | {:>7} |\n",
      "model", "sessions", "context", "workers", "step ms", "tok/s/wkr", "tok/s agg", "GB/s",
      "% BW", "speedup");
  s += "|------------|----------|---------|---------|----------|------------|------------|--------"
       "--|--------|---------|\n";
  for (const auto& r : j["results"])
    s += fmt::format(
        "| {:<10} | {:>8} | {:>7} | {:>7} | {:>8.2f} | {:>10.1f} | {:>10.1f} | {:>8.0f} | "
        "{:>6.1f} | {:>7.2f} |\n",
        r["model"].get<std::string>(), r.value("sessions", 1), r["context"].get<int64_t>(),
        r["workers"].get<int>(), r["step_ms"].get<double>(), r["tok_s_per_worker"].get<double>(),
        r["tok_s_aggregate"].get<double>(), r["GBps"].get<double>(),
        r["pct_of_copy_bw"].get<double>(), r["speedup_vs_1_worker"].get<double>());
  return s;
}

}  // namespace hogwild::cuda
