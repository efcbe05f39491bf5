// The KV budget (hogwild/forgetting.h, docs/ARCHITECTURE.md "Bounded shared memory"): the choice of
// what the shared history forgets against hand-computed cases, the block table's gaps, the
// request checks' sentences, and whole sessions on the CPU backend: a budget the run never
// reaches changes no bit of any logits row, and with forgetting every forward still matches the
// naive reference told to forget the same tokens (positions unchanged, forgotten keys skipped),
// and the measured attention scores are the reference's softmax weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/cpu_backend.h"
#include "hogwild/forgetting.h"
#include "hogwild/request_check.h"
#include "kv/block_table.h"
#include "tests/hogwild/session_checker.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

using Ranges = std::vector<TokenRange>;

// 24 history tokens in chunks of 4, the last 4 recent; the prompt [0, 4) and a step header at 12
// protected. Candidates: [4, 8) (max 0.30), [8, 12) (max 0.05), [16, 20) (max 0.10); [12, 16)
// holds the header, [20, 24) is recent.
std::vector<float> hand_scores() {
  std::vector<float> s(24, 0.01f);
  s[5] = 0.30f;
  s[9] = 0.05f;
  s[17] = 0.10f;
  s[2] = 0.0f;   // prompt: protected however low
  s[13] = 0.0f;  // the header's chunk: protected however low
  s[21] = 0.0f;  // recent: protected however low
  return s;
}

TEST(KvBudgetChoice, LowestScoredUnprotectedChunksGoFirst) {
  ForgetPolicy p{.budget = 17, .chunk = 4, .recent = 4, .window = 8};
  const Ranges protect = {{0, 4}, {12, 13}};
  // 24 kept > 17: [8, 12) (0.05) leaves 20, [16, 20) (0.10) leaves 16 <= 17; [4, 8) stays.
  EXPECT_EQ(choose_forgotten(24, {}, protect, hand_scores(), p), (Ranges{{8, 12}, {16, 20}}));
  // [8, 12) already forgotten: 20 kept; the next lowest, [16, 20), is enough.
  EXPECT_EQ(choose_forgotten(24, {{8, 12}}, protect, hand_scores(), p), (Ranges{{16, 20}}));
  // Within budget, or no budget: nothing.
  p.budget = 24;
  EXPECT_TRUE(choose_forgotten(24, {}, protect, hand_scores(), p).empty());
  p.budget = 0;
  EXPECT_TRUE(choose_forgotten(24, {}, protect, hand_scores(), p).empty());
  // A budget below what may go: every candidate, and no more.
  p.budget = 1;
  EXPECT_EQ(choose_forgotten(24, {}, protect, hand_scores(), p),
            (Ranges{{4, 8}, {8, 12}, {16, 20}}));
}

TEST(KvBudgetChoice, TiesGoToTheOlderChunkAndPartlyForgottenChunksCountTheirKeptTokens) {
  ForgetPolicy p{.budget = 9, .chunk = 4, .recent = 0, .window = 8};
  const std::vector<float> flat(12, 0.5f);
  // 12 kept, budget 9: one chunk, the oldest of three equal ones.
  EXPECT_EQ(choose_forgotten(12, {}, {}, flat, p), (Ranges{{0, 4}}));
  // [0, 3) forgotten (9 kept): within budget.
  EXPECT_TRUE(choose_forgotten(12, {{0, 3}}, {}, flat, p).empty());
  // Budget 7 with [0, 3) forgotten: chunk [0, 4) frees its 1 kept token (8 kept), then [4, 8).
  std::vector<float> s = flat;
  s[3] = 0.1f;  // the kept token of [0, 4): lowest; the forgotten ones' scores do not count
  s[0] = 0.9f;
  p.budget = 7;
  EXPECT_EQ(choose_forgotten(12, {{0, 3}}, {}, s, p), (Ranges{{0, 4}, {4, 8}}));
}

TEST(KvBudgetChoice, RefusesScoresOfAnotherLength) {
  ForgetPolicy p{.budget = 1, .chunk = 4, .recent = 0, .window = 8};
  EXPECT_THROW(choose_forgotten(8, {}, {}, std::vector<float>(7, 0.f), p), Error);
  p.chunk = 0;
  EXPECT_THROW(choose_forgotten(8, {}, {}, std::vector<float>(8, 0.f), p), Error);
}

TEST(KvBudgetChoice, ScoreWindowKeepsTheMaxOfTheLastSteps) {
  ScoreWindow w(2);
  w.push({0.1f, 0.5f});
  w.push({0.3f, 0.2f, 0.4f});
  w.push({0.2f, 0.1f, 0.1f, 0.6f});  // the first step leaves the window
  EXPECT_EQ(w.size(), 2u);
  const std::vector<float> m = w.max_scores(5);
  EXPECT_EQ(m[0], 0.3f);
  EXPECT_EQ(m[1], 0.2f);
  EXPECT_EQ(m[2], 0.4f);
  EXPECT_EQ(m[3], 0.6f);
  EXPECT_EQ(m[4], std::numeric_limits<float>::infinity());  // never measured: never forgotten
  EXPECT_EQ(kept_tokens(10, {{1, 3}, {5, 6}}), 7);
}

TEST(KvBudgetTable, GapsMergeFollowAppendsAndTruncation) {
  BlockTable t(0, 4);
  const BlockId a = t.new_block(), b = t.new_block();
  t.grow(a, 10);
  t.grow(b, 6);
  t.forget(a, 2, 4);
  t.forget(a, 6, 8);
  t.forget(a, 3, 6);  // joins both
  EXPECT_EQ(t.gaps(a), (Ranges{{2, 8}}));
  EXPECT_EQ(t.kept(a), 4);
  t.forget(b, 1, 2);
  t.grow(a, 16);
  t.append_gaps(a, b, 10);  // b's gap lands at 11
  EXPECT_EQ(t.gaps(a), (Ranges{{2, 8}, {11, 12}}));
  t.truncate(a, 5);  // cut inside the first gap, the second gone
  EXPECT_EQ(t.gaps(a), (Ranges{{2, 5}}));
  EXPECT_THROW(t.forget(a, 4, 9), Error);  // beyond the block
  EXPECT_THROW(t.forget(a, 3, 3), Error);  // empty
  t.free_block(a);
  const BlockId c = t.new_block();  // a reused id starts without gaps
  EXPECT_TRUE(t.gaps(c).empty());
}

TEST(KvBudgetRequest, BadValuesAreRefusedWithTheirSentence) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const RequestError& e) {
      EXPECT_EQ(e.field(), RequestField::kv_budget);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] { check_kv_budget(-1, Layout::combined, false); }),
            "kv_budget is -1; it must be in 0..2147483647 tokens of the shared history kept in "
            "attention (0 = unlimited)");
  EXPECT_EQ(message([] { check_kv_budget(512, Layout::contiguous, false); }),
            "kv_budget is 512, but the contiguous layout never moves steps into the shared "
            "history, so there is nothing to forget; use the combined or interleaved layout, or "
            "kv_budget 0");
  EXPECT_EQ(message([] { check_kv_budget(512, Layout::independent, true); }),
            "kv_budget is 512, but the independent layout with Skeleton-of-Thought never moves "
            "steps into the shared history, so there is nothing to forget; use the combined or "
            "interleaved layout, or kv_budget 0");
  EXPECT_EQ(message([] { check_kv_budget_fits(100, 90, 128); }),
            "kv_budget is 100, but the prompt (90 tokens) and the history's last 128 tokens are "
            "never forgotten; give at least 218 tokens, or 0 for no budget");
  EXPECT_EQ(message([] { check_kv_budget(0, Layout::contiguous, false); }), "no error");
  EXPECT_EQ(message([] { check_kv_budget_fits(0, 90, 128); }), "no error");
}

// Every logits row of a run, as bits.
struct LogitsLog : SessionObserver {
  std::vector<std::vector<float>> rows;
  void on_forward(const ForwardRecord& r) override {
    if (r.logits) rows.push_back(*r.logits);
  }
};

// A budget the history never passes: the scores are measured, nothing is forgotten, and every
// logits row is bit for bit what the run without a budget computes.
TEST(KvBudgetSession, BudgetAboveTheRunChangesNoBit) {
  const auto spec = session_specs().front();
  auto run = [&](int64_t budget, LogitsLog& log) {
    cpu::CpuBackend be(session_model(spec));
    ByteCodec codec;
    Formatting f = test_formatting(7);
    std::vector<std::vector<int32_t>> scripts;
    for (int k = 0; k < 3; ++k) scripts.push_back(worker_script(k));
    ScriptPicker picker(scripts);
    SessionOptions opt;
    opt.n_workers = 3;
    opt.budget = 30;
    opt.kv.budget = budget;
    Session s(be, codec, f, opt, picker);
    s.set_observer(&log);
    return s.run(codec.encode("Task: add 2 and 3, then double it.\n\n"));
  };
  LogitsLog plain, budgeted;
  const SessionResult a = run(0, plain), b = run(100000, budgeted);
  EXPECT_EQ(a.history_text, b.history_text);
  EXPECT_EQ(a.unfinished, b.unfinished);
  EXPECT_EQ(a.tokens_per_worker, b.tokens_per_worker);
  EXPECT_TRUE(b.forgotten.empty());
  EXPECT_EQ(b.forgotten_tokens, 0);
  ASSERT_EQ(plain.rows.size(), budgeted.rows.size());
  ASSERT_GT(plain.rows.size(), 30u);
  for (size_t i = 0; i < plain.rows.size(); ++i) {
    ASSERT_EQ(plain.rows[i].size(), budgeted.rows[i].size());
    EXPECT_EQ(std::memcmp(plain.rows[i].data(), budgeted.rows[i].data(),
                          plain.rows[i].size() * sizeof(float)),
              0)
        << "row " << i;
  }
}

using Param = std::tuple<test::TinySpec, Layout, int>;
class KvBudgetVsReference : public ::testing::TestWithParam<Param> {};

// Forgetting in a small budget: chunks of 2 tokens, the last 8 kept, a 4-step window. Every
// forward's logits match the naive reference that forgets the same history tokens (1e-4), the
// measured scores match its softmax weights, and something was forgotten.
TEST_P(KvBudgetVsReference, ReplayHoldsOnTheViewsThatRemain) {
  auto [spec, layout, n] = GetParam();
  cpu::CpuBackend be(session_model(spec));
  const int64_t prompt =
      static_cast<int64_t>(ByteCodec().encode("Task: add 2 and 3, then double it.\n\n").size());
  const ForgetPolicy kv{.budget = prompt + 8 + 4, .chunk = 2, .recent = 8, .window = 4};
  const CheckedRun o = run_checked(be, be.weights(), layout, n, kv);
  expect_matches_reference(o, layout, 1e-4, 1e-4);
  EXPECT_GT(o.forgotten, 0);
  EXPECT_EQ(o.forgotten, o.res.forgotten_tokens);
  EXPECT_EQ(o.scored, 30);
  EXPECT_LE(o.worst_score, 1e-5);
  ASSERT_FALSE(o.res.forgotten.empty());
  for (const ForgetEvent& e : o.res.forgotten) {
    EXPECT_LT(e.kept, e.history_len);
    ASSERT_EQ(e.ranges.size(), e.texts.size());
    for (const auto& [b, end] : e.ranges) {
      EXPECT_GE(b, prompt);  // the prompt stays
      EXPECT_LE(end, e.history_len - kv.recent);
      // Whole chunks, or (the memory cap: the history passes history_page_cap(budget) = 3
      // pages) whole 64-token pages merged with them; chunks of 2 divide the pages.
      EXPECT_EQ(b % kv.chunk, 0);
      EXPECT_EQ(end % kv.chunk, 0);
      EXPECT_LT(b, end);
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  auto& [spec, layout, n] = info.param;
  return spec.name + "_" + layout_name(layout) + "_w" + std::to_string(n);
}

INSTANTIATE_TEST_SUITE_P(Archs, KvBudgetVsReference,
                         ::testing::Combine(::testing::ValuesIn(session_specs()),
                                            ::testing::Values(Layout::combined,
                                                              Layout::interleaved),
                                            ::testing::Values(1, 2, 4)),
                         param_name);

}  // namespace
}  // namespace hogwild::testing
