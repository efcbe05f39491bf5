// The Engine (engine/engine.h): many sessions in one forward per step. Every session's logits
// equal the naive reference of that session alone (fp32), with mixed layouts and worker counts,
// sessions joining mid-prefill, leaving and being cancelled; a session's tokens do not depend on
// who else runs (CPU); admission by KV memory and the bounded queue; 1000 sessions with
// cancellations leave the pool empty; chunked prefill.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "engine/engine.h"
#include "hogwild/picker.h"
#include "tests/hogwild/session_checker.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

// A session the reference tests run: scripted workers (worker_script), test formatting with a
// collaboration check every 7 tokens.
struct Planned {
  Layout layout;
  int workers;
  int64_t budget;
  std::string prompt;
};

SessionRequest scripted_request(const Planned& p, const ByteCodec& codec) {
  SessionRequest r;
  r.formatting = test_formatting(7);
  r.options.n_workers = p.workers;
  r.options.layout = p.layout;
  r.options.budget = p.budget;
  r.prompt = codec.encode(p.prompt);
  std::vector<std::vector<int32_t>> scripts;
  for (int k = 0; k < p.workers; ++k) scripts.push_back(worker_script(k));
  r.picker = std::make_unique<ScriptPicker>(scripts);
  return r;
}

TEST(EngineVsReference, SessionsSharingForwardsMatchTheirReferenceAlone) {
  for (int spec_index : {1, 2}) {  // qwen2 (bias, GQA), qwen3 (q/k norm, tied)
    const test::TinySpec spec = session_specs()[spec_index];
    SCOPED_TRACE(spec.name);
    cpu::CpuBackend be(session_model(spec));
    ByteCodec codec;
    EngineOptions eo;
    eo.prefill_chunk = 16;  // prompts of ~40 tokens take 3 steps
    Engine engine(be, codec, eo);
    const std::vector<Planned> plan = {
        {Layout::combined, 8, 30, "Task: add 2 and 3, then double it.\n\n"},
        {Layout::interleaved, 2, 30, "Task: multiply 4 by 5 and subtract 1.\n\n"},
        {Layout::contiguous, 5, 30, "Task: how many legs do 3 spiders have?\n\n"},
        {Layout::combined, 1, 12, "Task: 7 + 8 = ?\n\n"},
        {Layout::interleaved, 5, 30, "Task: list the primes below 20.\n\n"},
    };
    const std::map<int, int> join_at = {{0, 0}, {1, 0}, {2, 2}, {3, 4}, {4, 6}};  // engine step
    const int cancel_index = 4, cancel_at = 15;
    const Formatting f = test_formatting(7);
    std::vector<std::unique_ptr<Checker>> checkers;
    for (const Planned& p : plan)
      checkers.push_back(std::make_unique<Checker>(be.weights(), be, f, p.layout, p.workers,
                                                   codec.encode(p.prompt)));
    std::vector<SessionId> ids(plan.size(), -1);
    int most_sessions = 0;
    bool prefill_beside_decode = false;
    for (int step = 0; step < 400 && (step < 7 || !engine.idle()); ++step) {
      for (auto [i, at] : join_at)
        if (at == step) {
          SessionRequest r = scripted_request(plan[i], codec);
          r.observer = checkers[i].get();
          ids[i] = engine.submit(std::move(r));
        }
      if (step == cancel_at) engine.cancel(ids[cancel_index]);
      const auto events = engine.step();
      int prefill = 0, decode = 0;
      for (const SessionEvent& e : events) {
        prefill += e.report.phase == StepReport::Phase::prefill;
        decode += e.report.phase == StepReport::Phase::decode;
      }
      most_sessions = std::max(most_sessions, static_cast<int>(events.size()));
      prefill_beside_decode = prefill_beside_decode || (prefill > 0 && decode > 0);
    }
    ASSERT_TRUE(engine.idle());
    EXPECT_GE(most_sessions, 4) << "sessions must share forwards";
    EXPECT_TRUE(prefill_beside_decode) << "a prompt chunk must share a forward with decode rows";
    for (size_t i = 0; i < plan.size(); ++i) {
      SCOPED_TRACE("session " + std::to_string(i));
      Checker& c = *checkers[i];
      c.finish();
      const SessionResult res = engine.take(ids[i]);
      EXPECT_LE(c.worst, 1e-4);
      EXPECT_EQ(c.prefill_checked, 1);
      if (static_cast<int>(i) == cancel_index) {
        EXPECT_EQ(res.stop_reason, "cancelled");
        EXPECT_GT(c.forwards, 0);
        EXPECT_LT(c.forwards, 30);
        continue;
      }
      EXPECT_EQ(res.stop_reason, "budget");
      EXPECT_EQ(c.forwards, plan[i].budget);
      if (plan[i].workers > 1) {
        EXPECT_GT(c.collab_checks, 0);
        if (plan[i].layout != Layout::contiguous) {
          EXPECT_GT(c.closed_steps, 0);
          EXPECT_EQ(c.promotion().checked, c.closed_steps);
          EXPECT_LE(c.promotion().worst_key, 1e-4);
        }
      }
    }
    EXPECT_EQ(be.live_blocks(), 0);
    EXPECT_EQ(be.cached_tokens(), 0);
  }
}

// Tokens of every worker, in order, from the observer's stream.
struct TokenLog : SessionObserver {
  std::vector<std::vector<int32_t>> ids;
  explicit TokenLog(int n) : ids(n) {}
  void on_token(const TokenEvent& e) override { ids[e.worker].push_back(e.token); }
};

SessionRequest sampled_request(const ByteCodec& codec, int workers, Layout layout,
                               const std::string& prompt, SamplingParams sp, int64_t budget) {
  SessionRequest r;
  r.formatting = test_formatting(9);
  r.options.n_workers = workers;
  r.options.layout = layout;
  r.options.budget = budget;
  r.options.device_sampling = true;  // the one sampling contract (Backend::forward_sample)
  r.options.stop_on_answer = false;
  r.prompt = codec.encode(prompt);
  r.sampling = sp;
  return r;
}

SamplingParams seeded(float temperature, uint64_t seed) {
  SamplingParams sp;
  sp.do_sample = true;
  sp.temperature = temperature;
  sp.top_k = 40;
  sp.top_p = 0.95f;
  sp.seed = seed;
  return sp;
}

TEST(Engine, SessionTokensDoNotDependOnTheOtherSessions) {
  const test::TinySpec spec = session_specs()[2];
  ByteCodec codec;
  const std::string q = "Q: what is 6 times 7?\n";
  // The sessions under test: greedy (3 workers, combined) and seeded sampling (2, interleaved).
  auto greedy = [&] { return sampled_request(codec, 3, Layout::combined, q, SamplingParams{}, 25); };
  auto sampled = [&] {
    return sampled_request(codec, 2, Layout::interleaved, q, seeded(1.5f, 11), 25);
  };
  std::vector<std::vector<std::vector<int32_t>>> alone;
  for (auto make : {std::function<SessionRequest()>(greedy), std::function<SessionRequest()>(sampled)}) {
    cpu::CpuBackend be(session_model(spec));
    Engine engine(be, codec);
    SessionRequest r = make();
    TokenLog log(r.options.n_workers);
    r.observer = &log;
    engine.submit(std::move(r));
    engine.run_until_idle();
    alone.push_back(log.ids);
  }
  ASSERT_GT(alone[0][0].size(), 20u);
  ASSERT_GT(alone[1][0].size(), 20u);
  // Beside three other sessions (other prompts, worker counts, layouts, seeds, forbidden texts),
  // the second one joining a few steps late.
  cpu::CpuBackend be(session_model(spec));
  Engine engine(be, codec);
  TokenLog g(3), s(2);
  SessionRequest rg = greedy(), rs = sampled();
  rg.observer = &g;
  rs.observer = &s;
  SessionRequest o1 = sampled_request(codec, 8, Layout::combined, "Q: name a colour.\n",
                                      seeded(0.9f, 5), 30);
  o1.formatting.forbidden.texts = {"e", "<t270>"};
  SessionRequest o2 = sampled_request(codec, 1, Layout::contiguous, "Hi\n", SamplingParams{}, 40);
  SessionRequest o3 = sampled_request(codec, 5, Layout::contiguous,
                                      "Q: count from one to ten in words, please.\n",
                                      seeded(2.0f, 1), 18);
  engine.submit(std::move(o1));
  engine.submit(std::move(rg));
  engine.submit(std::move(o2));
  engine.step();
  engine.step();
  engine.submit(std::move(rs));
  engine.submit(std::move(o3));
  engine.run_until_idle();
  EXPECT_EQ(g.ids, alone[0]);
  EXPECT_EQ(s.ids, alone[1]);
}

TEST(Engine, ChunkedPrefillGivesTheSameRun) {
  const test::TinySpec spec = session_specs()[1];
  ByteCodec codec;
  const std::string q = "Q: a long prompt, fed in chunks of a few tokens each, then decoded.\n";
  std::vector<std::vector<std::vector<int32_t>>> runs;
  for (int64_t chunk : {int64_t{4096}, int64_t{5}, int64_t{13}}) {
    cpu::CpuBackend be(session_model(spec));
    EngineOptions eo;
    eo.prefill_chunk = chunk;
    Engine engine(be, codec, eo);
    SessionRequest r = sampled_request(codec, 2, Layout::combined, q, seeded(1.0f, 3), 20);
    TokenLog log(2);
    r.observer = &log;
    const SessionId id = engine.submit(std::move(r));
    int steps = 0;
    while (!engine.idle()) {
      engine.step();
      ++steps;
    }
    const SessionResult res = engine.take(id);
    EXPECT_EQ(res.prompt_tokens, static_cast<int64_t>(codec.encode(q).size()));
    // 20 serial steps + the finisher's forwards + the prefill's chunks.
    const int64_t chunks = (res.prompt_tokens + chunk - 1) / chunk;
    EXPECT_GE(steps, 20 + chunks + 1);
    runs.push_back(log.ids);
  }
  EXPECT_EQ(runs[1], runs[0]);
  EXPECT_EQ(runs[2], runs[0]);
}

TEST(Engine, AdmissionWaitsForKvMemoryAndRefusesWhatCannotFit) {
  const test::TinySpec spec = session_specs()[2];
  ByteCodec codec;
  auto request = [&](int workers, int64_t budget) {
    return sampled_request(codec, workers, Layout::combined, "Q: 1+1?\n", SamplingParams{},
                           budget);
  };
  SessionRequest probe = request(2, 10);
  const int64_t need = Session::kv_tokens_needed(probe.options, probe.formatting,
                                                 session_model(spec).config,
                                                 static_cast<int64_t>(probe.prompt.size()));
  // Room for one such session, not two.
  cpu::CpuBackend be(session_model(spec), need + need / 2);
  EngineOptions eo;
  eo.max_queue = 2;
  Engine engine(be, codec, eo);
  const SessionId a = engine.submit(request(2, 10));
  const SessionId b = engine.submit(request(2, 10));
  engine.step();
  EXPECT_EQ(engine.active_sessions(), 1);
  EXPECT_EQ(engine.queued_sessions(), 1);
  EXPECT_EQ(engine.kv_reserved(), need);
  // A session that can never fit is refused at once, with the sizes.
  try {
    engine.submit(request(8, 100000));
    FAIL() << "a session larger than the cache was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("but the cache holds " + std::to_string(need + need / 2)),
              std::string::npos)
        << e.what();
  }
  engine.submit(request(1, 3));  // queue: b and this one
  EXPECT_THROW(engine.submit(request(1, 3)), Error);  // the queue holds 2
  // b starts only once a has finished and freed its blocks.
  bool a_done = false;
  while (!engine.idle()) {
    for (const SessionEvent& e : engine.step()) {
      if (e.id == a && e.report.finished) a_done = true;
      if (e.id == b) EXPECT_TRUE(a_done) << "b ran before a freed its memory";
    }
  }
  EXPECT_EQ(engine.take(a).stop_reason, "budget");
  EXPECT_EQ(engine.take(b).stop_reason, "budget");
  EXPECT_EQ(be.live_blocks(), 0);
  EXPECT_EQ(engine.kv_reserved(), 0);
}

TEST(Engine, ThousandSessionsWithCancellationsLeaveThePoolEmpty) {
  const test::TinySpec spec = session_specs()[2];
  ByteCodec codec;
  cpu::CpuBackend be(session_model(spec));
  EngineOptions eo;
  eo.max_sessions = 48;
  eo.prefill_chunk = 8;
  Engine engine(be, codec, eo);
  std::mt19937 rng(5);
  std::vector<SessionId> live;
  int submitted = 0, cancelled = 0, finished = 0;
  std::map<std::string, int> reasons;
  while (submitted < 1000 || !engine.idle()) {
    while (submitted < 1000 && engine.queued_sessions() < 16) {
      const int w = 1 + static_cast<int>(rng() % 3);
      const Layout l = static_cast<Layout>(rng() % 3);
      SessionRequest r = sampled_request(codec, w, l, "Q" + std::to_string(submitted) + "?\n",
                                         seeded(1.0f, submitted), 2 + rng() % 4);
      if (rng() % 4 == 0) r.options.snapshots = {1};
      live.push_back(engine.submit(std::move(r)));
      ++submitted;
    }
    if (!live.empty() && rng() % 3 == 0) {  // cancel a random session, queued, running or done
      const size_t k = rng() % live.size();
      if (!engine.finished(live[k])) {
        engine.cancel(live[k]);
        ++cancelled;
      }
    }
    engine.step();
    for (size_t k = 0; k < live.size();) {
      if (engine.finished(live[k])) {
        ++reasons[engine.take(live[k]).stop_reason];
        ++finished;
        live[k] = live.back();
        live.pop_back();
      } else {
        ++k;
      }
    }
  }
  EXPECT_EQ(finished, 1000);
  EXPECT_EQ(reasons["cancelled"], cancelled);
  EXPECT_GT(cancelled, 50);
  EXPECT_GT(reasons["budget"] + reasons["answer"] + reasons["eos"], 500);
  EXPECT_EQ(be.live_blocks(), 0);
  EXPECT_EQ(be.cached_tokens(), 0);
  EXPECT_EQ(engine.kv_reserved(), 0);
  EXPECT_GT(engine.stats().steps, 0);
}

}  // namespace
}  // namespace hogwild::testing
