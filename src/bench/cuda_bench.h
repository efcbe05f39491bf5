// `hogwild bench --device cuda` (and bench/bench_cuda.cpp), like llama-bench: the sweep of
// decode_bench.h (S sessions x W workers over a shared context each, one forward per step; row
// fields there) on the CUDA backend (src/cuda, bf16 weights on the GPU), and the bandwidth the
// rows' pct_of_bw refers to measured here by a device-to-device copy. Random bf16 weights and KV
// are made on the GPU for presets; -m DIR loads a checkpoint. The declarations need no CUDA
// headers; cuda_bench.cpp is compiled only when the CUDA backend is (HOGWILD_CUDA), and
// HOGWILD_HAVE_CUDA tells callers whether it was.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/decode_bench.h"
#include "model/quant.h"

namespace hogwild::bench {

struct CudaBenchOptions : DecodeBenchOptions {
  std::vector<std::string> presets = {"qwen3-8b", "qwq-32b"};  // model_presets() names
  std::vector<std::string> model_dirs;                         // -m DIR (HF checkpoints)
  bool skinny_gemm = true;                                     // cuda::CudaOptions::skinny_gemm
  bool programmatic_launch = true;                             // cuda/pdl.h switch
  bool cluster_split = true;  // cuda/skinny_gemm.h set_skinny_cluster_split
  bool gemm_algos = false;    // run_gemm_bench: also time every cuBLASLt heuristic algorithm
  int64_t kv_tokens = 0;      // KV pool size in tokens; 0: all free GPU memory
  int32_t attn_chunk = 0;     // CudaOptions::attn_chunk
  // Presets with quantized projections (random packed weights): "" (bf16), "awq", "gptq", "fp8";
  // group size of the int4 formats (-1: one group per row); GPTQ act-order.
  std::string quant;
  int64_t group_size = 128;
  bool desc_act = false;
  // > 0: after each model's sweep, measure_batch_invariance (decode_bench.h) over this many greedy
  // steps, sequence 0 alone and beside the largest session count of `sessions` (at least 2) with
  // 32-token prompts; the results go to "invariance" (one object per model, with "model").
  int invariance_steps = 0;
};

/// The quantization_config of a random `quant` model (CudaBenchOptions::quant, `hogwild bench
/// --quant`): AWQ / GPTQ 4-bit with group_size, FP8 in 128 x 128 blocks. Throws hogwild::Error for
/// another method name.
QuantConfig bench_quant_config(const std::string& quant, int64_t group_size, bool desc_act);

/// Measured device-to-device copy bandwidth in bytes/s (bytes read + written over time).
double measure_copy_bandwidth();

/// The name of CUDA device 0 (cudaDeviceProp::name, e.g. "NVIDIA H100 80GB HBM3"). Throws
/// hogwild::Error when the CUDA runtime fails.
std::string cuda_device_name();

/// Runs the sweep; returns {"device", "backend": "cuda", "bandwidth_GBps" (= the copy bandwidth),
/// "bandwidth_probe", "copy_bandwidth_GBps", "results": [rows of bench/decode_bench.h]} (table:
/// bench_table). Throws hogwild::Error for bad options, when a model does not fit (before
/// running it) or no GPU is present.
nlohmann::json run_cuda_bench(const CudaBenchOptions& opt);

/// Projection microbenchmark: for each weight matrix of the presets (qkv, o, gate/up with SwiGLU,
/// down, lm_head) and each row count in opt.workers, the skinny kernel and cuBLAS: mean time of a
/// back-to-back launch over weight copies that together exceed the L2, and GB/s of weights read.
/// With opt.gemm_algos, also every algorithm cuBLASLt's heuristic offers for the product (all
/// matrices but lm_head; "cublaslt_algos": [{index, tile_id, splitk, stages_id, us}],
/// "cublaslt_best_us"): whether a choice other than cublasGemmEx's default would be faster.
nlohmann::json run_gemm_bench(const CudaBenchOptions& opt);
std::string gemm_table(const nlohmann::json& results);

}  // namespace hogwild::bench
