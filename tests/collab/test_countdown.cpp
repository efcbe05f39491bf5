// Countdown (src/collab/countdown.h, countdown_oracle.h): the answer checker on hand-computed
// cases, the generator's determinism and solvability, the search's lines, the scripted policy on
// hand-built views, and real scripted sessions of one worker and of teams.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "collab/countdown.h"
#include "collab/countdown_oracle.h"
#include "collab/traces.h"
#include "core/error.h"
#include "eval/dataset.h"
#include "eval/score.h"
#include "hogwild/formatting.h"

namespace hogwild::collab {
namespace {

const std::string kTemplate = std::string(HOGWILD_SOURCE_DIR) + "/tools/collab/countdown-template";

struct Text {
  Formatting fmt = load_formatting(kTemplate + "/hogwild_format.json");
  chat::ChatTemplate tmpl = chat::ChatTemplate::load(kTemplate);
  ByteCodec codec;
};
const Text& text() {
  static const Text t;
  return t;
}

// Numbers 4 7 9 2, target 22: (4+7)*2 = 22 and 4+7+9+2 = 22 are solutions (by hand).
const std::vector<int64_t> kNumbers = {4, 7, 9, 2};

CountdownCheck check(const std::string& answer) { return check_countdown(answer, kNumbers, 22); }

TEST(CollabCountdown, CheckerAcceptsSolutions) {
  for (const char* a : {"(4+7)*2", "2*(7+4)", " ( 4 + 7 ) * 2 ", "(4 + 7) * 2 = 22", "4+7+9+2",
                        "(4+7)\\times 2", "2 \\cdot (4+7)", "9*2+4"}) {
    const CountdownCheck c = check(a);
    EXPECT_TRUE(c.ok) << a << ": " << c.error;
    EXPECT_EQ(c.value, 22) << a;
    EXPECT_EQ(c.error, "") << a;
  }
  // Exact division: 7-4 = 3, 9/3 = 3 is whole; 9/(7-4)*2 = 6 breaks no rule but is not the
  // target.
  const CountdownCheck d = check("9/(7-4)*2");
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.value, 6);
  EXPECT_EQ(d.error, "the expression gives 6, not the target 22");
  // A number used twice is caught even inside a correct value: (9-7)*(4+7) = 22 uses 7 twice.
  EXPECT_EQ(check("(9-7)*(4+7)").error, "7 is used 2 times; it is given once");
}

TEST(CollabCountdown, CheckerRejectsWithClearErrors) {
  // A number used twice (2 is given once).
  EXPECT_EQ(check("(9+2)*2").error, "2 is used 2 times; it is given once");
  // A number that is not given.
  EXPECT_EQ(check("11*2").error, "11 is not one of the numbers");
  // Division with a remainder: 7 / 2 = 3.5.
  EXPECT_EQ(check("7/2*4").error,
            "7 / 2 is not a whole number; divide only when nothing is left over");
  // A negative intermediate: 4 - 7 = -3, though 4 - 7 + 25 would be 22.
  EXPECT_EQ(check("4-7+25").error,
            "4 - 7 is not positive; every step must give a positive whole number");
  // Zero is not positive either: 9 - (7 + 2) = 0.
  EXPECT_EQ(check("9-(7+2)+22").error.substr(0, 22), "9 - 9 is not positive;");
  // The wrong target: 4*7-9 = 19.
  EXPECT_EQ(check("4*7-9").error, "the expression gives 19, not the target 22");
  EXPECT_EQ(check("4*7-9").value, 19);
  // Precedence: 4+7*2 = 18, not (4+7)*2.
  EXPECT_EQ(check("4+7*2").value, 18);
  // "= N" must give the target.
  EXPECT_EQ(check("(4+7)*2 = 23").error, "after '=' the answer must give the target 22");
  // Garbage.
  EXPECT_EQ(check("").error, "the answer is empty");
  EXPECT_EQ(check("   ").error, "the answer is empty");
  EXPECT_EQ(check("abc").error,
            "unexpected 'a' at position 1; an answer holds numbers, + - * / and parentheses");
  EXPECT_EQ(check("(4+7*2").error, "missing ')' at position 7");
  EXPECT_EQ(check("4+7)*2").error, "unmatched ')' at position 4");
  EXPECT_EQ(check("-4+26").error, "a sign before a number at position 1 is not allowed");
  EXPECT_EQ(check("4+").error, "the expression ends where a number was expected");
  EXPECT_EQ(check("4.5*4").error, "only whole numbers are allowed (at position 1)");
  EXPECT_EQ(check("99999999999999999999").error, "a number is too long");
  // A product with 0 is not positive (0 is never given, but the step fails first).
  EXPECT_EQ(check("22+4*0").error,
            "4 * 0 is not positive; every step must give a positive whole number");
  EXPECT_EQ(check(std::string(100, '(') + "4" + std::string(100, ')')).error,
            "parentheses nested too deep");
  EXPECT_EQ(check(std::string(2000, '4')).error, "the answer is too long (over 1000 bytes)");
  // Any bytes: an error, never a crash or an exception (deterministic pseudo-random strings).
  const std::string alphabet = "0123456789+-*/() =.x\\{}a\xc3\x97";
  uint64_t s = 12345;
  for (int i = 0; i < 20000; ++i) {
    std::string a;
    const int n = static_cast<int>((s >> 7) % 24);
    for (int k = 0; k < n; ++k) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      a += alphabet[(s >> 33) % alphabet.size()];
    }
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    CountdownCheck c;
    EXPECT_NO_THROW(c = check_countdown(a, kNumbers, 22)) << a;
    EXPECT_TRUE(c.ok || !c.error.empty()) << a;
  }
}

TEST(CollabCountdown, OperationsFollowTheRules) {
  int64_t v = 0;
  EXPECT_TRUE(countdown_op(8, '/', 2, &v));
  EXPECT_EQ(v, 4);
  EXPECT_FALSE(countdown_op(8, '/', 3, &v));  // remainder
  EXPECT_FALSE(countdown_op(7, '-', 7, &v));  // zero
  EXPECT_FALSE(countdown_op(3, '-', 5, &v));  // negative
  EXPECT_FALSE(countdown_op(5, '*', 1, &v));  // useless
  EXPECT_FALSE(countdown_op(1, '*', 5, &v));
  EXPECT_FALSE(countdown_op(6, '/', 1, &v));
  EXPECT_TRUE(countdown_op(7, '/', 7, &v));  // 1 is a positive whole number
  EXPECT_EQ(v, 1);
  EXPECT_EQ(countdown_branches(4),
            (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}));
  EXPECT_EQ(countdown_branches(5).size(), 10u);
}

TEST(CollabCountdown, GeneratorIsDeterministicAndSolvable) {
  for (int n = 3; n <= 6; ++n) {
    for (uint64_t seed = 0; seed < 300; ++seed) {
      for (Split split : {Split::train, Split::test}) {
        const Countdown c = make_countdown(split, n, seed);
        const Countdown again = make_countdown(split, n, seed);
        ASSERT_EQ(c.numbers, again.numbers);
        ASSERT_EQ(c.target, again.target);
        ASSERT_EQ(c.text, again.text);
        ASSERT_EQ(c.numbers.size(), static_cast<size_t>(n));
        for (int64_t x : c.numbers) ASSERT_TRUE(x >= 1 && x <= 25);
        ASSERT_TRUE(c.target >= 10 && c.target <= 200) << c.target;
        ASSERT_EQ(std::count(c.numbers.begin(), c.numbers.end(), c.target), 0);
        const CountdownCheck ok = check_countdown(c.solution, c.numbers, c.target);
        ASSERT_TRUE(ok.ok) << c.solution << ": " << ok.error;
        // The known solution uses every number.
        int digits_runs = 0;
        for (size_t i = 0; i < c.solution.size(); ++i)
          digits_runs += std::isdigit(static_cast<unsigned char>(c.solution[i])) &&
                         (i == 0 || !std::isdigit(static_cast<unsigned char>(c.solution[i - 1])));
        ASSERT_EQ(digits_runs, n) << c.solution;
        ASSERT_TRUE(c.text.ends_with(kCountdownQuestion));
      }
    }
  }
  // The same problem on every platform (`hogwild collab problems --task countdown --split test
  // --numbers 4 --count 1 --seed 1` prints it; seed 1 * 1000003 + 0).
  const Countdown first = make_countdown(Split::test, 4, 1000003);
  EXPECT_EQ(first.numbers, (std::vector<int64_t>{19, 9, 4, 22}));
  EXPECT_EQ(first.target, 63);
  EXPECT_EQ(first.solution, "(4+22-19)*9");
  EXPECT_EQ(first.text,
            "Numbers: 19, 9, 4, 22\nTarget: 63\nCombine some of the numbers with +, -, * and / to "
            "make the target. Each number may be used once at most; every step must give a "
            "positive whole number, so divide only when nothing is left over.\nWhich expression "
            "of these numbers gives the target?");
  // The splits are separate seed spaces: the same seed gives other problems.
  int same = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const Countdown a = make_countdown(Split::train, 4, seed),
                    b = make_countdown(Split::test, 4, seed);
    same += a.numbers == b.numbers && a.target == b.target;
  }
  EXPECT_EQ(same, 0);
  EXPECT_THROW(make_countdown(Split::test, 2, 1), Error);
  EXPECT_THROW(make_countdown(Split::test, 7, 1), Error);
  EXPECT_THROW(make_countdown(Split::test_frames, 4, 1), Error);
}

TEST(CollabCountdown, SearchFindsASolutionOfEveryProblem) {
  // The search is complete: some branch reaches the target, with an expression the checker
  // accepts (4 and 5 numbers; 6 numbers make very long searches).
  for (int n = 4; n <= 5; ++n) {
    for (uint64_t seed = 0; seed < (n == 4 ? 300u : 40u); ++seed) {
      const Countdown c = make_countdown(Split::test, n, seed);
      bool found = false;
      for (int b = 1; b <= n * (n - 1) / 2 && !found; ++b) {
        const std::vector<SearchLine> lines = branch_lines(c, b);
        for (size_t i = 0; i < lines.size(); ++i) {
          ASSERT_EQ(lines[i].found, i + 1 == lines.size() && lines[i].found);
        }
        if (!lines.empty() && lines.back().found) {
          found = true;
          const CountdownCheck ok = check_countdown(lines.back().expression, c.numbers, c.target);
          ASSERT_TRUE(ok.ok) << lines.back().expression << ": " << ok.error;
        }
      }
      ASSERT_TRUE(found) << "n " << n << " seed " << seed;
    }
  }
}

TEST(CollabCountdown, BranchLinesByHand) {
  Countdown c;
  c.numbers = kNumbers;
  c.target = 22;
  // Branch 1 is the pair (4, 7): 4+7=11 leaves 9 2 11; its first pair 9, 2: 9+2=11 leaves 11 11,
  // whose sum is 22.
  const std::vector<SearchLine> b1 = branch_lines(c, 1);
  ASSERT_EQ(b1.size(), 2u);
  EXPECT_EQ(b1[0].text, " 4+7=11, left 9 2 11.");
  EXPECT_FALSE(b1[0].found);
  EXPECT_EQ(b1[1].text, " 9+2=11, then 11+11=22. Found: 4+7+9+2 = 22.");
  EXPECT_TRUE(b1[1].found);
  EXPECT_EQ(b1[1].expression, "4+7+9+2");
  // Branch 6 is the pair (9, 2): 9+2=11 leaves 4 7 11; 4+7=11 leaves 11 11 again.
  const std::vector<SearchLine> b6 = branch_lines(c, 6);
  ASSERT_EQ(b6.size(), 2u);
  EXPECT_EQ(b6[0].text, " 9+2=11, left 4 7 11.");
  EXPECT_EQ(b6[1].text, " 4+7=11, then 11+11=22. Found: 9+2+4+7 = 22.");
  // Target 100 from 2 3 (3 numbers... here 2, 3, 5): no branch can reach it: every line is written
  // and none is found. Branch 1 (2, 3): 2+3=5 then 5 5: 10, 25, 1 (5-5 is 0: skipped); 3-2=1 then
  // 5 1: 6, 4 (5*1 and 5/1 are useless); 2*3=6 then 5 6: 11, 1, 30 (6/5 has a remainder).
  Countdown none;
  none.numbers = {2, 3, 5};
  none.target = 100;
  const std::vector<SearchLine> n1 = branch_lines(none, 1);
  ASSERT_EQ(n1.size(), 3u);
  EXPECT_EQ(n1[0].text, " 2+3=5, then 5+5=10, 5*5=25, 5/5=1.");
  EXPECT_EQ(n1[1].text, " 3-2=1, then 5+1=6, 5-1=4.");
  EXPECT_EQ(n1[2].text, " 2*3=6, then 5+6=11, 6-5=1, 5*6=30.");
  EXPECT_THROW(branch_lines(none, 4), Error);
}

TEST(CollabCountdown, TasksHaveNames) {
  EXPECT_EQ(parse_task("packs"), Task::packs);
  EXPECT_EQ(parse_task("countdown"), Task::countdown);
  try {
    parse_task("sudoku");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown task 'sudoku'; the supported tasks are packs and "
                                         "countdown"),
              std::string::npos)
        << e.what();
  }
}

// ---- The policy on hand-built views (combined layout).

ViewText history(const std::string& bytes) { return {ViewText::Kind::history, -1, true, bytes}; }
ViewText step(int w, const std::string& bytes, bool finished = false) {
  return {ViewText::Kind::step, w, finished, bytes};
}

std::string plan_text(const StepPlan& p) {
  std::string s;
  for (const Piece& pc : p.pieces) s += pc.eos ? "<EOS>" : pc.text.empty() ? "#" : pc.text;
  return s;
}

Countdown hand_problem() {
  Countdown c;
  c.numbers = kNumbers;
  c.target = 22;
  return c;
}

TEST(CollabCountdownOracle, FirstStepsClaimOneBranchPerWorker) {
  const Countdown c = hand_problem();
  CountdownOracle o(c, text().fmt, 3, Layout::combined);
  EXPECT_EQ(o.branches(), 6);
  EXPECT_EQ(o.claim_text(2), "2 (4 and 9)");
  // Step 1: all three start together; Alice is at her digit, Bob is fresh.
  SeenState s = o.read(2, {history(""), step(0, "Alice: Left: 1-6. I take branch "),
                           step(1, "Bob: Left: 1-6. I take branch "), step(2, "Carol:")});
  const StepPlan p = o.plan_step(s, false);
  EXPECT_EQ(p.kind, StepPlan::Kind::claim);
  EXPECT_EQ(plan_text(p), " Left: 1-6. I take branch #.\n\n");
  s = o.read(
      2, {history(""), step(0, "Alice: Left: 1-6. I take branch "),
          step(1, "Bob: Left: 1-6. I take branch "), step(2, "Carol: Left: 1-6. I take branch ")});
  EXPECT_EQ(o.choose_part(s, false), 3);  // after Alice's and Bob's
  EXPECT_EQ(o.choose_part(s, true), 1);   // careless
  EXPECT_TRUE(o.contested(s));
}

TEST(CollabCountdownOracle, LinesFoundStopAndAnswer) {
  const Countdown c = hand_problem();
  CountdownOracle o(c, text().fmt, 2, Layout::combined);
  const std::string h =
      "Alice: Left: 1-6. I take branch 1 (4 and 7).\n\nBob: Left: 1-6. I take branch 2 (4 and "
      "9).\n\n";
  // Alice holds branch 1 with no line yet: its first line.
  SeenState s = o.read(0, {history(h), step(1, "Bob: 4+9=13, left 7 2 13."), step(0, "Alice:")});
  EXPECT_EQ(o.held_part(s, 0), 1);
  EXPECT_EQ(o.held_part(s, 1), 2);
  StepPlan p = o.plan_step(s, false);
  EXPECT_EQ(p.kind, StepPlan::Kind::work);
  EXPECT_EQ(plan_text(p), " 4+7=11, left 9 2 11.\n\n");
  // After it, the line that reaches the target.
  const std::string h2 = h + "Alice: 4+7=11, left 9 2 11.\n\n";
  s = o.read(0, {history(h2), step(0, "Alice:")});
  p = o.plan_step(s, false);
  EXPECT_EQ(p.kind, StepPlan::Kind::found);
  EXPECT_EQ(plan_text(p), " 9+2=11, then 11+11=22. Found: 4+7+9+2 = 22.\n\n");
  // The finder answers; the other stops, then leaves with EOS.
  const std::string h3 = h2 + "Alice: 9+2=11, then 11+11=22. Found: 4+7+9+2 = 22.\n\n";
  s = o.read(0, {history(h3), step(0, "Alice:")});
  p = o.plan_step(s, false);
  EXPECT_EQ(p.kind, StepPlan::Kind::answer);
  EXPECT_EQ(plan_text(p), " The answer is \\boxed{4+7+9+2}.\n\n");
  s = o.read(1, {history(h3), step(1, "Bob:")});
  p = o.plan_step(s, false);
  EXPECT_EQ(p.kind, StepPlan::Kind::stop);
  EXPECT_EQ(plan_text(p), " Alice found it, so I stop.\n\n");
  s = o.read(1, {history(h3 + "Bob: Alice found it, so I stop.\n\n"), step(1, "Bob:")});
  EXPECT_EQ(o.plan_step(s, false).kind, StepPlan::Kind::end);
  EXPECT_EQ(plan_text(o.plan_step(s, false)), "<EOS>");
}

TEST(CollabCountdownOracle, CollisionsAndFinishedBranches) {
  Countdown none;  // 2 3 5 -> 100: no branch finds it
  none.numbers = {2, 3, 5};
  none.target = 100;
  CountdownOracle o(none, text().fmt, 3, Layout::combined);
  // Alice and Bob both took branch 2: Bob (the higher index) switches, to branch 3 (Carol holds 1).
  const std::string h =
      "Alice: Left: 1-3. I take branch 2 (2 and 5).\n\nBob: Left: 1-3. I take branch 2 (2 and "
      "5).\n\nCarol: Left: 1-3. I take branch 1 (2 and 3).\n\n";
  SeenState s = o.read(1, {history(h), step(1, "Bob:")});
  StepPlan p = o.plan_step(s, false);
  EXPECT_EQ(p.kind, StepPlan::Kind::switch_part);
  EXPECT_EQ(plan_text(p), " Alice took branch 2 too, so I take branch #.\n\n");
  EXPECT_EQ(o.choose_part(s, false), 3);
  EXPECT_TRUE(o.check_truth(s));
  // Alice keeps it, and says so when the check asks.
  s = o.read(0, {history(h), step(0, "Alice: Is someone else on my branch? (yes/no):")});
  p = o.plan_step(s, true);
  EXPECT_EQ(plan_text(p), " yes. Bob took branch 2 too, but I keep it.\n\n");
  // Carol ends branch 1 (three lines, none found): she says so, then the ledger and the action.
  const std::string h2 = h +
                         "Bob: Alice took branch 2 too, so I take branch 3 (3 and 5).\n\nCarol: "
                         "2+3=5, then 5+5=10, 5*5=25, 5/5=1.\n\nCarol: 3-2=1, then 5+1=6, "
                         "5-1=4.\n\nCarol: 2*3=6, then 5+6=11, 6-5=1, 5*6=30.\n\n";
  s = o.read(2, {history(h2), step(2, "Carol:")});
  EXPECT_EQ(o.held_part(s, 2), 1);
  p = o.plan_step(s, false);
  EXPECT_EQ(p.kind, StepPlan::Kind::stop);
  EXPECT_EQ(plan_text(p),
            " Branch 1: no solution. Left: 2 (Alice), 3 (Bob). Nothing is free, so I stop.\n\n");
  EXPECT_EQ(branch_done_in(" Branch 1: no solution. Left: none."), 1);
  EXPECT_EQ(branch_done_in(" Branch 1: no sol"), 0);
}

// ---- Real scripted sessions (byte codec, the countdown formatting): right answers, and teams
// answer in fewer serial steps than one worker.

Trace run(int numbers, uint64_t seed, int workers, Layout layout = Layout::combined,
          int64_t collab_every = 0) {
  TraceSpec spec;
  spec.task = Task::countdown;
  spec.split = Split::test;
  spec.k = numbers;
  spec.pack_seed = seed;
  spec.n_workers = workers;
  spec.layout = layout;
  spec.collab_every = collab_every;
  spec.max_context = 1 << 20;
  spec.budget = 0;  // until an answer
  spec.picker.whole = workers == 1;
  return run_trace(spec, text().fmt, &text().tmpl, text().codec);
}

TEST(CollabCountdownTraces, TeamsAnswerInFewerSerialSteps) {
  // Serial steps of the runs (test split, 4 numbers, combined layout, no checks), from the runs'
  // deterministic output (`hogwild collab show -m tools/collab/countdown-template --bytes --task
  // countdown --k 4 -w W --seed S --split test --collab-every 0 --max-context 100000`).
  // Seed 1: numbers 1 22 1 19, target 82: one worker searches branch 1 (1, 22) to its end before
  // branch 2 (1, 1) finds (1+1)*(22+19) in its second line; two workers: Bob starts there at once
  // (a third and fourth worker do not help). Seed 17: numbers 3 15 2 8, target 167: branch 3
  // (3, 8) finds 2+15*(3+8), which Carol takes at once in a team of four.
  struct Case {
    uint64_t seed;
    int64_t steps[3];  // 1, 2, 4 workers
  };
  const Case cases[] = {{1, {865, 173, 173}}, {7, {6082, 3097, 1334}}, {17, {3697, 1658, 390}}};
  for (const Case& c : cases) {
    int i = 0;
    for (int w : {1, 2, 4}) {
      const Trace t = run(4, c.seed, w);
      EXPECT_TRUE(t.correct) << "seed " << c.seed << ", " << w
                             << " workers: " << t.result.answer.value_or("-");
      EXPECT_EQ(t.result.serial_steps, c.steps[i]) << "seed " << c.seed << ", " << w << " workers";
      ++i;
    }
    EXPECT_LT(c.steps[1], c.steps[0]);
    EXPECT_LE(c.steps[2], c.steps[1]);
  }
  // Over 50 problems: every run right, and the serial steps fall with the team size.
  int64_t total[3] = {0, 0, 0};
  for (uint64_t seed = 0; seed < 50; ++seed) {
    int i = 0;
    for (int w : {1, 2, 4}) {
      const Trace t = run(4, seed, w);
      ASSERT_TRUE(t.correct) << "seed " << seed << ", " << w << " workers";
      total[i++] += t.result.serial_steps;
    }
  }
  // (from the same runs' output)
  EXPECT_EQ(total[0], 53862);
  EXPECT_EQ(total[1], 26989);
  EXPECT_EQ(total[2], 16020);
}

TEST(CollabCountdownTraces, EveryLayoutWithChecksAndCollisions) {
  // Three workers, collaboration checks every 16 tokens, careless claims: collisions happen and
  // are resolved; every run ends with a right answer.
  for (Layout layout : {Layout::combined, Layout::interleaved, Layout::contiguous}) {
    for (uint64_t seed = 0; seed < 20; ++seed) {
      TraceSpec spec;
      spec.task = Task::countdown;
      spec.split = Split::test;
      spec.k = seed % 2 ? 4 : 5;
      spec.pack_seed = seed;
      spec.n_workers = 3;
      spec.layout = layout;
      spec.collab_every = 16;
      spec.max_context = 1 << 20;
      spec.budget = 0;
      spec.picker.careless = 0.8;
      spec.picker.seed = seed;
      const Trace t = run_trace(spec, text().fmt, &text().tmpl, text().codec);
      ASSERT_TRUE(t.correct) << layout_name(layout) << " seed " << seed << "\n"
                             << t.result.history_text;
    }
  }
}

TEST(CollabCountdownEval, DatasetAndScoring) {
  // A file of `hogwild collab problems --task countdown` is a countdown dataset for hogwild eval.
  namespace fs = std::filesystem;
  const fs::path file = fs::path(::testing::TempDir()) / "countdown_eval_test.jsonl";
  {
    std::ofstream f(file);
    f << R"({"id": "a", "task": "countdown", "problem": "Numbers: 4, 7, 9, 2 ...", )"
      << R"("numbers": [4, 7, 9, 2], "target": 22, "answer": "(4+7)*2"})"
      << "\n";
  }
  eval::DatasetOptions o;
  o.name_or_path = file.string();
  o.fields.question = "problem";
  o.fields.id = "id";
  const eval::Dataset d = eval::load_dataset(o);
  ASSERT_EQ(d.kind, eval::ProblemKind::countdown);
  EXPECT_STREQ(eval::kind_name(d.kind), "countdown");
  ASSERT_EQ(d.problems.size(), 1u);
  const eval::Problem& p = d.problems[0];
  EXPECT_EQ(p.numbers, kNumbers);
  EXPECT_EQ(p.target, 22);
  EXPECT_EQ(p.gold, std::vector<std::string>{"(4+7)*2"});
  // Another solution than the gold is right; the checker's error is the detail.
  const eval::ScoreOptions so;
  EXPECT_TRUE(eval::score_answer(p, d.kind, "4+7+9+2", so).correct);
  const eval::Score bad = eval::score_answer(p, d.kind, "(9+2)*2", so);
  EXPECT_FALSE(bad.correct);
  EXPECT_EQ(bad.detail, "2 is used 2 times; it is given once");
  EXPECT_EQ(bad.status, eval::ParseStatus::ok);
  EXPECT_EQ(eval::score_answer(p, d.kind, "4 + x", so).status, eval::ParseStatus::unparsed);
  EXPECT_FALSE(eval::score_answer(p, d.kind, std::nullopt, so).correct);
  // A record without the numbers is refused.
  {
    std::ofstream f(file);
    f << R"({"id": "b", "task": "countdown", "problem": "x", "target": 22, "answer": "1"})"
      << "\n";
  }
  EXPECT_THROW(eval::load_dataset(o), Error);
  // Numbers and targets that no expression can reach under the rules are refused, by value.
  for (const char* rec :
       {R"({"id": "c", "task": "countdown", "problem": "x", "numbers": [-2, 3], "target": 1,
            "answer": "1"})",
        R"({"id": "d", "task": "countdown", "problem": "x", "numbers": [2, 3], "target": -2,
            "answer": "1"})",
        R"({"id": "e", "task": "countdown", "problem": "x", "numbers": [18446744073709551615],
            "target": 5, "answer": "1"})"}) {
    {
      std::ofstream f(file);
      std::string one(rec);
      std::replace(one.begin(), one.end(), '\n', ' ');
      f << one << "\n";
    }
    try {
      eval::load_dataset(o);
      ADD_FAILURE() << "accepted " << rec;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("from 1 to 10^15, got "), std::string::npos) << e.what();
    }
  }
  fs::remove(file);
}

}  // namespace
}  // namespace hogwild::collab
