// `hogwild eval`: a benchmark run with accuracy-vs-serial-steps curves (docs/EVAL.md), and
// `hogwild eval report DIR...`: tables and plots from one or several result folders.
//
//   hogwild eval -m DIR --dataset NAME|PATH --out DIR
//       [--method hogwild|single|self-consistency|sot] [-w N]
//       [--layout L] [--budgets 256,512,1024] [--samples K] [--limit N] [--concurrency S]
//       [--no-prefix-cache]
//       [--seed S] [--compat paper] [--format NAME|FILE] [--datasets-dir DIR]
//       [--question-field F --answer-field F --id-field F] [--lenient] [sampling flags]
//       [--judge-url URL --judge-model NAME]  (collaboration score; key: $HOGWILD_JUDGE_API_KEY)
//   hogwild eval report DIR... [--out DIR]
//
// The library does the work (src/eval): datasets, the runs on the Engine, scoring, the result
// folder (resumable), the summary and the plots. This file parses flags and wires them.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include "apps/hogwild/backend_flags.h"
#include "apps/hogwild/commands.h"
#include "apps/hogwild/sampling_flags.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "engine/model.h"
#include "eval/dataset.h"
#include "eval/judge.h"
#include "eval/progress.h"
#include "eval/results.h"
#include "eval/runner.h"
#include "eval/score.h"
#include "eval/summary.h"
#include "hogwild/request_check.h"
#include "hogwild/transcript.h"
#include "model/config.h"

namespace hogwild::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace hogwild::eval;

struct EvalArgs {
  std::string model_dir, dataset, datasets_dir, out, method = "hogwild", layout = "combined";
  std::string budgets = "1024", compat = "none", format, python = "/usr/bin/python3";
  std::string sandbox = "auto", judge_url, judge_model, kv_policy;
  FieldMap fields;
  std::optional<int> workers;
  int samples = 1, concurrency = 1;
  int64_t limit = 0, collab_every = -1, max_context = 0, kv_budget = 0, kv_chunk = 0;
  double kv_redundancy = 0.0;
  bool lenient = false, no_prefix_cache = false;
  SamplingFlags sampling;
  DeviceFlags device;
};

struct ReportArgs {
  std::vector<std::string> dirs;
  std::string out;
};

std::vector<int64_t> parse_budget_list(const std::string& s) {
  if (s.empty()) fail("--budgets is empty; give e.g. 256,512,1024");
  const std::vector<int64_t> v = parse_step_list(s, "--budgets");
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] <= v[i - 1])
      fail("--budgets must increase: {} comes after {}; give e.g. 256,512,1024", v[i], v[i - 1]);
  return v;
}

std::string fnv_hex(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// One result line per budget point of a finished job.
std::vector<json> result_lines(const RunSpec& spec, const Problem& p, ProblemKind kind,
                               const Job& job, const Generation& g, const ScoreOptions& so) {
  std::vector<json> lines;
  const json gold = p.gold.size() == 1 ? json(p.gold[0]) : json(p.gold);
  for (const BudgetPoint& pt : g.points) {
    // A run that could not start has no answer: it is reported, never scored.
    const Score s = g.started ? score_answer(p, kind, pt.answer, so) : Score{};
    json j = {{"id", p.id},
              {"sample", job.sample},
              {"seed", job.seed},
              {"method", spec.method},
              {"workers", spec.workers},
              {"layout", layout_name(spec.layout)},
              {"budget", pt.budget},
              {"answer", pt.answer ? json(utf8_lossy(*pt.answer)) : json()},
              {"gold", kind == ProblemKind::code ? json() : gold},
              {"correct", g.started ? json(s.correct) : json()},
              {"parse_status", g.started ? parse_status_name(s.status) : "not_started"},
              {"tokens_per_worker", pt.tokens_per_worker},
              {"serial_steps", pt.serial_steps},
              {"answer_source", pt.source},
              {"stop_reason", stop_reason_name(g.stop_reason)},
              {"cut", pt.cut},
              {"wall_seconds", g.wall_seconds}};
    if (!g.started) {
      j["started"] = false;
      if (!g.error.empty()) j["error"] = g.error;
      lines.push_back(std::move(j));
      continue;
    }
    if (kind == ProblemKind::countdown) j["verdict"] = utf8_lossy(s.detail);
    if (kind == ProblemKind::code) {
      j["tests"] = s.tests;
      j["tests_passed"] = s.tests_passed;
      j["verdict"] = utf8_lossy(s.detail);
    }
    if (!g.error.empty()) j["error"] = g.error;
    lines.push_back(std::move(j));
  }
  return lines;
}

/// What the flags alone decide (method, workers, budgets, layout), checked before a model or a
/// dataset loads. Throws hogwild::Error on the first bad flag.
struct EvalPlan {
  int workers = 1;
  std::vector<int64_t> budgets;
  Layout layout = Layout::combined;
  bool vote = false, sot = false;  // self-consistency, Skeleton-of-Thought
};

EvalPlan check_eval_flags(const EvalArgs& a) {
  if (a.out.empty()) fail("--out DIR is required: the folder for results, transcripts and plots");
  if (a.method != "hogwild" && a.method != "single" && a.method != "self-consistency" &&
      a.method != "sot")
    fail("--method '{}' is unknown; use hogwild, single, self-consistency or sot", a.method);
  if (a.method == "single" && a.workers && *a.workers != 1)
    fail("--method single runs one worker; drop -w {} or use --method hogwild", *a.workers);
  EvalPlan plan;
  plan.workers = a.method == "single" ? 1 : a.workers.value_or(2);
  plan.budgets = parse_budget_list(a.budgets);
  if (a.samples < 1) fail("--samples must be >= 1");
  if (a.concurrency < 1) fail("--concurrency must be >= 1 sessions");
  if (a.limit < 0) fail("--limit must be >= 0 problems (0 = all)");
  if (a.compat != "none" && a.compat != "paper") fail("--compat '{}': use none or paper", a.compat);
  plan.vote = a.method == "self-consistency";
  plan.sot = a.method == "sot";
  const bool independent = plan.vote || plan.sot;
  // Self-consistency and Skeleton-of-Thought run on the independent layout (runner.h).
  plan.layout = parse_layout(a.layout);
  if (independent && a.layout != "combined" && plan.layout != Layout::independent)
    fail("--method {} runs on the independent layout; drop --layout {}", a.method, a.layout);
  if (!independent && plan.layout == Layout::independent)
    fail("--layout independent is --method self-consistency (workers that vote)");
  if (independent) plan.layout = Layout::independent;
  // The ranges of hogwild/request_check.h, before a model or dataset loads.
  if (independent) check_workers(plan.workers, plan.layout, plan.sot, Formatting{});
  check_snapshots(plan.budgets, 0);
  check_field(RequestField::collab_every, a.collab_every);
  check_max_context(a.max_context, 0);
  check_kv_budget(a.kv_budget, plan.layout, plan.sot);
  check_kv_chunk(a.kv_chunk, a.kv_budget);
  check_kv_redundancy(a.kv_redundancy, a.kv_budget,
                      check_kv_policy(a.kv_policy, a.kv_budget, a.kv_chunk));
  return plan;
}

/// The optional collaboration score (judge.h): nullptr without --judge-url / --judge-model.
/// Throws hogwild::Error when the method cannot be judged or the endpoint is missing.
std::unique_ptr<Judge> make_judge(const EvalArgs& a, int workers) {
  if (a.judge_url.empty() && a.judge_model.empty()) return nullptr;
  if (a.method != "hogwild" || workers < 2)
    fail(
        "--judge-url scores how hogwild workers work together; use it with --method hogwild and "
        "-w 2 or more");
  if (a.judge_url.empty()) fail("--judge-model needs --judge-url: the endpoint serving it");
  JudgeOptions jo;
  jo.url = a.judge_url;
  jo.model = a.judge_model;
  if (const char* key = std::getenv("HOGWILD_JUDGE_API_KEY")) jo.api_key = key;
  return std::make_unique<Judge>(jo);
}

/// The dataset of --dataset: a built-in name (`named`, read from the datasets folder) or a
/// JSONL path with --question-field and friends.
Dataset load_eval_dataset(const EvalArgs& a, uint64_t seed, bool named) {
  DatasetOptions dopt;
  dopt.name_or_path = a.dataset;
  dopt.fields = a.fields;
  dopt.seed = seed;
  if (named)
    dopt.datasets_dir = find_datasets_dir(
        a.datasets_dir, {fs::path(HOGWILD_SOURCE_DIR) / ".." / "shared" / "datasets",
                         fs::current_path() / ".." / "shared" / "datasets",
                         fs::current_path() / "shared" / "datasets"});
  return load_dataset(dopt);
}

/// What every run of the eval shares: formatting (code variant for code datasets) and sampling,
/// as `hogwild run` resolves them. Throws hogwild::Error when the workers do not fit the
/// formatting, the context is beyond the model's, or the formatting's answer kind is not the
/// dataset's.
RunSpec make_run_spec(const EvalArgs& a, const EvalPlan& plan, const Dataset& data, uint64_t seed) {
  std::unique_ptr<chat::ChatTemplate> tmpl;
  try {
    tmpl = std::make_unique<chat::ChatTemplate>(chat::ChatTemplate::load(a.model_dir));
  } catch (const Error&) {
  }
  const AnswerKind answer_kind =
      data.kind == ProblemKind::code ? AnswerKind::python : AnswerKind::boxed;
  RunSpec spec;
  spec.method = a.method;
  spec.workers = plan.workers;
  spec.layout = plan.layout;
  spec.budgets = plan.budgets;
  spec.compat_paper = a.compat == "paper";
  spec.dataset = data.name;
  spec.format_ref = !a.format.empty() ? a.format
                                      : model_formatting_ref(
                                            a.model_dir, tmpl ? tmpl->source() : "", answer_kind);
  spec.formatting = resolve_formatting(spec.format_ref);
  check_workers(plan.workers, plan.layout, plan.sot, spec.formatting);
  check_max_context(a.max_context, load_model_config(a.model_dir).max_position_embeddings);
  spec.kind = data.kind;
  if (spec.formatting.answer.kind != answer_kind)
    fail("--format '{}' answers with {} but dataset '{}' needs {}", spec.format_ref,
         answer_kind_name(spec.formatting.answer.kind), data.name, answer_kind_name(answer_kind));
  spec.sampling = sampling_params(a.sampling, load_generation_config(a.model_dir), seed);
  spec.collab_every = a.collab_every;
  spec.max_context = a.max_context;
  spec.kv_budget = a.kv_budget;
  spec.kv_chunk = a.kv_chunk;
  spec.kv_policy = a.kv_policy;
  spec.kv_redundancy = a.kv_redundancy;
  spec.prefix_cache = !a.no_prefix_cache;
  return spec;
}

/// A fingerprint of every problem of the dataset as loaded (id, text, gold parts, the countdown
/// numbers and target): a rerun into a result folder whose file has changed since is refused
/// rather than served the old results.
std::string problems_hash(const Dataset& data) {
  json all = json::array();
  for (const Problem& p : data.problems)
    all.push_back(
        {p.id, p.text, p.gold, p.gold_ordered, p.tolerance, p.unit, p.method, p.numbers, p.target});
  return fnv_hex(all.dump());
}

/// The result folder's config.json: everything that makes two evals comparable (a rerun into
/// the folder must match it, results.h).
json eval_config(const EvalArgs& a, const RunSpec& spec, const Dataset& data, uint64_t seed,
                 bool named, bool judged) {
  const SamplingParams& sp = spec.sampling;
  json config = {{"model", fs::absolute(a.model_dir).lexically_normal().string()},
                 {"model_config", fnv_hex(read_text(fs::path(a.model_dir) / "config.json"))},
                 {"dataset", data.name},
                 {"problems_hash", problems_hash(data)},
                 {"kind", kind_name(data.kind)},
                 {"method", a.method},
                 {"workers", spec.workers},
                 {"layout", layout_name(spec.layout)},
                 {"budgets", spec.budgets},
                 {"samples", a.samples},
                 {"seed", seed},
                 {"compat", a.compat},
                 {"formatting", spec.formatting.name},
                 {"formatting_hash", fnv_hex(spec.formatting.to_json().dump())},
                 {"sampling",
                  {{"do_sample", sp.do_sample},
                   {"temperature", sp.temperature},
                   {"top_k", sp.top_k},
                   {"top_p", sp.top_p},
                   {"min_p", sp.min_p},
                   {"repetition_penalty", sp.repetition_penalty}}},
                 {"collab_every", a.collab_every},
                 {"max_context", a.max_context},
                 {"kv_budget", a.kv_budget},
                 {"kv_chunk", a.kv_chunk},
                 {"kv_policy", a.kv_policy.empty() ? std::string("evict") : a.kv_policy},
                 {"lenient", a.lenient},
                 {"note", data.note}};
  // Only when on: a folder of results made before the term existed is the same configuration.
  if (a.kv_redundancy > 0) config["kv_redundancy"] = a.kv_redundancy;
  if (judged) config["judge"] = {{"url", a.judge_url}, {"model", a.judge_model}};
  if (!named)
    config["fields"] = {
        {"question", a.fields.question}, {"answer", a.fields.answer}, {"id", a.fields.id}};
  return config;
}

/// The judge's collaboration score of one finished run, added to its result lines and its
/// transcript (a run that failed is not judged: the lines say why).
void judge_run(Judge& judge, const Problem& p, const Job& job, int workers, Generation& g,
               std::vector<json>& lines) {
  JudgeScore js;
  if (g.error.empty())
    js = judge.score(p.text, g.run_text, workers);
  else
    js.error = "no run to judge (" + g.error + ")";
  if (!js.error.empty())
    std::fprintf(stderr, "\nwarning: %s (sample %d): %s\n", p.id.c_str(), job.sample,
                 utf8_lossy(js.error).c_str());
  for (json& j : lines) {
    j["collaboration_score"] = js.score ? json(*js.score) : json();
    if (!js.error.empty()) j["judge_error"] = utf8_lossy(js.error);
  }
  g.transcript["judge"] = {{"score", js.score ? json(*js.score) : json()},
                           {"reply", utf8_lossy(js.reply)},
                           {"error", utf8_lossy(js.error)}};
}

/// Loads the model and runs `jobs` on the engine, scoring each finished run and appending its
/// result lines and transcript to the store as it ends.
void run_pending_jobs(const EvalArgs& a, const RunSpec& spec, const Dataset& data,
                      const std::vector<Job>& jobs, ScoreOptions so, Judge* judge,
                      ResultStore& store) {
  std::unique_ptr<Sandbox> box;
  if (data.kind == ProblemKind::code) {
    box = std::make_unique<Sandbox>(SandboxLimits{}, a.python,
                                    a.sandbox == "rlimits" ? "no"
                                    : a.sandbox == "bwrap" ? "yes"
                                                           : "auto");
    if (std::string(box->isolation()) != "bubblewrap")
      std::fprintf(stderr,
                   "note: code runs with rlimits only (no bubblewrap): no network, but "
                   "world-writable folders are writable\n");
    so.sandbox = box.get();
  }
  ModelOptions mo;
  mo.model_dir = a.model_dir;
  mo.device = a.device.device;
  mo.kv_tokens = a.device.max_kv_tokens;
  std::unique_ptr<Model> model = Model::load(mo);
  Progress progress(jobs.size(), isatty(fileno(stderr)) != 0);
  run_jobs(
      *model, spec, data.problems, jobs, a.concurrency,
      [&](const Job& job, Generation&& g) {
        const Problem& p = data.problems[job.problem];
        if (!g.error.empty())
          std::fprintf(stderr, "\nwarning: %s (sample %d): %s\n", p.id.c_str(), job.sample,
                       g.error.c_str());
        std::vector<json> lines = result_lines(spec, p, data.kind, job, g, so);
        if (judge) judge_run(*judge, p, job, spec.workers, g, lines);
        store.append(p.id, job.sample, lines, g.transcript);
        progress.job_done(
            p.id, lines.back()["correct"].is_boolean() && lines.back()["correct"].get<bool>());
      },
      [&](int64_t t) { progress.tokens(t); });
  progress.finish();
}

/// Prints the summary table of `series` and writes the report files into `out`.
void print_report(const std::string& out, const std::vector<SeriesSummary>& series) {
  const std::string note = write_report(out, series);
  std::printf("%s", summary_markdown(series).c_str());
  if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
}

void run_eval(EvalArgs a) {
  std::error_code ec;
  const uint64_t seed = resolve_seed(a.sampling.seed);  // -1: a random one, recorded below
  // Arguments first: every check before a model or dataset loads.
  const EvalPlan plan = check_eval_flags(a);
  std::unique_ptr<Judge> judge = make_judge(a, plan.workers);
  if (a.model_dir.empty() || !fs::is_directory(a.model_dir, ec))
    fail("model directory '{}' does not exist; pass an HF model directory with -m", a.model_dir);
  // Sampling against the table, as run checks it: a value out of range would otherwise reach
  // every problem's request once the model has loaded, each written as a run that did not start.
  check_sampling(sampling_params(a.sampling, load_generation_config(a.model_dir), seed));

  const bool named =
      std::find(dataset_names().begin(), dataset_names().end(), a.dataset) != dataset_names().end();
  const Dataset data = load_eval_dataset(a, seed, named);
  size_t n = data.problems.size();
  if (a.limit > 0) n = std::min<size_t>(n, static_cast<size_t>(a.limit));
  const RunSpec spec = make_run_spec(a, plan, data, seed);
  ScoreOptions so;
  if (a.lenient) {
    so.math.rel_tolerance = 1e-4;
    so.math.percent_scaled = true;
  }
  so.math.digits_only = spec.compat_paper && data.name == "limo";

  const json config = eval_config(a, spec, data, seed, named, judge != nullptr);
  ResultStore store(a.out, config, plan.budgets.size());
  if (store.dropped() > 0)
    std::fprintf(stderr,
                 "note: %zu torn result lines of an interrupted run were dropped; those "
                 "problems run again\n",
                 store.dropped());
  std::vector<Job> jobs;
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < a.samples; ++k)
      if (!store.done(data.problems[i].id, k))
        jobs.push_back({i, k, seed + static_cast<uint64_t>(k) * 65536});
  if (jobs.size() < n * a.samples)
    std::fprintf(stderr, "eval: %zu of %zu runs already in %s; running the other %zu\n",
                 n * a.samples - jobs.size(), n * static_cast<size_t>(a.samples), a.out.c_str(),
                 jobs.size());
  if (!jobs.empty()) run_pending_jobs(a, spec, data, jobs, so, judge.get(), store);
  print_report(a.out, {summarize(config, store.lines(), a.out)});
  std::printf("\nresults: %s (results.jsonl, transcripts/, summary.md, accuracy.svg/png)\n",
              a.out.c_str());
}

void run_report(const ReportArgs& r) {
  if (r.dirs.empty()) fail("eval report: give one or more result folders");
  if (r.dirs.size() > 1 && r.out.empty())
    fail("eval report: several folders need --out DIR for the combined tables and plots");
  std::vector<SeriesSummary> series;
  for (const std::string& d : r.dirs) {
    const json config = read_config(d);  // first: a folder that is no eval's is named as such
    series.push_back(summarize(config, read_results(d), d));
  }
  const std::string out = r.out.empty() ? r.dirs[0] : r.out;
  print_report(out, series);
  std::printf("\nreport: %s (summary.md, summary.json, accuracy.svg/png)\n", out.c_str());
}

}  // namespace

void register_eval(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  auto r = std::make_shared<ReportArgs>();
  CLI::App* c = app.add_subcommand(
      "eval",
      "benchmark accuracy vs serial steps on a dataset (docs/EVAL.md); `eval report` "
      "makes tables and plots");
  c->add_option("-m,--model", a->model_dir, "Hugging Face model directory");
  c->add_option("--dataset", a->dataset,
                "gsm8k, gsm8k5, math500, aime2025, olympiadbench-math, olympiadbench-physics, "
                "livecodebench, limo, or a JSONL path");
  c->add_option("--datasets-dir", a->datasets_dir,
                "folder of the named datasets (default: $HOGWILD_DATASETS, ../shared/datasets)");
  c->add_option("--question-field", a->fields.question, "JSONL path: the problem's field");
  c->add_option("--answer-field", a->fields.answer, "JSONL path: the gold answer's field");
  c->add_option("--id-field", a->fields.id, "JSONL path: the id field (default: line number)");
  c->add_option("--method", a->method,
                "hogwild (default), single, self-consistency or sot (Skeleton-of-Thought)");
  c->add_option("-w,--workers", a->workers,
                "workers (hogwild: 1..8, default 2); self-consistency: samples voting; sot: the "
                "most outline points (default 2)");
  c->add_option("--layout", a->layout,
                "combined (default), interleaved, contiguous (self-consistency and sot: "
                "independent)");
  c->add_option("--budgets", a->budgets,
                "increasing serial-step budgets, one curve point each (default 1024)");
  c->add_option("--samples", a->samples, "seeds per problem (mean accuracy, CI, pass@k)");
  c->add_option("--limit", a->limit, "the first N problems only (0 = all)");
  c->add_option("--concurrency", a->concurrency, "sessions sharing each forward (default 1)");
  c->add_option("--out", a->out, "result folder (created; a rerun resumes it)");
  c->add_option("--compat", a->compat, "none (default) or paper: the reference protocol's quirks");
  c->add_option("--format", a->format, "formatting: built-in name or JSON file");
  c->add_option("--collab-every", a->collab_every, "tokens between collaboration checks (0 = off)");
  c->add_option("--max-context", a->max_context, "max tokens in a worker's view");
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
  add_prefix_cache_flag(c, a->no_prefix_cache);
  c->add_flag("--lenient", a->lenient,
              "also accept numbers within 1e-4 relative and p% as p/100 (default: exact)");
  c->add_option("--python", a->python, "python for code problems (default /usr/bin/python3)");
  c->add_option("--sandbox", a->sandbox, "code sandbox: auto (default), bwrap, rlimits")
      ->check(CLI::IsMember({"auto", "bwrap", "rlimits"}));
  c->add_option("--judge-url", a->judge_url,
                "collaboration score (1..6) by a judge model at this OpenAI-compatible endpoint "
                "(off by default; key: $HOGWILD_JUDGE_API_KEY)");
  c->add_option("--judge-model", a->judge_model, "the judge's model name (with --judge-url)");
  add_sampling_flags(c, a->sampling,
                     "base seed (gsm8k5 packing too); sample k uses seed + 65536 k, worker w + w");
  add_device_flags(c, a->device);

  CLI::App* rep =
      c->add_subcommand("report", "tables and plots from one or several result folders");
  rep->add_option("dirs", r->dirs, "result folders of hogwild eval --out");
  rep->add_option("--out", r->out, "folder for the combined report (default: the one folder)");
  rep->callback([r] { run_report(*r); });
  c->require_subcommand(0, 1);
  c->callback([a, rep] {
    if (rep->parsed()) return;
    run_eval(*a);
  });
}

}  // namespace hogwild::cli
