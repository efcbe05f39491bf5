// `hogwild bench --device cpu` end to end through the built binary: the JSON rows of a small
// sweep (one row per sessions x context x workers point, in that order; every figure that follows
// from the step time or the model's shape checked exactly), the table, and bad input -> exit code
// 1 with a message.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "model/make_model.h"
#include "tests/cli_run.h"

namespace hogwild {
namespace {

using test::CliResult;

CliResult run(const std::string& args, const std::string& streams = "2>&1") {
  return test::run_hogwild(args, streams);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(BenchCli, CpuJsonRowsPerSessionsAndWorkers) {
  const std::string file =
      (std::filesystem::path(testing::TempDir()) / "hogwild_bench_cli.json").string();
  const CliResult r =
      run("bench --device cpu -p tiny -w 1 2 -c 16 -s 1 2 -r 3 -o json --json-file " + file,
          "2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j, nlohmann::json::parse(std::ifstream(file)));  // --json-file: the same document
  std::filesystem::remove(file);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["bandwidth_probe"], "host read");
  EXPECT_TRUE(j["load_average_start"].is_string());
  EXPECT_TRUE(j["load_average_end"].is_string());
  const double bw = j["bandwidth_GBps"].get<double>();
  EXPECT_GT(bw, 0.0);
  EXPECT_EQ(bw, j["read_bandwidth_GBps"]["best"].get<double>());

  // The tiny qwen3 preset (tied embeddings): a step reads every parameter once (fp32), and K/V of
  // 2 x layers x kv heads x head_dim floats per token.
  const ModelConfig c = find_preset(Arch::qwen3, "tiny").config;
  ASSERT_TRUE(c.tie_word_embeddings);
  const double weight_bytes = 4.0 * double(c.num_parameters());
  const double kv_token = 2.0 * 4 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim;

  const nlohmann::json& rows = j["results"];
  ASSERT_EQ(rows.size(), 4u);  // sessions {1, 2} x context {16} x workers {1, 2}
  const int S[] = {1, 1, 2, 2}, W[] = {1, 2, 1, 2};
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& x = rows[i];
    SCOPED_TRACE(x.dump());
    EXPECT_EQ(x["model"], "tiny");
    EXPECT_EQ(x["layout"], "bench");
    EXPECT_EQ(x["context"].get<int64_t>(), 16);
    EXPECT_EQ(x["sessions"].get<int>(), S[i]);
    EXPECT_EQ(x["workers"].get<int>(), W[i]);
    const int n = S[i] * W[i];
    EXPECT_EQ(x["rows"].get<int>(), n);
    const double ms = x["step_ms"].get<double>();
    EXPECT_GT(ms, 0.0);
    EXPECT_LE(x["step_ms_min"].get<double>(), ms);
    EXPECT_DOUBLE_EQ(x["tok_s_aggregate"].get<double>(), n * 1000.0 / ms);
    EXPECT_DOUBLE_EQ(x["tok_s_per_worker"].get<double>(), 1000.0 / ms);
    EXPECT_EQ(x["weight_bytes"].get<double>(), weight_bytes);
    // K/V read per timed step, each visible block once: the S contexts (16 tokens) and the rows'
    // steps, 32 tokens before the 1 warm-up step, then 1 more per step: timed steps see 34, 35,
    // 36 tokens, 35 on average.
    EXPECT_DOUBLE_EQ(x["kv_bytes"].get<double>(), (S[i] * 16 + n * 35) * kv_token);
    const double gbps = (weight_bytes + (S[i] * 16 + n * 35) * kv_token) / (ms * 1e-3) / 1e9;
    EXPECT_NEAR(x["GBps"].get<double>(), gbps, 1e-12 * gbps);
    EXPECT_NEAR(x["pct_of_bw"].get<double>(), 100.0 * gbps / bw, 1e-10 * gbps / bw);
    EXPECT_GT(x["pct_of_bw"].get<double>(), 0.0);
    // Against the one-worker row of the same session count.
    const double base = rows[i - (W[i] - 1)]["tok_s_aggregate"].get<double>();
    EXPECT_DOUBLE_EQ(x["speedup_vs_1_worker"].get<double>(),
                     x["tok_s_aggregate"].get<double>() / base);
  }
}

TEST(BenchCli, CpuTable) {
  const CliResult r = run("bench --device cpu -p tiny -w 1 3 -c 8 -s 2 -r 1 --session-layout");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "device: CPU, ")) << r.out;
  EXPECT_TRUE(contains(r.out, "host read bandwidth")) << r.out;
  EXPECT_TRUE(contains(r.out, " (start), ")) << r.out;  // the load averages
  EXPECT_TRUE(contains(r.out, "| model      | sessions | context | workers |  step ms")) << r.out;
  EXPECT_TRUE(contains(r.out, "| tiny       |        2 |       8 |       3 |")) << r.out;
  EXPECT_TRUE(contains(r.out, "bench tiny ctx 8 workers 3 sessions 2: ")) << r.out;  // progress
}

// The tiny preset's head_dim (32) is not one the CUDA kernels take: --device auto benches it on the
// CPU in every build, and --device cuda refuses it (no CUDA in the build, no GPU, or the head_dim).
TEST(BenchCli, DeviceAutoAndCudaForACpuOnlyModel) {
  const CliResult a = run("bench -p tiny -w 1 -c 8 -r 1 -o json", "2>/dev/null");
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_EQ(nlohmann::json::parse(a.out)["backend"], "cpu");
  const CliResult c = run("bench --device cuda -p tiny -w 1 -c 8 -r 1");
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_TRUE(contains(c.out, "error: --device cuda: ")) << c.out;
}

TEST(BenchCli, BadInputExitsOneWithMessage) {
  struct Case {
    std::string args, message;
  };
  for (const Case& c : std::vector<Case>{
           {"-s 0", "--sessions 0: session counts must be >= 1"},
           {"-s 1 -1", "--sessions -1: session counts must be >= 1"},
           {"-w 2 0", "workers is 0; it must be in 1..64 workers"},
           {"-w 65", "workers is 65; it must be in 1..64 workers"},
           {"-c -5", "-c -5: context lengths must be >= 0 tokens"},
           {"-r 0", "-r 0: give at least 1 timed step"},
           {"-p nosuch", "unknown preset 'nosuch'; presets: tiny, tiny-yarn, "},
           {"-m /nonexistent/model", "-m /nonexistent/model: model directory does not exist"},
           {"--hf-baseline tools/hf_baseline.py",
            "--hf-baseline compares with HF transformers on the GPU and needs the CUDA backend; "
            "it cannot be used with --device cpu"},
           {"--kv-tokens 4096",
            "--kv-tokens sizes the CUDA KV pool; the CPU backend has none, so it cannot be used "
            "with --device cpu"},
           {"--quant awq",
            "--quant makes random packed weights on the GPU; it cannot be used with --device cpu"},
           {"--desc-act", "--desc-act is an option of --quant gptq"},
           {"--group-size 64", "--group-size is an option of --quant awq|gptq"},
       }) {
    const CliResult r = run("bench --device cpu -p tiny -c 8 " + c.args);
    EXPECT_EQ(r.code, 1) << c.args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "error: " + c.message)) << c.args << "\n" << r.out;
  }
  // A --json-file that cannot be written fails before the sweep runs: no table, no results lost
  // after minutes of work.
  const CliResult j = run("bench --device cpu -p tiny -w 1 -c 8 -r 1 --json-file /proc/x");
  EXPECT_EQ(j.code, 1) << j.out;
  EXPECT_TRUE(contains(j.out, "error: --json-file: cannot create '/proc/x.tmp'")) << j.out;
  EXPECT_FALSE(contains(j.out, "tok/s")) << "the sweep ran first:\n" << j.out;
  const CliResult d = run("bench --device gpu");
  EXPECT_NE(d.code, 0) << d.out;
  EXPECT_TRUE(contains(d.out, "--device: gpu not in {auto,cuda,cpu}")) << d.out;
}

}  // namespace
}  // namespace hogwild
