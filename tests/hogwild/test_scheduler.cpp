// Scheduler behaviour of Session: plain-generation equivalence (1 worker, formatting "plain"),
// the finisher against plain greedy generation, KV history == text history, stopping rules,
// forbidden tokens, collaboration checks, snapshots that leave the run untouched, limits.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "hogwild/answer.h"
#include "hogwild/picker.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

// Records everything a session reports.
struct Recorder : SessionObserver {
  std::vector<TokenEvent> tokens;
  std::vector<std::vector<float>> logits;  // every forward's logits, flattened
  std::map<std::pair<int, int>, std::string> step_text;
  std::vector<std::pair<int, int>> promoted;  // finishing order
  std::vector<std::tuple<int, int, std::string, bool>> starts;
  std::function<void(const ForwardRecord&)> hook;
  void on_forward(const ForwardRecord& r) override {
    logits.push_back(*r.logits);
    promoted.insert(promoted.end(), r.closed.begin(), r.closed.end());
    if (hook) hook(r);
  }
  void on_token(const TokenEvent& e) override { tokens.push_back(e); }
  void on_step_start(int w, int k, const std::string& b, bool c) override {
    starts.emplace_back(w, k, b, c);
  }
  void on_step_end(int w, int k, const std::string& text,
                   const std::optional<std::string>&) override {
    step_text[{w, k}] = text;
  }
  std::vector<int32_t> ids(int w) const {
    std::vector<int32_t> v;
    for (auto& t : tokens)
      if (t.worker == w) v.push_back(t.token);
    return v;
  }
};

const test::TinySpec& qwen3_spec() {
  static test::TinySpec s = session_specs()[2];  // qwen3_qknorm_tied
  return s;
}

std::vector<int32_t> toy_prompt() { return ByteCodec().encode("Q: what is 6 times 7?\n"); }

// With one worker and a formatting that inserts nothing, a seeded hogwild run samples exactly
// the tokens of plain generation on the same prompt (docs/ARCHITECTURE.md §2): here the dense
// reference's, drawn by a Sampler of the same seed.
TEST(Scheduler, OneWorkerPlainEqualsPlainGeneration) {
  for (bool greedy : {false, true}) {
    SamplingParams sp;
    sp.do_sample = !greedy;
    sp.temperature = 0.8f;
    sp.top_k = 40;
    sp.top_p = 0.95f;
    sp.seed = 1234;
    const int64_t budget = 60;
    cpu::CpuBackend be(session_model(qwen3_spec()));
    ByteCodec codec;
    Formatting f = builtin_formatting("plain");
    SessionOptions opt;
    opt.n_workers = 1;
    opt.budget = budget;
    SamplerPicker picker(sp, 1, toy_prompt());
    Session s(be, codec, f, opt, picker);
    Recorder rec;
    s.set_observer(&rec);
    SessionResult res = s.run(toy_prompt());
    std::vector<int32_t> got = rec.ids(0);

    Sampler sampler(sp);
    const std::vector<int32_t> want = reference_generation(
        session_model(qwen3_spec()), toy_prompt(), sampler, static_cast<int64_t>(got.size()));
    EXPECT_EQ(got, want) << (greedy ? "greedy" : "sampled");
    EXPECT_EQ(got.size(), res.stop_reason == StopReason::budget ? size_t(budget + 1) : got.size());
  }
}

// The finisher continues the linearised text greedily: with one worker and "plain" that is plain
// greedy generation of prompt + fed tokens + finisher suffix.
TEST(Scheduler, FinisherEqualsGreedyContinuation) {
  cpu::CpuBackend be(session_model(qwen3_spec()));
  ByteCodec codec;
  Formatting f = builtin_formatting("plain");
  f.finisher.max_tokens = 12;
  SessionOptions opt;
  opt.n_workers = 1;
  opt.budget = 9;
  ScriptPicker picker({{'a', 'b', kThe, 'c'}});
  Session s(be, codec, f, opt, picker);
  Recorder rec;
  s.set_observer(&rec);
  SessionResult res = s.run(toy_prompt());
  ASSERT_TRUE(res.finisher.has_value());
  std::vector<int32_t> seq = toy_prompt();
  std::vector<int32_t> fed = rec.ids(0);
  fed.pop_back();  // the last sampled token was never fed
  seq.insert(seq.end(), fed.begin(), fed.end());
  for (int32_t t : codec.encode(f.finisher.suffix)) seq.push_back(t);
  Sampler sampler(SamplingParams{});
  std::string want_text;
  for (int32_t t :
       reference_generation(session_model(qwen3_spec()), seq, sampler, f.finisher.max_tokens)) {
    if (t == kEos) break;
    want_text += codec.token_bytes(t);
    if (finisher_done(want_text, AnswerKind::boxed)) break;
  }
  EXPECT_EQ(res.finisher->continuation, want_text);
  EXPECT_EQ(res.finisher->answer, finish_answer(want_text, AnswerKind::boxed));
  EXPECT_EQ(res.answer, res.finisher->answer);
  EXPECT_EQ(res.stop_reason, StopReason::budget);
}

// The finisher stops at the context limit: its view never holds more than max_context tokens,
// and what it wrote is the greedy continuation cut there (the run without a limit, first). An
// interrupt during the finisher ends the run at once, with no answer.
TEST(Scheduler, FinisherStopsAtTheContextLimitAndOnInterrupt) {
  ByteCodec codec;
  Formatting f = builtin_formatting("plain");
  f.finisher.max_tokens = 40;
  struct Watch : Recorder {
    const Backend* be = nullptr;
    int64_t longest = 0, forwards = 0;
    std::function<void()> on_finisher;
    void on_finisher_forward(const ForwardRecord& r) override {
      ++forwards;
      for (const auto& v : r.views) {
        int64_t len = 0;
        for (BlockId b : v) len += be->block_len(b);
        longest = std::max(longest, len);
      }
      if (on_finisher) on_finisher();
    }
  };
  auto run = [&](int64_t max_context, std::atomic<bool>* stop, Watch& w) {
    cpu::CpuBackend be(session_model(qwen3_spec()));
    SessionOptions opt;
    opt.n_workers = 1;
    opt.budget = 9;
    opt.max_context = max_context;
    opt.interrupt = stop;
    ScriptPicker picker({{'a', 'b', kThe, 'c'}});
    Session s(be, codec, f, opt, picker);
    w.be = &be;
    s.set_observer(&w);
    return s.run(toy_prompt());
  };
  Watch free_run;
  const SessionResult full = run(0, nullptr, free_run);
  ASSERT_TRUE(full.finisher.has_value());
  // The finisher's first view: prompt, fed tokens and suffix; it then feeds all but its last token.
  const int64_t first_view = free_run.longest - (full.finisher->continuation.size() - 1);
  const int64_t limit = first_view + 3;
  Watch capped;
  const SessionResult cut = run(limit, nullptr, capped);
  ASSERT_TRUE(cut.finisher.has_value());
  EXPECT_LE(capped.longest, limit);
  // 4 tokens: views of first_view .. first_view + 3 tokens
  EXPECT_EQ(cut.finisher->continuation,
            full.finisher->continuation.substr(
                0, std::min<size_t>(4, full.finisher->continuation.size())));
  EXPECT_EQ(cut.stop_reason, StopReason::budget);

  std::atomic<bool> stop{false};
  Watch interrupted;
  interrupted.on_finisher = [&] { stop = interrupted.forwards == 2; };
  const SessionResult r = run(0, &stop, interrupted);
  EXPECT_EQ(r.stop_reason, StopReason::interrupted);
  EXPECT_EQ(interrupted.forwards, 2) << "no finisher forward after the interrupt";
  EXPECT_FALSE(r.answer.has_value());
}

// The KV history reads exactly like the text history: prompt, then every promoted step (prefix,
// text, separator) in finishing order.
TEST(Scheduler, HistoryBlockReadsLikeTextHistory) {
  for (Layout layout : {Layout::combined, Layout::interleaved}) {
    cpu::CpuBackend be(session_model(qwen3_spec()));
    ByteCodec codec;
    Formatting f = test_formatting(5);
    SessionOptions opt;
    opt.n_workers = 3;
    opt.layout = layout;
    opt.budget = 40;
    ScriptPicker picker({worker_script(0), worker_script(1), worker_script(2)});
    Session s(be, codec, f, opt, picker);
    Recorder rec;
    s.set_observer(&rec);
    SessionResult res = s.run(toy_prompt());
    std::string want = codec.bytes(toy_prompt());
    ASSERT_GT(rec.promoted.size(), 4u);
    for (auto& key : rec.promoted) {
      const std::string& t = rec.step_text.at(key);
      EXPECT_TRUE(t.ends_with("\n\n")) << t;  // each step carries its separator
      want += t;
    }
    EXPECT_EQ(res.history_text, want);
    // Finishing order is the order steps ended, ties by worker index.
    std::vector<std::pair<int, int>> ended;
    for (auto& [w, k, bytes, c] : rec.starts)
      if (k > 1) ended.emplace_back(w, k - 1);
    ended.resize(rec.promoted.size());
    EXPECT_EQ(rec.promoted, ended);
  }
}

TEST(Scheduler, StepWithAnswerStopsAllWorkers) {
  cpu::CpuBackend be(session_model(qwen3_spec()));
  ByteCodec codec;
  Formatting f = test_formatting(0);
  std::vector<int32_t> answer = codec.encode("So x is \\boxed{\\frac{1}{2}}");
  answer.push_back(kDotSep);
  std::vector<int32_t> w1 = {'o', 'k', kDotSep};
  w1.insert(w1.end(), answer.begin(), answer.end());
  ScriptPicker picker({worker_script(0, 40), w1});
  SessionOptions opt;
  opt.n_workers = 2;
  opt.budget = 200;
  Session s(be, codec, f, opt, picker);
  SessionResult res = s.run(toy_prompt());
  EXPECT_EQ(res.stop_reason, StopReason::answer);
  ASSERT_TRUE(res.answer.has_value());
  EXPECT_EQ(*res.answer, "\\frac{1}{2}");
  EXPECT_EQ(res.answer_worker, 1);
  EXPECT_FALSE(res.finisher.has_value());
  // The answering step was sampled in serial step (3 + answer tokens - 1): the first token comes
  // from the forward that fed the step prefix.
  EXPECT_EQ(res.serial_steps, static_cast<int64_t>(w1.size()));
  // The backend's forwards are part of the decode time.
  EXPECT_GT(res.decode_forward_seconds, 0.0);
  EXPECT_LE(res.decode_forward_seconds, res.decode_seconds);
}

// A picker that checks the mask: EOS and forbidden texts have -inf logits.
struct MaskCheck : TokenPicker {
  ScriptPicker inner;
  std::vector<int32_t> must_be_masked;
  int checked = 0;
  explicit MaskCheck(std::vector<std::vector<int32_t>> s) : inner(std::move(s)) {}
  int32_t pick(int w, std::vector<float>& l) override {
    for (int32_t t : must_be_masked) EXPECT_TRUE(std::isinf(l[t]) && l[t] < 0) << t;
    EXPECT_TRUE(std::isfinite(l['a']));
    ++checked;
    return inner.pick(w, l);
  }
};

TEST(Scheduler, ForbiddenTokensAreMasked) {
  cpu::CpuBackend be(session_model(qwen3_spec()));
  ByteCodec codec;
  Formatting f = test_formatting();
  f.forbidden.texts = {"#", "<t270>"};
  MaskCheck picker({worker_script(0), worker_script(1)});
  picker.must_be_masked = {kEos, '#', 270};
  SessionOptions opt;
  opt.n_workers = 2;
  opt.budget = 10;
  Session s(be, codec, f, opt, picker);
  s.run(toy_prompt());
  EXPECT_EQ(picker.checked, 20);  // 2 workers x 10 serial steps (the first feeds the prefixes)
  EXPECT_EQ(s.forbidden()[kEos], 1);
  EXPECT_EQ(s.forbidden()['#'], 1);
  EXPECT_EQ(s.forbidden()['a'], 0);
}

TEST(Scheduler, AllowedEosStopsOnlyThatWorker) {
  cpu::CpuBackend be(session_model(qwen3_spec()));
  ByteCodec codec;
  Formatting f = test_formatting(0);
  f.forbidden.eos = false;
  ScriptPicker picker({{'a', 'b', kEos}, worker_script(1)});
  SessionOptions opt;
  opt.n_workers = 2;
  opt.budget = 20;
  Session s(be, codec, f, opt, picker);
  Recorder rec;
  s.set_observer(&rec);
  SessionResult res = s.run(toy_prompt());
  EXPECT_EQ(res.tokens_per_worker[0], 3);
  EXPECT_EQ(res.tokens_per_worker[1], 20);
  EXPECT_EQ(res.serial_steps, 20);
  EXPECT_EQ(res.stop_reason, StopReason::budget);
  EXPECT_TRUE(rec.tokens[4].eos || rec.tokens[5].eos);
}

TEST(Scheduler, CollaborationCheckOpensTheNextStep) {
  cpu::CpuBackend be(session_model(qwen3_spec()));
  ByteCodec codec;
  Formatting f = test_formatting(6);
  ScriptPicker picker({worker_script(0), worker_script(1)});
  SessionOptions opt;
  opt.n_workers = 2;
  opt.budget = 40;
  Session s(be, codec, f, opt, picker);
  Recorder rec;
  s.set_observer(&rec);
  SessionResult res = s.run(toy_prompt());
  int checks = 0;
  for (auto& [w, k, bytes, c] : rec.starts) {
    EXPECT_EQ(bytes, f.step_start(w, k, c));
    checks += c;
  }
  const int64_t total = res.tokens_per_worker[0] + res.tokens_per_worker[1];
  EXPECT_GE(checks, 1);
  EXPECT_LE(checks, total / 6);
  EXPECT_EQ(std::get<2>(rec.starts[0]), "**Alice [1]:** ");
}

// Snapshots run the finisher on a temporary block: the run's logits are bit-identical with and
// without them.
TEST(Scheduler, SnapshotsDoNotDisturbTheRun) {
  std::vector<std::vector<float>> logits[2];
  SessionResult res[2];
  for (int i = 0; i < 2; ++i) {
    cpu::CpuBackend be(session_model(qwen3_spec()));
    ByteCodec codec;
    Formatting f = test_formatting();
    ScriptPicker picker({worker_script(0), worker_script(1), worker_script(2)});
    SessionOptions opt;
    opt.n_workers = 3;
    opt.budget = 25;
    if (i == 1) opt.snapshots = {20, 5, 10, 400};
    Session s(be, codec, f, opt, picker);
    Recorder rec;
    s.set_observer(&rec);
    res[i] = s.run(toy_prompt());
    logits[i] = rec.logits;
  }
  EXPECT_EQ(logits[0], logits[1]);
  ASSERT_EQ(res[1].snapshots.size(), 4u);
  EXPECT_EQ(res[1].snapshots[0].serial_step, 5);
  EXPECT_EQ(res[1].snapshots[2].serial_step, 20);
  EXPECT_TRUE(res[1].snapshots[2].reached);
  EXPECT_FALSE(res[1].snapshots[3].reached);
  EXPECT_EQ(res[1].snapshots[3].answer, res[1].answer);
  EXPECT_EQ(res[0].finisher->continuation, res[1].finisher->continuation);
}

TEST(Scheduler, LimitsAndInterrupt) {
  ByteCodec codec;
  Formatting f = test_formatting();
  {
    cpu::CpuBackend be(session_model(qwen3_spec()));
    ScriptPicker picker({worker_script(0), worker_script(1)});
    SessionOptions opt;
    opt.max_context = 120;
    Session s(be, codec, f, opt, picker);
    SessionResult r = s.run(toy_prompt());
    EXPECT_EQ(r.stop_reason, StopReason::max_context);
    EXPECT_GT(r.serial_steps, 0);
  }
  {
    cpu::CpuBackend be(session_model(qwen3_spec()));
    ScriptPicker picker({worker_script(0), worker_script(1)});
    std::atomic<bool> stop{false};
    SessionOptions opt;
    opt.interrupt = &stop;
    Session s(be, codec, f, opt, picker);
    Recorder rec;
    rec.hook = [&](const ForwardRecord& r) { stop = r.serial_step == 3; };
    s.set_observer(&rec);
    SessionResult r = s.run(toy_prompt());
    EXPECT_EQ(r.stop_reason, StopReason::interrupted);
    EXPECT_EQ(r.serial_steps, 3);
    EXPECT_FALSE(r.finisher.has_value());
  }
  {
    cpu::CpuBackend be(session_model(qwen3_spec()));
    ScriptPicker picker({worker_script(0)});
    SessionOptions opt;
    opt.n_workers = 9;
    EXPECT_THROW(Session bad(be, codec, f, opt, picker), Error);
    opt.n_workers = 2;
    opt.budget = -1;
    EXPECT_THROW(Session bad(be, codec, f, opt, picker), Error);
    opt.budget = 0;
    opt.max_context = 10;
    Session s(be, codec, f, opt, picker);
    EXPECT_THROW(s.run(toy_prompt()), Error);  // prompt longer than the context
  }
}

}  // namespace
}  // namespace hogwild::testing
