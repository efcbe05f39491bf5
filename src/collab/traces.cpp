// Scripted sessions and the trace files (traces.h).
#include "collab/traces.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "collab/bookkeeping_backend.h"
#include "collab/countdown_oracle.h"
#include "core/error.h"
#include "cpu/parallel.h"
#include "hogwild/answer.h"
#include "hogwild/prompt.h"

namespace hogwild::collab {

std::vector<int32_t> ByteCodec::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  for (unsigned char c : text) ids.push_back(c);
  return ids;
}

std::string ByteCodec::token_bytes(int32_t id) const {
  if (id == kEos) return "<|end|>";
  return id >= 0 && id < 256 ? std::string(1, static_cast<char>(id)) : std::string();
}

Trace run_trace(const TraceSpec& spec, const Formatting& fmt, const chat::ChatTemplate* tmpl,
                const TextCodec& codec) {
  Trace t;
  std::unique_ptr<StepPolicy> policy;
  if (spec.task == Task::countdown) {
    t.countdown = make_countdown(spec.split, spec.k, spec.pack_seed);
    policy = std::make_unique<CountdownOracle>(t.countdown, fmt, spec.n_workers, spec.layout);
  } else {
    t.pack = make_pack(spec.split, spec.k, spec.pack_seed);
    policy = std::make_unique<Oracle>(t.pack, fmt, spec.n_workers, spec.layout);
  }
  const std::string& text = spec.task == Task::countdown ? t.countdown.text : t.pack.text;
  const std::vector<int32_t> prompt = codec.encode(build_prompt(fmt, tmpl, text, spec.n_workers));
  BookkeepingBackend backend(codec.vocab_size(), spec.max_context);
  OraclePicker picker(*policy, codec, spec.n_workers, spec.layout, spec.picker);
  SessionOptions so;
  so.n_workers = spec.n_workers;
  so.layout = spec.layout;
  so.budget = spec.budget;
  so.collab_every = spec.collab_every;
  so.max_context = spec.max_context;
  Session session(backend, codec, fmt, so, picker);
  picker.attach(&session);
  session.set_observer(&picker);
  t.result = session.run(prompt);
  const bool answered = t.result.stop_reason == StopReason::answer && t.result.answer;
  t.correct = answered &&
              (spec.task == Task::countdown
                   ? check_countdown(*t.result.answer, t.countdown.numbers, t.countdown.target).ok
                   : *t.result.answer == std::to_string(t.pack.total));
  t.examples = std::move(picker.examples());
  t.stats = picker.stats();
  return t;
}

namespace {

template <typename T>
size_t draw(Rng& rng, const std::vector<T>& weights) {
  double total = 0;
  for (auto w : weights) total += static_cast<double>(w);
  double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53 * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    u -= static_cast<double>(weights[i]);
    if (u < 0) return i;
  }
  return weights.size() - 1;
}

TraceSpec draw_spec(const Mix& mix, uint64_t seed, Task task) {
  Rng rng(seed);
  TraceSpec s;
  s.task = task;
  s.split = Split::train;
  s.k = task == Task::countdown ? static_cast<int>(rng.uniform(mix.numbers_min, mix.numbers_max))
                                : static_cast<int>(rng.uniform(mix.k_min, mix.k_max));
  s.pack_seed = rng.next();
  s.n_workers = rng.chance(mix.single) ? 1 : static_cast<int>(draw(rng, mix.workers));
  const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
  s.layout = u < mix.interleaved                    ? Layout::interleaved
             : u < mix.interleaved + mix.contiguous ? Layout::contiguous
                                                    : Layout::combined;
  if (s.n_workers == 1) s.layout = Layout::combined;  // one worker: every layout is the same
  s.collab_every = mix.collab_every[rng.uniform(0, mix.collab_every.size() - 1)];
  s.picker.whole = s.n_workers == 1;
  s.picker.careless = mix.careless;
  if (s.n_workers > 1 && rng.chance(mix.collisions)) {
    s.picker.careless = mix.collision_careless;
    s.collab_every = mix.collision_every[rng.uniform(0, mix.collision_every.size() - 1)];
  }
  s.picker.keep_decision = mix.keep_decision;
  s.picker.keep_step_end = mix.keep_step_end;
  s.picker.keep_stop = mix.keep_stop;
  s.picker.keep_ledger = mix.keep_ledger;
  s.picker.keep_check_no = mix.keep_check_no;
  s.picker.seed = rng.next();
  return s;
}

struct Writer {
  std::FILE* tok = nullptr;
  std::FILE* msk = nullptr;
  std::FILE* idx = nullptr;
  std::FILE* txt = nullptr;
  int64_t offset = 0;
  ~Writer() {
    for (std::FILE* f : {tok, msk, idx, txt})
      if (f) std::fclose(f);
  }
};

std::FILE* open_out(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("cannot create '{}'; check that its directory exists and is writable", path);
  return f;
}

void write_all(std::FILE* f, const void* p, size_t bytes, const std::string& what) {
  if (bytes && std::fwrite(p, 1, bytes, f) != bytes) fail("writing {} failed (disk full?)", what);
}

/// Appends one example to a tokens-format shard: its ids as uint16 to .tok, its loss flags to
/// .msk, {offset, length} (int64, in tokens) to .idx. Throws hogwild::Error naming the file when
/// a write fails.
void write_token_example(Writer& w, const Example& e, const std::string& prefix) {
  std::vector<uint16_t> ids(e.tokens.begin(), e.tokens.end());
  write_all(w.tok, ids.data(), ids.size() * 2, prefix + " tokens");
  write_all(w.msk, e.loss.data(), e.loss.size(), prefix + " loss flags");
  const int64_t idx[2] = {w.offset, static_cast<int64_t>(ids.size())};
  write_all(w.idx, idx, sizeof idx, prefix + " index");
  w.offset += static_cast<int64_t>(ids.size());
}

/// Prints to stderr the first session `i` whose scripted run did not reach the pack's answer
/// (never expected: the oracle is exact), with its spec, stop reason, answer and history.
void report_wrong_session(int64_t i, const TraceSpec& spec, const Trace& tr) {
  if (spec.task == Task::countdown) {
    std::fprintf(stderr,
                 "wrong session %lld (countdown, %d numbers, %d workers, %s, pack seed %llu): "
                 "stop %s, answer %s, target %lld\n%s\n",
                 static_cast<long long>(i), spec.k, spec.n_workers, layout_name(spec.layout),
                 static_cast<unsigned long long>(spec.pack_seed),
                 std::string(stop_reason_name(tr.result.stop_reason)).c_str(),
                 tr.result.answer.value_or("-").c_str(),
                 static_cast<long long>(tr.countdown.target), tr.result.history_text.c_str());
    return;
  }
  std::fprintf(stderr,
               "wrong session %lld (k %d, %d workers, %s, check every %lld, pack seed %llu, "
               "careless %g, picker seed %llu): stop %s, answer %s, expected %lld\n%s\n",
               static_cast<long long>(i), spec.k, spec.n_workers, layout_name(spec.layout),
               static_cast<long long>(spec.collab_every),
               static_cast<unsigned long long>(spec.pack_seed), spec.picker.careless,
               static_cast<unsigned long long>(spec.picker.seed),
               std::string(stop_reason_name(tr.result.stop_reason)).c_str(),
               tr.result.answer.value_or("-").c_str(), static_cast<long long>(tr.pack.total),
               tr.result.history_text.c_str());
}

}  // namespace

void check_probability(const char* flag, double p) {
  if (!(p >= 0.0 && p <= 1.0)) fail("{} must be a probability in [0, 1], got {:g}", flag, p);
}

/// Checks the options of generate before any file is created: thread count, parts per pack,
/// session count, the mix probabilities, the output format and, for tokens, a vocabulary that
/// fits uint16 ids. Throws hogwild::Error naming the flag to fix.
static void check_generate_options(const GenerateOptions& opt, const TextCodec& codec) {
  if (opt.threads < 1 || opt.threads > cpu::kMaxThreads)
    fail("--threads must be 1..{} (one output shard each), got {}", cpu::kMaxThreads, opt.threads);
  if (opt.task == Task::countdown &&
      (opt.mix.numbers_min < 3 || opt.mix.numbers_max < opt.mix.numbers_min ||
       opt.mix.numbers_max > 6))
    fail("--numbers-min and --numbers-max must give 3..6 numbers per problem, got {}..{}",
         opt.mix.numbers_min, opt.mix.numbers_max);
  if (opt.task == Task::countdown && opt.split == Split::test_frames)
    fail("--split test-frames is a wording of packs; countdown has train and test");
  if (opt.mix.k_min < 2 || opt.mix.k_max < opt.mix.k_min || opt.mix.k_max > 9)
    fail("--k-max must be {}..9 parts per pack, got {}", std::max(opt.mix.k_min, 2), opt.mix.k_max);
  if (opt.sessions < 0) fail("--sessions must be >= 0 scripted sessions, got {}", opt.sessions);
  check_probability("--single", opt.mix.single);
  check_probability("--careless", opt.mix.careless);
  check_probability("--keep-decision", opt.mix.keep_decision);
  check_probability("--keep-stop", opt.mix.keep_stop);
  check_probability("--collisions", opt.mix.collisions);
  if (opt.format != "tokens" && opt.format != "text")
    fail("unknown output format '{}'; use tokens or text", opt.format);
  if (opt.format == "tokens" && codec.vocab_size() > 65536)
    fail("the vocabulary has {} ids; token files hold uint16 ids (at most 65536)",
         codec.vocab_size());
}

GenerateSummary generate(const GenerateOptions& opt, const Formatting& fmt,
                         const chat::ChatTemplate* tmpl, const TextCodec& codec) {
  check_generate_options(opt, codec);
  std::vector<Writer> writers(opt.format == "tokens" ? opt.threads : 1);
  if (opt.format == "tokens") {
    for (int t = 0; t < opt.threads; ++t) {
      const std::string base = fmt::format("{}.{}", opt.prefix, t);
      writers[t].tok = open_out(base + ".tok");
      writers[t].msk = open_out(base + ".msk");
      writers[t].idx = open_out(base + ".idx");
    }
  } else {
    writers[0].txt = open_out(opt.prefix + ".jsonl");
  }
  std::vector<GenerateSummary> sums(opt.threads);
  std::mutex text_mutex;
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&](int t) {
    try {
      GenerateSummary& sum = sums[t];
      for (int64_t i = t; i < opt.sessions; i += opt.threads) {
        TraceSpec spec =
            draw_spec(opt.mix, opt.seed * 1000003ull + static_cast<uint64_t>(i), opt.task);
        spec.max_context = opt.max_context;
        spec.split = opt.split;
        // The search may run long: --max-context bounds a countdown session, not the budget.
        if (opt.task == Task::countdown) spec.budget = 0;  // 0: until an answer
        Trace tr = run_trace(spec, fmt, tmpl, codec);
        sum.sessions += 1;
        if (!tr.correct && tr.result.stop_reason == StopReason::max_context) {
          sum.over_context += 1;  // a view outgrew --max-context: left out, not an error
          continue;
        }
        if (!tr.correct) {  // never expected: the oracle is exact; such runs are left out
          if (sum.wrong++ == 0) report_wrong_session(i, spec, tr);
          continue;
        }
        sum.stats += tr.stats;
        for (const Example& e : tr.examples) {
          sum.examples += 1;
          sum.tokens += static_cast<int64_t>(e.tokens.size());
          for (uint8_t l : e.loss) sum.loss_tokens += l != 0, sum.weighted_tokens += l == 2;
          if (opt.format == "tokens") {
            write_token_example(writers[t], e, opt.prefix);
          } else {
            const std::string line = nlohmann::json{{"text", codec.bytes(e.tokens)}}.dump(
                                         -1, ' ', false, nlohmann::json::error_handler_t::replace) +
                                     "\n";
            std::lock_guard<std::mutex> lock(text_mutex);
            write_all(writers[0].txt, line.data(), line.size(), opt.prefix + ".jsonl");
          }
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < opt.threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
  GenerateSummary total;
  for (const auto& s : sums) {
    total.sessions += s.sessions;
    total.wrong += s.wrong;
    total.over_context += s.over_context;
    total.examples += s.examples;
    total.tokens += s.tokens;
    total.loss_tokens += s.loss_tokens;
    total.weighted_tokens += s.weighted_tokens;
    total.stats += s.stats;
  }
  return total;
}

}  // namespace hogwild::collab
