// bench_cuda: the `hogwild bench` sweep (src/bench/cuda_bench.h) as a standalone program, so the
// GPU benchmark builds with only the CUDA backend's libraries. Prints the table, writes JSON.
//   bench_cuda [-p PRESET...] [-m DIR...] [-w W...] [-c CTX...] [-r N] [--json FILE] [--no-skinny]
//   [--no-pdl] [--no-cluster-split] [--gemm [--gemm-algos]] [--invariance STEPS]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>

#include "bench/cuda_bench.h"
#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"

int main(int argc, char** argv) {
  CLI::App app{"Decode throughput of W hogwild workers over a shared context (CUDA backend)"};
  app.option_defaults()->always_capture_default();
  hogwild::bench::CudaBenchOptions o;
  std::vector<std::string> presets, dirs;
  std::string json_file = "bench_cuda.json";
  bool no_skinny = false, no_pdl = false, no_cluster = false, gemm = false;
  app.add_option("-p,--preset", presets, "model presets (default: qwen3-8b qwq-32b)");
  app.add_option("-m,--model", dirs, "Hugging Face model directories");
  app.add_option("-w,--workers", o.workers, "worker counts");
  app.add_option("-c,--context", o.contexts, "shared context lengths");
  app.add_option("-s,--sessions", o.sessions,
                 "concurrent problems, each with its own shared context, in one forward");
  app.add_option("-r,--repeat", o.repeat, "timed steps per configuration");
  app.add_option("--json", json_file, "JSON output file");
  app.add_option("--kv-tokens", o.kv_tokens,
                 "KV pool size in tokens (default: all free GPU memory; a small pool leaves room "
                 "for profilers)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--attn-chunk", o.attn_chunk,
                 "keys per attention chunk, a multiple of 64 (default 0: chosen per forward)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-skinny", no_skinny, "cuBLAS for every projection (no skinny kernel)");
  app.add_flag("--no-pdl", no_pdl, "ordinary launches (no programmatic dependent launch)");
  app.add_flag("--no-cluster-split", no_cluster,
               "split-K sums merged through global memory and a counter, not in a cluster");
  app.add_flag("--gemm", gemm, "projection microbenchmark (skinny kernel vs cuBLAS) instead");
  app.add_flag("--gemm-algos", o.gemm_algos,
               "with --gemm: also time every algorithm cuBLASLt's heuristic offers");
  app.add_flag("--session-layout", o.session_layout,
               "views as hogwild run builds them: header, separators and own-header blocks "
               "besides the steps");
  app.add_option("--quant", o.quant,
                 "presets with quantized projections: awq, gptq (4-bit) or fp8 (128 x 128 blocks)");
  app.add_option("--invariance", o.invariance_steps,
                 "also decode this many greedy tokens of one sequence alone and beside the "
                 "others (-s, at least 2) and report how many are the same (batch invariance)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--group-size", o.group_size, "group size of --quant awq|gptq (-1: one group)");
  app.add_flag("--desc-act", o.desc_act, "with --quant gptq: act-order (a permuted input)");
  CLI11_PARSE(app, argc, argv);
  if (o.gemm_algos && !gemm) {
    std::fprintf(stderr, "error: --gemm-algos is an option of --gemm; add --gemm\n");
    return 2;
  }
  if (!presets.empty() || !dirs.empty()) o.presets = presets;
  o.model_dirs = dirs;
  o.skinny_gemm = !no_skinny;
  o.programmatic_launch = !no_pdl;
  o.cluster_split = !no_cluster;
#ifndef HOGWILD_HAVE_CUDA
  std::fprintf(stderr,
               "error: bench_cuda was built without the CUDA backend; rebuild with "
               "-DHOGWILD_CUDA=ON on a machine with nvcc\n");
  return 1;
#else
  try {
    const nlohmann::json j =
        gemm ? hogwild::bench::run_gemm_bench(o) : hogwild::bench::run_cuda_bench(o);
    std::printf("%s",
                (gemm ? hogwild::bench::gemm_table(j) : hogwild::bench::bench_table(j)).c_str());
    if (j.contains("invariance"))
      for (const auto& r : j["invariance"])
        std::printf(
            "batch invariance, %s: %d of %d greedy tokens the same alone and beside %d others "
            "(first difference at %d); prefill logits max |diff| %.3g of max |logit| %.3g\n",
            r["model"].get<std::string>().c_str(), r["identical"].get<int>(), r["steps"].get<int>(),
            r["sessions"].get<int>() - 1, r["identical_prefix"].get<int>(),
            r["prefill_logits_max_abs_diff"].get<double>(),
            r["prefill_logits_max_abs"].get<double>());
    hogwild::OutputFile f(json_file, "--json");
    f.write(hogwild::dump_json(j, 2) + "\n");
    f.close();
  } catch (const hogwild::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
#endif
}
