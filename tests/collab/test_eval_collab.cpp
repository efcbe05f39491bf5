// `hogwild eval` on the shipped collaboration model (models/packs-collab) and the problems of
// `hogwild collab problems`, as tools/collab/eval_device.sh runs it (on the CPU here): the JSONL
// fields mapped with --question-field/--answer-field/--id-field, the model's formatting file,
// boxed integer answers scored against the generator's totals, budget points from one run; the
// independent layout (self-consistency) with the packs-collab formatting reproduces one worker;
// two workers answer in fewer serial steps than one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

namespace hogwild {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBin = std::string(HOGWILD_BINARY_DIR) + "/hogwild";
const std::string kModel = HOGWILD_SOURCE_DIR "/models/packs-collab";

int sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

std::vector<json> lines(const fs::path& p) {
  std::vector<json> v;
  std::ifstream f(p);
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) v.push_back(json::parse(line));
  return v;
}

class EvalCollab : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kBin) || !fs::exists(kModel + "/model.safetensors")) return;
    root_ = fs::path(::testing::TempDir()) / ("hogwild_eval_collab_" + std::to_string(getpid()));
    fs::create_directories(root_);
    ASSERT_EQ(sh(kBin +
                 " collab problems --split test --wording first --k 2 --count 3 --seed 11 "
                 "--out " +
                 (root_ / "problems.jsonl").string()),
              0);
    problems_ = lines(root_ / "problems.jsonl");
  }
  static void TearDownTestSuite() {
    if (!root_.empty()) fs::remove_all(root_);
  }
  void SetUp() override {
    if (root_.empty()) GTEST_SKIP() << "needs build/hogwild and models/packs-collab";
  }
  /// Runs eval with `flags` into root/name; its result lines.
  static std::vector<json> eval(const std::string& name, const std::string& flags) {
    const std::string cmd = kBin + " eval -m " + kModel + " --format " + kModel +
                            "/hogwild_format.json --dataset " +
                            (root_ / "problems.jsonl").string() +
                            " --question-field problem --answer-field answer --id-field id"
                            " --budgets 50,100,150,200,400 --device cpu --concurrency 3 --out " +
                            (root_ / name).string() + " " + flags;
    EXPECT_EQ(sh(cmd), 0) << cmd;
    return lines(root_ / name / "results.jsonl");
  }
  /// (id, budget) -> (answer or "", serial steps).
  static std::map<std::pair<std::string, int>, std::tuple<std::string, int64_t>> points(
      const std::vector<json>& v) {
    std::map<std::pair<std::string, int>, std::tuple<std::string, int64_t>> m;
    for (const json& j : v)
      m[{j["id"], j["budget"]}] = {j["answer"].is_null() ? "" : j["answer"].get<std::string>(),
                                   j["serial_steps"].get<int64_t>()};
    return m;
  }
  static inline fs::path root_;
  static inline std::vector<json> problems_;
};

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The model's own hogwild_format.json is run's default: without --format the formatting is the
// file's (before, run took the generic one from the chat template and the model failed).
TEST(RunCollabModel, UsesTheModelsOwnFormatting) {
  if (!fs::exists(kBin)) GTEST_SKIP() << "hogwild not built";
  const std::string out = ::testing::TempDir() + "/hogwild_collab_fmt_" + std::to_string(getpid());
  ASSERT_EQ(
      std::system((kBin + " run -m " + kModel + " --print-format >" + out + ".default").c_str()),
      0);
  ASSERT_EQ(std::system((kBin + " run --print-format --format " + kModel +
                         "/hogwild_format.json >" + out + ".file")
                            .c_str()),
            0);
  const json own = json::parse(slurp(out + ".default")), file = json::parse(slurp(out + ".file"));
  EXPECT_EQ(own, file);
  EXPECT_EQ(own["name"], file["name"]);
  // And a run without --format works on it, with its worker names.
  const std::string j = out + ".json";
  ASSERT_EQ(sh(kBin + " run -m " + kModel + " -w 2 --budget 3 --greedy --json " + j +
               " 'Alice has 3 apples and Bob has 4 apples. How many apples do they have?'"),
            0);
  EXPECT_EQ(json::parse(slurp(j))["formatting"]["worker_names"], file["worker_names"]);
}

// --format text writes the same problems as the JSONL's "problem" fields, a blank line between
// two problems (a pack's text spans several lines).
TEST_F(EvalCollab, ProblemsAsTextAreTheJsonlProblemsSeparatedByBlankLines) {
  const fs::path txt = root_ / "problems.txt";
  ASSERT_EQ(sh(kBin +
               " collab problems --split test --wording first --k 2 --count 3 --seed 11 "
               "--format text --out " +
               txt.string()),
            0);
  std::ifstream f(txt);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(problems_.size(), 3u);
  std::string want;
  for (size_t i = 0; i < problems_.size(); ++i) {
    if (i > 0) want += '\n';
    want += problems_[i]["problem"].get<std::string>();
    want += '\n';
  }
  EXPECT_EQ(text, want);
}

TEST_F(EvalCollab, OneWorkerSolvesHeldOutPacksAndSelfConsistencyReproducesIt) {
  ASSERT_EQ(problems_.size(), 3u);
  const std::vector<json> single = eval("single", "--method single");
  ASSERT_EQ(single.size(), 3u * 5);
  std::map<std::string, int64_t> steps;  // serial steps of the one-worker run
  for (const json& p : problems_) {
    const std::string id = p["id"];
    int n = 0;
    for (const json& j : single) {
      if (j["id"] != id) continue;
      ++n;
      EXPECT_EQ(j["gold"], p["answer"]) << id;  // the generator's total, as text
      EXPECT_EQ(j["workers"], 1);
      if (j["budget"] == 400) {
        // The shipped model solves these three packs (K = 2): a boxed integer in a finished step.
        EXPECT_EQ(j["answer"], p["answer"]) << id;
        EXPECT_TRUE(j["correct"].get<bool>()) << id;
        EXPECT_EQ(j["answer_source"], "step") << id;
        EXPECT_EQ(j["parse_status"], "ok") << id;
        steps[id] = j["serial_steps"];
      }
      if (j["budget"] == 50) {  // one run of ~120-180 serial steps: no answer step by 50
        EXPECT_EQ(j["serial_steps"], 50) << id;
        EXPECT_FALSE(j["correct"].get<bool>()) << id;
      }
    }
    EXPECT_EQ(n, 5) << id;
  }
  // Two greedy samples in the independent layout (prompt KV shared, views [prompt][own output])
  // each write what one worker writes: every budget point equals the one-worker run's.
  const std::vector<json> sc = eval("sc", "--method self-consistency -w 2 --greedy");
  ASSERT_EQ(sc.size(), single.size());
  for (const json& j : sc) {
    EXPECT_EQ(j["layout"], "independent");
    EXPECT_EQ(j["tokens_per_worker"][0], j["tokens_per_worker"][1]);
  }
  EXPECT_EQ(points(sc), points(single));
  // Two workers in the combined layout: the same totals in fewer serial steps, on every pack.
  const std::vector<json> two = eval("hw2", "--method hogwild -w 2 --layout combined");
  ASSERT_EQ(two.size(), single.size());
  for (const json& j : two)
    if (j["budget"] == 400) {
      EXPECT_TRUE(j["correct"].get<bool>()) << j["id"];
      EXPECT_LT(j["serial_steps"].get<int64_t>(), steps[j["id"]]) << j["id"];
      EXPECT_EQ(j["tokens_per_worker"].size(), 2u);
    }
}

}  // namespace
}  // namespace hogwild
