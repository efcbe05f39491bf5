// `hogwild collab`: the data of the collaboration model (src/collab, tools/collab/README.md).
//
//   hogwild collab problems --split test --k 4 --count 500 --seed 1 [--out FILE] [--format text]
//       [--wording first]
//       held-out (or training) packs as JSONL: {"id", "split", "k", "seed", "problem", "answer",
//       "parts": [{"text", "result", "equations"}]}
//   hogwild collab traces -m DIR [--format FILE] [--bytes] --sessions N --seed S --threads T
//       --out PREFIX [--text] [--single P] [--keep-decision P] [--careless P]
//       scripted sessions (the oracle's workers in the engine's own layouts); writes the examples
//       (PREFIX.<t>.tok/.msk/.idx, or PREFIX.jsonl with --text); --bytes renders with the byte
//       stand-in codec (before a tokenizer exists)
//   hogwild collab show -m DIR [--format FILE] [--bytes] --k 3 -w 2 [--layout L] [--seed S]
//       one scripted session's text, the workers' steps in order, and its counts
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/hogwild/cli_util.h"
#include "apps/hogwild/commands.h"
#include "chat/chat_template.h"
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

struct ProblemsArgs {
  std::string split = "test", out, format = "jsonl", wording = "grammar";
  int k = 4;
  int64_t count = 100;
  uint64_t seed = 1;
};

void problems(const ProblemsArgs& a) {
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
  std::ostream& out = a.out.empty() ? std::cout : file;
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
      out << p.text << "\n";
    else
      out << j.dump() << "\n";
  }
}

struct TracesArgs {
  ModelArgs model;
  collab::GenerateOptions gen;
  std::string split = "train";
  bool text = false;
};

void traces(TracesArgs a) {
  const ModelText m = load_model_text(a.model);
  if (a.gen.prefix.empty()) fail("give the output prefix with --out");
  a.gen.format = a.text ? "text" : "tokens";
  a.gen.split = collab::parse_split(a.split);
  const collab::GenerateSummary s = collab::generate(a.gen, m.fmt, m.tmpl.get(), *m.codec);
  const auto& st = s.stats;
  auto ll = [](int64_t v) { return static_cast<long long>(v); };
  std::printf(
      "sessions %lld (wrong %lld, over the context %lld), examples %lld, tokens %lld, loss tokens "
      "%lld (%.1f%%), "
      "weighted %lld (%.1f%% of the loss tokens)\n"
      "claims %lld (careless %lld), switches %lld, checks %lld (yes %lld, on a collision %lld), "
      "ledgers %lld, stops %lld, partial sums %lld, totals %lld\n",
      ll(s.sessions), ll(s.wrong), ll(s.over_context), ll(s.examples), ll(s.tokens),
      ll(s.loss_tokens),
      s.tokens ? 100.0 * static_cast<double>(s.loss_tokens) / static_cast<double>(s.tokens) : 0.0,
      ll(s.weighted_tokens),
      s.loss_tokens
          ? 100.0 * static_cast<double>(s.weighted_tokens) / static_cast<double>(s.loss_tokens)
          : 0.0,
      ll(st.claims), ll(st.careless_claims), ll(st.switches), ll(st.checks), ll(st.check_yes),
      ll(st.collisions_yes), ll(st.ledgers), ll(st.stops), ll(st.nodes), ll(st.sums));
  if (s.wrong > 0)
    fail("{} scripted sessions did not end with the right total; this is a bug of the oracle",
         s.wrong);
}

struct ShowArgs {
  ModelArgs model;
  collab::TraceSpec spec;
  std::string layout = "combined", split = "train";
  double careless = 0;
};

void show(ShowArgs a) {
  const ModelText m = load_model_text(a.model);
  a.spec.layout = parse_layout(a.layout);
  if (a.spec.layout == Layout::independent)
    fail(
        "--layout independent: the oracle scripts workers that collaborate; use combined, "
        "interleaved or contiguous");
  a.spec.split = collab::parse_split(a.split);
  a.spec.picker.whole = a.spec.n_workers == 1;
  collab::check_probability("--careless", a.careless);
  a.spec.picker.careless = a.careless;
  const collab::Trace t = collab::run_trace(a.spec, m.fmt, m.tmpl.get(), *m.codec);
  std::printf("%s", t.result.history_text.c_str());
  for (size_t w = 0; w < t.result.unfinished.size(); ++w)
    std::printf("[unfinished, %s] %s\n", m.fmt.worker_name(static_cast<int>(w)).c_str(),
                t.result.unfinished[w].c_str());
  std::printf("\nstop: %s, answer %s (expected %lld), serial steps %lld, examples %zu\n",
              std::string(stop_reason_name(t.result.stop_reason)).c_str(),
              t.result.answer.value_or("-").c_str(), static_cast<long long>(t.pack.total),
              static_cast<long long>(t.result.serial_steps), t.examples.size());
}

}  // namespace

void register_collab(CLI::App& app) {
  CLI::App* c = app.add_subcommand(
      "collab", "data of the collaboration model: held-out problems, scripted traces");
  c->require_subcommand(1);

  auto pa = std::make_shared<ProblemsArgs>();
  CLI::App* p = c->add_subcommand("problems", "packs of word problems as JSONL");
  p->add_option("--split", pa->split,
                "train, test (held-out seeds) or test-frames (held-out seeds and sentence frames)");
  p->add_option("--k", pa->k, "parts per pack (1..9)");
  p->add_option("--count", pa->count, "number of packs");
  p->add_option("--seed", pa->seed, "base seed; pack i uses seed * 1000003 + i")
      ->check(in_range(RequestField::fixed_seed));
  p->add_option("--out", pa->out, "output file (default: stdout)");
  p->add_option("--format", pa->format, "jsonl (default) or text (the problem texts only)");
  p->add_option("--wording", pa->wording,
                "grammar (default: the sentence grammar) or first (the first model's six frames)");
  p->callback([pa] { problems(*pa); });

  auto ta = std::make_shared<TracesArgs>();
  CLI::App* t = c->add_subcommand("traces", "scripted sessions -> training examples");
  add_model_args(t, ta->model);
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
  s->add_option("--k", sa->spec.k, "parts");
  s->add_option("-w,--workers", sa->spec.n_workers, "workers");
  s->add_option("--layout", sa->layout, "combined, interleaved or contiguous");
  s->add_option("--seed", sa->spec.pack_seed, "pack seed (any 64-bit value)");
  s->add_option("--split", sa->split, "train, test or test-frames");
  s->add_option("--collab-every", sa->spec.collab_every, "tokens between checks (-1: formatting)");
  s->add_option("--careless", sa->careless, "probability of a careless claim");
  s->add_option("--picker-seed", sa->spec.picker.seed, "seed of the careless claims");
  s->add_option("--max-context", sa->spec.max_context, "most tokens in a view");
  s->callback([sa] { show(*sa); });
}

}  // namespace hogwild::cli
