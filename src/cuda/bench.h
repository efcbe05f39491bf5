// `hogwild bench`: decode throughput of W workers over a shared context on the CUDA backend, like
// llama-bench. Per (model, context, workers): the step time of one serial step (every worker feeds
// one token; combined layout [shared context] [other workers' steps] [own step]), per-worker and
// aggregate tok/s, the bytes a step must read (weights + every KV block once) over the step time,
// and that as a share of the HBM bandwidth measured here by a device-to-device copy.
// Random bf16 weights and KV are made on the GPU for presets; -m DIR loads a checkpoint.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hogwild::cuda {

struct BenchOptions {
  std::vector<std::string> presets = {"qwen3-8b", "qwq-32b"};  // model_presets() names
  std::vector<std::string> model_dirs;                         // -m DIR (HF checkpoints)
  std::vector<int> workers = {1, 2, 4, 8};
  std::vector<int64_t> contexts = {1024, 8192, 16384};
  std::vector<int> sessions = {1};  // S concurrent problems, each with its own shared context
  int64_t step_tokens = 32;         // tokens already in each worker's current step
  int warmup = 3;
  int repeat = 20;
  uint64_t seed = 1;
  bool progress = true;             // a line per configuration on stderr
  bool skinny_gemm = true;          // CudaOptions::skinny_gemm
  bool programmatic_launch = true;  // pdl.h switch
  bool cluster_split = true;        // skinny_gemm.h set_skinny_cluster_split
  int64_t kv_tokens = 0;            // KV pool size in tokens; 0: all free GPU memory
  // The combined layout as `hogwild run` builds it (docs/ARCHITECTURE.md §3, hogwild/layout.h
  // build_views): besides the steps, an "others' header" block after the shared context, a
  // separator block after every other worker's step but the last, and a "separator + own header"
  // block per worker (none with one worker).
  bool session_layout = false;
};

/// Measured device-to-device copy bandwidth in bytes/s (bytes read + written over time).
double measure_copy_bandwidth();

/// Runs the sweep; returns {"device", "copy_bandwidth_GBps", "results": [...]}. Throws
/// hogwild::Error when a model does not fit (before running it) or no GPU is present.
nlohmann::json run_bench(const BenchOptions& opt);

/// The results as a text table (one row per configuration).
std::string bench_table(const nlohmann::json& results);

/// Projection microbenchmark: for each weight matrix of the presets (qkv, o, gate/up with SwiGLU,
/// down, lm_head) and each row count in opt.workers, the skinny kernel and cuBLAS: mean time of a
/// back-to-back launch over weight copies that together exceed the L2, and GB/s of weights read.
nlohmann::json run_gemm_bench(const BenchOptions& opt);
std::string gemm_table(const nlohmann::json& results);

}  // namespace hogwild::cuda
