// `hogwild bench --device cpu` (cpu_bench.h).
#include "bench/cpu_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "bench/read_bandwidth.h"
#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "cpu/parallel.h"
#include "cpu/skinny.h"
#include "model/make_model.h"
#include "model/weights.h"

namespace hogwild::bench {

namespace {

// The 1, 5 and 15 minute load averages ("" where /proc/loadavg is missing): the machine may be
// shared, and other programs change the figures.
std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return f ? a + " " + b + " " + c : "";
}

void add_model(nlohmann::json& out, cpu::CpuBackend& be, const std::string& name,
               const CpuBenchOptions& opt, double bw_gbs) {
  std::vector<float> logits;
  DecodeBenchModel m = decode_bench_model(be, name);
  m.step = [&be, &logits](const ForwardBatch& b) { be.forward(b, logits); };
  run_decode_sweep(m, opt, bw_gbs, out);
}

}  // namespace

nlohmann::json run_cpu_bench(const CpuBenchOptions& opt) {
  check_decode_bench_options(opt);
  for (const std::string& name : opt.presets) preset_named(name);  // bad names before timing
  std::error_code ec;
  for (const std::string& dir : opt.model_dirs)
    if (!std::filesystem::is_directory(dir, ec))
      fail("-m {}: model directory does not exist; pass an HF model directory", dir);
  const std::string load_start = load_average();
  const ReadBandwidth bw = measure_read_bandwidth(size_t{512} << 20, 2);
  nlohmann::json out;
  out["backend"] = "cpu";
  out["device"] = fmt::format("CPU, {} threads, {} kernels", cpu::num_threads(), cpu::skinny_isa());
  out["threads"] = cpu::num_threads();
  out["skinny_isa"] = cpu::skinny_isa();
  out["bandwidth_GBps"] = bw.best_gbs;
  out["bandwidth_probe"] = "host read";
  out["read_bandwidth_GBps"] = {{"best", bw.best_gbs},
                                {"median", bw.median_gbs},
                                {"best_plain", bw.best_plain_gbs},
                                {"best_prefetch", bw.best_prefetch_gbs}};
  out["results"] = nlohmann::json::array();
  for (const std::string& name : opt.presets) {
    cpu::CpuBackend be(make_model_weights(preset_named(name)));
    add_model(out, be, name, opt, bw.best_gbs);
  }
  for (const std::string& dir : opt.model_dirs) {
    cpu::CpuBackend be(load_model(dir));
    add_model(out, be, dir, opt, bw.best_gbs);
  }
  out["load_average_start"] = load_start;
  out["load_average_end"] = load_average();
  return out;
}

}  // namespace hogwild::bench
