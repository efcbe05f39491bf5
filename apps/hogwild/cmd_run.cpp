// `hogwild run`: N workers of one model solve a problem together over one shared KV cache
// (Hogwild! Inference, arXiv 2504.06261; docs/ARCHITECTURE.md), on the GPU when one is usable
// (--device), else on the CPU. A thin CLI: it checks the flags, then hands a ProblemRequest to the
// library (engine/model.h, engine/request.h) and runs the session on an Engine (engine/engine.h).
//
//   hogwild run -m DIR [-w N] [--layout combined|interleaved|contiguous|independent] [--budget N]
//       [--snapshots 256,512] [--collab-every N] [--format NAME|FILE] [--print-format]
//       [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R] [--greedy]
//       [--seed N] [--max-context N] [--json FILE|-] [--dump-views FILE] "problem"
//
// The problem "-" is read from stdin. Sampling defaults come from DIR/generation_config.json;
// worker w samples with seed + w. The formatting defaults to the model family's math variant
// (detected from the chat template); --format plain inserts nothing (raw prompt, no prefixes).
// Ctrl-C stops after the current serial step and prints what was produced.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "apps/hogwild/commands.h"
#include "apps/hogwild/backend_flags.h"
#include "engine/engine.h"
#include "engine/model.h"
#include "engine/request.h"
#include "apps/hogwild/sampling_flags.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "hogwild/codec.h"
#include "hogwild/formatting.h"
#include "hogwild/live_view.h"
#include "hogwild/picker.h"
#include "hogwild/prompt.h"
#include "hogwild/session.h"
#include "hogwild/transcript.h"
#include "model/weights.h"
#include "sampling/generation_config.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace hogwild::cli {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted.store(true); }

struct RunArgs {
  std::string model_dir, layout = "combined", snapshots, format, json, dump_views, problem;
  int workers = 2;
  int64_t budget = 0, collab_every = -1, max_context = 0;
  bool print_format = false;
  SamplingFlags sampling;
  DeviceFlags device;
};

std::vector<int64_t> parse_budgets(const std::string& s) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    size_t used = 0;
    long long x = -1;
    try {
      x = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || x <= 0)
      fail("--snapshots: '{}' is not a positive serial-step count; give e.g. 256,512", part);
    v.push_back(x);
  }
  return v;
}

std::unique_ptr<chat::ChatTemplate> load_template(const std::string& dir) {
  try {
    return std::make_unique<chat::ChatTemplate>(chat::ChatTemplate::load(dir));
  } catch (const Error&) {
    return nullptr;  // Model::load keeps the reason; make_request reports it when it matters
  }
}

void run(RunArgs a) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (a.print_format && a.model_dir.empty()) {  // no model: the named (or generic) formatting
    const Formatting f = resolve_formatting(a.format.empty() ? "generic-math" : a.format);
    std::printf("%s\n", f.to_json().dump(2).c_str());
    return;
  }
  // Argument checks first, before any weights load (the flags' own names in the messages).
  if (!a.json.empty() && a.json != "-" && a.json == a.dump_views)
    fail("--json and --dump-views both name '{}'; give them different files", a.json);
  if (a.model_dir.empty() || !fs::is_directory(a.model_dir, ec))
    fail("model directory '{}' does not exist; pass an HF model directory with -m", a.model_dir);
  if (!fs::exists(fs::path(a.model_dir) / "tokenizer.json", ec))
    fail("{}/tokenizer.json is missing; hogwild run needs the model's tokenizer", a.model_dir);
  const Layout layout = parse_layout(a.layout);
  auto tmpl = load_template(a.model_dir);
  const std::string fmt_name =
      !a.format.empty() ? a.format
                        : default_formatting_name(tmpl ? tmpl->source() : "", AnswerKind::boxed);
  const Formatting fmt = resolve_formatting(fmt_name);
  if (a.print_format) {
    std::printf("%s\n", fmt.to_json().dump(2).c_str());
    return;
  }
  if (a.problem == "-") {
    a.problem.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  if (a.problem.find_first_not_of(" \t\r\n") == std::string::npos)
    fail("no problem given; pass the problem text as the last argument (or - for stdin)");
  if (a.workers < 1 || a.workers > static_cast<int>(fmt.worker_names.size()))
    fail("-w {}: the formatting '{}' names {} workers; use 1..{}", a.workers, fmt.name,
         fmt.worker_names.size(), fmt.worker_names.size());
  if (a.budget < 0) fail("--budget must be >= 0 serial steps (0 = until an answer)");
  if (a.collab_every < -1) fail("--collab-every must be >= 0 tokens (0 = off)");
  if (a.max_context < 0) fail("--max-context must be >= 0 tokens (0 = the model's context length)");
  const std::vector<int64_t> snapshots = parse_budgets(a.snapshots);
  {
    const ModelConfig config = load_model_config(a.model_dir);
    const int64_t model_ctx = config.max_position_embeddings;
    if (model_ctx > 0 && a.max_context > model_ctx)
      fail(
          "--max-context {} is beyond the model's context of {} tokens (max_position_embeddings "
          "in config.json); positions past it are untrained; give at most {}",
          a.max_context, model_ctx, model_ctx);
  }
  // Output files are opened before the weights load, so a bad path fails at once.
  const bool json_stdout = a.json == "-";
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> json_file(nullptr, &std::fclose);
  if (!a.json.empty() && !json_stdout) {
    json_file.reset(std::fopen(a.json.c_str(), "w"));
    if (!json_file)
      fail("--json: cannot create '{}'; check that the directory exists and is writable", a.json);
  }
  std::unique_ptr<ViewDumper> dumper;
  if (!a.dump_views.empty()) dumper = std::make_unique<ViewDumper>(a.dump_views);

  // The library does the rest: the model, the request, the engine (src/engine).
  ModelOptions mo;
  mo.model_dir = a.model_dir;
  mo.device = a.device.device;
  mo.kv_tokens = a.device.max_kv_tokens;
  std::unique_ptr<Model> model = Model::load(mo);
  ProblemRequest pr;
  pr.problem = a.problem;
  pr.formatting = fmt_name;
  pr.workers = a.workers;
  pr.layout = layout;
  pr.budget = a.budget;
  pr.snapshots = snapshots;
  pr.collab_every = a.collab_every;
  pr.max_context = a.max_context;
  pr.sampling = sampling_params(a.sampling, model->generation_config());
  SessionRequest req = make_request(*model, pr);
  req.options.interrupt = &g_interrupted;
  const SamplingParams sp = req.sampling;

  std::vector<std::string> names(fmt.worker_names.begin(), fmt.worker_names.begin() + a.workers);
  std::FILE* view_out = json_stdout ? stderr : stdout;
  LiveView view(view_out, isatty(fileno(view_out)) != 0, names);
  TranscriptRecorder transcript(names);
  MultiObserver obs;
  obs.add(&view);
  obs.add(&transcript);
  if (dumper) obs.add(dumper.get());
  req.observer = &obs;

  // One session alone: the whole prompt in one forward.
  EngineOptions eo;
  eo.max_sessions = 1;
  eo.max_batch_tokens = 4096;
  eo.prefill_chunk = 4096;
  Engine engine(model->backend(), model->codec(), eo);
  g_interrupted = false;
  auto old = std::signal(SIGINT, on_sigint);
  SessionResult res;
  try {
    const SessionId id = engine.submit(std::move(req));
    if (dumper) dumper->attach(engine.session(id));
    engine.run_until_idle();
    if (!engine.error(id).empty()) fail("{}", engine.error(id));
    res = engine.take(id);
  } catch (...) {
    std::signal(SIGINT, old);
    throw;
  }
  std::signal(SIGINT, old);
  const std::string dev = model->device();
  view.finish(res, fmt::format("{} worker{}, layout {}, formatting {}, device {}", a.workers,
                               a.workers == 1 ? "" : "s",
                               layout_name(layout), fmt.name, dev));
  if (!a.json.empty()) {
    nlohmann::json j = transcript.to_json(res);
    j["model"] = a.model_dir;
    j["device"] = dev;
    j["options"] = {{"workers", a.workers},   {"layout", layout_name(layout)},
                    {"budget", a.budget},     {"snapshots", snapshots},
                    {"formatting", fmt.name}, {"seed", a.sampling.seed},
                    {"problem", a.problem}, {"max_context", a.max_context},
                    {"collab_every", a.collab_every},
                    {"sampling",
                     {{"do_sample", sp.do_sample}, {"temperature", sp.temperature},
                      {"top_k", sp.top_k}, {"top_p", sp.top_p}, {"min_p", sp.min_p},
                      {"repetition_penalty", sp.repetition_penalty}}}};
    std::string s = j.dump(1) + "\n";
    std::fwrite(s.data(), 1, s.size(), json_file ? json_file.get() : stdout);
    json_file.reset();
  }
  if (g_interrupted) {  // what was produced is printed and saved; scripts still see the Ctrl-C
    std::fflush(stdout);
    std::exit(130);
  }
}

}  // namespace

void register_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* c =
      app.add_subcommand("run", "N workers solve a problem together (Hogwild! inference)");
  c->add_option("-m,--model", a->model_dir, "Hugging Face model directory (required, except with --print-format)");
  c->add_option("-w,--workers", a->workers, "number of workers (1 = single-worker baseline)");
  c->add_option("--layout", a->layout,
                "cache layout: combined (default), interleaved, contiguous, independent");
  c->add_option("--budget", a->budget,
                "serial steps (forwards after the prompt); 0 = until answer");
  c->add_option("--snapshots", a->snapshots,
                "run the finisher at these serial steps, e.g. 256,512");
  c->add_option("--collab-every", a->collab_every,
                "generated tokens between collaboration checks (0 = off; default: formatting)");
  c->add_option("--format", a->format,
                "formatting: built-in name or JSON file (docs/FORMATTING.md)");
  c->add_flag("--print-format", a->print_format, "print the formatting as JSON and exit");
  add_sampling_flags(c, a->sampling, "base seed; worker w uses seed + w");
  add_device_flags(c, a->device);
  c->add_option("--max-context", a->max_context,
                "max tokens in a worker's view (default: model's)");
  c->add_option("--json", a->json, "write a JSON transcript to FILE (- = stdout)");
  c->add_option("--dump-views", a->dump_views, "write every worker's view per serial step (JSONL)");
  c->add_option("problem", a->problem, "the problem text (- = read stdin)");
  c->callback([a] { run(*a); });
}

}  // namespace hogwild::cli
