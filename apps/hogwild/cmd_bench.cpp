// `hogwild bench`: decode throughput of S sessions x W workers over a shared context each, like
// llama-bench (the sweep and table: src/bench/decode_bench.h). --device cuda: bf16 on the GPU
// (src/bench/cuda_bench.h); --device cpu: fp32 on the host (src/bench/cpu_bench.h); auto: cuda when
// this binary has the CUDA backend and a GPU is usable. --hf-baseline (CUDA only) also runs HF
// transformers on the same presets and shapes (tools/hf_baseline.py: W independent sequences, each
// with its own copy of the context's KV) after hogwild's runs, and adds its tok/s to every row.
// --kv-budgets B...: instead of the sweep, the KV budget's speed benchmark on one -m model
// (src/bench/kv_budget_bench.h): a real session of -w workers per budget, step time against
// serial steps and the share of it spent choosing what to forget.
#include <fmt/format.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/hogwild/backend_flags.h"
#include "apps/hogwild/commands.h"
#include "bench/cpu_bench.h"
#include "bench/cuda_bench.h"
#include "bench/decode_bench.h"
#include "bench/kv_budget_bench.h"
#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "engine/model.h"
#include "model/make_model.h"

namespace hogwild::cli {

namespace {

// Runs the HF baseline script on the presets and shapes of `res` and adds "hf_tok_s_aggregate"
// (and "hf_step_ms") to every matching row. Throws hogwild::Error when the script fails.
[[maybe_unused]] void add_hf_baseline(nlohmann::json& res, const std::string& script,
                                      const std::vector<std::string>& presets,
                                      const std::vector<int>& workers,
                                      const std::vector<int64_t>& contexts) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(script, ec))
    fail("--hf-baseline: {} not found; give the path of tools/hf_baseline.py", script);
  const std::string out =
      (std::filesystem::temp_directory_path() / fmt::format("hogwild_hf_{}.json", getpid()))
          .string();
  std::string cmd = fmt::format("python3 '{}' --json '{}' --preset", script, out);
  for (const auto& p : presets) cmd += " " + p;
  cmd += " --workers";
  for (int w : workers) cmd += fmt::format(" {}", w);
  cmd += " --context";
  for (int64_t c : contexts) cmd += fmt::format(" {}", c);
  cmd += " 1>&2";  // its table goes to stderr; stdout stays hogwild's
  std::fprintf(stderr, "running the HF transformers baseline: %s\n", cmd.c_str());
  const int rc = std::system(cmd.c_str());
  if (rc != 0)
    fail(
        "--hf-baseline: '{}' failed (exit status {}); it needs python3 with torch and transformers",
        cmd, rc);
  nlohmann::json hf = nlohmann::json::parse(std::ifstream(out), nullptr, false);
  std::filesystem::remove(out, ec);
  if (hf.is_discarded() || !hf.contains("results"))
    fail("--hf-baseline: {} wrote no readable results", script);
  res["hf_baseline"] = {{"device", hf.value("device", "")},
                        {"torch", hf.value("torch", "")},
                        {"transformers", hf.value("transformers", "")}};
  for (auto& row : res["results"])
    for (const auto& h : hf["results"])
      if (h.value("model", "") == row.value("model", "") &&
          h.value("context", 0) == row.value("context", 0) &&
          h.value("workers", 0) == row.value("workers", 0) && h.contains("tok_s_aggregate")) {
        row["hf_tok_s_aggregate"] = h["tok_s_aggregate"];
        row["hf_step_ms"] = h["step_ms"];
      }
}

// hogwild against HF, one line per configuration that both ran.
std::string hf_table(const nlohmann::json& res) {
  std::string t =
      "| model | context | workers | hogwild tok/s aggregate | HF tok/s aggregate | x HF |\n"
      "|---|---|---|---|---|---|\n";
  for (const auto& r : res["results"]) {
    if (!r.contains("hf_tok_s_aggregate") || !r.contains("tok_s_aggregate")) continue;
    const double ours = r["tok_s_aggregate"].get<double>(),
                 hf = r["hf_tok_s_aggregate"].get<double>();
    t += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {:.1f} |\n", r.value("model", ""),
                     r.value("context", 0), r.value("workers", 0), ours, hf, ours / hf);
  }
  return t;
}

// "cuda" or "cpu" for --device (engine/model.h resolve_device), judged on the first model the
// run would bench (the CUDA default preset when none is given).
std::string bench_device(const std::string& device, const std::vector<std::string>& presets,
                         const std::vector<std::string>& dirs) {
  if (device == "cpu") return "cpu";
  ModelConfig c;
  if (!presets.empty()) {
    c = preset_named(presets.front()).config;
  } else if (!dirs.empty()) {
    c = load_model_config(dirs.front());
  } else {
    c = find_preset(Arch::qwen3, "qwen3-8b").config;
  }
  return resolve_device(device, c);
}

// The flags of `hogwild bench` (register_bench's help texts say what each does).
struct BenchArgs {
  std::vector<std::string> presets;
  std::vector<std::string> dirs;
  std::vector<int> workers;
  std::vector<int64_t> contexts;
  std::vector<int> sessions;
  std::string device = "auto";
  std::string output = "table";
  std::string json_file;
  int repeat = 0;
  int64_t kv_tokens = 0;  // 0: the free GPU memory
  bool session_layout = false;
  std::string hf_script;
  std::string quant;
  int64_t group_size = 128;
  bool desc_act = false;
  // --kv-budgets (bench/kv_budget_bench.h); the defaults are KvBudgetBenchOptions'.
  bench::KvBudgetBenchOptions kv;
  bool no_scored_row = false;
  // The options whose presence matters (count() > 0), set by add_bench_flags.
  CLI::Option* repeat_opt = nullptr;
  CLI::Option* kv_opt = nullptr;
  CLI::Option* hf_opt = nullptr;
  CLI::Option* quant_opt = nullptr;
  CLI::Option* group_opt = nullptr;
};

// Declares the flags of `hogwild bench` on `cmd`, parsed into `a`.
void add_bench_flags(CLI::App* cmd, BenchArgs& a) {
  cmd->add_option("-p,--preset", a.presets,
                  "model presets with random weights (default: CUDA qwen3-8b qwq-32b, bf16 made on "
                  "the GPU; CPU qwen3-0.6b, fp32)");
  cmd->add_option("-m,--model", a.dirs, "Hugging Face model directories to load instead/as well");
  cmd->add_option("-w,--workers", a.workers, "worker counts per session (default: 1 2 4 8)");
  cmd->add_option("-c,--context", a.contexts,
                  "shared context lengths (default: CUDA 1024 8192 16384, CPU 256)");
  cmd->add_option("-s,--sessions", a.sessions,
                  "concurrent problems, each with its own shared context and W workers, in one "
                  "forward (default: 1)");
  a.repeat_opt =
      cmd->add_option("-r,--repeat", a.repeat, "timed steps per configuration, median reported")
          ->default_str("20 on CUDA, 5 on the CPU");
  cmd->add_option("--device", a.device,
                  "auto (default: cuda when this binary has it and a GPU is usable), cuda or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  add_threads_flag(cmd);
  a.kv_opt = add_kv_tokens_flag(cmd, a.kv_tokens);  // a small cache leaves room for a profiler
  cmd->add_flag("--session-layout", a.session_layout,
                "views as hogwild run builds them (header, separator and own-header blocks "
                "besides the workers' steps) instead of [context] [other steps] [own step]");
  cmd->add_option("-o,--output", a.output, "table or json (on stdout)")
      ->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--json-file", a.json_file, "also write the JSON results to this file");
  a.hf_opt = cmd->add_option("--hf-baseline", a.hf_script,
                             "CUDA: also run HF transformers on the presets (path of "
                             "tools/hf_baseline.py; needs python3 with torch + transformers)");
  a.quant_opt = cmd->add_option("--quant", a.quant,
                                "CUDA presets with quantized projections, random packed weights: "
                                "awq or gptq (4-bit) or fp8 (128 x 128 blocks)")
                    ->check(CLI::IsMember({"awq", "gptq", "fp8"}));
  a.group_opt = cmd->add_option("--group-size", a.group_size,
                                "group size of --quant awq|gptq: a multiple of 32, or -1 for one "
                                "group");
  cmd->add_flag("--desc-act", a.desc_act, "with --quant gptq: act-order (a permuted input)");
  cmd->add_option("--kv-budgets", a.kv.budgets,
                  "KV budget benchmark instead of the sweep: one session of -w workers (default "
                  "4) on the -m model per budget, in tokens of the shared history still read (0 = "
                  "no budget), e.g. 0 4096 8192 16384")
      ->expected(1, -1)
      ->default_str("");
  cmd->add_option("--serial-steps", a.kv.serial_steps,
                  "with --kv-budgets: serial steps per session");
  cmd->add_option("--step-every", a.kv.step_every,
                  "with --kv-budgets: generated tokens per step, after which it ends and joins "
                  "the shared history");
  cmd->add_option("--windows", a.kv.windows,
                  "with --kv-budgets: windows of serial steps reported (median forward time, "
                  "tokens still read)");
  cmd->add_flag("--no-scored-row", a.no_scored_row,
                "with --kv-budgets: no row whose scores are measured but never forget (budget "
                "2147483647)");
}

// The flags common to both devices, over either device's defaults in `o`.
void apply_sweep_flags(const BenchArgs& a, bench::DecodeBenchOptions& o) {
  if (!a.workers.empty()) o.workers = a.workers;
  if (!a.contexts.empty()) o.contexts = a.contexts;
  if (!a.sessions.empty()) o.sessions = a.sessions;
  if (a.repeat_opt->count() > 0) o.repeat = a.repeat;
  o.session_layout = a.session_layout;
}

// Checks the flags that depend on the device the bench runs on (`dev`, "cuda" or "cpu") and on
// each other: --hf-baseline, --quant, --kv-tokens are CUDA's; --desc-act and --group-size need
// their --quant; the baseline script exists and has presets. Throws hogwild::Error naming the
// flag, before a run of minutes.
void check_bench_flags(const BenchArgs& a, const std::string& dev) {
  std::error_code ec;
  const char* why_cpu =
      a.device == "cpu" ? "with --device cpu" : "here: no usable GPU, so the bench runs on the CPU";
  if (dev == "cpu" && a.hf_opt->count() > 0)
    fail(
        "--hf-baseline compares with HF transformers on the GPU and needs the CUDA backend; it "
        "cannot be used {}",
        why_cpu);
  if (dev == "cpu" && a.quant_opt->count() > 0)
    fail(
        "--quant makes random packed weights on the GPU; it cannot be used {} (for the CPU, "
        "write a checkpoint with `hogwild make-model --quant` and pass it with -m)",
        why_cpu);
  if (a.desc_act && a.quant != "gptq") fail("--desc-act is an option of --quant gptq");
  if (a.group_opt->count() > 0 && a.quant != "awq" && a.quant != "gptq")
    fail(
        "--group-size is an option of --quant awq|gptq (a checkpoint given with -m keeps its "
        "own)");
  if (!a.quant.empty() && a.quant != "fp8" && a.group_size != -1 &&
      (a.group_size <= 0 || a.group_size % 32 != 0))
    fail("--group-size {}: use -1 (one group) or a positive multiple of 32", a.group_size);
  if (dev == "cpu" && a.kv_opt->count() > 0)
    fail("--kv-tokens sizes the CUDA KV pool; the CPU backend has none, so it cannot be used {}",
         why_cpu);
  if (!a.hf_script.empty() && !std::filesystem::is_regular_file(a.hf_script, ec))
    fail("--hf-baseline: {} not found; give the path of tools/hf_baseline.py", a.hf_script);
  if (!a.hf_script.empty() && a.presets.empty() && !a.dirs.empty())
    fail("--hf-baseline needs presets (-p); HF runs the preset shapes, not -m directories");
}

// Runs the sweep on `dev` ("cpu": bench/cpu_bench.h; "cuda": bench/cuda_bench.h, then the HF
// baseline when asked) and returns its JSON results. Throws hogwild::Error as the benches do.
nlohmann::json run_bench(const BenchArgs& a, const std::string& dev) {
  nlohmann::json j;
  if (dev == "cpu") {
    bench::CpuBenchOptions o;
    if (!a.presets.empty() || !a.dirs.empty()) o.presets = a.presets;
    o.model_dirs = a.dirs;
    apply_sweep_flags(a, o);
    j = bench::run_cpu_bench(o);
  } else {
#ifdef HOGWILD_HAVE_CUDA
    bench::CudaBenchOptions o;
    if (!a.presets.empty() || !a.dirs.empty()) o.presets = a.presets;
    o.model_dirs = a.dirs;
    apply_sweep_flags(a, o);
    o.kv_tokens = a.kv_tokens;
    o.quant = a.quant;
    o.group_size = a.group_size;
    o.desc_act = a.desc_act;
    j = bench::run_cuda_bench(o);
    if (!a.hf_script.empty()) {
      if (o.presets.empty()) fail("--hf-baseline needs presets (-p); HF runs the preset shapes");
      add_hf_baseline(j, a.hf_script, o.presets, o.workers, o.contexts);
    }
#endif
  }
  return j;
}

// The source's commit: "git describe --always --dirty" in the source tree this binary was built
// from, at run time (what is checked out there now); "" where that is not a git checkout or git is
// missing.
std::string source_commit() {
  const std::string cmd = fmt::format(
      "git -C '{}' describe --always --dirty --abbrev=12 2>/dev/null", HOGWILD_SOURCE_DIR);
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "";
  char buf[128] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, p);
  const int rc = ::pclose(p);
  std::string out(buf, n);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return rc == 0 ? out : "";
}

// This process's command line (/proc/self/cmdline, arguments joined by spaces; those holding a
// space or a quote in single quotes).
std::string command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string arg, line;
  while (std::getline(f, arg, '\0')) {
    if (arg.find_first_of(" '\"") != std::string::npos) arg = "'" + arg + "'";
    line += (line.empty() ? "" : " ") + arg;
  }
  return line;
}

// The flags of the decode sweep, which --kv-budgets does not take.
constexpr const char* kSweepOnlyFlags[] = {"--preset", "--context",        "--sessions",
                                           "--repeat", "--session-layout", "--hf-baseline",
                                           "--quant",  "--group-size",     "--desc-act"};
// The flags of --kv-budgets alone.
constexpr const char* kKvOnlyFlags[] = {"--serial-steps", "--step-every", "--windows",
                                        "--no-scored-row"};

// The options of --kv-budgets from the flags: one -m directory, one worker count (default 4),
// none of the sweep's flags, --kv-tokens not with --device cpu; the rest as
// check_kv_budget_bench_options says. Throws hogwild::Error naming the flag.
bench::KvBudgetBenchOptions kv_bench_options(const CLI::App& cmd, const BenchArgs& a) {
  for (const char* f : kSweepOnlyFlags)
    if (cmd.count(f) > 0)
      fail("{} is a flag of the decode sweep; --kv-budgets runs sessions of one -m model", f);
  if (a.dirs.size() > 1)
    fail("--kv-budgets runs one model: give one -m directory, not {}", a.dirs.size());
  if (a.workers.size() > 1)
    fail("--kv-budgets runs one worker count: give one -w value, not {}", a.workers.size());
  if (a.device == "cpu" && a.kv_opt->count() > 0)
    fail(
        "--kv-tokens sizes the CUDA KV pool; the CPU backend has none, so it cannot be used "
        "with --device cpu");
  bench::KvBudgetBenchOptions o = a.kv;
  o.model_dir = a.dirs.empty() ? "" : a.dirs.front();
  if (!a.workers.empty()) o.workers = a.workers.front();
  o.device = a.device;
  o.kv_tokens = a.kv_tokens;
  o.scored_row = !a.no_scored_row;
  bench::check_kv_budget_bench_options(o);
  return o;
}

// Prints the results (`table` or JSON, as -o says) and writes --json-file when given.
void print_results(const BenchArgs& a, const nlohmann::json& j, const std::string& table,
                   AtomicOutputFile* json_out) {
  if (a.output == "json")
    std::printf("%s\n", dump_json(j, 2).c_str());
  else
    std::printf("%s", table.c_str());
  if (json_out) {
    json_out->write(dump_json(j, 2) + "\n");
    json_out->commit();
  }
}

// `hogwild bench --kv-budgets ...` (bench/kv_budget_bench.h), with the command line and the
// source's commit in its JSON.
void run_kv_bench(const CLI::App& cmd, const BenchArgs& a) {
  const bench::KvBudgetBenchOptions o = kv_bench_options(cmd, a);
  std::unique_ptr<AtomicOutputFile> json_out;  // a bad path fails before the runs
  if (!a.json_file.empty())
    json_out = std::make_unique<AtomicOutputFile>(a.json_file, "--json-file");
  nlohmann::json j = bench::run_kv_budget_bench(o);
  j["command"] = command_line();
  if (const std::string c = source_commit(); !c.empty()) j["commit"] = c;
  print_results(a, j, bench::kv_budget_table(j), json_out.get());
}

}  // namespace

void register_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench",
      "Decode throughput of S sessions x W workers over a shared context each, on the GPU or the "
      "CPU (table or JSON)");
  auto a = std::make_shared<BenchArgs>();
  add_bench_flags(cmd, *a);
  cmd->callback([a, cmd] {
    if (cmd->count("--kv-budgets") > 0) return run_kv_bench(*cmd, *a);
    for (const char* f : kKvOnlyFlags)
      if (cmd->count(f) > 0) fail("{} is a flag of --kv-budgets (the KV budget benchmark)", f);
    std::error_code ec;  // argument checks first: a run takes minutes
    bench::DecodeBenchOptions sweep;
    apply_sweep_flags(*a, sweep);
    bench::check_decode_bench_options(sweep);
    for (const std::string& d : a->dirs)
      if (!std::filesystem::is_directory(d, ec))
        fail("-m {}: model directory does not exist; pass an HF model directory", d);
    const std::string dev = bench_device(a->device, a->presets, a->dirs);
    check_bench_flags(*a, dev);
    // The results file is created now (as FILE.tmp, renamed at the end), so a path that cannot
    // be written fails before a run of minutes, not after it.
    std::unique_ptr<AtomicOutputFile> json_out;
    if (!a->json_file.empty())
      json_out = std::make_unique<AtomicOutputFile>(a->json_file, "--json-file");
    const nlohmann::json j = run_bench(*a, dev);
    std::string table = bench::bench_table(j);
    if (!a->hf_script.empty()) table += "\n" + hf_table(j);
    print_results(*a, j, table, json_out.get());
  });
}

}  // namespace hogwild::cli
