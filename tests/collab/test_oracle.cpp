// The oracle policy (src/collab/oracle.h) on hand-built views of the packs-collab formatting.
#include <gtest/gtest.h>

#include "collab/oracle.h"
#include "core/error.h"
#include "hogwild/formatting.h"

namespace hogwild::collab {
namespace {

const Formatting& fmt() {
  static const Formatting f =
      load_formatting(std::string(HOGWILD_SOURCE_DIR) + "/models/packs-collab/hogwild_format.json");
  return f;
}

Pack pack(int k) { return make_pack(Split::train, k, 7); }

ViewText history(const std::string& bytes) { return {ViewText::Kind::history, -1, true, bytes}; }
ViewText step(int w, const std::string& bytes, bool finished = false) {
  return {ViewText::Kind::step, w, finished, bytes};
}
const ViewText kHeader{ViewText::Kind::text, -1, false, "Still writing:\n\n"};

TEST(CollabOracle, ParsingHelpers) {
  EXPECT_EQ(claimed_in(" I take part 3."), 3);
  EXPECT_EQ(claimed_in(" I take part "), 0);
  EXPECT_EQ(claimed_in(" Alice took part 3 too, so I take part 5."), 5);
  EXPECT_EQ(claimed_in(" Alice took part 3 too, so I leave it."), -1);
  EXPECT_EQ(claimed_in(" Bob took part 3 too, but I keep it."), 0);
  EXPECT_EQ(result_in(" Part 3: 2 + 3 = 5. Part 3 = 5."), std::make_pair(3, int64_t{5}));
  EXPECT_EQ(result_in(" Part 3: 2 + 3 = 5. Part 3 = 5").first, 0);  // not finished
  EXPECT_EQ(strip_answer(" no. I take part 2."), " I take part 2.");
  EXPECT_EQ(strip_answer(" yes"), "");
}

TEST(CollabOracle, ReadsStepsWritersAndChecks) {
  const Pack p = pack(3);
  Oracle o(p, fmt(), 3, Layout::combined);
  const SeenState s = o.read(
      2, {history("Alice: I take part 1.\n\nBob: Is someone else doing my part? (yes/no): no. I "
                  "take part 2.\n\n"),
          kHeader, step(0, "Alice: Part 1: 5"), step(1, "Bob:"), step(2, "Carol:")});
  ASSERT_EQ(s.steps.size(), 5u);
  EXPECT_EQ(s.steps[0].writer, 0);
  EXPECT_TRUE(s.steps[0].finished);
  EXPECT_EQ(s.steps[0].content, " I take part 1.");
  EXPECT_EQ(s.steps[1].writer, 1);
  EXPECT_TRUE(s.steps[1].check);
  EXPECT_EQ(s.steps[1].content, " no. I take part 2.");
  EXPECT_FALSE(s.steps[2].finished);
  EXPECT_EQ(s.steps[2].content, " Part 1: 5");
  EXPECT_EQ(o.held_part(s, 0), 1);
  EXPECT_EQ(o.held_part(s, 1), 2);
  EXPECT_EQ(o.held_part(s, 2), 0);
}

TEST(CollabOracle, FirstStepTakesOnePartPerWorker) {
  const Pack p = pack(5);
  Oracle o(p, fmt(), 4, Layout::combined);
  // Every worker is at its claim digit in the same forward (step 1): worker w takes part w + 1.
  std::vector<ViewText> v = {history("")};
  for (int w = 0; w < 4; ++w) v.push_back(step(w, fmt().worker_name(w) + ": I take part "));
  for (int w = 0; w < 4; ++w) {
    std::vector<ViewText> mine = v;
    std::rotate(mine.begin() + 1 + w, mine.begin() + 2 + w, mine.end());  // own step last
    const SeenState s = o.read(w, mine);
    EXPECT_EQ(o.choose_part(s, false), w + 1) << "worker " << w;
    EXPECT_EQ(o.choose_part(s, true), 1) << "careless worker " << w;
    EXPECT_EQ(o.contested(s), w > 0);
  }
  // The plan at the first token: a claim for everyone (5 parts, 4 workers).
  const SeenState s0 = o.read(
      3, {history(""), step(0, "Alice:"), step(1, "Bob:"), step(2, "Carol:"), step(3, "Dave:")});
  const StepPlan plan = o.plan_step(s0, false);
  EXPECT_EQ(plan.kind, StepPlan::Kind::claim);
  ASSERT_EQ(plan.pieces.size(), 3u);
  EXPECT_EQ(plan.pieces[0].text, " I take part ");
  EXPECT_EQ(plan.pieces[1].text, "");  // the hole
  EXPECT_EQ(plan.pieces[2].text, ".\n\n");
}

TEST(CollabOracle, MoreWorkersThanPartsStop) {
  const Pack p = pack(2);
  Oracle o(p, fmt(), 4, Layout::combined);
  const SeenState s = o.read(
      2, {history(""), step(0, "Alice:"), step(1, "Bob:"), step(3, "Dave:"), step(2, "Carol:")});
  const StepPlan plan = o.plan_step(s, false);
  EXPECT_EQ(plan.kind, StepPlan::Kind::stop);
  EXPECT_EQ(plan.pieces.at(0).text, " Nothing is free, so I stop.\n\n");
  // After its stop step the worker ends with EOS.
  const SeenState after = o.read(
      2, {history("Carol: Nothing is free, so I stop.\n\n"), step(0, "Alice: I take part 1."),
          step(1, "Bob: I take part 2."), step(2, "Carol:")});
  const StepPlan end = o.plan_step(after, false);
  EXPECT_EQ(end.kind, StepPlan::Kind::end);
  EXPECT_TRUE(end.pieces.at(0).eos);
}

TEST(CollabOracle, CollisionLowerIndexKeeps) {
  const Pack p = pack(4);
  Oracle o(p, fmt(), 3, Layout::combined);
  const std::string h = "Alice: I take part 1.\n\nBob: I take part 2.\n\nCarol: I take part 1.\n\n";
  // Carol (higher index) switches to the first free part, 3.
  const SeenState carol = o.read(2, {history(h), kHeader, step(0, "Alice: Part 1: 1"),
                                     step(1, "Bob: Part 2: 3"), step(2, "Carol:")});
  EXPECT_TRUE(o.check_truth(carol));
  const StepPlan sw = o.plan_step(carol, true);
  EXPECT_EQ(sw.kind, StepPlan::Kind::switch_part);
  EXPECT_EQ(sw.check_answer, std::optional<bool>(true));
  EXPECT_EQ(sw.pieces.at(0).text, " yes.");
  EXPECT_EQ(sw.pieces.at(1).text, " Alice took part 1 too, so I take part ");
  const SeenState at_digit =
      o.read(2, {history(h), kHeader, step(0, "Alice: Part 1: 1"), step(1, "Bob: Part 2: 3"),
                 step(2, "Carol: yes. Alice took part 1 too, so I take part ")});
  EXPECT_EQ(o.choose_part(at_digit, false), 3);
  // Alice keeps part 1: asked, she says so; not asked, she works it.
  const SeenState alice = o.read(
      0, {history(h), kHeader, step(1, "Bob: Part 2: 3"), step(2, "Carol:"), step(0, "Alice:")});
  EXPECT_EQ(o.plan_step(alice, true).pieces.at(1).text,
            " Carol took part 1 too, but I keep it.\n\n");
  const StepPlan work = o.plan_step(alice, false);
  EXPECT_EQ(work.kind, StepPlan::Kind::work);
  EXPECT_EQ(work.pieces.at(0).text, " Part 1: " + p.parts[0].equations() +
                                        " Part 1 = " + std::to_string(p.parts[0].result) + ".\n\n");
}

TEST(CollabOracle, CollisionWithNoFreePartLeaves) {
  const Pack p = pack(2);
  Oracle o(p, fmt(), 3, Layout::combined);
  const std::string h = "Alice: I take part 1.\n\nBob: I take part 2.\n\nCarol: I take part 1.\n\n";
  // Carol (higher index) loses part 1 to Alice and Bob holds part 2: nothing to switch to.
  const SeenState carol = o.read(2, {history(h), kHeader, step(0, "Alice: Part 1: 1"),
                                     step(1, "Bob: Part 2: 3"), step(2, "Carol:")});
  const StepPlan plan = o.plan_step(carol, false);
  EXPECT_EQ(plan.kind, StepPlan::Kind::leave);
  ASSERT_EQ(plan.pieces.size(), 1u);
  EXPECT_EQ(plan.pieces[0].text, " Alice took part 1 too, so I leave it.\n\n");
}

TEST(CollabOracle, InterleavedCountsIdleLowerWorkers) {
  const Pack p = pack(4);
  Oracle o(p, fmt(), 3, Layout::interleaved);
  // Parts 1 and 3 have results, Bob holds 2; Alice and Carol hold nothing.
  const std::string h =
      "Alice: I take part 1.\n\nBob: I take part 2.\n\nAlice: Part 1: " + p.parts[0].equations() +
      " Part 1 = " + std::to_string(p.parts[0].result) +
      ".\n\nCarol: I take part 3.\n\nCarol: Part 3: " + p.parts[2].equations() +
      " Part 3 = " + std::to_string(p.parts[2].result) + ".\n\n";
  // Others' unfinished steps are hidden: Carol leaves the one free part (4) to idle Alice.
  EXPECT_EQ(o.plan_step(o.read(2, {history(h), step(2, "Carol:")}), false).kind,
            StepPlan::Kind::stop);
  const SeenState alice = o.read(0, {history(h), step(0, "Alice:")});
  EXPECT_EQ(o.plan_step(alice, false).kind, StepPlan::Kind::claim);
  EXPECT_EQ(o.choose_part(o.read(0, {history(h), step(0, "Alice: I take part ")}), false), 4);
}

TEST(CollabOracle, SumOfPairs) {
  Pack p = pack(3);
  p.parts[0].result = 32, p.parts[1].result = 75, p.parts[2].result = 12;
  Oracle o(p, fmt(), 2, Layout::combined);
  const SeenState s = o.read(
      1, {history("Alice: Part 1: x. Part 1 = 32.\n\nBob: Part 2: y. Part 2 = 75.\n\nAlice: Part "
                  "3: z. Part 3 = 12.\n\nAlice: Nothing is free, so I stop.\n\n"),
          kHeader, step(0, "Alice:"), step(1, "Bob:")});
  const StepPlan plan = o.plan_step(s, false);
  EXPECT_EQ(plan.kind, StepPlan::Kind::sum);
  EXPECT_EQ(plan.pieces.at(0).text,
            " All parts are done: 32, 75, 12. 32 + 75 = 107. 107 + 12 = 119. The total is "
            "\\boxed{119}.\n\n");
  // A lower-index idle worker that has not stopped writes the sum; the higher one stops.
  const SeenState bob = o.read(
      1, {history("Alice: Part 1: x. Part 1 = 32.\n\nBob: Part 2: y. Part 2 = 75.\n\nAlice: Part "
                  "3: z. Part 3 = 12.\n\n"),
          kHeader, step(0, "Alice:"), step(1, "Bob:")});
  EXPECT_EQ(o.plan_step(bob, false).kind, StepPlan::Kind::stop);
  const SeenState alice = o.read(
      0, {history("Alice: Part 1: x. Part 1 = 32.\n\nBob: Part 2: y. Part 2 = 75.\n\nAlice: Part "
                  "3: z. Part 3 = 12.\n\n"),
          kHeader, step(1, "Bob:"), step(0, "Alice:")});
  EXPECT_EQ(o.plan_step(alice, false).kind, StepPlan::Kind::sum);
}

TEST(CollabOracle, RefusesFormattingsItCannotRead) {
  const Pack p = pack(2);
  Formatting f = fmt();
  f.step_prefix = "**{name} [{step}]:**";
  EXPECT_THROW(Oracle(p, f, 2, Layout::combined), Error);
  Formatting g = fmt();
  g.forbidden.eos = true;
  EXPECT_THROW(Oracle(p, g, 2, Layout::combined), Error);
}

}  // namespace
}  // namespace hogwild::collab
