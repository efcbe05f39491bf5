// The multi-session check of the engine against the naive reference, for any Backend (the CPU in
// tests/hogwild/test_engine.cpp, CUDA in tests/cuda/test_cuda_session.cpp): several sessions share
// every forward, and each session's logits must equal the naive reference of that session alone.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tests/hogwild/session_checker.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {

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

/// The KV pool (tokens) that the backend of expect_sessions_match_reference needs so that the
/// engine admits every session of its plan while the others run (their reservations,
/// Session::kv_tokens_needed, add up to more than 16384 tokens): the CPU and CUDA tests both
/// give their backend this capacity.
inline constexpr int64_t kSharingPoolTokens = 32768;

/// Runs five sessions on one Engine over `be` (holding `weights`): mixed layouts and worker counts
/// (8, 2, 5, 1, 5), prompts prefilled in chunks of 16 tokens, sessions joining mid-prefill, one
/// leaving early (budget 12), one cancelled at step 15; checks every session's logits against the
/// naive reference of that session alone, its promotions, and that the pool is empty at the end.
inline void expect_sessions_match_reference(Backend& be, const ModelWeights& weights,
                                            double logits_tol, double key_tol) {
  {
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
      checkers.push_back(
          std::make_unique<Checker>(weights, be, f, p.layout, p.workers, codec.encode(p.prompt)));
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
      EXPECT_LE(c.worst, logits_tol);
      EXPECT_EQ(c.prefill_checked, 1);
      if (static_cast<int>(i) == cancel_index) {
        EXPECT_EQ(res.stop_reason, StopReason::cancelled);
        EXPECT_GT(c.forwards, 0);
        EXPECT_LT(c.forwards, 30);
        continue;
      }
      EXPECT_EQ(res.stop_reason, StopReason::budget);
      EXPECT_EQ(c.forwards, plan[i].budget);
      if (plan[i].workers > 1) {
        EXPECT_GT(c.collab_checks, 0);
        if (plan[i].layout != Layout::contiguous) {
          EXPECT_GT(c.closed_steps, 0);
          EXPECT_EQ(c.promotion().checked, c.closed_steps);
          EXPECT_LE(c.promotion().worst_key, key_tol);
        }
      }
    }
    EXPECT_EQ(be.live_blocks(), 0);
    EXPECT_EQ(be.kv_used_tokens(), 0);
  }
}

}  // namespace hogwild::testing
