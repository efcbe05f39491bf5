// The independent layout (session.h, "Independent layout"): worker w of an n-worker session draws
// exactly what a one-worker session with seed + w draws (tokens, stop, finishers, snapshots), so
// self-consistency shares the prompt's KV without changing its samples; per-worker stopping on an
// answer, EOS and the budget; the vote; more workers than the formatting names; the KV bound.
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "hogwild/batch.h"
#include "hogwild/picker.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

struct Record : SessionObserver {
  std::vector<TokenEvent> tokens;
  std::vector<ForwardRecord> forwards;  // logits pointers dropped
  std::vector<std::tuple<int, int, std::string, bool>> starts;
  void on_forward(const ForwardRecord& r) override {
    forwards.push_back(r);
    forwards.back().logits = nullptr;
  }
  void on_token(const TokenEvent& e) override { tokens.push_back(e); }
  void on_step_start(int w, int k, const std::string& b, bool c) override {
    starts.emplace_back(w, k, b, c);
  }
  std::vector<int32_t> ids(int w) const {
    std::vector<int32_t> v;
    for (auto& t : tokens)
      if (t.worker == w) v.push_back(t.token);
    return v;
  }
  std::vector<int32_t> fed(int w) const {
    std::vector<int32_t> v;
    for (auto& r : forwards)
      for (auto& t : r.tokens)
        if (t.worker == w && t.role == FeedRole::generated) v.push_back(t.token);
    return v;
  }
};

const test::TinySpec& qwen3_spec() {
  static test::TinySpec s = session_specs()[2];  // qwen3_qknorm_tied
  return s;
}

std::vector<int32_t> toy_prompt() { return ByteCodec().encode("Q: what is 6 times 7?\n"); }

std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> v;
  for (auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}

const FinisherResult* snapshot(const SessionResult& r, int64_t step, int w) {
  for (auto& s : r.snapshots)
    if (s.serial_step == step && s.worker == w) return &s;
  return nullptr;
}

// Seeded sampling to the budget and to the context limit, and scripted workers whose steps end
// (collaboration checks every 7 of a worker's own tokens); snapshots and the final finisher.
TEST(Independent, WorkersEqualOneWorkerSessions) {
  enum Mode { sampled, context, scripted };
  for (Mode mode : {sampled, context, scripted}) {
    const int64_t max_context = mode == context ? 46 : 0;
    const int n = 3;
    SamplingParams sp;
    sp.do_sample = true;
    sp.temperature = 0.9f;
    sp.top_k = 0;
    sp.seed = 77;
    ByteCodec codec;
    Formatting f = test_formatting(7);
    SessionOptions opt;
    opt.n_workers = n;
    opt.layout = Layout::independent;
    opt.budget = 30;
    opt.snapshots = {8, 20};
    opt.max_context = max_context;
    cpu::CpuBackend be(session_model(qwen3_spec()));
    SamplerPicker sampler(sp, n, toy_prompt());
    ScriptPicker script({worker_script(0), worker_script(1), worker_script(2)});
    TokenPicker& picker = mode == scripted ? static_cast<TokenPicker&>(script) : sampler;
    Session s(be, codec, f, opt, picker);
    Record rec;
    s.set_observer(&rec);
    const SessionResult res = s.run(toy_prompt());
    ASSERT_EQ(res.workers.size(), size_t(n));
    EXPECT_EQ(res.stop_reason, mode == context ? StopReason::max_context : StopReason::budget);
    for (int w = 0; w < n; ++w) {
      SamplingParams one = sp;
      one.seed = sp.seed + w;
      SessionOptions o1 = opt;
      o1.n_workers = 1;
      o1.layout = Layout::combined;
      cpu::CpuBackend be1(session_model(qwen3_spec()));
      SamplerPicker sampler1(one, 1, toy_prompt());
      ScriptPicker script1({worker_script(w)});
      TokenPicker& p1 = mode == scripted ? static_cast<TokenPicker&>(script1) : sampler1;
      Session s1(be1, codec, f, o1, p1);
      Record r1;
      s1.set_observer(&r1);
      const SessionResult want = s1.run(toy_prompt());
      EXPECT_EQ(rec.ids(w), r1.ids(0)) << "worker " << w;
      EXPECT_EQ(rec.fed(w), r1.fed(0)) << "worker " << w;
      const WorkerResult& got = res.workers[w];
      EXPECT_EQ(got.stop_reason, want.stop_reason);
      EXPECT_EQ(got.serial_steps, want.serial_steps);
      ASSERT_TRUE(got.finisher && want.finisher);
      EXPECT_EQ(got.finisher->continuation, want.finisher->continuation);
      EXPECT_EQ(got.answer, want.answer);
      for (const FinisherResult& ws : want.snapshots) {
        const FinisherResult* gs = snapshot(res, ws.serial_step, w);
        ASSERT_NE(gs, nullptr) << ws.serial_step;
        EXPECT_EQ(gs->reached, ws.reached);
        EXPECT_EQ(gs->answer, ws.answer);
        if (ws.reached) {
          EXPECT_EQ(gs->continuation, ws.continuation);
        }
      }
      // The same text: the one-worker session promotes its steps, here they stay in one block.
      EXPECT_EQ(res.history_text + res.unfinished[w], want.history_text + want.unfinished[0]);
      std::vector<std::tuple<int, int, std::string, bool>> starts;
      int checks = 0;
      for (auto& [sw, k, bytes, c] : rec.starts)
        if (sw == w) starts.emplace_back(0, k, bytes, c), checks += c;
      EXPECT_EQ(starts, r1.starts) << "worker " << w;
      if (mode == scripted) {
        EXPECT_GE(checks, 2) << "worker " << w;
      }
    }
    // Nothing is promoted: the history is the prompt; each view is [history][own output].
    EXPECT_EQ(res.history_text, codec.bytes(toy_prompt()));
    for (auto& r : rec.forwards) {
      EXPECT_TRUE(r.closed.empty());
      if (r.serial_step == 0) continue;
      for (int w = 0; w < n; ++w) ASSERT_EQ(r.views[w].size(), 2u);
      EXPECT_NE(r.views[0][1], r.views[1][1]);
    }
  }
}

// Worker 0 answers at its 16th token, worker 1 emits EOS (allowed here), worker 2 writes to the
// budget, worker 3 answers at its 18th token: each stops on its own, the others go on.
TEST(Independent, EachWorkerStopsOnItsOwn) {
  ByteCodec codec;
  Formatting f = test_formatting(0);
  f.forbidden.eos = false;
  const auto boxed = codec.encode("\\boxed{7}");
  const std::vector<int32_t> s0 = cat({{'o', 'k', kDotSep}, codec.encode("So "), boxed, {kDotSep}});
  const std::vector<int32_t> s3 =
      cat({{'h', 'm', kDotSep, 'a', 'b', 'c', 'd', kDotSep}, boxed, {kDotSep}});
  ASSERT_EQ(s0.size(), 16u);
  ASSERT_EQ(s3.size(), 18u);
  ScriptPicker picker({s0, {'x', 'y', kEos}, worker_script(2, 40), s3});
  SessionOptions opt;
  opt.n_workers = 4;
  opt.layout = Layout::independent;
  opt.budget = 40;
  opt.snapshots = {5, 30};
  cpu::CpuBackend be(session_model(qwen3_spec()));
  Session s(be, codec, f, opt, picker);
  Record rec;
  s.set_observer(&rec);
  const SessionResult res = s.run(toy_prompt());
  const auto& w = res.workers;
  EXPECT_EQ(w[0].stop_reason, StopReason::answer);
  EXPECT_EQ(w[0].answer, "7");
  EXPECT_EQ(w[0].serial_steps, 16);
  EXPECT_FALSE(w[0].finisher.has_value());
  EXPECT_EQ(w[1].stop_reason, StopReason::eos);
  EXPECT_EQ(w[1].serial_steps, 3);
  ASSERT_TRUE(w[1].finisher.has_value());
  EXPECT_EQ(w[2].stop_reason, StopReason::budget);
  EXPECT_EQ(w[2].serial_steps, 40);
  ASSERT_TRUE(w[2].finisher.has_value());
  EXPECT_EQ(w[3].stop_reason, StopReason::answer);
  EXPECT_EQ(w[3].serial_steps, 18);
  EXPECT_EQ(res.tokens_per_worker, (std::vector<int64_t>{16, 3, 40, 18}));
  EXPECT_EQ(res.serial_steps, 40);
  EXPECT_EQ(res.stop_reason, StopReason::mixed);
  EXPECT_EQ(res.answer, "7");  // two votes, seen first
  EXPECT_EQ(res.answer_worker, 0);
  // A stopped worker feeds nothing more; its answering (or EOS) token is never fed.
  EXPECT_EQ(rec.fed(0), std::vector<int32_t>(s0.begin(), s0.end() - 1));
  EXPECT_EQ(rec.fed(1), (std::vector<int32_t>{'x', 'y'}));
  // Snapshots: at 5 every worker runs its finisher (none has an answer; worker 1 stopped); at 30
  // only the two without one. Worker 1's text did not change after its EOS: the same continuation.
  for (int k = 0; k < 4; ++k) EXPECT_NE(snapshot(res, 5, k), nullptr) << k;
  EXPECT_EQ(snapshot(res, 30, 0), nullptr);
  EXPECT_EQ(snapshot(res, 30, 3), nullptr);
  ASSERT_NE(snapshot(res, 30, 1), nullptr);
  EXPECT_EQ(snapshot(res, 30, 1)->continuation, w[1].finisher->continuation);
  EXPECT_EQ(res.snapshots.size(), 6u);
}

// Every worker answers before the budget: the run ends at the last answer, no finisher runs, and
// the budgets past the end carry each worker's answer.
TEST(Independent, RunEndsWhenEveryWorkerAnswered) {
  ByteCodec codec;
  Formatting f = test_formatting(0);
  const auto boxed = [&](const char* x) { return codec.encode(std::string("\\boxed{") + x + "}"); };
  ScriptPicker picker({cat({{'a', kDotSep}, boxed("3"), {kDotSep}}),
                       cat({{'b', 'c', 'd', kDotSep}, boxed("4"), {kDotSep}}),
                       cat({boxed("4"), {kDotSep}})});
  SessionOptions opt;
  opt.n_workers = 3;
  opt.layout = Layout::independent;
  opt.budget = 100;
  opt.snapshots = {6, 50};
  cpu::CpuBackend be(session_model(qwen3_spec()));
  Session s(be, codec, f, opt, picker);
  const SessionResult res = s.run(toy_prompt());
  EXPECT_EQ(res.stop_reason, StopReason::answer);
  EXPECT_EQ(res.serial_steps, 14);  // worker 1: 4 + 9 + 1 tokens
  EXPECT_EQ(res.answer, "4");       // 3 once, 4 twice
  EXPECT_EQ(res.answer_worker, 1);
  for (const WorkerResult& w : res.workers) EXPECT_FALSE(w.finisher.has_value());
  // At 6 no worker had an answer yet (they answer at 12, 14 and 10): three finishers.
  for (int k = 0; k < 3; ++k) ASSERT_NE(snapshot(res, 6, k), nullptr) << k;
  for (int k = 0; k < 3; ++k) {
    const FinisherResult* p = snapshot(res, 50, k);
    ASSERT_NE(p, nullptr);
    EXPECT_FALSE(p->reached);
    EXPECT_EQ(p->answer, res.workers[k].answer);
  }
}

TEST(Independent, MoreWorkersThanNamesWriteUnderTheFirstName) {
  ByteCodec codec;
  Formatting f = test_formatting(0);
  std::vector<std::vector<int32_t>> scripts;
  for (int k = 0; k < 12; ++k) scripts.push_back(worker_script(k));
  ScriptPicker picker(scripts);
  SessionOptions opt;
  opt.n_workers = 12;
  opt.layout = Layout::independent;
  opt.budget = 4;
  cpu::CpuBackend be(session_model(qwen3_spec()));
  Session s(be, codec, f, opt, picker);
  Record rec;
  s.set_observer(&rec);
  const SessionResult res = s.run(toy_prompt());
  EXPECT_EQ(res.tokens_per_worker, std::vector<int64_t>(12, 4));
  int first = 0;
  for (auto& [w, k, bytes, c] : rec.starts) {
    EXPECT_EQ(bytes, "**Alice [" + std::to_string(k) + "]:** ");
    first += k == 1;
  }
  EXPECT_EQ(first, 12);
  opt.n_workers = kMaxIndependentWorkers + 1;
  EXPECT_THROW(Session(be, codec, f, opt, picker), Error);
  opt.n_workers = 2;
  opt.layout = Layout::combined;
  opt.skeleton = true;
  EXPECT_THROW(Session(be, codec, f, opt, picker), Error);
}

// Session::kv_tokens_needed bounds what an independent session (8 workers, their finishers at
// two snapshots and at the end) and a Skeleton-of-Thought session fill: each runs in a cache of
// exactly that size, and the pages in use never pass it.
TEST(Independent, KvBoundHolds) {
  ByteCodec codec;
  for (bool skeleton : {false, true}) {
    SCOPED_TRACE(skeleton ? "skeleton" : "independent");
    Formatting f = test_formatting(7);
    f.finisher.max_tokens = 12;
    SessionOptions opt;
    opt.n_workers = skeleton ? 3 : 8;
    opt.layout = Layout::independent;
    opt.skeleton = skeleton;
    opt.budget = 60;
    opt.snapshots = {10, 30};
    const std::vector<int32_t> prompt = toy_prompt();
    const ModelWeights weights = session_model(qwen3_spec());
    const int64_t need = Session::kv_tokens_needed(opt, f, codec, weights.config,
                                                   static_cast<int64_t>(prompt.size()));
    cpu::CpuBackend be(weights, need);
    std::vector<std::vector<int32_t>> scripts;
    for (int k = 0; k < opt.n_workers; ++k) scripts.push_back(worker_script(k, 40));
    if (skeleton) scripts[0] = cat({codec.encode(" a\n2. b\n3. c"), {kSep}, worker_script(0, 40)});
    ScriptPicker picker(scripts);
    Session s(be, codec, f, opt, picker);
    s.start(prompt);
    SessionStep step;
    int64_t peak = 0;
    while (s.plan(step, INT64_MAX)) {
      SessionStep* one = &step;
      run_forward(be, std::span<SessionStep*>(&one, 1));
      peak = std::max(peak, be.kv_used_tokens());
      s.complete(step);
    }
    EXPECT_EQ(s.result().stop_reason, StopReason::budget);
    EXPECT_EQ(s.result().serial_steps, 60);
    EXPECT_LE(peak, need);
    // The bound is not loose beyond use. (Skeleton-of-Thought: every serial step counts a step
    // opening of the first worker, 60 x 16 tokens, as its answer phase could open one at each
    // token; this run's steps are several tokens long.)
    EXPECT_GT(peak, need / (skeleton ? 8 : 4));
    if (skeleton) {
      EXPECT_EQ(s.result().outline_points.size(), 3u);
    }
  }
}

}  // namespace
}  // namespace hogwild::testing
