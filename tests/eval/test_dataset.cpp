// Dataset loaders (dataset.h) on every file of the datasets folder (../shared/datasets from the
// repository, or $HOGWILD_DATASETS), with counts and answers from each SOURCE.md; the gsm8k5
// packing; and the messages for bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "eval/dataset.h"
#include "eval/math_equiv.h"

namespace hogwild::eval {
namespace {

namespace fs = std::filesystem;

fs::path datasets() {
  try {
    return find_datasets_dir("", {fs::path(HOGWILD_SOURCE_DIR) / ".." / "shared" / "datasets"});
  } catch (const Error&) {
    return {};
  }
}

Dataset load(const std::string& name, uint64_t seed = 0) {
  DatasetOptions o;
  o.name_or_path = name;
  o.datasets_dir = datasets();
  o.seed = seed;
  return load_dataset(o);
}

#define NEED_DATASETS()                                                                   \
  if (datasets().empty())                                                                 \
  GTEST_SKIP() << "no datasets folder: put shared/datasets beside the repository or set " \
                  "HOGWILD_DATASETS"

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Dataset, Gsm8k) {
  NEED_DATASETS();
  Dataset d = load("gsm8k");
  ASSERT_EQ(d.problems.size(), 1319u);
  EXPECT_EQ(d.kind, ProblemKind::math);
  EXPECT_EQ(d.problems[0].gold, std::vector<std::string>{"18"});  // Janet's ducks
  EXPECT_TRUE(d.problems[0].text.starts_with("Janet"));
  for (const Problem& p : d.problems) {
    ASSERT_EQ(p.gold.size(), 1u);
    EXPECT_EQ(p.gold[0].find(','), std::string::npos) << p.id;
    EXPECT_TRUE(math_equal(p.gold[0] + ".0", p.gold[0])) << "not read as a number: " << p.gold[0];
  }
}

TEST(Dataset, Gsm8k5PackingIsReproducibleFromTheSeed) {
  NEED_DATASETS();
  Dataset a = load("gsm8k5", 7), b = load("gsm8k5", 7), c = load("gsm8k5", 8);
  Dataset singles = load("gsm8k");
  ASSERT_EQ(a.problems.size(), 263u);  // 1319 / 5, the 4 left over are dropped
  for (size_t i = 0; i < a.problems.size(); ++i) EXPECT_EQ(a.problems[i].id, b.problems[i].id);
  EXPECT_NE(a.problems[0].id, c.problems[0].id);
  std::set<std::string> seen;
  for (const Problem& p : a.problems) {
    ASSERT_EQ(p.gold.size(), 5u);
    EXPECT_TRUE(p.gold_ordered);
    EXPECT_NE(p.text.find("Problem 5: "), std::string::npos);
    // The ids name the five questions; each question's gold is its own.
    std::stringstream ss(p.id);
    std::string part;
    int k = 0;
    while (std::getline(ss, part, '+')) {
      EXPECT_TRUE(seen.insert(part).second) << "question " << part << " packed twice";
      EXPECT_EQ(p.gold[k++], singles.problems[std::stoul(part)].gold[0]);
    }
    EXPECT_EQ(k, 5);
  }
  // Every index lands in exactly one group.
  const auto g = gsm8k5_groups(10, 1);
  std::set<size_t> all;
  for (auto& grp : g) all.insert(grp.begin(), grp.end());
  EXPECT_EQ(g.size(), 2u);
  EXPECT_EQ(all.size(), 10u);
}

TEST(Dataset, Math500) {
  NEED_DATASETS();
  Dataset d = load("math500");
  ASSERT_EQ(d.problems.size(), 500u);
  std::set<std::string> ids;
  for (const Problem& p : d.problems) {
    EXPECT_TRUE(ids.insert(p.id).second) << p.id;
    EXPECT_FALSE(p.gold[0].empty());
  }
  EXPECT_TRUE(d.problems[0].id.starts_with("test/"));
}

TEST(Dataset, Aime2025AnswersFromSourceMd) {
  NEED_DATASETS();
  Dataset d = load("aime2025");
  const std::vector<std::string> answers = {"70",  "588", "16",  "117", "279", "504", "821", "77",
                                            "62",  "81",  "259", "510", "204", "60",  "735", "468",
                                            "49",  "82",  "106", "336", "293", "237", "610", "149",
                                            "907", "113", "19",  "248", "104", "240"};
  ASSERT_EQ(d.problems.size(), 30u);
  for (size_t i = 0; i < 30; ++i) EXPECT_EQ(d.problems[i].gold[0], answers[i]) << i;
  EXPECT_EQ(d.problems[0].id, "I-1");
  EXPECT_EQ(d.problems[29].id, "II-15");
}

TEST(Dataset, OlympiadBenchMath) {
  NEED_DATASETS();
  Dataset d = load("olympiadbench-math");
  ASSERT_EQ(d.problems.size(), 675u);
  for (const Problem& p : d.problems) EXPECT_FALSE(p.gold.empty()) << p.id;
}

TEST(Dataset, OlympiadBenchPhysicsFilter) {
  NEED_DATASETS();
  Dataset d = load("olympiadbench-physics");
  ASSERT_EQ(d.problems.size(), 583u);  // olympiadbench/SOURCE.md: open-ended, auto, no images
  EXPECT_EQ(d.kind, ProblemKind::physics);
  int with_tolerance = 0;
  for (const Problem& p : d.problems) {
    EXPECT_EQ(p.text.find("!["), std::string::npos);
    with_tolerance += !p.tolerance.empty();
  }
  EXPECT_GT(with_tolerance, 100);
}

TEST(Dataset, LiveCodeBenchTestsFromEveryStatement) {
  NEED_DATASETS();
  Dataset d = load("livecodebench");
  ASSERT_EQ(d.problems.size(), 279u);
  EXPECT_EQ(d.kind, ProblemKind::code);
  int call = 0;
  for (const Problem& p : d.problems) {
    EXPECT_FALSE(p.tests.empty()) << p.id;
    call += !p.method.empty();
  }
  EXPECT_EQ(call, 104);  // LeetCode problems (class Solution); the other 175 read stdin
  EXPECT_EQ(d.problems[0].id, "abc365_b");
  ASSERT_EQ(d.problems[0].tests.size(), 2u);
  EXPECT_EQ(d.problems[0].tests[0].input, "4\n8 2 5 1\n");
  EXPECT_EQ(d.problems[0].tests[0].output, "3\n");
  EXPECT_NE(d.note.find("hidden tests are not available"), std::string::npos);
}

TEST(Dataset, LimoWithoutItsFileSaysWhereItGoes) {
  NEED_DATASETS();
  if (fs::exists(datasets() / "limo" / "limo.jsonl")) {
    EXPECT_EQ(load("limo").problems.size(), 817u);
    return;
  }
  EXPECT_NE(message_of([] { load("limo"); }).find("limo/limo.jsonl' not found"), std::string::npos);
}

class JsonlFile : public ::testing::Test {
 protected:
  std::string write(const std::string& body) {
    path_ = testing::TempDir() + "/hogwild_eval_" + std::to_string(getpid()) + ".jsonl";
    std::ofstream(path_) << body;
    return path_;
  }
  void TearDown() override { fs::remove(path_); }
  std::string path_;
};

TEST_F(JsonlFile, FieldMapping) {
  DatasetOptions o;
  o.name_or_path = write(
      "{\"q\": \"1+1?\", \"a\": \"The sum.\\n#### 2\", \"k\": \"x1\"}\n\n"
      "{\"q\": \"Half?\", \"a\": \"so \\\\boxed{\\\\frac{1}{2}}\", \"k\": \"x2\"}\n"
      "{\"q\": \"Roots?\", \"a\": [\"1\", \"-1\"], \"k\": 3}\n");
  o.fields = {"q", "a", "k"};
  Dataset d = load_dataset(o);
  ASSERT_EQ(d.problems.size(), 3u);
  EXPECT_EQ(d.problems[0].gold[0], "2");
  EXPECT_EQ(d.problems[1].gold[0], "\\frac{1}{2}");
  EXPECT_EQ(d.problems[2].gold, (std::vector<std::string>{"1", "-1"}));
  EXPECT_EQ(d.problems[2].id, "3");
}

TEST_F(JsonlFile, MalformedLineNamesItsNumber) {
  DatasetOptions o;
  o.name_or_path = write("{\"question\": \"a\", \"answer\": \"1\"}\n{\"question\": \"b\", \n");
  EXPECT_NE(message_of([&] { load_dataset(o); }).find(":2: not a valid JSON line"),
            std::string::npos);
}

TEST_F(JsonlFile, MissingAnswerFieldNamesTheFlag) {
  DatasetOptions o;
  o.name_or_path = write("{\"question\": \"a\", \"solution\": \"1\"}\n");
  const std::string m = message_of([&] { load_dataset(o); });
  EXPECT_NE(m.find(":1: no field 'answer' (the record has: question, solution); name the right one "
                   "with --answer-field"),
            std::string::npos)
      << m;
}

TEST(Dataset, UnknownNameListsTheNames) {
  DatasetOptions o;
  o.name_or_path = "gsm9k";
  EXPECT_NE(message_of([&] {
              load_dataset(o);
            }).find("unknown dataset 'gsm9k'; use one of gsm8k, gsm8k5"),
            std::string::npos);
  o.name_or_path = "/nonexistent/x.jsonl";
  EXPECT_NE(message_of([&] { load_dataset(o); }).find("file '/nonexistent/x.jsonl' not found"),
            std::string::npos);
}

}  // namespace
}  // namespace hogwild::eval
