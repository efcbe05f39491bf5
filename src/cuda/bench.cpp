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
#include "model/make_model.h"
#include "model/weights.h"

namespace hogwild::cuda {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One (context, workers) point on a backend.
nlohmann::json bench_point(CudaBackend& be, const std::string& model, int64_t ctx, int W,
                           const BenchOptions& opt) {
  const int64_t steps_total = opt.warmup + opt.repeat;
  be.require_kv_tokens(ctx + W * (opt.step_tokens + steps_total) + 64 * (W + 1));
  const BlockId shared = be.new_block();
  be.fill_block_random(shared, ctx, opt.seed + 1);
  std::vector<BlockId> step(W);
  for (int w = 0; w < W; ++w) {
    step[w] = be.new_block();
    be.fill_block_random(step[w], opt.step_tokens, opt.seed + 100 + w);
  }
  ForwardBatch b;
  for (int w = 0; w < W; ++w) {
    std::vector<BlockId> v = {shared};
    for (int o = 0; o < W; ++o)
      if (o != w) v.push_back(step[o]);
    v.push_back(step[w]);
    b.views.push_back(v);
  }
  std::vector<double> ms;
  int64_t kv_tokens_read = 0;
  for (int64_t s = 0; s < steps_total; ++s) {
    b.tokens.clear();
    for (int w = 0; w < W; ++w)
      b.tokens.push_back(
          {static_cast<int32_t>((s * 131 + w * 17) % be.config().vocab_size), w, step[w], true});
    const auto t0 = std::chrono::steady_clock::now();
    be.forward_device(b);  // synchronizes
    const auto t1 = std::chrono::steady_clock::now();
    if (s >= opt.warmup) {
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      kv_tokens_read += ctx + W * (opt.step_tokens + s + 1);
    }
  }
  be.free_block(shared);
  for (BlockId x : step) be.free_block(x);

  const double step_ms = median(ms);
  const double kv_bytes = double(kv_tokens_read) / opt.repeat * be.kv_bytes_per_token();
  const double bytes = double(be.weight_bytes_per_step()) + kv_bytes;
  nlohmann::json r;
  r["model"] = model;
  r["context"] = ctx;
  r["workers"] = W;
  r["step_ms"] = step_ms;
  r["step_ms_min"] = *std::min_element(ms.begin(), ms.end());
  r["tok_s_per_worker"] = 1000.0 / step_ms;
  r["tok_s_aggregate"] = W * 1000.0 / step_ms;
  r["weight_bytes"] = be.weight_bytes_per_step();
  r["kv_bytes"] = kv_bytes;
  r["GBps"] = bytes / (step_ms * 1e-3) / 1e9;
  return r;
}

void add_model(nlohmann::json& out, CudaBackend& be, const std::string& name,
               const BenchOptions& opt, double bw) {
  for (int64_t ctx : opt.contexts) {
    double base = 0;
    for (int W : opt.workers) {
      nlohmann::json r = bench_point(be, name, ctx, W, opt);
      if (W == 1) base = r["tok_s_aggregate"].get<double>();
      r["pct_of_copy_bw"] = 100.0 * r["GBps"].get<double>() * 1e9 / bw;
      r["speedup_vs_1_worker"] = base > 0 ? r["tok_s_aggregate"].get<double>() / base : 0.0;
      if (opt.progress)
        std::fprintf(stderr, "bench %s ctx %ld workers %d: %.2f ms/step, %.1f tok/s\n",
                     name.c_str(), static_cast<long>(ctx), W, r["step_ms"].get<double>(),
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
  out["copy_bandwidth_GBps"] = bw / 1e9;
  out["results"] = nlohmann::json::array();
  CudaOptions co;
  co.max_batch_tokens = 64;
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
    auto be = std::make_unique<CudaBackend>(load_model(dir), co);
    add_model(out, *be, dir, opt, bw);
  }
  return out;
}

std::string bench_table(const nlohmann::json& j) {
  std::string s =
      fmt::format("device: {}, copy bandwidth {:.0f} GB/s\n", j["device"].get<std::string>(),
                  j["copy_bandwidth_GBps"].get<double>());
  s += fmt::format("| {:<10} | {:>7} | {:>7} | {:>8} | {:>10} | {:>10} | {:>8} | {:>6} | {:>7} |\n",
                   "model", "context", "workers", "step ms", "tok/s/wkr", "tok/s agg", "GB/s",
                   "% BW", "speedup");
  s += "|------------|---------|---------|----------|------------|------------|----------|--------|"
       "---------|\n";
  for (const auto& r : j["results"])
    s += fmt::format(
        "| {:<10} | {:>7} | {:>7} | {:>8.2f} | {:>10.1f} | {:>10.1f} | {:>8.0f} | {:>6.1f} | "
        "{:>7.2f} |\n",
        r["model"].get<std::string>(), r["context"].get<int64_t>(), r["workers"].get<int>(),
        r["step_ms"].get<double>(), r["tok_s_per_worker"].get<double>(),
        r["tok_s_aggregate"].get<double>(), r["GBps"].get<double>(),
        r["pct_of_copy_bw"].get<double>(), r["speedup_vs_1_worker"].get<double>());
  return s;
}

}  // namespace hogwild::cuda
