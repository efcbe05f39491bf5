// The result folder (results.h: resume, torn tails, another configuration refused), the summary
// statistics (summary.h: accuracy, Wilson interval, pass@k by hand) and the --compat paper
// snapshot arithmetic (runner.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "eval/results.h"
#include "eval/runner.h"
#include "eval/summary.h"

namespace hogwild::eval {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ResultDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("hogwild_results_" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<json> lines_of(const std::string& id, int sample, std::vector<int> budgets) {
    std::vector<json> v;
    for (int b : budgets)
      v.push_back({{"id", id}, {"sample", sample}, {"budget", b}, {"correct", true}});
    return v;
  }
  fs::path dir_;
  const json config_ = {{"method", "hogwild"}, {"budgets", {4, 8}}, {"workers", 2}};
};

TEST_F(ResultDir, ResumesCompletePairsAndCutsATornTail) {
  {
    ResultStore s(dir_, config_, 2);
    s.append("p1", 0, lines_of("p1", 0, {4, 8}), json{{"t", 1}});
    s.append("p2", 0, lines_of("p2", 0, {4, 8}), json{{"t", 2}});
  }
  // A run killed mid-write: p3 with one of its two lines, then half a line.
  {
    std::ofstream f(dir_ / "results.jsonl", std::ios::app);
    f << lines_of("p3", 0, {4})[0].dump() << "\n"
      << "{\"id\": \"p4\", \"sam";
  }
  ResultStore s(dir_, config_, 2);
  EXPECT_TRUE(s.done("p1", 0));
  EXPECT_TRUE(s.done("p2", 0));
  EXPECT_FALSE(s.done("p3", 0));
  EXPECT_FALSE(s.done("p1", 1));
  EXPECT_EQ(s.dropped(), 2u);
  EXPECT_EQ(s.lines().size(), 4u);
  EXPECT_EQ(read_results(dir_).size(), 4u);  // the file itself was cut back
  EXPECT_TRUE(fs::exists(dir_ / "transcripts" / transcript_name("p2", 0)));
}

TEST_F(ResultDir, AnotherConfigurationIsRefused) {
  { ResultStore s(dir_, config_, 2); }
  json other = config_;
  other["budgets"] = {4, 16};
  try {
    ResultStore s(dir_, other, 2);
    FAIL() << "a different configuration was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds results of a different configuration (budgets: "
                                         "[4,8] there, [4,16] now)"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ResultDir, ForeignFolderIsRefused) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "notes.txt") << "mine";
  EXPECT_THROW(ResultStore(dir_, config_, 2), Error);
}

// A bad line before good ones is corruption, not a torn tail: refused with the file and line
// (before, it was dropped and the file rewritten without it: one problem fewer, silently).
TEST_F(ResultDir, CorruptLineInTheMiddleIsNamed) {
  {
    ResultStore s(dir_, config_, 2);
    s.append("p1", 0, lines_of("p1", 0, {4, 8}), json{{"t", 1}});
  }
  {
    std::ofstream f(dir_ / "results.jsonl", std::ios::app);
    f << "{\"id\": \"p2\", \"sam\n";
    for (const json& j : lines_of("p3", 0, {4, 8})) f << j.dump() << "\n";
  }
  const std::string want = (dir_ / "results.jsonl").string() + ":3: not valid JSON";
  try {
    ResultStore s(dir_, config_, 2);
    FAIL() << "a corrupt results.jsonl was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
  try {
    read_results(dir_);
    FAIL() << "a corrupt results.jsonl was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

// One eval per folder: a second store on it is refused while the first holds its lock, and
// accepted once the first is gone.
TEST_F(ResultDir, SecondStoreOnTheFolderIsRefused) {
  {
    ResultStore first(dir_, config_, 2);
    try {
      ResultStore second(dir_, config_, 2);
      FAIL() << "two stores on one folder";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("is in use by another hogwild eval"), std::string::npos)
          << e.what();
    }
  }
  ResultStore again(dir_, config_, 2);
  EXPECT_EQ(again.lines().size(), 0u);
}

TEST_F(ResultDir, FileIsNotAFolder) {
  std::ofstream(dir_) << "x";
  try {
    ResultStore s(dir_, config_, 2);
    FAIL() << "a file was taken for a folder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a file, not a folder"), std::string::npos) << e.what();
  }
  fs::remove(dir_);
}

TEST(TranscriptName, SafeAndDistinct) {
  EXPECT_EQ(transcript_name("test/algebra/1.json", 0).substr(0, 20), "test_algebra_1.json-");
  EXPECT_NE(transcript_name("a/b", 0), transcript_name("a_b", 0));
  EXPECT_TRUE(transcript_name("x", 3).ends_with("-s3.json"));
}

TEST(Summary, AccuracyPassAtKByHand) {
  // Problem A: 2 samples, 1 correct; B: 2 samples, both correct (budget 4).
  std::vector<json> lines = {
      {{"id", "A"}, {"sample", 0}, {"budget", 4}, {"correct", true}, {"parse_status", "ok"}},
      {{"id", "A"}, {"sample", 1}, {"budget", 4}, {"correct", false}, {"parse_status", "unparsed"}},
      {{"id", "B"}, {"sample", 0}, {"budget", 4}, {"correct", true}, {"parse_status", "ok"}},
      {{"id", "B"}, {"sample", 1}, {"budget", 4}, {"correct", true}, {"parse_status", "ok"}}};
  SeriesSummary s = summarize({{"method", "single"}, {"workers", 1}, {"samples", 2}}, lines, "d");
  ASSERT_EQ(s.budgets.size(), 1u);
  const BudgetStats& b = s.budgets[0];
  EXPECT_EQ(b.problems, 2u);
  EXPECT_DOUBLE_EQ(b.accuracy, 0.75);
  ASSERT_EQ(b.pass_at_k.size(), 2u);
  EXPECT_DOUBLE_EQ(b.pass_at_k[0], 0.75);  // A: 1 - C(1,1)/C(2,1) = 1/2; B: 1
  EXPECT_DOUBLE_EQ(b.pass_at_k[1], 1.0);   // A: 1 - C(1,2)/C(2,2) = 1;   B: 1
  EXPECT_EQ(b.unparsed, 1u);
  // Two samples: mean +- 1.96 sd / sqrt(2), sd of {0.5, 1} = 0.35355.
  EXPECT_NEAR(b.ci_low, 0.75 - 1.959964 * 0.353553 / std::sqrt(2.0), 1e-5);
  EXPECT_DOUBLE_EQ(b.ci_high, 1.0);  // clipped
  EXPECT_EQ(s.label, "single 1w");
}

TEST(Summary, WilsonIntervalOfOneSample) {
  // 1 of 3 solved: the Wilson 95% interval is [0.0615, 0.7923].
  std::vector<json> lines;
  for (int i = 0; i < 3; ++i)
    lines.push_back({{"id", std::to_string(i)}, {"sample", 0}, {"budget", 8}, {"correct", i == 0}});
  SeriesSummary s =
      summarize({{"method", "hogwild"}, {"workers", 2}, {"layout", "combined"}}, lines, "d");
  EXPECT_NEAR(s.budgets[0].ci_low, 0.0615, 1e-4);
  EXPECT_NEAR(s.budgets[0].ci_high, 0.7923, 1e-4);
  EXPECT_EQ(s.label, "hogwild 2w combined");
}

TEST(SelfConsistency, MajorityVoteOverEquivalentAnswers) {
  using A = std::optional<std::string>;
  // 0.5 and \frac12 are one class (2 votes) against 3 (1 vote).
  EXPECT_EQ(majority_vote({A("3"), A("0.5"), A("\\frac{1}{2}")}, ProblemKind::math), "0.5");
  // A tie goes to the class seen first.
  EXPECT_EQ(majority_vote({A("7"), A("8"), A("8"), A("7.0")}, ProblemKind::math), "7");
  // Missing answers do not vote; none at all gives none.
  EXPECT_EQ(majority_vote({A(), A("4"), A()}, ProblemKind::math), "4");
  EXPECT_EQ(majority_vote({A(), A()}, ProblemKind::math), std::nullopt);
  // Code: identical text only.
  EXPECT_EQ(majority_vote({A("print(1)"), A("print( 1)"), A("print( 1)")}, ProblemKind::code),
            "print( 1)");
}

TEST(CompatPaper, SnapshotArithmetic) {
  RunSpec spec;
  spec.budgets = {4, 8, 16};
  EXPECT_EQ(snapshot_steps(spec), (std::vector<int64_t>{4, 8}));
  spec.compat_paper = true;
  EXPECT_EQ(snapshot_steps(spec), (std::vector<int64_t>{5, 9}));  // b + 1, not the largest
  spec.budgets = {16};
  EXPECT_TRUE(snapshot_steps(spec).empty());
  EXPECT_EQ(compat_finisher_tokens("limo"), 16);
  EXPECT_EQ(compat_finisher_tokens("olympiadbench-math"), 64);
  EXPECT_EQ(compat_finisher_tokens("olympiadbench-physics"), 64);
  EXPECT_EQ(compat_finisher_tokens("livecodebench"), 1024);
  EXPECT_EQ(compat_finisher_tokens("gsm8k"), 0);
}

}  // namespace
}  // namespace hogwild::eval
