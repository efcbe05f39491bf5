// `hogwild bench --device cpu`: the decode sweep of decode_bench.h on the CPU backend (fp32, like
// `hogwild run --device cpu`). Presets get make-model's random weights made in memory
// (model/make_model.h make_model_weights, seed 0); -m DIR loads a checkpoint as fp32. Context and
// step blocks hold random K/V (CpuBackend::fill_block_random). The bandwidth the rows' pct_of_bw
// refers to is the best of 2 + 2 host read probes of 512 MiB (bench/read_bandwidth.h) on the thread
// pool, measured before the sweep.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/decode_bench.h"

namespace hogwild::bench {

struct CpuBenchOptions : DecodeBenchOptions {
  std::vector<std::string> presets;     // model_presets() names
  std::vector<std::string> model_dirs;  // -m DIR (HF checkpoints)
  // Defaults that finish in seconds on two cores: Qwen3-0.6B's shape, a 256-token context.
  CpuBenchOptions() {
    presets = {"qwen3-0.6b"};
    contexts = {256};
    warmup = 1;
    repeat = 5;
  }
};

/// Runs the sweep on every preset, then every model directory; returns {"device", "backend":
/// "cpu", "threads", "skinny_isa", "bandwidth_GBps", "bandwidth_probe", "read_bandwidth_GBps":
/// {best, median, best_plain, best_prefetch}, "results": [rows of decode_bench.h],
/// "load_average_start", "load_average_end" (/proc/loadavg)}. Throws
/// hogwild::Error for bad options (check_decode_bench_options), an unknown preset or an unreadable
/// model directory (before any timing).
nlohmann::json run_cpu_bench(const CpuBenchOptions& opt);

}  // namespace hogwild::bench
