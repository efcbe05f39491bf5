// The --device flag shared by `hogwild generate` and `hogwild run`, and the backend it makes:
// "cuda" (src/cuda: bf16 weights streamed from the checkpoint, sampling on the GPU), "cpu"
// (src/cpu: fp32 reference), or "auto" (the default: cuda when this binary has the CUDA backend and
// a GPU is usable, else cpu), like llama.cpp's / vLLM's device choice.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "cpu/parallel.h"
#include "engine/model.h"
#include "kv/backend.h"
#include "model/config.h"
#include "model/weights.h"
#ifdef HOGWILD_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

extern "C" void openblas_set_num_threads(int);  // OpenBLAS (cblas.h)

namespace hogwild::cli {

struct DeviceFlags {
  std::string device = "auto";
  int64_t max_kv_tokens = 0;  // CUDA KV pool in tokens; 0 = from free GPU memory
};

/// --kv-tokens N into `tokens` (a whole number >= 0; 0 = the free GPU memory minus 1 GiB), with
/// a message that says what is wrong with a bad value. Returns the option (count() > 0: given).
inline CLI::Option* add_kv_tokens_flag(CLI::App* c, int64_t& tokens) {
  return c
      ->add_option_function<std::string>(
          "--kv-tokens",
          [&tokens](const std::string& s) {
            size_t used = 0;
            long long v = -1;
            try {
              v = std::stoll(s, &used);
            } catch (const std::exception&) {
              used = 0;
            }
            if (used == 0 || used != s.size() || v < 0)
              throw CLI::ValidationError("--kv-tokens",
                                         "'" + s +
                                             "' is not a whole number of tokens >= 0 "
                                             "(0 = the free GPU memory minus 1 GiB)");
            tokens = v;
          },
          "CUDA: KV cache size in tokens (0 = the free GPU memory minus 1 GiB)")
      ->default_str("0");
}

/// --no-prefix-cache (serve, run, eval): turns off the engine's automatic prefix caching
/// (EngineOptions::prefix_cache, docs/ARCHITECTURE.md §2 "Prefix sharing"), under which sessions
/// whose prompts begin with the same 64-token pages share their K/V instead of prefilling them
/// again (vLLM: --enable-prefix-caching / --no-enable-prefix-caching).
inline CLI::Option* add_prefix_cache_flag(CLI::App* c, bool& off) {
  return c->add_flag("--no-prefix-cache", off,
                     "prefill every prompt whole: no K/V shared between sessions whose prompts "
                     "begin alike (the prefix cache is on by default)");
}

/// -t/--threads N (llama.cpp): CPU threads of the CPU backend, for its own loops (cpu/parallel.h
/// reads HOGWILD_THREADS) and OpenBLAS; 0 = every core (the default). Applied while the flag is
/// parsed, before any backend exists.
inline void add_threads_flag(CLI::App* c) {
  c->add_option_function<int>(
       "-t,--threads",
       [](int n) {
         if (n < 0)
           throw CLI::ValidationError("--threads",
                                      std::to_string(n) + " is not >= 0 (0 = every core)");
         if (n == 0) return;
         if (const std::string why = cpu::thread_count_problem(n); !why.empty())
           throw CLI::ValidationError("--threads", why);
         setenv("HOGWILD_THREADS", std::to_string(n).c_str(), 1);
         openblas_set_num_threads(n);
       },
       "CPU backend threads (0 = every core)")
      ->default_str("0");
}

inline void add_device_flags(CLI::App* c, DeviceFlags& f) {
  c->add_option("--device", f.device, "auto (default: cuda when a GPU is usable), cuda or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  add_kv_tokens_flag(c, f.max_kv_tokens);
}

/// "cuda" or "cpu" for the flag's value and a model of config c (engine/model.h resolve_device).
inline std::string resolve_device(const DeviceFlags& f, const ModelConfig& c) {
  return hogwild::resolve_device(f.device, c);
}

/// The backend for model_dir on the resolved device (engine/model.h make_backend).
/// max_forward_tokens: the largest forward the caller will run; CUDA sizes its activations for it
/// (at least 4096 tokens).
inline std::unique_ptr<Backend> make_backend(const std::string& model_dir, const std::string& dev,
                                             const DeviceFlags& f, int64_t max_forward_tokens) {
  return hogwild::make_backend(model_dir, dev, f.max_kv_tokens, max_forward_tokens);
}

/// Throws hogwild::Error (sizes + what to do, ending with the command's own `hint`) when `tokens`
/// cannot be cached; no-op on the CPU.
inline void require_kv_tokens(Backend& b, int64_t tokens, const std::string& hint) {
#ifdef HOGWILD_HAVE_CUDA
  if (auto* c = dynamic_cast<cuda::CudaBackend*>(&b)) c->require_kv_tokens(tokens, hint);
#else
  (void)b;
  (void)tokens;
  (void)hint;
#endif
}

}  // namespace hogwild::cli
