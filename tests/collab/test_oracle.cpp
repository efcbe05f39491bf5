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
  ASSERT_EQ(plan.pieces.size(), 4u);
  EXPECT_EQ(plan.pieces[0].text, " Left: 1-5.");  // the ledger: all free
  EXPECT_TRUE(plan.pieces[0].ledger);
  EXPECT_EQ(plan.pieces[1].text, " I take part ");
  EXPECT_TRUE(plan.pieces[1].action);
  EXPECT_EQ(plan.pieces[2].text, "");  // the hole
  EXPECT_EQ(plan.pieces[3].text, ".\n\n");
}

TEST(CollabOracle, MoreWorkersThanPartsStop) {
  const Pack p = pack(2);
  Oracle o(p, fmt(), 4, Layout::combined);
  const SeenState s = o.read(
      2, {history(""), step(0, "Alice:"), step(1, "Bob:"), step(3, "Dave:"), step(2, "Carol:")});
  const StepPlan plan = o.plan_step(s, false);
  EXPECT_EQ(plan.kind, StepPlan::Kind::stop);
  EXPECT_EQ(plan.pieces.at(0).text, " Left: 1, 2.");
  EXPECT_EQ(plan.pieces.at(1).text, " Nothing is free, so I stop.\n\n");
  // After its stop step the worker ends with EOS.
  const SeenState after = o.read(2, {history("Carol: Left: 1, 2. Nothing is free, so I stop.\n\n"),
                                     step(0, "Alice: Left: 1, 2. I take part 1."),
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

// "Part N: ... Part N = V." as a work step writes it (the equations do not matter to the oracle).
std::string result(int part, int64_t v) {
  return fmt::format(" Part {}: x. Part {} = {}.", part, part, v);
}

TEST(CollabOracle, LedgerListsWhatIsLeftAndWhoHoldsIt) {
  const Pack p = pack(5);
  Oracle o(p, fmt(), 4, Layout::combined);
  // Part 1 has a result (Alice), Bob holds 2, Carol's unfinished step has claimed 4.
  const std::string h =
      "Alice: Left: 1, 2, 3, 4, 5. I take part 1.\n\nBob: Left: 1, 2, 3, 4, 5. I "
      "take part 2.\n\nAlice:" +
      result(1, 40) + "\n\n";
  const SeenState dave =
      o.read(3, {history(h), kHeader, step(1, "Bob: Part 2: 5"),
                 step(2, "Carol: Left: 3, 4, 5. I take part 4"), step(3, "Dave:")});
  EXPECT_EQ(o.ledger(dave), " Left: 2 (Bob), 3, 4 (Carol), 5.");
  const StepPlan plan = o.plan_step(dave, false);
  EXPECT_EQ(plan.kind, StepPlan::Kind::claim);
  EXPECT_EQ(plan.pieces.at(0).text, " Left: 2 (Bob), 3, 4 (Carol), 5.");
  // At the digit: parts 3 and 5 are free, nobody else is at a claim digit: Dave takes 3.
  const SeenState digit =
      o.read(3, {history(h), kHeader, step(1, "Bob: Part 2: 5"),
                 step(2, "Carol: Left: 3, 4, 5. I take part 4"),
                 step(3, "Dave: Left: 2 (Bob), 3, 4 (Carol), 5. I take part ")});
  EXPECT_EQ(o.choose_part(digit, false), 3);
  // Every part done: " Left: none."
  std::string all;
  for (int i = 1; i <= 5; ++i) all += "Alice:" + result(i, i) + "\n\n";
  EXPECT_EQ(o.ledger(o.read(3, {history(all), step(3, "Dave:")})), " Left: none.");
  // Runs of three or more free parts are ranges; held parts break them.
  const std::string h8 = "Bob: Left: 1-5. I take part 2.\n\nAlice:" + result(5, 9) + "\n\n";
  EXPECT_EQ(o.ledger(o.read(3, {history(h8), step(3, "Dave:")})), " Left: 1, 2 (Bob), 3, 4.");
  const std::string h9 = "Bob: Left: 1-5. I take part 1.\n\n";
  EXPECT_EQ(o.ledger(o.read(3, {history(h9), step(3, "Dave:")})), " Left: 1 (Bob), 2-5.");
}

TEST(CollabOracle, TreeSplitsPairsFirst) {
  EXPECT_EQ(tree_split(1, 2), 1);
  EXPECT_EQ(tree_split(1, 4), 2);
  EXPECT_EQ(tree_split(1, 5), 4);  // [1-4] + 5
  EXPECT_EQ(tree_split(1, 7), 4);  // [1-4] + [5-7]
  EXPECT_EQ(tree_split(5, 7), 6);  // [5-6] + 7
  EXPECT_EQ(tree_split(1, 8), 4);
  EXPECT_EQ(sum_in(" Left: 3 (Carol). Sum 1-2: 32 + 75 = 107."),
            std::make_tuple(1, 2, int64_t{107}));
  EXPECT_EQ(std::get<0>(sum_in(" Left: none. Sum 1-2: 32 + 75 = 10")), 0);  // not finished
  EXPECT_EQ(action_of(" no. Left: 3 (Carol). Sum 1-2"), " Sum 1-2");
  EXPECT_EQ(action_of(" Left: 3 (Car"), "");
  EXPECT_EQ(action_of(" Part 3: 1 + 2"), " Part 3: 1 + 2");
}

TEST(CollabOracle, JoinWaitsForEveryResult) {
  Pack p = pack(3);
  Oracle o(p, fmt(), 2, Layout::combined);
  // Results of parts 1 and 3 (Alice), part 2 held by Bob: no total, Alice stops.
  const std::string h = "Alice:" + result(1, 32) +
                        "\n\nBob: Left: 2, 3. I take part 2.\n\nAlice:" + result(3, 12) + "\n\n";
  const SeenState alice =
      o.read(0, {history(h), kHeader, step(1, "Bob: Part 2: 5 + 7"), step(0, "Alice:")});
  EXPECT_EQ(o.my_node(alice), std::make_pair(0, 0));
  const StepPlan wait = o.plan_step(alice, false);
  EXPECT_EQ(wait.kind, StepPlan::Kind::stop);
  EXPECT_EQ(wait.pieces.at(0).text, " Left: 2 (Bob).");
  // Bob writes the last result: the tree of K = 3 is [1-2] + 3; Bob completed [1-2] (his part 2
  // is later in the history than Alice's part 1), adds it, then the total.
  const std::string h2 =
      h + "Alice: Left: 2 (Bob). Nothing is free, so I stop.\n\nBob:" + result(2, 75) + "\n\n";
  const SeenState bob = o.read(1, {history(h2), kHeader, step(0, "Alice:"), step(1, "Bob:")});
  EXPECT_EQ(o.my_node(bob), std::make_pair(1, 2));
  const StepPlan node = o.plan_step(bob, false);
  EXPECT_EQ(node.kind, StepPlan::Kind::node);
  EXPECT_EQ(node.pieces.at(0).text, " Left: none.");
  EXPECT_EQ(node.pieces.at(1).text, " Sum 1-2: 32 + 75 = 107.\n\n");
  // Alice (stopped, wrote no child of a node left) ends with EOS.
  const SeenState alice2 = o.read(0, {history(h2), kHeader, step(1, "Bob:"), step(0, "Alice:")});
  EXPECT_EQ(o.plan_step(alice2, false).kind, StepPlan::Kind::end);
  const std::string h3 = h2 + "Bob: Left: none. Sum 1-2: 32 + 75 = 107.\n\n";
  const StepPlan total = o.plan_step(o.read(1, {history(h3), step(1, "Bob:")}), false);
  EXPECT_EQ(total.kind, StepPlan::Kind::sum);
  EXPECT_EQ(total.pieces.at(1).text,
            " All parts are done: 107 + 12 = 119. The total is \\boxed{119}.\n\n");
}

TEST(CollabOracle, PairsAreAddedInParallel) {
  Pack p = pack(4);
  Oracle o(p, fmt(), 4, Layout::interleaved);
  // K = 4, 4 workers: parts 1, 2 done (Alice, Bob), then 4 (Dave); Carol still works part 3.
  const std::string h =
      "Alice:" + result(1, 10) + "\n\nBob:" + result(2, 20) + "\n\nDave:" + result(4, 40) + "\n\n";
  // Bob wrote the later child of [1-2]: he adds it while part 3 is being worked; Alice does not.
  const SeenState bob = o.read(1, {history(h), step(1, "Bob:")});
  EXPECT_EQ(o.my_node(bob), std::make_pair(1, 2));
  EXPECT_EQ(o.plan_step(bob, false).pieces.at(1).text, " Sum 1-2: 10 + 20 = 30.\n\n");
  EXPECT_EQ(o.my_node(o.read(0, {history(h), step(0, "Alice:")})), std::make_pair(0, 0));
  // Dave: [3-4] waits for part 3; nothing is free (Carol holds 3 in no visible step, but the
  // interleaved view counts lower idle workers as claimers of the one free part): he stops.
  EXPECT_EQ(o.my_node(o.read(3, {history(h), step(3, "Dave:")})), std::make_pair(0, 0));
  // Carol's result arrives after Bob's sum: Carol adds [3-4]; then the total is hers (her [3-4]
  // is later than Bob's [1-2]): after the last part, two additions remain (log2 4).
  const std::string h2 =
      h + "Bob: Left: 3. Sum 1-2: 10 + 20 = 30.\n\nCarol:" + result(3, 30) + "\n\n";
  const SeenState carol = o.read(2, {history(h2), step(2, "Carol:")});
  EXPECT_EQ(o.my_node(carol), std::make_pair(3, 4));
  EXPECT_EQ(o.plan_step(carol, false).pieces.at(1).text, " Sum 3-4: 30 + 40 = 70.\n\n");
  EXPECT_EQ(o.my_node(o.read(3, {history(h2), step(3, "Dave:")})), std::make_pair(0, 0));
  const std::string h3 = h2 + "Carol: Left: none. Sum 3-4: 30 + 40 = 70.\n\n";
  EXPECT_EQ(o.my_node(o.read(2, {history(h3), step(2, "Carol:")})), std::make_pair(1, 4));
  EXPECT_EQ(o.my_node(o.read(1, {history(h3), step(1, "Bob:")})), std::make_pair(0, 0));
  EXPECT_EQ(o.plan_step(o.read(2, {history(h3), step(2, "Carol:")}), false).pieces.at(1).text,
            " All parts are done: 30 + 70 = 100. The total is \\boxed{100}.\n\n");
}

TEST(CollabOracle, AnActionNotYetWrittenIsNoClaim) {
  const Pack p = pack(4);
  Oracle o(p, fmt(), 2, Layout::combined);
  // Bob's ledger is written and his action has only its leading space: not a claim, so Alice,
  // at her action, takes the one free part (part 4) instead of leaving it to him.
  const std::string h =
      "Alice:" + result(1, 7) + "\n\nBob:" + result(2, 31) + "\n\nBob:" + result(3, 202) + "\n\n";
  const SeenState alice =
      o.read(0, {history(h), kHeader, step(1, "Bob: Left: 4. "), step(0, "Alice: Left: 4.")});
  EXPECT_EQ(o.plan_action(alice).kind, StepPlan::Kind::claim);
  // With " I" written, Bob is claiming: Alice, holding nothing else to do, stops.
  const SeenState later =
      o.read(0, {history(h), kHeader, step(1, "Bob: Left: 4. I"), step(0, "Alice: Left: 4.")});
  EXPECT_EQ(o.plan_action(later).kind, StepPlan::Kind::stop);
}

TEST(CollabOracle, CheckOnACollisionSaysYesAndSwitches) {
  const Pack p = pack(4);
  Oracle o(p, fmt(), 3, Layout::interleaved);
  // Bob and Carol both claimed part 2 (Bob first); Carol is asked at her next step.
  const std::string h =
      "Alice: Left: 1, 2, 3, 4. I take part 1.\n\nBob: Left: 1, 2, 3, 4. I take "
      "part 2.\n\nCarol: Left: 1, 2, 3, 4. I take part 2.\n\n";
  const SeenState carol = o.read(2, {history(h), step(2, "Carol:")});
  EXPECT_TRUE(o.check_truth(carol));
  const StepPlan plan = o.plan_step(carol, true);
  EXPECT_EQ(plan.kind, StepPlan::Kind::switch_part);
  EXPECT_EQ(plan.pieces.at(0).text, " yes.");
  EXPECT_EQ(plan.pieces.at(1).text, " Bob took part 2 too, so I take part ");
  EXPECT_EQ(o.choose_part(o.read(2, {history(h),
                                     step(2, "Carol: yes. Bob took part 2 too, so I take part ")}),
                          false),
            3);
  // Bob, asked, keeps it; Alice, alone on part 1, says no.
  EXPECT_EQ(o.plan_step(o.read(1, {history(h), step(1, "Bob:")}), true).pieces.at(1).text,
            " Carol took part 2 too, but I keep it.\n\n");
  EXPECT_EQ(o.plan_step(o.read(0, {history(h), step(0, "Alice:")}), true).pieces.at(0).text,
            " no.");
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
