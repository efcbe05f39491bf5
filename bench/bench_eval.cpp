// `hogwild eval` throughput: problems per hour and sampled tokens per second for an eval of GSM8k
// problems at budgets up to B, at several concurrencies (sessions sharing each forward on the
// Engine). Concurrency must multiply throughput. Prints a table; writes JSON.
//
//   bench_eval -m MODEL_DIR [--problems N (200)] [--budget B (1024)] [--concurrency 1,16]
//       [--workers W (2)] [--device auto|cpu|cuda] [--datasets-dir DIR] [--json OUT.json]
//
// The run is the eval's own (eval/runner.h run_jobs): the formatting of the model family, greedy
// decoding, snapshots at B/4 and B/2 and the finisher at each; scoring is not timed (it is not
// the engine's work). Problems are the first N of gsm8k/test.jsonl.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "engine/model.h"
#include "eval/dataset.h"
#include "eval/runner.h"

namespace {

using namespace hogwild;
using namespace hogwild::eval;

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string p;
  while (std::getline(ss, p, ',')) v.push_back(std::stoi(p));
  return v;
}

int run(int argc, char** argv) {
  std::string model_dir, device = "auto", datasets_dir, json_out = "bench_eval.json";
  int problems = 200, workers = 2;
  int64_t budget = 1024;
  std::vector<int> concurrency = {1, 16};
  std::string concurrency_arg = "1,16";
  CLI::App app{
      "hogwild eval throughput: problems per hour and tok/s of a GSM8k eval at several "
      "concurrencies on the Engine (table + JSON)"};
  app.option_defaults()->always_capture_default();
  app.add_option("-m,--model", model_dir, "model directory (a small model, e.g. Qwen3-0.6B)")
      ->required();
  app.add_option("--problems", problems, "the first N problems of gsm8k/test.jsonl");
  app.add_option("--budget", budget, "serial-step budget B (snapshots at B/4 and B/2)");
  app.add_option("--concurrency", concurrency_arg, "sessions per forward, comma-separated");
  app.add_option("--workers", workers, "workers per session");
  app.add_option("--device", device, "auto, cpu or cuda");
  app.add_option("--datasets-dir", datasets_dir, "datasets folder (default: ../shared/datasets)");
  app.add_option("--json", json_out, "JSON file to write");
  CLI11_PARSE(app, argc, argv);
  concurrency = parse_list(concurrency_arg);
  if (model_dir.empty()) fail("give the model with -m DIR (a small model, e.g. Qwen3-0.6B)");
  if (budget < 4) fail("--budget must be >= 4");

  DatasetOptions d;
  d.name_or_path = "gsm8k";
  d.datasets_dir = find_datasets_dir(
      datasets_dir, {std::filesystem::path(HOGWILD_SOURCE_DIR) / ".." / "shared" / "datasets"});
  Dataset data = load_dataset(d);
  if (static_cast<size_t>(problems) < data.problems.size()) data.problems.resize(problems);

  ModelOptions mo;
  mo.model_dir = model_dir;
  mo.device = device;
  std::unique_ptr<Model> model = Model::load(mo);
  RunSpec spec;
  spec.workers = workers;
  spec.budgets = {budget / 4, budget / 2, budget};
  spec.dataset = "gsm8k";
  const chat::ChatTemplate* t = model->chat_template();
  spec.format_ref = default_formatting_name(t ? t->source() : "", AnswerKind::boxed);
  spec.formatting = resolve_formatting(spec.format_ref);
  spec.sampling = SamplingParams::from(model->generation_config(), 0);
  spec.sampling.do_sample = false;

  std::printf("bench_eval: %zu GSM8k problems, budgets %lld/%lld/%lld, %d workers, device %s\n",
              data.problems.size(), static_cast<long long>(spec.budgets[0]),
              static_cast<long long>(spec.budgets[1]), static_cast<long long>(budget), workers,
              model->device().c_str());
  // speedup: problems/hour against the first concurrency listed
  std::printf("%12s %12s %14s %12s %12s\n", "concurrency", "seconds", "problems/hour", "tok/s",
              "x first");
  nlohmann::json rows = nlohmann::json::array();
  double base = 0;
  for (int c : concurrency) {
    std::vector<Job> jobs;
    for (size_t i = 0; i < data.problems.size(); ++i) jobs.push_back({i, 0, 0});
    int64_t tokens = 0;
    const auto t0 = std::chrono::steady_clock::now();
    run_jobs(
        *model, spec, data.problems, jobs, c, [](const Job&, Generation&&) {},
        [&](int64_t n) { tokens += n; });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double pph = 3600.0 * static_cast<double>(jobs.size()) / s;
    if (base == 0) base = pph;
    std::printf("%12d %12.1f %14.1f %12.1f %11.2fx\n", c, s, pph, tokens / s, pph / base);
    rows.push_back({{"concurrency", c},
                    {"seconds", s},
                    {"problems_per_hour", pph},
                    {"tokens_per_second", tokens / s},
                    {"sampled_tokens", tokens}});
  }
  nlohmann::json out = {
      {"model", model_dir},      {"device", model->device()}, {"problems", data.problems.size()},
      {"budgets", spec.budgets}, {"workers", workers},        {"rows", rows}};
  OutputFile f(json_out, "--json");
  f.write(dump_json(out, 2) + "\n");
  f.close();
  std::printf("wrote %s\n", json_out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
