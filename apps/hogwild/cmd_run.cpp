// `hogwild run`: N workers of one model solve a problem together over one shared KV cache
// (Hogwild! Inference, arXiv 2504.06261; docs/DESIGN.md; src/hogwild/session.h), on the GPU when one
// is usable (--device; backend_flags.h), else on the CPU.
//
//   hogwild run -m DIR [-w N] [--layout combined|interleaved|contiguous] [--budget N]
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
    return nullptr;  // no chat template: only formattings with use_template=false work
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

  const Tokenizer tok = Tokenizer::from_dir(a.model_dir);
  const TokenizerCodec codec(tok);
  const GenerationConfig gen = load_generation_config(a.model_dir);
  const std::string prompt_text = build_prompt(fmt, tmpl.get(), a.problem, a.workers);
  const std::vector<int32_t> prompt = tok.encode(prompt_text, !fmt.chat.use_template);
  const ModelConfig config = load_model_config(a.model_dir);
  {
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
  const std::string dev = resolve_device(a.device, config);
  // The prefill forward holds the prompt and the layout's constant texts (a few per worker).
  std::unique_ptr<Backend> backend_ptr =
      make_backend(a.model_dir, dev, a.device, static_cast<int64_t>(prompt.size()) + 256 * a.workers);
  Backend& backend = *backend_ptr;
  {
    // KV the run can fill: the longest view (bounded by the context and by the budget) plus the
    // finisher's, the constant blocks and one partly filled 64-token page per live block.
    const int64_t ctx = a.max_context > 0 ? a.max_context : backend.config().max_position_embeddings;
    int64_t need = ctx > 0 ? std::min<int64_t>(ctx, INT64_MAX / 4) : INT64_MAX / 4;
    if (a.budget > 0 && a.budget < INT64_MAX / 8 / a.workers)  // (a huge budget: no bound)
      need = std::min<int64_t>(need, static_cast<int64_t>(prompt.size()) + a.workers * (a.budget + 64));
    need += fmt.finisher.max_tokens + 64 * (3 * a.workers + 4) + 256 * a.workers;
    require_kv_tokens(backend, need,
                      fmt::format("lower --max-context (now {} tokens) or set --budget, use fewer "
                                  "workers (-w), or raise --kv-tokens",
                                  ctx));
  }

  SessionOptions opt;
  opt.n_workers = a.workers;
  opt.layout = layout;
  opt.budget = a.budget;
  opt.snapshots = snapshots;
  opt.collab_every = a.collab_every;
  opt.max_context = a.max_context;
  for (int64_t e : gen.eos_token_id) opt.extra_eos.push_back(static_cast<int32_t>(e));
  opt.interrupt = &g_interrupted;
  opt.device_sampling = true;  // used when the backend samples on the device (CUDA)
  const SamplingParams sp = sampling_params(a.sampling, gen);
  SamplerPicker picker(sp, a.workers, prompt);
  Session session(backend, codec, fmt, opt, picker);

  std::vector<std::string> names(fmt.worker_names.begin(), fmt.worker_names.begin() + a.workers);
  std::FILE* view_out = json_stdout ? stderr : stdout;
  LiveView view(view_out, isatty(fileno(view_out)) != 0, names);
  TranscriptRecorder transcript(names);
  MultiObserver obs;
  obs.add(&view);
  obs.add(&transcript);
  if (dumper) {
    dumper->attach(&session);
    obs.add(dumper.get());
  }
  session.set_observer(&obs);

  g_interrupted = false;
  auto old = std::signal(SIGINT, on_sigint);
  SessionResult res;
  try {
    res = session.run(prompt);
  } catch (...) {
    std::signal(SIGINT, old);
    throw;
  }
  std::signal(SIGINT, old);
  view.finish(res, fmt::format("{} worker{}, layout {}, formatting {}, device {}", a.workers,
                               a.workers == 1 ? "" : "s",
                               layout_name(layout), fmt.name, dev));
  if (!a.json.empty()) {
    nlohmann::json j = transcript.to_json(res);
    j["model"] = a.model_dir;
    j["device"] = dev;
    j["options"] = {{"workers", a.workers},   {"layout", layout_name(layout)},
                    {"budget", a.budget},     {"snapshots", opt.snapshots},
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
  c->add_option("--layout", a->layout, "cache layout: combined (default), interleaved, contiguous");
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
