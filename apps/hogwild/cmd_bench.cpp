// `hogwild bench`: decode throughput of 1..8 workers over a shared context (src/cuda/bench.h),
// like llama-bench. Needs the CUDA backend and a GPU.
#include "apps/hogwild/commands.h"
#include "core/error.h"

#ifdef HOGWILD_HAVE_CUDA
#include "cuda/bench.h"
#endif

#include <cstdio>
#include <fstream>
#include <memory>

namespace hogwild::cli {

void register_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "Decode throughput of W workers over a shared context on the GPU (table or JSON)");
  struct Args {
    std::vector<std::string> presets;
    std::vector<std::string> dirs;
    std::vector<int> workers;
    std::vector<int64_t> contexts;
    std::string output = "table";
    std::string json_file;
    int repeat = 20;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option(
      "-p,--preset", a->presets,
      "model presets with random bf16 weights made on the GPU (default: qwen3-8b qwq-32b)");
  cmd->add_option("-m,--model", a->dirs, "Hugging Face model directories to load instead/as well");
  cmd->add_option("-w,--workers", a->workers, "worker counts (default: 1 2 4 8)");
  cmd->add_option("-c,--context", a->contexts, "shared context lengths (default: 1024 8192 16384)");
  cmd->add_option("-r,--repeat", a->repeat, "timed steps per configuration (median reported)");
  cmd->add_option("-o,--output", a->output, "table or json (on stdout)")
      ->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--json-file", a->json_file, "also write the JSON results to this file");
  cmd->callback([a] {
#ifdef HOGWILD_HAVE_CUDA
    cuda::BenchOptions o;
    if (!a->presets.empty() || !a->dirs.empty()) o.presets = a->presets;
    o.model_dirs = a->dirs;
    if (!a->workers.empty()) o.workers = a->workers;
    if (!a->contexts.empty()) o.contexts = a->contexts;
    o.repeat = a->repeat;
    const nlohmann::json j = cuda::run_bench(o);
    if (a->output == "json")
      std::printf("%s\n", j.dump(2).c_str());
    else
      std::printf("%s", cuda::bench_table(j).c_str());
    if (!a->json_file.empty()) {
      std::ofstream f(a->json_file);
      if (!f) fail("cannot write {}; check the directory exists", a->json_file);
      f << j.dump(2) << "\n";
    }
#else
    fail(
        "this hogwild was built without the CUDA backend; rebuild with -DHOGWILD_CUDA=ON on a "
        "machine with nvcc");
#endif
  });
}

}  // namespace hogwild::cli
