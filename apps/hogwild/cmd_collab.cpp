// `hogwild collab`: the data of the collaboration model (src/collab, tools/collab/README.md).
//
//   hogwild collab problems [--task packs] --split test --k 4 --count 500 --seed 1 [--out FILE]
//       [--format text] [--wording first]
//       held-out (or training) packs as JSONL: {"id", "split", "k", "seed", "problem", "answer",
//       "parts": [{"text", "result", "equations"}]}
//   hogwild collab problems --task countdown --split test --numbers 4 --count 200 --seed 1
//       Countdown problems as JSONL: {"id", "split", "task", "n", "seed", "problem", "numbers",
//       "target", "answer" (a known solution; any expression check_countdown accepts is right)}
//   hogwild collab traces -m DIR [--task packs|countdown] [--format FILE] [--bytes] --sessions N
//       --seed S --threads T --out PREFIX [--text] [--single P] [--keep-decision P] [--careless P]
//       scripted sessions (the oracle's workers in the engine's own layouts); writes the examples
//       (PREFIX.<t>.tok/.msk/.idx, or PREFIX.jsonl with --text); --bytes renders with the byte
//       stand-in codec (before a tokenizer exists)
//   hogwild collab show -m DIR [--task T] [--format FILE] [--bytes] --k 3 -w 2 [--layout L]
//       [--seed S]
//       one scripted session's text, the workers' steps in order, and its counts
//   hogwild collab measure -m DIR --task countdown [--bytes] --numbers 4 --count 200 --seed S
//       --workers 1,2,4 --budgets 512,1024,2048,4096 [--layout L] [--out FILE]
//       scripted runs on held-out problems: accuracy and serial steps per team size and budget
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "apps/hogwild/cli_util.h"
#include "apps/hogwild/commands.h"
#include "chat/chat_template.h"
#include "collab/countdown.h"
#include "collab/problems.h"
#include "collab/traces.h"
#include "core/error.h"
#include "hogwild/codec.h"
#include "hogwild/formatting.h"
#include "tokenizer/tokenizer.h"

namespace hogwild::cli {
namespace {

namespace fs = std::filesystem;

struct ModelArgs {
  std::string model_dir, format;
  bool bytes = false;
};

void add_model_args(CLI::App* c, ModelArgs& a) {
  c->add_option("-m,--model", a.model_dir,
                "model directory: tokenizer.json, tokenizer_config.json (chat template), "
                "hogwild_format.json")
      ->required();
  c->add_option("--format", a.format, "formatting file (default: MODEL/hogwild_format.json)");
  c->add_flag("--bytes", a.bytes, "byte-level stand-in codec instead of MODEL/tokenizer.json");
}

// Everything a scripted session needs from the model directory.
struct ModelText {
  Formatting fmt;
  std::unique_ptr<chat::ChatTemplate> tmpl;
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<TextCodec> codec;
};

ModelText load_model_text(const ModelArgs& a) {
  if (!fs::is_directory(a.model_dir))
    fail("model directory '{}' does not exist; pass it with -m", a.model_dir);
  const fs::path fmt_path =
      a.format.empty() ? fs::path(a.model_dir) / kModelFormattingFile : fs::path(a.format);
  ModelText m{
      a.format.empty() ? load_formatting(fmt_path) : resolve_formatting(a.format), {}, {}, {}};
  if (m.fmt.chat.use_template)
    m.tmpl = std::make_unique<chat::ChatTemplate>(chat::ChatTemplate::load(a.model_dir));
  if (a.bytes) {
    m.codec = std::make_unique<collab::ByteCodec>();
  } else {
    m.tok = std::make_unique<Tokenizer>(Tokenizer::from_dir(a.model_dir));
    m.codec = std::make_unique<TokenizerCodec>(*m.tok);
  }
  return m;
}

// A note on stderr when the model's formatting was written for the other task (its rules and
// example describe packs while the sessions search Countdown, or the reverse): the sessions run,
// but the prompt does not say what the workers do.
void note_task_formatting(collab::Task task, const Formatting& fmt) {
  const bool countdown = task == collab::Task::countdown;
  if ((countdown && fmt.name == "packs-collab") || (!countdown && fmt.name == "countdown-collab"))
    std::fprintf(stderr,
                 "note: the formatting '%s' describes the %s task; for --task %s use a model "
                 "directory made from tools/collab/%s (or --format)\n",
                 fmt.name.c_str(), countdown ? "packs" : "countdown",
                 countdown ? "countdown" : "packs",
                 countdown ? "countdown-template" : "model-template");
}

struct ProblemsArgs {
  std::string task = "packs", split = "test", out, format = "jsonl", wording = "grammar";
  int k = 4, numbers = 4;
  int64_t count = 100;
  uint64_t seed = 1;
};

// The packs task's records of `problems`.
void problem_packs(const ProblemsArgs& a, collab::Split split, std::ostream& out) {
  for (int64_t i = 0; i < a.count; ++i) {
    const uint64_t seed = a.seed * 1000003ull + static_cast<uint64_t>(i);
    const collab::Pack p = collab::make_pack(
        split, a.k, seed, a.wording == "first" ? collab::Wording::first : collab::Wording::grammar);
    nlohmann::ordered_json parts = nlohmann::ordered_json::array();
    for (const auto& part : p.parts)
      parts.push_back(
          {{"text", part.text}, {"result", part.result}, {"equations", part.equations()}});
    nlohmann::ordered_json j = {{"id", fmt::format("{}-k{}-{}", a.split, a.k, seed)},
                                {"split", a.split},
                                {"k", a.k},
                                {"seed", seed},
                                {"problem", p.text},
                                {"answer", std::to_string(p.total)},
                                {"parts", parts}};
    if (a.format == "text")
      out << (i > 0 ? "\n" : "") << p.text << "\n";  // a blank line between problems
    else
      out << j.dump() << "\n";
  }
}

void problems(const ProblemsArgs& a) {
  const collab::Task task = collab::parse_task(a.task);
  const collab::Split split = collab::parse_split(a.split);
  if (a.count < 0) fail("--count must be >= 0, got {}", a.count);
  std::ofstream file;
  if (!a.out.empty()) {
    file.open(a.out);
    if (!file) fail("cannot create '{}'; check that its directory exists", a.out);
  }
  if (a.wording != "grammar" && a.wording != "first")
    fail("--wording must be grammar or first, got '{}'", a.wording);
  if (a.format != "jsonl" && a.format != "text")
    fail("--format must be jsonl or text, got '{}'", a.format);
  if (task == collab::Task::countdown && a.wording != "grammar")
    fail("--wording applies to the packs task; countdown problems have one wording");
  std::ostream& out = a.out.empty() ? std::cout : file;
  if (task == collab::Task::countdown) {
    for (int64_t i = 0; i < a.count; ++i) {
      const uint64_t seed = a.seed * 1000003ull + static_cast<uint64_t>(i);
      const collab::Countdown c = collab::make_countdown(split, a.numbers, seed);
      nlohmann::ordered_json j = {
          {"id", fmt::format("countdown-{}-n{}-{}", a.split, a.numbers, seed)},
          {"split", a.split},
          {"task", "countdown"},
          {"n", a.numbers},
          {"seed", seed},
          {"problem", c.text},
          {"numbers", c.numbers},
          {"target", c.target},
          {"answer", c.solution}};
      if (a.format == "text")
        out << (i > 0 ? "\n" : "") << c.text << "\n";  // a blank line between problems
      else
        out << j.dump() << "\n";
    }
  } else {
    problem_packs(a, split, out);
  }
  out.flush();
  if (!out) fail("could not write '{}' (disk full?)", a.out.empty() ? "standard output" : a.out);
}

struct TracesArgs {
  ModelArgs model;
  collab::GenerateOptions gen;
  std::string task = "packs", split = "train";
  bool text = false;
};

void traces(TracesArgs a) {
  const ModelText m = load_model_text(a.model);
  if (a.gen.prefix.empty()) fail("give the output prefix with --out");
  a.gen.format = a.text ? "text" : "tokens";
  a.gen.task = collab::parse_task(a.task);
  note_task_formatting(a.gen.task, m.fmt);
  a.gen.split = collab::parse_split(a.split);
  const collab::GenerateSummary s = collab::generate(a.gen, m.fmt, m.tmpl.get(), *m.codec);
  const auto& st = s.stats;
  auto ll = [](int64_t v) { return static_cast<long long>(v); };
  std::printf(
      "sessions %lld (wrong %lld, over the context %lld), examples %lld, tokens %lld, loss tokens "
      "%lld (%.1f%%), "
      "weighted %lld (%.1f%% of the loss tokens)\n"
      "claims %lld (careless %lld), switches %lld, checks %lld (yes %lld, on a collision %lld), "
      "ledgers %lld, stops %lld, ",
      ll(s.sessions), ll(s.wrong), ll(s.over_context), ll(s.examples), ll(s.tokens),
      ll(s.loss_tokens),
      s.tokens ? 100.0 * static_cast<double>(s.loss_tokens) / static_cast<double>(s.tokens) : 0.0,
      ll(s.weighted_tokens),
      s.loss_tokens
          ? 100.0 * static_cast<double>(s.weighted_tokens) / static_cast<double>(s.loss_tokens)
          : 0.0,
      ll(st.claims), ll(st.careless_claims), ll(st.switches), ll(st.checks), ll(st.check_yes),
      ll(st.collisions_yes), ll(st.ledgers), ll(st.stops));
  if (a.gen.task == collab::Task::countdown)
    std::printf("search lines %lld (reaching the target %lld), answers %lld\n",
                ll(st.work + st.found), ll(st.found), ll(st.answers));
  else
    std::printf("partial sums %lld, totals %lld\n", ll(st.nodes), ll(st.sums));
  if (s.wrong > 0)
    fail("{} scripted sessions did not end with the right {}; this is a bug of the oracle", s.wrong,
         a.gen.task == collab::Task::countdown ? "expression" : "total");
}

struct ShowArgs {
  ModelArgs model;
  collab::TraceSpec spec;
  std::optional<int64_t> budget;  // unset: 4000 serial steps for packs, none for countdown
  std::string task = "packs", layout = "combined", split = "train";
  double careless = 0;
};

void show(ShowArgs a) {
  const ModelText m = load_model_text(a.model);
  a.spec.layout = parse_layout(a.layout);
  if (a.spec.layout == Layout::independent)
    fail(
        "--layout independent: the oracle scripts workers that collaborate; use combined, "
        "interleaved or contiguous");
  a.spec.task = collab::parse_task(a.task);
  note_task_formatting(a.spec.task, m.fmt);
  a.spec.split = collab::parse_split(a.split);
  if (a.budget && *a.budget < 0)
    fail("--budget must be >= 0 serial steps (0 = until an answer), got {}", *a.budget);
  a.spec.budget = a.budget ? *a.budget : a.spec.task == collab::Task::countdown ? 0 : 4000;
  a.spec.picker.whole = a.spec.n_workers == 1;
  collab::check_probability("--careless", a.careless);
  a.spec.picker.careless = a.careless;
  const collab::Trace t = collab::run_trace(a.spec, m.fmt, m.tmpl.get(), *m.codec);
  std::printf("%s", t.result.history_text.c_str());
  for (size_t w = 0; w < t.result.unfinished.size(); ++w)
    std::printf("[unfinished, %s] %s\n", m.fmt.worker_name(static_cast<int>(w)).c_str(),
                t.result.unfinished[w].c_str());
  if (a.spec.task == collab::Task::countdown) {
    std::printf("\nstop: %s, answer %s (%s), serial steps %lld, examples %zu\n",
                std::string(stop_reason_name(t.result.stop_reason)).c_str(),
                t.result.answer.value_or("-").c_str(), t.correct ? "right" : "wrong",
                static_cast<long long>(t.result.serial_steps), t.examples.size());
    return;
  }
  std::printf("\nstop: %s, answer %s (expected %lld), serial steps %lld, examples %zu\n",
              std::string(stop_reason_name(t.result.stop_reason)).c_str(),
              t.result.answer.value_or("-").c_str(), static_cast<long long>(t.pack.total),
              static_cast<long long>(t.result.serial_steps), t.examples.size());
}

struct MeasureArgs {
  ModelArgs model;
  std::string task = "countdown", split = "test", layout = "combined", out;
  std::vector<int> workers = {1, 2, 4};
  std::vector<int64_t> budgets = {512, 1024, 2048, 4096};
  int k = 4, threads = 2;
  int64_t count = 200, collab_every = -1;
  uint64_t seed = 1;
};

// One scripted run of a measurement: right or not, serial steps, tokens generated.
struct MeasuredRun {
  bool right = false;
  int64_t steps = 0, tokens = 0;
};

// The scripted runs of a.count held-out problems with `workers` workers, up to `max_budget`
// serial steps, on a.threads threads. Throws the first run's hogwild::Error.
std::vector<MeasuredRun> run_team(const MeasureArgs& a, const ModelText& m, collab::Task task,
                                  collab::Split split, Layout layout, int workers,
                                  int64_t max_budget) {
  std::vector<MeasuredRun> runs(static_cast<size_t>(a.count));
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&](int t) {
    try {
      for (int64_t i = t; i < a.count; i += a.threads) {
        collab::TraceSpec spec;
        spec.task = task;
        spec.split = split;
        spec.k = a.k;
        spec.pack_seed = a.seed * 1000003ull + static_cast<uint64_t>(i);
        spec.n_workers = workers;
        spec.layout = workers == 1 ? Layout::combined : layout;
        spec.collab_every = a.collab_every;
        spec.max_context = 1 << 20;
        spec.budget = max_budget;
        spec.picker.whole = workers == 1;
        spec.picker.keep_decision = spec.picker.keep_step_end = spec.picker.keep_stop = 0;
        spec.picker.keep_ledger = spec.picker.keep_check_no = 0;
        const collab::Trace tr = collab::run_trace(spec, m.fmt, m.tmpl.get(), *m.codec);
        MeasuredRun& r = runs[static_cast<size_t>(i)];
        r.right = tr.correct;
        r.steps = tr.result.serial_steps;
        for (int64_t n : tr.result.tokens_per_worker) r.tokens += n;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < a.threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
  return runs;
}

// One team size's row of the table (printed) and its JSON object: the right runs, the accuracy
// at each budget (sorted), the median serial steps to a right answer (a run not right within the
// largest budget counts as that budget + 1) and the means over the `common` problems.
nlohmann::ordered_json summarise_team(int workers, const std::vector<MeasuredRun>& runs,
                                      const std::vector<int64_t>& budgets,
                                      const std::vector<bool>& common, int64_t n_common) {
  const int64_t max_budget = budgets.back();
  nlohmann::ordered_json acc = nlohmann::ordered_json::object();
  int64_t right = 0, steps = 0, tokens = 0;
  std::vector<int64_t> to_answer;
  for (size_t i = 0; i < runs.size(); ++i) {
    const MeasuredRun& r = runs[i];
    right += r.right;
    to_answer.push_back(r.right ? r.steps : max_budget + 1);
    if (common[i]) steps += r.steps, tokens += r.tokens;
  }
  std::sort(to_answer.begin(), to_answer.end());
  const int64_t median = to_answer[to_answer.size() / 2];
  std::printf("%-8d %6lld", workers, static_cast<long long>(right));
  for (int64_t b : budgets) {
    int64_t n = 0;
    for (const MeasuredRun& r : runs) n += r.right && r.steps <= b;
    const double v = static_cast<double>(n) / static_cast<double>(runs.size());
    acc[std::to_string(b)] = v;
    std::printf(" %9.3f", v);
  }
  const double mean_steps =
      n_common ? static_cast<double>(steps) / static_cast<double>(n_common) : 0;
  const double mean_tokens =
      n_common ? static_cast<double>(tokens) / static_cast<double>(n_common) : 0;
  std::printf(" %13lld %13.1f %13.1f\n", static_cast<long long>(median), mean_steps, mean_tokens);
  return {{"workers", workers},
          {"right", right},
          {"accuracy_at_budget", acc},
          {"median_serial_steps_to_answer", median},
          {"mean_serial_steps_common", mean_steps},
          {"mean_generated_tokens_common", mean_tokens}};
}

/// Scripted runs of held-out problems for every team size: whether each run ends with a right
/// answer, and after how many serial steps; the accuracy at a budget B is the share of runs right
/// within B serial steps (the scripted policy does not depend on the budget, so one run to the
/// largest budget gives every smaller one).
void measure(MeasureArgs a) {
  const ModelText m = load_model_text(a.model);
  const collab::Task task = collab::parse_task(a.task);
  note_task_formatting(task, m.fmt);
  const collab::Split split = collab::parse_split(a.split);
  const Layout layout = parse_layout(a.layout);
  if (layout == Layout::independent)
    fail("--layout independent: the oracle scripts workers that collaborate");
  if (a.count < 1) fail("--count must be >= 1, got {}", a.count);
  if (a.workers.empty() || a.budgets.empty()) fail("give --workers and --budgets");
  if (a.threads < 1 || a.threads > 64) fail("--threads must be 1..64, got {}", a.threads);
  std::ofstream out;
  if (!a.out.empty()) {  // before the runs: a path that cannot be written fails at once
    out.open(a.out);
    if (!out) fail("cannot create '{}'; check that its directory exists", a.out);
  }
  for (size_t i = 0; i < a.budgets.size(); ++i)
    if (a.budgets[i] < 1 || (i > 0 && a.budgets[i] <= a.budgets[i - 1]))
      fail("--budgets must be increasing serial-step counts >= 1, e.g. 512,1024; got {}",
           fmt::join(a.budgets, ","));
  for (int w : a.workers)
    if (w < 1 || w > 64) fail("--workers: each team size must be 1..64, got {}", w);
  const int64_t max_budget = a.budgets.back();
  std::vector<std::vector<MeasuredRun>> all;  // (team sizes, count)
  for (int w : a.workers) all.push_back(run_team(a, m, task, split, layout, w, max_budget));
  // The problems every team size answered within the largest budget: means over them compare.
  std::vector<bool> common(static_cast<size_t>(a.count), true);
  int64_t n_common = 0;
  for (size_t i = 0; i < common.size(); ++i) {
    for (const auto& runs : all) common[i] = common[i] && runs[i].right;
    n_common += common[i];
  }
  std::printf("%-8s %6s", "workers", "right");
  for (int64_t b : a.budgets) std::printf(" %9s", fmt::format("acc@{}", b).c_str());
  std::printf(" %13s %13s %13s\n", "median steps", "mean steps*", "mean tokens*");
  nlohmann::ordered_json teams = nlohmann::ordered_json::array();
  for (size_t t = 0; t < all.size(); ++t)
    teams.push_back(summarise_team(a.workers[t], all[t], a.budgets, common, n_common));
  std::printf("* over the %lld problems every team size answered within %lld serial steps\n",
              static_cast<long long>(n_common), static_cast<long long>(max_budget));
  if (a.out.empty()) return;
  nlohmann::ordered_json j = {
      {"task", a.task},
      {"split", a.split},
      {"k", a.k},
      {"count", a.count},
      {"seed", a.seed},
      {"layout", a.layout},
      {"collab_every", a.collab_every},
      {"formatting", m.fmt.name},
      {"codec", a.model.bytes ? "bytes" : "tokenizer"},
      {"budgets", a.budgets},
      {"common_problems", n_common},
      {"note",
       "scripted policy (countdown_oracle.h), no model; accuracy_at_budget: "
       "share of the problems answered right within that many serial "
       "steps; median_serial_steps_to_answer: budgets + 1 for a run not "
       "right within the largest budget; *_common: means over the "
       "common_problems that every team size answered"},
      {"teams", teams}};
  out << j.dump(2) << "\n";
  out.flush();
  if (!out) fail("could not write '{}' (disk full?)", a.out);
}

}  // namespace

void register_collab(CLI::App& app) {
  CLI::App* c = app.add_subcommand(
      "collab", "data of the collaboration model: held-out problems, scripted traces");
  c->require_subcommand(1);

  auto pa = std::make_shared<ProblemsArgs>();
  CLI::App* p = c->add_subcommand("problems", "packs of word problems (or Countdown) as JSONL");
  p->add_option("--task", pa->task, "packs (default) or countdown");
  p->add_option("--numbers", pa->numbers, "countdown: numbers per problem (3..6)");
  p->add_option("--split", pa->split,
                "train, test (held-out seeds) or test-frames (held-out seeds and sentence frames)");
  p->add_option("--k", pa->k, "parts per pack (1..9)");
  p->add_option("--count", pa->count, "number of packs");
  p->add_option("--seed", pa->seed, "base seed; pack i uses seed * 1000003 + i")
      ->check(in_range(RequestField::fixed_seed));
  p->add_option("--out", pa->out, "output file (default: stdout)");
  p->add_option("--format", pa->format, "jsonl (default) or text (the texts, a blank line apart)");
  p->add_option("--wording", pa->wording,
                "grammar (default: the sentence grammar) or first (the first model's six frames)");
  p->callback([pa] { problems(*pa); });

  auto ta = std::make_shared<TracesArgs>();
  CLI::App* t = c->add_subcommand("traces", "scripted sessions -> training examples");
  add_model_args(t, ta->model);
  t->add_option("--task", ta->task, "packs (default) or countdown");
  t->add_option("--numbers-min", ta->gen.mix.numbers_min, "countdown: fewest numbers (3..6)");
  t->add_option("--numbers-max", ta->gen.mix.numbers_max, "countdown: most numbers (3..6)");
  t->add_option("--sessions", ta->gen.sessions, "number of sessions");
  t->add_option("--seed", ta->gen.seed, "base seed")->check(in_range(RequestField::fixed_seed));
  t->add_option("--threads", ta->gen.threads, "threads (one output shard each)");
  t->add_option("--out", ta->gen.prefix, "output prefix")->required();
  t->add_flag("--text", ta->text, "write the examples as JSONL text (tokenizer corpus)");
  t->add_option("--single", ta->gen.mix.single, "share of one-worker sessions");
  t->add_option("--keep-decision", ta->gen.mix.keep_decision,
                "probability of keeping a segment that ends at a decision");
  t->add_option("--keep-stop", ta->gen.mix.keep_stop,
                "probability of keeping a segment of a stop step");
  t->add_option("--careless", ta->gen.mix.careless, "probability of a careless claim");
  t->add_option("--collisions", ta->gen.mix.collisions,
                "share of the team sessions made for the check (careless claims, frequent checks)");
  t->add_option("--k-min", ta->gen.mix.k_min, "fewest parts per pack");
  t->add_option("--k-max", ta->gen.mix.k_max, "most parts per pack");
  t->add_option("--max-context", ta->gen.max_context, "most tokens in a view");
  t->add_option("--split", ta->split, "train (default) or test (held-out: never for training)");
  t->callback([ta] { traces(*ta); });

  auto sa = std::make_shared<ShowArgs>();
  CLI::App* s = c->add_subcommand("show", "print one scripted session");
  add_model_args(s, sa->model);
  s->add_option("--task", sa->task, "packs (default) or countdown");
  s->add_option("--k", sa->spec.k, "parts (countdown: numbers)");
  s->add_option("--budget", sa->budget,
                "serial steps, 0 = until an answer (default: 4000 for packs, 0 for countdown)");
  s->add_option("-w,--workers", sa->spec.n_workers, "workers");
  s->add_option("--layout", sa->layout, "combined, interleaved or contiguous");
  s->add_option("--seed", sa->spec.pack_seed, "pack seed (any 64-bit value)");
  s->add_option("--split", sa->split, "train, test or test-frames");
  s->add_option("--collab-every", sa->spec.collab_every, "tokens between checks (-1: formatting)");
  s->add_option("--careless", sa->careless, "probability of a careless claim");
  s->add_option("--picker-seed", sa->spec.picker.seed, "seed of the careless claims");
  s->add_option("--max-context", sa->spec.max_context, "most tokens in a view");
  s->callback([sa] { show(*sa); });

  auto ma = std::make_shared<MeasureArgs>();
  CLI::App* me = c->add_subcommand(
      "measure", "scripted runs on held-out problems: accuracy at budgets, serial steps per team");
  add_model_args(me, ma->model);
  me->add_option("--task", ma->task, "countdown (default) or packs");
  me->add_option("--split", ma->split, "test (default) or train");
  me->add_option("--k", ma->k, "numbers per problem (packs: parts)");
  me->add_option("--count", ma->count, "problems; problem i uses seed * 1000003 + i");
  me->add_option("--seed", ma->seed, "base seed")->check(in_range(RequestField::fixed_seed));
  me->add_option("--workers", ma->workers, "team sizes, e.g. 1,2,4")->delimiter(',');
  me->add_option("--budgets", ma->budgets, "serial-step budgets, e.g. 512,1024")->delimiter(',');
  me->add_option("--layout", ma->layout, "combined, interleaved or contiguous (teams)");
  me->add_option("--collab-every", ma->collab_every, "tokens between checks (-1: formatting)");
  me->add_option("--threads", ma->threads, "threads");
  me->add_option("--out", ma->out, "JSON file of the figures");
  me->callback([ma] { measure(*ma); });
}

}  // namespace hogwild::cli
