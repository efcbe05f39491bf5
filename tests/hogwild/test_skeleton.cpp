// Skeleton-of-Thought sessions (session.h, "Skeleton-of-Thought"): the outline reader; a scripted
// run through outline, three parallel expansions and the answer, every forward's logits against
// the naive reference (each expansion sees only the prompt and the outline; the answer sees all),
// the promotions in the cache, the views of each phase and the serial-step count; the finisher
// of a run cut in its outline is plain greedy continuation; outlines with no or too many points.
#include <gtest/gtest.h>

#include "cpu/cpu_backend.h"
#include "hogwild/answer.h"
#include "hogwild/skeleton.h"
#include "hogwild/transcript.h"
#include "tests/hogwild/session_checker.h"
#include "tests/hogwild/test_support.h"

namespace hogwild::testing {
namespace {

using Points = std::vector<std::string>;

TEST(Skeleton, ParseOutline) {
  EXPECT_EQ(parse_outline("Outline:\n1. Count the apples\n2) **Add them**\n\nThen 3. no", 8),
            (Points{"Count the apples", "Add them"}));
  EXPECT_EQ(parse_outline("  1.first\n 2.   \n10. tenth  \n3 nope\n4.", 8),
            (Points{"first", "tenth"}));
  EXPECT_EQ(parse_outline("1. a\n2. b\n3. c\n4. d", 3), (Points{"a", "b", "c"}));
  EXPECT_EQ(parse_outline("1. **Find x:** solve it\n2. _y_", 8),
            (Points{"**Find x:** solve it", "y"}));
  EXPECT_EQ(parse_outline("no numbers here\n- a bullet\n", 8), Points{});
  EXPECT_EQ(parse_outline("1. a", 0), Points{});
}

std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> v;
  for (auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}

struct Views : SessionObserver {
  std::vector<ForwardRecord> forwards;
  void on_forward(const ForwardRecord& r) override {
    forwards.push_back(r);
    forwards.back().logits = nullptr;
  }
};

class SkeletonVsReference : public ::testing::TestWithParam<int> {};

TEST_P(SkeletonVsReference, PhasesMatchTheReference) {
  const test::TinySpec spec = session_specs()[GetParam()];
  cpu::CpuBackend be(session_model(spec));
  ByteCodec codec;
  Formatting f = test_formatting(7);  // checks are off in Skeleton-of-Thought
  const std::vector<int32_t> outline = cat({codec.encode(" add\n2. double\n3. check"), {kSep}});
  const std::vector<int32_t> e0 = {'a', ' ', 'b', kDotSep}, e1 = {'x', 'y', 'z', 'w', kDotSep},
                             e2 = {'p', kDotSep};
  const std::vector<int32_t> answer = cat({codec.encode("so \\boxed{10}"), {kDotSep}});
  ScriptPicker picker({cat({outline, e0, answer}), e1, e2});
  SessionOptions opt;
  opt.n_workers = 3;
  opt.layout = Layout::independent;
  opt.skeleton = true;
  opt.budget = 200;
  Session s(be, codec, f, opt, picker);
  const std::vector<int32_t> prompt = codec.encode("Task: add 2 and 3, then double it.\n\n");
  Checker check(be.weights(), be, f, Layout::independent, 3, prompt);
  Views views;
  MultiObserver obs;
  obs.add(&check);
  obs.add(&views);
  s.set_observer(&obs);
  const SessionResult res = s.run(prompt);
  check.finish();

  EXPECT_EQ(res.outline_points, (Points{"add", "double", "check"}));
  EXPECT_EQ(res.stop_reason, StopReason::answer);
  EXPECT_EQ(res.answer, "10");
  EXPECT_EQ(res.answer_worker, 0);
  const int64_t t_o = static_cast<int64_t>(outline.size());
  // Outline tokens at serial steps 1..t_o, the longest expansion (5) after it, then the answer.
  EXPECT_EQ(res.serial_steps, t_o + 5 + static_cast<int64_t>(answer.size()));
  EXPECT_EQ(res.tokens_per_worker,
            (std::vector<int64_t>{t_o + 4 + static_cast<int64_t>(answer.size()), 5, 2}));
  const std::string want_history = codec.bytes(prompt) + f.sot.outline_prefix +
                                   codec.bytes(outline) + f.point_prefix(1, "add") + "a b.\n\n" +
                                   f.point_prefix(2, "double") + "xyzw.\n\n" +
                                   f.point_prefix(3, "check") + "p.\n\n";
  EXPECT_EQ(res.history_text, want_history);
  EXPECT_EQ(res.unfinished[0], f.sot.answer_prefix + "so \\boxed{10}");

  // Every forward against the reference; the outline and the three expansions promoted; the two
  // expansions that ended first fed their last token without a row.
  EXPECT_LE(check.worst, 1e-4);
  EXPECT_EQ(check.forwards, res.serial_steps);
  EXPECT_EQ(check.closed_steps, 4);
  EXPECT_EQ(check.promotion().checked, 4);
  EXPECT_LE(check.promotion().worst_key, 1e-4);
  EXPECT_EQ(check.rows_without_logits, 2);

  // Views: an expansion sees [history = prompt + outline][its own block]; at the answer's first
  // forward worker 0 reads the closing expansions, the others only them.
  const ForwardRecord& mid = views.forwards.at(t_o + 2);  // serial step t_o + 2
  ASSERT_EQ(mid.serial_step, t_o + 2);
  for (int w = 0; w < 3; ++w) EXPECT_EQ(mid.views[w].size(), 2u) << w;
  const ForwardRecord& turn = views.forwards.at(t_o + 6);
  ASSERT_EQ(turn.closed.size(), 3u);
  EXPECT_EQ(turn.closed, (std::vector<std::pair<int, int>>{{0, 2}, {1, 1}, {2, 1}}));
  EXPECT_EQ(turn.views[0].size(), 5u);
  EXPECT_EQ(turn.views[1].size(), 4u);
  EXPECT_EQ(std::vector<BlockId>(turn.views[0].begin(), turn.views[0].begin() + 4), turn.views[1]);
  EXPECT_EQ(turn.logit_workers, std::vector<int>{0});
}

std::string spec_name(const ::testing::TestParamInfo<int>& info) {
  return session_specs()[info.param].name;
}

INSTANTIATE_TEST_SUITE_P(Archs, SkeletonVsReference, ::testing::Values(0, 1, 2, 4), spec_name);

// Cut at the budget inside the outline: the finisher continues prompt + outline so far + suffix
// greedily ("plain": no separator text), exactly as plain generation does.
TEST(Skeleton, FinisherInTheOutlineIsGreedyContinuation) {
  const test::TinySpec spec = session_specs()[2];
  cpu::CpuBackend be(session_model(spec));
  ByteCodec codec;
  Formatting f = builtin_formatting("plain");
  f.finisher.max_tokens = 10;
  ScriptPicker picker({{'a', 'b', kThe, 'c'}});
  SessionOptions opt;
  opt.n_workers = 2;
  opt.layout = Layout::independent;
  opt.skeleton = true;
  opt.budget = 9;
  Session s(be, codec, f, opt, picker);
  const std::vector<int32_t> prompt = codec.encode("Q: what is 6 times 7?\n");
  Views views;
  s.set_observer(&views);
  const SessionResult res = s.run(prompt);
  EXPECT_EQ(res.stop_reason, StopReason::budget);
  EXPECT_EQ(res.tokens_per_worker, (std::vector<int64_t>{9, 0}));
  ASSERT_TRUE(res.finisher.has_value());
  std::vector<int32_t> seq = cat({prompt, codec.encode(f.sot.outline_prefix)});
  for (auto& r : views.forwards)
    for (auto& t : r.tokens)
      if (t.role == FeedRole::generated) seq.push_back(t.token);
  seq = cat({seq, codec.encode(f.finisher.suffix)});
  Sampler sampler(SamplingParams{});
  std::string want;
  for (int32_t t : reference_generation(session_model(spec), seq, sampler, f.finisher.max_tokens)) {
    if (t == kEos) break;
    want += codec.token_bytes(t);
    if (finisher_done(want, AnswerKind::boxed)) break;
  }
  EXPECT_EQ(res.finisher->continuation, want);
}

// An outline without numbered points goes straight to the answer; more points than workers are
// cut to the workers; the outline also ends at sot.outline_max_tokens.
TEST(Skeleton, OutlineEdgeCases) {
  ByteCodec codec;
  Formatting f = test_formatting(0);
  f.sot.outline_prefix = "Plan:";
  {
    cpu::CpuBackend be(session_model(session_specs()[2]));
    const auto answer = cat({codec.encode("\\boxed{1}"), {kDotSep}});
    ScriptPicker picker({cat({codec.encode(" none"), {kSep}, answer})});
    SessionOptions opt;
    opt.n_workers = 3;
    opt.layout = Layout::independent;
    opt.skeleton = true;
    opt.budget = 50;
    Session s(be, codec, f, opt, picker);
    const SessionResult res = s.run(codec.encode("Q?\n"));
    EXPECT_TRUE(res.outline_points.empty());
    EXPECT_EQ(res.answer, "1");
    EXPECT_EQ(res.tokens_per_worker, (std::vector<int64_t>{6 + 10, 0, 0}));
    EXPECT_EQ(res.history_text, "Q?\nPlan: none\n\n");
  }
  {
    cpu::CpuBackend be(session_model(session_specs()[2]));
    f.sot.outline_prefix = "Plan:\n";
    f.sot.outline_max_tokens = 12;
    ScriptPicker picker({codec.encode("1.a\n2.b\n3.c\n4.d e f g h"), {'q'}});
    SessionOptions opt;
    opt.n_workers = 2;
    opt.layout = Layout::independent;
    opt.skeleton = true;
    opt.budget = 20;
    Session s(be, codec, f, opt, picker);
    const SessionResult res = s.run(codec.encode("Q?\n"));
    EXPECT_EQ(res.outline_points, (Points{"a", "b"}));
    EXPECT_EQ(res.stop_reason, StopReason::budget);
    EXPECT_EQ(res.tokens_per_worker, (std::vector<int64_t>{20, 8}));  // outline ends at 12
    EXPECT_EQ(res.history_text, "Q?\nPlan:\n1.a\n2.b\n3.c\n");
    EXPECT_EQ(res.unfinished[0], f.point_prefix(1, "a") + "4.d e f");  // the 8th token unfed
  }
}

}  // namespace
}  // namespace hogwild::testing
