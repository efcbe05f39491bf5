// `hogwild make-model` and `hogwild info` end to end through the built binary: output values,
// sharding option, and bad input -> exit code 1 with a message (never a crash).
#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/safetensors.h"
#include "tests/cli_run.h"
#include "tests/model/test_util.h"

namespace hogwild {
namespace {

using test::TempDir;

using test::CliResult;

CliResult run(const std::string& args, const std::string& streams = "2>&1") {
  return test::run_hogwild(args, streams);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(ModelCli, MakeModelThenInfo) {
  TempDir d;
  CliResult m = run("make-model --arch qwen3 --preset tiny --seed 42 --out " + d.str());
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_TRUE(contains(m.out, "Qwen3ForCausalLM, 0.132M parameters, bfloat16, seed 42")) << m.out;
  CliResult i = run("info -m " + d.str());
  ASSERT_EQ(i.code, 0) << i.out;
  for (const char* s : {"Qwen3ForCausalLM (qwen3)", "0.13M (131520)", "bfloat16 (tensors: BF16)",
                        "in 1 file", "24 (names, dtypes and shapes match the qwen3 table)",
                        "4 query, 2 key/value (2 per KV head), head_dim 32",
                        "tie_word_embeddings, qk_norm", "512 B bf16, 1024 B fp32", "none / 2"})
    EXPECT_TRUE(contains(i.out, s)) << "missing '" << s << "' in\n" << i.out;
  CliResult j = run("info --json -m " + d.str());
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_TRUE(contains(j.out, "\"parameters\": 131520")) << j.out;
  EXPECT_TRUE(contains(j.out, "\"kv_bytes_per_token_bf16\": 512")) << j.out;
}

TEST(ModelCli, Qwen3MoeMakeModelThenInfo) {
  TempDir d;
  CliResult m = run("make-model --arch qwen3_moe --preset tiny --seed 3 --out " + d.str());
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_TRUE(contains(m.out, "Qwen3MoeForCausalLM")) << m.out;
  CliResult i = run("info -m " + d.str());
  ASSERT_EQ(i.code, 0) << i.out;
  // 2 layers of: attention 4*64*32*2 + 2*64*32*2 = 24576, norms 2*64 + 2*32, router 8*64, experts
  // 8*3*64*32; embed + lm_head 2*512*64, final norm 64. bf16: 2 bytes each. Active: 2 of 8 experts.
  const int64_t layer = 24576 + 192 + 512 + 8 * 3 * 64 * 32, total = 2 * 512 * 64 + 64 + 2 * layer;
  const int64_t active = total - 2 * 6 * 3 * 64 * 32;
  for (const std::string& s :
       {std::string("Qwen3MoeForCausalLM (qwen3_moe)"), fmt::format("({})", total),
        std::string("8 per MoE layer, top-2 per token (renormalised), moe_intermediate_size 32"),
        std::string("2 of 2 (decoder_sparse_step 1, mlp_only_layers [])"),
        fmt::format("{:.2f} KiB of weights, {:.2f}M ({}) parameters", 2.0 * active / 1024,
                    active / 1e6, active),
        std::string("qk_norm")})
    EXPECT_TRUE(contains(i.out, s)) << "missing '" << s << "' in\n" << i.out;
  CliResult j = run("info --json -m " + d.str(), "2>/dev/null");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_TRUE(contains(j.out, fmt::format("\"active_weight_bytes_per_token\": {}", 2 * active)))
      << j.out;
  EXPECT_TRUE(contains(j.out, "\"num_experts_per_tok\": 2")) << j.out;
  TempDir e;  // a preset only qwen3_moe has implies the architecture
  ASSERT_EQ(run("make-model --preset tiny-dense-layers --seed 1 -q --out " + e.str()).code, 0);
  CliResult y = run("info -m " + e.str());
  EXPECT_TRUE(contains(y.out, "2 of 6 (decoder_sparse_step 2, mlp_only_layers [3])")) << y.out;
}

TEST(ModelCli, ShardSizeDtypeAndImpliedArch) {
  TempDir d;
  CliResult m = run(
      "make-model --preset tiny --arch phi3 --dtype f32 --max-shard-size 100KB --seed 1 -q --out " +
      d.str());
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_TRUE(std::filesystem::exists(d / "model.safetensors.index.json"));
  EXPECT_TRUE(std::filesystem::exists(d / "model-00006-of-00006.safetensors"));
  CliResult i = run("info -m " + d.str());
  EXPECT_TRUE(contains(i.out, "float32 (tensors: F32)")) << i.out;
  EXPECT_TRUE(contains(i.out, "in 6 files")) << i.out;
  EXPECT_TRUE(contains(i.out, "fused qkv_proj, fused gate_up_proj")) << i.out;
  EXPECT_TRUE(contains(i.out, "rotary_dim 12 of 16")) << i.out;
  TempDir e;  // --arch implied by a preset that only one architecture has
  ASSERT_EQ(run("make-model --preset tiny-yarn --seed 1 -q --out " + e.str()).code, 0);
  CliResult y = run("info -m " + e.str());
  EXPECT_TRUE(contains(y.out, "Qwen3ForCausalLM")) << y.out;
  EXPECT_TRUE(contains(y.out, "yarn factor 4, original context 256")) << y.out;
  // --config without --arch: the architecture is the config's own.
  TempDir f;
  ASSERT_EQ(
      run("make-model --config " + (d / "config.json") + " --seed 2 -q --out " + f.str()).code, 0);
  EXPECT_TRUE(contains(run("info -m " + f.str()).out, "Phi3ForCausalLM"));
}

TEST(ModelCli, BadInputExitsOneWithMessage) {
  TempDir d;
  struct Case {
    std::string args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"info -m /nonexistent/m", "error: model directory /nonexistent/m does not exist"},
           {"info -m " + d.str(), "config.json is missing"},
           {"make-model --arch gpt2 --preset tiny --seed 1 --out " + d.str(),
            "unknown architecture \"gpt2\"; use one of: qwen2, qwen3, llama, mistral, phi3"},
           {"make-model --preset tiny --seed 1 --out " + d.str(), "pass --arch"},
           {"make-model --arch llama --preset phi-4 --seed 1 --out " + d.str(), "use --arch phi3"},
           {"make-model --arch llama --preset tiny --dtype f8 --seed 1 --out " + d.str(),
            "--dtype f8: use bf16, f16 or f32"},
           {"make-model --arch llama --preset tiny --max-shard-size 5XB --seed 1 --out " + d.str(),
            "unknown unit 'XB'"},
       }) {
    CliResult r = run(c.args);
    EXPECT_EQ(r.code, 1) << c.args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, c.message)) << c.args << "\n" << r.out;
  }
  // A seed of -1 wrapped to 2^64 - 1 (a model of that seed was made); a reproducible model or
  // problem pack has no random seed. (A flag's value refused while parsing exits with CLI11's
  // status.)
  for (const std::string& args :
       {"make-model --arch llama --preset tiny --seed -1 --out " + d.str() + "/neg",
        std::string("collab problems --count 1 --seed -1")}) {
    CliResult r = run(args);
    EXPECT_NE(r.code, 0) << args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "--seed: seed is -1; it must be in 0..9223372036854775807"))
        << args << "\n"
        << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(d.str() + "/neg"));
  // A corrupt weight file.
  ASSERT_EQ(run("make-model --arch llama --preset tiny --seed 1 -q --out " + d.str()).code, 0);
  // A non-empty --out is refused unless --force (make-model overwrote a model silently).
  CliResult again = run("make-model --arch llama --preset tiny --seed 2 -q --out " + d.str());
  EXPECT_EQ(again.code, 1);
  EXPECT_TRUE(contains(again.out,
                       "the directory is not empty; give a new directory, or pass "
                       "--force"))
      << again.out;
  ASSERT_EQ(run("make-model --arch llama --preset tiny --seed 1 -q --force --out " + d.str()).code,
            0);
  test::write_file(d / "model.safetensors", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10));
  CliResult r = run("info -m " + d.str());
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(
      contains(r.out, "model.safetensors: header length 9223372036854775807 bytes is larger"))
      << r.out;
}

// The collab commands: a write that fails is an error (exit 1), options that do not apply or
// budgets that mean nothing are refused, and an explicit --budget is kept for every task.
TEST(ModelCli, CollabCommandsRefuseBadInputAndFailedWrites) {
  const std::string cd = std::string(HOGWILD_SOURCE_DIR) + "/tools/collab/countdown-template";
  struct Case {
    std::string args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"collab problems --task countdown --count 50 --out /dev/full",
            "could not write '/dev/full' (disk full?)"},
           {"collab problems --count 50 --out /dev/full", "could not write '/dev/full'"},
           {"collab problems --task countdown --wording first --count 1",
            "--wording applies to the packs task"},
           {"collab measure -m " + cd + " --bytes --count 2 --workers 1 --budgets 0",
            "--budgets must be increasing serial-step counts >= 1, e.g. 512,1024; got 0"},
           {"collab measure -m " + cd + " --bytes --count 2 --workers 1 --budgets 4096,256",
            "got 4096,256"},
           {"collab show -m " + cd + " --bytes --task countdown --budget -3",
            "--budget must be >= 0 serial steps (0 = until an answer), got -3"},
       }) {
    CliResult r = run(c.args);
    EXPECT_EQ(r.code, 1) << c.args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, c.message)) << c.args << "\n" << r.out;
  }
  // Countdown runs until an answer by default, yet an explicit --budget 4000 stops it there
  // (this search takes 9454 serial steps with two workers).
  const std::string show = "collab show -m " + cd +
                           " --bytes --task countdown --k 5 -w 2 --seed 4 --split test "
                           "--max-context 100000";
  CliResult capped = run(show + " --budget 4000");
  EXPECT_EQ(capped.code, 0) << capped.out;
  EXPECT_TRUE(contains(capped.out, "stop: budget, answer - (wrong), serial steps 4000,"))
      << capped.out.substr(capped.out.size() > 300 ? capped.out.size() - 300 : 0);
}

// make-model --quant, info, generate and run on quantized tiny models with a real tokenizer (the
// packs-collab model's), and a checkpoint whose quantization_config is not supported.
TEST(ModelCli, QuantizedModelsMakeInfoGenerateRun) {
  const std::string tok = std::string(HOGWILD_SOURCE_DIR) + "/models/packs-collab";
  struct Case {
    std::string flags, made, info;
  };
  for (const Case& c : std::vector<Case>{
           {"--arch phi3 --quant gptq --desc-act --no-sym --group-size 32",
            "gptq int4 group 32 asym desc_act",
            "gptq int4, group_size 32, desc_act true, sym false, checkpoint_format gptq (8 of 8 "
            "linear layers"},
           {"--arch qwen3 --quant awq", "awq int4 group 64",
            "awq int4, group_size 64, zero_point, version gemm (14 of 14 linear layers"},
           {"--arch qwen2 --quant fp8", "fp8 e4m3 blocks 128x128",
            "fp8 e4m3, weight_block_size [128, 128], activation_scheme dynamic"},
       }) {
    SCOPED_TRACE(c.flags);
    TempDir d;
    CliResult m = run("make-model --preset tiny --seed 3 --tokenizer " + tok + " " + c.flags +
                      " --out " + d.str());
    ASSERT_EQ(m.code, 0) << m.out;
    EXPECT_TRUE(contains(m.out, c.made)) << m.out;
    CliResult i = run("info -m " + d.str());
    ASSERT_EQ(i.code, 0) << i.out;
    for (const std::string& s :
         {c.info, std::string("(as stored)"), std::string("read per decode step")})
      EXPECT_TRUE(contains(i.out, s)) << "missing '" << s << "' in\n" << i.out;
    CliResult j = test::run_hogwild("info --json -m " + d.str(), "2>/dev/null");
    ASSERT_EQ(j.code, 0) << j.out;
    const nlohmann::json info = nlohmann::json::parse(j.out);
    EXPECT_LT(info.at("weight_bytes").get<uint64_t>(), info.at("parameters").get<uint64_t>() * 2);
    // A decode step reads one row of untied embeddings; tied ones (qwen3) are the lm_head too.
    const uint64_t embed = 768 * 64 * 2;  // vocab fitted to the tokenizer x hidden, bf16
    const uint64_t decode = info.at("decode_bytes_per_step").get<uint64_t>(),
                   stored = info.at("weight_bytes").get<uint64_t>();
    if (c.flags.find("qwen3") != std::string::npos) {
      // By hand, AWQ group 64, per layer: q/gate/up [128, 64] and o/down [64, 128]: qweight
      // in*out/2 + qzeros (in/64)*(out/8)*4 + scales (in/64)*out*2 = 4096 + 64 + 256 = 4416 each;
      // k/v [64, 64]: 2048 + 32 + 128 = 2208 each; norms (64 + 64 + 32 + 32) * 2 = 384. Two
      // layers: 2 * (5 * 4416 + 2 * 2208 + 384) = 53760; + embed 768 * 64 * 2 + norm 128.
      EXPECT_EQ(stored, 53760u + 98304u + 128u);
      EXPECT_EQ(decode, stored);
    } else {
      EXPECT_EQ(decode, stored - embed + embed / 768);
    }
    CliResult g = run("generate --device cpu -m " + d.str() + " -p hello -n 4 --greedy");
    EXPECT_EQ(g.code, 0) << g.out;
    CliResult r = run("run --device cpu -m " + d.str() +
                      " -w 2 --format plain --budget 4 --greedy --no-live \"1 + 1\"");
    EXPECT_EQ(r.code, 0) << r.out;
  }
  // A quantization this engine does not read: info and generate exit 1 naming it.
  TempDir d;
  ASSERT_EQ(
      run("make-model --arch qwen3 --preset tiny --seed 1 -q --quant awq --out " + d.str()).code,
      0);
  nlohmann::json cfg;
  std::ifstream(d / "config.json") >> cfg;
  cfg["quantization_config"] = {{"quant_method", "bitsandbytes"}, {"load_in_4bit", true}};
  test::write_file(d / "config.json", cfg.dump(2));
  for (const std::string& cmd :
       {"info -m " + d.str(), "generate --device cpu -m " + d.str() + " --ids 1,2 -n 2 --greedy"}) {
    CliResult r = run(cmd);
    EXPECT_EQ(r.code, 1) << cmd << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "quant_method = \"bitsandbytes\" is not supported")) << r.out;
  }
  // Flags that do not fit.
  TempDir e;
  struct Bad {
    std::string args, message;
  };
  for (const Bad& b : std::vector<Bad>{
           {"--quant int8", "--quant int8: use awq, gptq or fp8"},
           {"--quant awq --desc-act", "--desc-act is GPTQ's act-order"},
           {"--quant fp8 --group-size 128", "--quant fp8 stores e4m3 weights"},
           {"--quant awq --group-size 128", "--group-size 128 does not divide in_features 64"},
           {"--group-size 32", "add --quant awq|gptq"},
       }) {
    CliResult r = run("make-model --arch qwen3 --preset tiny --seed 1 --force " + b.args +
                      " --out " + e.str());
    EXPECT_EQ(r.code, 1) << b.args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, b.message)) << b.args << "\n" << r.out;
  }
}

}  // namespace
}  // namespace hogwild
