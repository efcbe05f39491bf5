// `hogwild run`: N workers of one model solve a problem together over one shared KV cache
// (Hogwild! Inference, arXiv 2504.06261; docs/DESIGN.md; src/hogwild/session.h), on the GPU when one
// is usable (--device; backend_flags.h), else on the CPU.
//
//   hogwild run -m DIR [-w N] [--layout combined|interleaved|contiguous] [--budget N]
//       [--snapshots 256,512] [--collab-every N] [--format NAME|FILE] [--print-format]
//       [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R] [--greedy]
//       [--seed N] [--max-context N] [--n-predict N] [--ignore-eos] [--no-live]
//       [--json FILE|-] [--dump-views FILE|-] [--dump-logits FILE] ("problem" | -f FILE)
//
// The problem "-" is read from stdin. Sampling defaults come from DIR/generation_config.json;
// worker w samples with seed + w (-1 = a random seed, printed). The formatting defaults to the
// model family's math variant (detected from the chat template); --format plain inserts nothing
// (raw prompt, no prefixes). Ctrl-C or SIGTERM stops after the current serial step and writes
// what was produced (exit status 130 / 143); the transcript grows in FILE.partial.jsonl while the
// run goes (run_files.h). llama.cpp spellings: -c/--ctx-size, -f/--file, -t/--threads,
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

#include "apps/hogwild/commands.h"
#include "apps/hogwild/backend_flags.h"
#include "apps/hogwild/cli_util.h"
#include "apps/hogwild/sampling_flags.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "core/json_text.h"
#include "hogwild/codec.h"
#include "hogwild/formatting.h"
#include "hogwild/kv_budget.h"
#include "hogwild/live_view.h"
#include "hogwild/picker.h"
#include "hogwild/prompt.h"
#include "hogwild/run_files.h"
#include "hogwild/session.h"
#include "model/weights.h"
#include "sampling/generation_config.h"
#include "sampling/sampler.h"
#include "sampling/stop_policy.h"
#include "tokenizer/tokenizer.h"

namespace hogwild::cli {
namespace {

struct RunArgs {
  std::string model_dir, layout = "combined", snapshots, format, problem, problem_file;
  RunFilePaths files;
  int workers = 2;
  int64_t budget = 0, collab_every = -1, max_context = 0, n_predict = 0;
  bool print_format = false, no_live = false, ignore_eos = false;
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

// The model's chat template; null when it has none (only formattings with use_template=false
// work then). A template that exists but does not parse is an error shown as such.
std::unique_ptr<chat::ChatTemplate> load_template(const std::string& dir) {
  auto t = chat::ChatTemplate::load_if_present(dir);
  return t ? std::make_unique<chat::ChatTemplate>(std::move(*t)) : nullptr;
}

void run(RunArgs a) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (a.print_format && a.model_dir.empty()) {  // no model: the named (or generic) formatting
    const Formatting f = resolve_formatting(a.format.empty() ? "generic-math" : a.format);
    std::printf("%s\n", dump_json(f.to_json(), 2).c_str());
    return;
  }
  check_output_paths(a.files);
  if (a.model_dir.empty() || !fs::is_directory(a.model_dir, ec))
    fail("model directory '{}' does not exist; pass an HF model directory with -m", a.model_dir);
  if (!fs::exists(fs::path(a.model_dir) / "tokenizer.json", ec))
    fail("{}/tokenizer.json is missing; hogwild run needs the model's tokenizer", a.model_dir);
  const Layout layout = parse_layout(a.layout);
  auto tmpl = load_template(a.model_dir);
  const std::string fmt_name =
      !a.format.empty() ? a.format
                        : default_formatting_name(tmpl ? tmpl->source() : "", AnswerKind::boxed);
  Formatting fmt = resolve_formatting(fmt_name);
  if (a.ignore_eos) fmt.forbidden.eos = true;  // llama.cpp: EOS is never sampled
  if (a.print_format) {
    std::printf("%s\n", dump_json(fmt.to_json(), 2).c_str());
    return;
  }
  if (!a.problem_file.empty() && !a.problem.empty())
    fail("give the problem as text or with -f FILE, not both");
  a.problem = a.problem_file.empty() ? text_or_stdin(a.problem)
                                     : file_or_stdin(a.problem_file, "problem file (-f)");
  if (a.problem.find_first_not_of(" \t\r\n") == std::string::npos)
    fail("no problem given; pass the problem text as the last argument, - for stdin, or -f FILE");
  if (a.workers < 1 || a.workers > static_cast<int>(fmt.worker_names.size()))
    fail("-w {}: the formatting '{}' names {} workers; use 1..{}", a.workers, fmt.name,
         fmt.worker_names.size(), fmt.worker_names.size());
  if (a.budget < 0) fail("--budget must be >= 0 serial steps (0 = until an answer)");
  if (a.collab_every < -1) fail("--collab-every must be >= 0 tokens (0 = off)");
  if (a.max_context < 0) fail("--max-context must be >= 0 tokens (0 = the model's context length)");
  if (a.n_predict < 0) fail("--n-predict must be >= 0 tokens per worker (0 = no limit)");
  const std::vector<int64_t> snapshots = parse_budgets(a.snapshots);

  const Tokenizer tok = Tokenizer::from_dir(a.model_dir);
  const TokenizerCodec codec(tok);
  const GenerationConfig gen = load_generation_config(a.model_dir);
  const uint64_t seed = resolve_seed(a.sampling.seed);
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
  tok.check_fits(config.vocab_size, a.model_dir);
  const StopPolicy stop = resolve_stop_policy(
      tok.config().eos_token ? std::optional<TokenizerEos>(TokenizerEos{*tok.config().eos_token,
                                                                        tok.eos_id()})
                             : std::nullopt,
      config.eos_token_id, gen.eos_token_id, config.vocab_size, a.ignore_eos);
  // Output files are opened before the weights load, so a bad path fails at once.
  RunFiles files(a.files, config.vocab_size);
  const std::string dev = resolve_device(a.device, config);
  std::unique_ptr<Backend> backend_ptr = make_backend(
      a.model_dir, dev, a.device, prefill_tokens(static_cast<int64_t>(prompt.size()), a.workers));
  Backend& backend = *backend_ptr;
  {
    const int64_t ctx = a.max_context > 0 ? a.max_context : backend.config().max_position_embeddings;
    const int64_t need = run_kv_tokens({static_cast<int64_t>(prompt.size()), a.workers, a.budget,
                                        ctx, fmt.finisher.max_tokens});
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
  opt.max_tokens_per_worker = a.n_predict;
  for (int64_t e : gen.eos_token_id) opt.extra_eos.push_back(static_cast<int32_t>(e));
  StopSignals signals;
  opt.interrupt = signals.flag();
  opt.device_sampling = true;  // used when the backend samples on the device (CUDA)
  opt.keep_logits = files.keep_logits();
  const SamplingParams sp = sampling_params(a.sampling, gen, seed);
  SamplerPicker picker(sp, a.workers, prompt);
  Session session(backend, codec, fmt, opt, picker);

  std::vector<std::string> names(fmt.worker_names.begin(), fmt.worker_names.begin() + a.workers);
  std::FILE* view_out = files.uses_stdout() ? stderr : stdout;
  LiveViewOptions vo =
      live_view_mode(isatty(fileno(view_out)) != 0, isatty(fileno(stderr)) != 0,
                     std::getenv("TERM"), std::getenv("NO_COLOR"), a.no_live, stderr);
  vo.budget = a.budget;
  vo.n_snapshots = static_cast<int>(snapshots.size());
  vo.settings = {"sampling: " + sp.describe() + (a.workers > 1 && !sp.greedy() ? " (worker w: seed + w)" : ""),
                 "EOS ids: " + stop.describe() +
                     (stop.eos_ids.empty()  ? ""
                      : fmt.forbidden.eos ? "; forbidden while reasoning"
                                          : "; a worker that samples one stops")};
  if (auto w = same_text_warning(sp, fmt, a.workers)) vo.warnings.push_back(*w);
  LiveView view(view_out, names, vo);
  MultiObserver obs;
  obs.add(&view);
  nlohmann::json header = run_settings_json(session, fmt, stop);
  header["model"] = a.model_dir;
  header["device"] = dev;
  header["options"] = {{"workers", a.workers},   {"layout", layout_name(layout)},
                       {"budget", a.budget},     {"snapshots", opt.snapshots},
                       {"formatting", fmt.name}, {"seed", seed},
                       {"max_context", a.max_context}, {"collab_every", a.collab_every},
                       {"n_predict", a.n_predict},
                       {"sampling",
                        {{"do_sample", sp.do_sample}, {"temperature", sp.temperature},
                         {"top_k", sp.top_k}, {"top_p", sp.top_p}, {"min_p", sp.min_p},
                         {"repetition_penalty", sp.repetition_penalty}}}};
  set_text(header["options"], "problem", a.problem);
  header["prompt_ids"] = prompt;
  obs.add(files.start(session, codec, names, header));
  session.set_observer(&obs);
  for (const std::string& w : vo.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());

  const SessionResult res = session.run(prompt);
  view.finish(res, fmt::format("{} worker{}, layout {}, formatting {}, device {}", a.workers,
                               a.workers == 1 ? "" : "s",
                               layout_name(layout), fmt.name, dev));
  files.finish(res);
  // What was produced is printed and saved; scripts still see the signal in the exit status.
  if (signals.stopped()) exit_after_signal(signals.exit_code());
}

}  // namespace

void register_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* c =
      app.add_subcommand("run", "N workers solve a problem together (Hogwild! inference)");
  c->add_option("-m,--model", a->model_dir, "Hugging Face model directory (required, except with --print-format)");
  c->add_option("-w,--workers", a->workers, "number of workers (1 = single-worker baseline)");
  c->add_option("--layout", a->layout, "cache layout: combined, interleaved, contiguous");
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
  c->add_option("--n-predict", a->n_predict,
                "at most this many generated tokens per worker (0 = no limit)");
  c->add_flag("--ignore-eos", a->ignore_eos,
              "never sample EOS, whatever the formatting's forbidden.eos says");
  add_threads_flag(c);
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
      ->check(non_empty_path());
  c->add_option("-f,--file", a->problem_file, "read the problem from FILE (- = stdin)")
      ->check(non_empty_path());
  c->add_option("problem", a->problem, "the problem text (- = read stdin)");
  c->callback([a] { run(*a); });
}

}  // namespace hogwild::cli
