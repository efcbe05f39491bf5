// `hogwild run`: N workers of one model solve a problem together over one shared KV cache
// (Hogwild! Inference, arXiv 2504.06261; docs/ARCHITECTURE.md), on the GPU when one is usable
// (--device), else on the CPU. A thin CLI: it checks the flags, then hands a ProblemRequest to the
// library (engine/model.h, engine/request.h) and runs the session on an Engine (engine/engine.h).
//
//   hogwild run -m DIR [-w N] [--layout combined|interleaved|contiguous|independent] [--budget N]
//       [--snapshots 256,512] [--collab-every N] [--format NAME|FILE] [--print-format]
//       [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R] [--greedy]
//       [--seed N] [--max-context N] [--n-predict N] [--ignore-eos] [--no-live] [--no-prefix-cache]
//       [--json FILE|-] [--dump-views FILE|-] [--dump-logits FILE] ("problem" | -f FILE)
//
// The problem "-" is read from stdin. Sampling defaults come from DIR/generation_config.json;
// worker w samples with seed + w (-1 = a random seed, printed). The formatting defaults to the
// model directory's hogwild_format.json, else the model family's math variant (detected from the
// chat template); --format plain inserts nothing
// (raw prompt, no prefixes). Ctrl-C or SIGTERM stops after the current serial step and writes
// what was produced (exit status 130 / 143); the transcript grows in FILE.partial.jsonl while the
// run goes (hogwild/run_files.h). llama.cpp spellings: -c/--ctx-size, -f/--file, -t/--threads,
// --n-predict, --ignore-eos, --temp.
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

#include "apps/hogwild/backend_flags.h"
#include "apps/hogwild/cli_util.h"
#include "apps/hogwild/commands.h"
#include "apps/hogwild/sampling_flags.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "core/json_text.h"
#include "engine/engine.h"
#include "engine/model.h"
#include "engine/request.h"
#include "hogwild/codec.h"
#include "hogwild/formatting.h"
#include "hogwild/live_view.h"
#include "hogwild/picker.h"
#include "hogwild/prompt.h"
#include "hogwild/request_check.h"
#include "hogwild/run_files.h"
#include "hogwild/session.h"
#include "model/weights.h"
#include "sampling/generation_config.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace hogwild::cli {
namespace {

struct RunArgs {
  std::string model_dir, layout = "combined", snapshots, format, problem, problem_file, kv_policy;
  RunFilePaths files;
  int workers = 2;
  int64_t budget = 0, collab_every = -1, max_context = 0, n_predict = 0, kv_budget = 0,
          kv_chunk = 0;
  double kv_redundancy = 0.0;
  bool print_format = false, no_live = false, ignore_eos = false, no_prefix_cache = false;
  SamplingFlags sampling;
  DeviceFlags device;
};

// The template for picking the formatting family (null when it has none or does not parse:
// Model::load keeps the reason and make_request reports it when the formatting needs it).
std::unique_ptr<chat::ChatTemplate> load_template(const std::string& dir) {
  try {
    return std::make_unique<chat::ChatTemplate>(chat::ChatTemplate::load(dir));
  } catch (const Error&) {
    return nullptr;
  }
}

namespace fs = std::filesystem;

/// The output paths, the model directory and its tokenizer, checked before anything loads.
/// Throws hogwild::Error naming the flag.
void check_run_paths(const RunArgs& a) {
  std::error_code ec;
  check_output_paths(a.files);
  if (a.model_dir.empty() || !fs::is_directory(a.model_dir, ec))
    fail("model directory '{}' does not exist; pass an HF model directory with -m", a.model_dir);
  if (!fs::exists(fs::path(a.model_dir) / "tokenizer.json", ec))
    fail("{}/tokenizer.json is missing; hogwild run needs the model's tokenizer", a.model_dir);
}

/// The problem text: the argument, stdin ("-") or -f FILE. Throws hogwild::Error when both or
/// neither are given, RequestError (check_problem) when the text is blank.
std::string read_problem(const RunArgs& a) {
  if (!a.problem_file.empty() && !a.problem.empty())
    fail("give the problem as text or with -f FILE, not both");
  if (a.problem_file.empty() && a.problem.empty())
    fail("no problem given; pass the problem text as the last argument, - for stdin, or -f FILE");
  std::string problem = a.problem_file.empty() ? text_or_stdin(a.problem)
                                               : file_or_stdin(a.problem_file, "problem file (-f)");
  check_problem(problem);  // the sentence of make_request and the server, before any weights load
  return problem;
}

/// The ranges and rules of hogwild/request_check.h, before any weights load (make_request checks
/// the same again); returns the --snapshots serial steps. Throws hogwild::Error.
std::vector<int64_t> check_run_ranges(const RunArgs& a, Layout layout, const Formatting& fmt) {
  check_workers(a.workers, layout, false, fmt);
  check_field(RequestField::budget, a.budget);
  check_field(RequestField::collab_every, a.collab_every);
  check_field(RequestField::max_tokens, a.n_predict);
  check_field(RequestField::max_context, a.max_context);
  check_kv_budget(a.kv_budget, layout, false);
  check_kv_chunk(a.kv_chunk, a.kv_budget);
  check_kv_redundancy(a.kv_redundancy, a.kv_budget,
                      check_kv_policy(a.kv_policy, a.kv_budget, a.kv_chunk));
  const std::vector<int64_t> snapshots =
      a.snapshots.empty() ? std::vector<int64_t>{} : parse_step_list(a.snapshots, "--snapshots");
  check_snapshots(snapshots, a.budget);
  check_sampling(sampling_params(a.sampling, load_generation_config(a.model_dir), 0));
  return snapshots;
}

/// The session request of the run (engine/request.h make_request) with the CLI's own setting
/// --ignore-eos (EOS never sampled, as llama.cpp).
SessionRequest make_run_request(const Model& model, const RunArgs& a, Layout layout,
                                const std::string& fmt_name, const std::vector<int64_t>& snapshots,
                                uint64_t seed) {
  ProblemRequest pr;
  pr.problem = a.problem;
  pr.formatting = fmt_name;
  pr.workers = a.workers;
  pr.layout = layout;
  pr.budget = a.budget;
  pr.snapshots = snapshots;
  pr.collab_every = a.collab_every;
  pr.max_context = a.max_context;
  pr.kv_budget = a.kv_budget;
  pr.kv_chunk = a.kv_chunk;
  pr.kv_policy = a.kv_policy;
  pr.kv_redundancy = a.kv_redundancy;
  pr.max_tokens = a.n_predict;
  pr.sampling = sampling_params(a.sampling, model.generation_config(), seed);
  SessionRequest req = make_request(model, pr);
  if (a.ignore_eos) req.formatting.forbidden.eos = true;  // llama.cpp: EOS is never sampled
  return req;
}

/// How the live view shows the run on `view_out`: its mode (terminal or status line), the
/// settings lines and the warnings (also printed to stderr here).
LiveViewOptions run_view_options(const RunArgs& a, const SessionRequest& req,
                                 const StopPolicy& stop, size_t n_snapshots, std::FILE* view_out) {
  const SamplingParams& sp = req.sampling;
  LiveViewOptions vo =
      live_view_mode(isatty(fileno(view_out)) != 0, isatty(fileno(stderr)) != 0,
                     std::getenv("TERM"), std::getenv("NO_COLOR"), a.no_live, stderr);
  vo.budget = a.budget;
  vo.n_snapshots = static_cast<int>(n_snapshots);
  vo.settings = {
      "sampling: " + sp.describe() + (a.workers > 1 && !sp.greedy() ? " (worker w: seed + w)" : ""),
      "EOS ids: " + stop.describe() +
          (stop.eos_ids.empty()           ? ""
           : req.formatting.forbidden.eos ? "; forbidden while reasoning"
                                          : "; a worker that samples one stops")};
  if (auto w = same_text_warning(sp, req.formatting, a.workers)) vo.warnings.push_back(*w);
  for (const std::string& w : vo.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  return vo;
}

/// The transcript's header (run_files.h): the model, the device, the options and the prompt ids.
nlohmann::json run_header(const RunArgs& a, const Model& model, const SessionRequest& req,
                          Layout layout, const std::vector<int64_t>& snapshots,
                          const std::string& formatting_name, uint64_t seed) {
  const SamplingParams& sp = req.sampling;
  nlohmann::json header = {{"model", a.model_dir},
                           {"device", model.device()},
                           {"options",
                            {{"workers", a.workers},
                             {"layout", layout_name(layout)},
                             {"budget", a.budget},
                             {"snapshots", snapshots},
                             {"formatting", formatting_name},
                             {"seed", seed},
                             {"max_context", a.max_context},
                             {"kv_budget", a.kv_budget},
                             {"kv_chunk", a.kv_chunk},
                             {"kv_policy", kv_policy_name(req.options.kv.policy)},
                             {"kv_redundancy", a.kv_redundancy},
                             {"collab_every", a.collab_every},
                             {"n_predict", a.n_predict},
                             {"sampling",
                              {{"do_sample", sp.do_sample},
                               {"temperature", sp.temperature},
                               {"top_k", sp.top_k},
                               {"top_p", sp.top_p},
                               {"min_p", sp.min_p},
                               {"repetition_penalty", sp.repetition_penalty}}}}},
                           {"prompt_ids", req.prompt}};
  set_text(header["options"], "problem", a.problem);
  return header;
}

void run(RunArgs a) {
  if (a.print_format && a.model_dir.empty()) {  // no model: the named (or generic) formatting
    const Formatting f = resolve_formatting(a.format.empty() ? "generic-math" : a.format);
    std::printf("%s\n", dump_json(f.to_json(), 2).c_str());
    return;
  }
  // Argument checks first, before any weights load (the flags' own names in the messages).
  check_run_paths(a);
  const Layout layout = parse_layout(a.layout);
  auto tmpl = load_template(a.model_dir);
  const std::string fmt_name =
      !a.format.empty()
          ? a.format
          : model_formatting_ref(a.model_dir, tmpl ? tmpl->source() : "", AnswerKind::boxed);
  const Formatting fmt = resolve_formatting(fmt_name);
  if (a.print_format) {
    std::printf("%s\n", dump_json(fmt.to_json(), 2).c_str());
    return;
  }
  a.problem = read_problem(a);
  const std::vector<int64_t> snapshots = check_run_ranges(a, layout, fmt);
  const ModelConfig config = load_model_config(a.model_dir);
  check_max_context(a.max_context, config.max_position_embeddings);
  // Output files are opened before the weights load, so a bad path fails at once.
  RunFiles files(a.files, config.vocab_size);

  // The library does the rest: the model, the request, the engine (src/engine).
  ModelOptions mo;
  mo.model_dir = a.model_dir;
  mo.device = a.device.device;
  mo.kv_tokens = a.device.max_kv_tokens;
  std::unique_ptr<Model> model = Model::load(mo);
  const uint64_t seed = resolve_seed(a.sampling.seed);
  SessionRequest req = make_run_request(*model, a, layout, fmt_name, snapshots, seed);
  StopSignals signals;
  req.options.interrupt = signals.flag();
  req.options.keep_logits = files.keep_logits();
  StopPolicy stop = model->stop_policy();
  stop.ignore_eos = a.ignore_eos;

  const std::vector<std::string> names =
      worker_labels(fmt, a.workers, layout == Layout::independent, /*skeleton=*/false);
  std::FILE* view_out = files.uses_stdout() ? stderr : stdout;
  LiveView view(view_out, names, run_view_options(a, req, stop, snapshots.size(), view_out));
  MultiObserver obs;
  obs.add(&view);
  obs.add(files.observer());
  req.observer = &obs;
  nlohmann::json header = run_header(a, *model, req, layout, snapshots, fmt.name, seed);
  const Formatting used_formatting = req.formatting;

  // One session alone: the whole prompt in one forward.
  EngineOptions eo;
  eo.max_sessions = 1;
  eo.max_batch_tokens = 4096;
  eo.prefill_chunk = 4096;
  eo.prefix_cache = !a.no_prefix_cache;
  Engine engine(model->backend(), model->codec(), eo);
  const SessionId id = engine.submit(std::move(req));
  const Session& session = *engine.session(id);
  header.update(run_settings_json(session, used_formatting, stop));
  files.start(session, model->codec(), names, header);
  engine.run_until_idle();
  if (!engine.error(id).empty()) fail("{}", engine.error(id));
  const SessionResult res = engine.take(id);
  view.finish(
      res, fmt::format("{} worker{}, layout {}, formatting {}, device {}", a.workers,
                       a.workers == 1 ? "" : "s", layout_name(layout), fmt.name, model->device()));
  files.finish(res);
  // What was produced is printed and saved; scripts still see the signal in the exit status.
  if (signals.stopped()) exit_after_signal(signals.exit_code());
}

}  // namespace

void register_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* c =
      app.add_subcommand("run", "N workers solve a problem together (Hogwild! inference)");
  c->add_option("-m,--model", a->model_dir,
                "Hugging Face model directory (required, except with --print-format)");
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
  c->add_option("-c,--ctx-size,--max-context", a->max_context,
                "max tokens in a worker's view (0 = the model's max_position_embeddings)");
  c->add_option("--kv-budget", a->kv_budget,
                "tokens of the shared history the workers still read; beyond, the least attended "
                "chunks are forgotten and the KV reserved is bounded by it (steps of at most 512 "
                "tokens; 0 = unlimited; docs/ARCHITECTURE.md)");
  c->add_option("--kv-chunk", a->kv_chunk,
                "with --kv-budget: tokens forgotten together, aligned in the history (0 = 16)");
  c->add_option("--kv-policy", a->kv_policy,
                "with --kv-budget: evict (the default: forget the least attended chunks) or "
                "summarise (a worker writes a summary step with the formatting's summary.prompt, "
                "then the steps it sums up are forgotten)");
  add_kv_redundancy_flag(c, a->kv_redundancy);
  c->add_option("--n-predict", a->n_predict,
                "at most this many generated tokens per worker (0 = no limit)");
  c->add_flag("--ignore-eos", a->ignore_eos,
              "never sample EOS, whatever the formatting's forbidden.eos says");
  add_threads_flag(c);
  add_prefix_cache_flag(c, a->no_prefix_cache);
  c->add_flag("--no-live", a->no_live,
              "no redrawn live view on a terminal: one line per finished step");
  c->add_option("--json", a->files.json,
                "write a JSON transcript to FILE (- = stdout); it grows in FILE.partial.jsonl "
                "while the run goes (docs/DUMPS.md)")
      ->check(non_empty_path());
  c->add_option("--dump-views", a->files.dump_views,
                "write every forward's views, feeds and blocks to FILE (JSON lines; - = stdout)")
      ->check(non_empty_path());
  c->add_option("--dump-logits", a->files.dump_logits,
                "write the fp32 logits each sampled token was drawn from to FILE (.npy) and "
                "their serial steps and workers to FILE.json")
      ->check(npy_path());
  c->add_option("-f,--file", a->problem_file, "read the problem from FILE (- = stdin)")
      ->check(non_empty_path());
  c->add_option("problem", a->problem, "the problem text (- = read stdin)");
  c->callback([a] { run(*a); });
}

}  // namespace hogwild::cli
