// End to end: make_model (tiny presets, every architecture) -> load_model -> CpuBackend: greedy
// plain completions on the Engine equal the dense reference; `hogwild generate --json
// --dump-logits` writes rows that match the dense reference's logits of prompt ++ generated.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "engine/plain.h"
#include "hogwild/codec.h"
#include "model/make_model.h"
#include "model/weights.h"
#include "tests/cpu/reference_model.h"
#include "tokenizer/tokenizer.h"

namespace hogwild {
namespace {

namespace fs = std::filesystem;

std::string make_tiny(Arch arch, const std::string& preset, const std::string& tag,
                      const std::string& tokenizer_dir = "") {
  MakeModelOptions o;
  o.tokenizer_dir = tokenizer_dir;
  o.arch = arch;
  o.preset = preset;
  o.dtype = Dtype::f32;
  o.seed = 3;
  o.out_dir = testing::TempDir() + "/hogwild_gen_" + tag;
  o.force = true;  // a directory left by an earlier run of the test
  o.show_progress = false;
  make_model(o);
  return o.out_dir;
}

std::vector<int32_t> prompt_ids(int64_t vocab) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 19; ++i) ids.push_back(static_cast<int32_t>((i * 37 + 11) % vocab));
  return ids;
}

class Archs : public ::testing::TestWithParam<std::pair<Arch, std::string>> {};

TEST_P(Archs, GreedyGenerationOfALoadedModelMatchesDenseReference) {
  const auto [arch, preset] = GetParam();
  const std::string dir = make_tiny(arch, preset, std::string(arch_short_name(arch)) + preset);
  const ModelWeights w = load_model(dir, {.show_progress = false});
  cpu::CpuBackend be(w);
  const std::vector<int32_t> prompt = prompt_ids(w.config.vocab_size);
  PlainRequest p;
  p.prompt = prompt;
  p.max_tokens = 10;
  p.ignore_eos = true;  // no stop ids: ten tokens
  const PlainResult r = generate_plain(be, IdCodec(static_cast<int32_t>(w.config.vocab_size)), p);
  ASSERT_EQ(r.generated.size(), 10u);
  std::vector<int32_t> seq = prompt;
  seq.insert(seq.end(), r.generated.begin(), r.generated.end());
  const std::vector<float> ref = test::dense_logits(w, seq);
  const int64_t V = w.config.vocab_size;
  for (size_t i = 0; i < r.generated.size(); ++i) {
    const size_t pos = prompt.size() - 1 + i;
    const auto row = ref.begin() + pos * V;
    EXPECT_EQ(r.generated[i], std::max_element(row, row + V) - row) << "step " << i;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Tiny, Archs,
                         ::testing::Values(std::pair{Arch::qwen3, std::string("tiny")},
                                           std::pair{Arch::qwen3, std::string("tiny-yarn")},
                                           std::pair{Arch::qwen2, std::string("tiny")},
                                           std::pair{Arch::llama, std::string("tiny")},
                                           std::pair{Arch::llama, std::string("tiny-linear")},
                                           std::pair{Arch::mistral, std::string("tiny")},
                                           std::pair{Arch::phi3, std::string("tiny")}),
                         [](const auto& info) {
                           std::string n = std::string(arch_short_name(info.param.first)) + "_" +
                                           info.param.second;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Runs the CLI; returns stdout, stderr in *err. The capture files are per process and test:
// ctest runs the tests of this file in parallel processes.
std::string run_cli(const std::string& args, int* rc, std::string* err) {
  const std::string tag = std::to_string(getpid()) + "_" +
                          testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string out = testing::TempDir() + "/hogwild_cli_out_" + tag + ".txt";
  const std::string errf = testing::TempDir() + "/hogwild_cli_err_" + tag + ".txt";
  const std::string cmd =
      std::string(HOGWILD_BINARY_DIR) + "/hogwild " + args + " >" + out + " 2>" + errf;
  *rc = std::system(cmd.c_str());
  *err = slurp(errf);
  return slurp(out);
}

TEST(GenerateCli, JsonAndDumpLogitsMatchTheReference) {
  if (!fs::exists(std::string(HOGWILD_BINARY_DIR) + "/hogwild"))
    GTEST_SKIP() << "hogwild not built";
  const std::string dir = make_tiny(Arch::qwen3, "tiny", "cli");
  const std::string npy = testing::TempDir() + "/hogwild_cli_logits.npy";
  int rc = 0;
  std::string err;
  const std::string out =
      run_cli("generate --device cpu -m " + dir +
                  " --ids 5,17,2,40,33 -n 6 --greedy --json --dump-logits " + npy,
              &rc, &err);
  ASSERT_EQ(rc, 0) << out << err;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["prompt_ids"].get<std::vector<int32_t>>(), (std::vector<int32_t>{5, 17, 2, 40, 33}));
  const auto gen = j["generated_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(gen.size(), 6u);
  EXPECT_EQ(j["stop_reason"], "max_new_tokens");
  // The .npy: (5 + 6, vocab) rows = logits at every position of prompt ++ generated.
  const ModelWeights w = load_model(dir, {.show_progress = false});
  const int64_t V = w.config.vocab_size;
  std::ifstream f(npy, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), 128 + 11 * V * 4);
  EXPECT_NE(bytes.find("'shape': (11, " + std::to_string(V) + ")"), std::string::npos);
  std::vector<float> rows(11 * V);
  std::memcpy(rows.data(), bytes.data() + 128, rows.size() * 4);
  std::vector<int32_t> seq = {5, 17, 2, 40, 33};
  seq.insert(seq.end(), gen.begin(), gen.end());
  const std::vector<float> ref = test::dense_logits(w, seq);
  double max_err = 0, scale = 1e-3;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_err = std::max(max_err, std::abs(static_cast<double>(rows[i]) - ref[i]));
    scale = std::max(scale, std::abs(static_cast<double>(ref[i])));
  }
  EXPECT_LE(max_err / scale, 1e-5);
  // Bad input: clear errors, non-zero exit.
  run_cli("generate -m " + dir + " -p hello", &rc, &err);
  EXPECT_NE(err.find("tokenizer.json"), std::string::npos) << err;
  EXPECT_NE(rc, 0);
  run_cli("generate -m " + dir + " --ids 1,x", &rc, &err);
  EXPECT_NE(err.find("not a token id"), std::string::npos) << err;
  EXPECT_NE(rc, 0);
  std::string long_ids = "1";
  for (int i = 1; i < w.config.max_position_embeddings + 1; ++i) long_ids += ",1";
  run_cli("generate -m " + dir + " --ids " + long_ids, &rc, &err);
  EXPECT_NE(err.find("context"), std::string::npos) << err;
  EXPECT_NE(rc, 0);
  run_cli("generate -m " + dir + " --ids 1 --greedy --temperature 0.5", &rc, &err);
  EXPECT_NE(err.find("--temperature excludes --greedy"), std::string::npos) << err;
  EXPECT_NE(rc, 0);
  run_cli("generate -m " + dir + " --ids 1 --temperature -1", &rc, &err);
  EXPECT_NE(err.find("temperature is -1; it must be in [0, 2] (0 = greedy)"), std::string::npos)
      << err;
  EXPECT_NE(rc, 0);
  // --device cuda where it cannot run (no GPU, a build without CUDA, or this head_dim-16 model on
  // a GPU): an error that names the way out.
  run_cli("generate -m " + dir + " --ids 1 --device cuda", &rc, &err);
  EXPECT_NE(err.find("use --device cpu"), std::string::npos) << err;
  EXPECT_NE(rc, 0);
  run_cli("generate -m " + dir + " --ids 1 --kv-tokens -5", &rc, &err);
  EXPECT_NE(err.find("'-5' is not a whole number of tokens >= 0"), std::string::npos) << err;
  EXPECT_NE(rc, 0);
  run_cli("generate -m " + dir + " --ids 1 --kv-tokens 99999999999999999999999", &rc, &err);
  EXPECT_NE(err.find("is not a whole number of tokens"), std::string::npos) << err;
  EXPECT_NE(rc, 0);
  run_cli("generate -m " + dir + " --ids 1 -n -1", &rc, &err);
  EXPECT_NE(err.find("max_tokens is -1; it must be in 0..1048576"), std::string::npos) << err;
  EXPECT_EQ(err.find("loaded"), std::string::npos) << "checked before loading: " << err;
  EXPECT_NE(rc, 0);
  run_cli("generate -m " + dir + " --device tpu --ids 1", &rc, &err);
  EXPECT_NE(err.find("--device: tpu not in {auto,cuda,cpu}"), std::string::npos) << err;
  EXPECT_NE(rc, 0);
  // A .npy file's header is rewritten at the end: standard output cannot hold it (the file "-"
  // was written in the working directory before).
  run_cli("generate -m " + dir + " --ids 1 -n 1 --dump-logits -", &rc, &err);
  EXPECT_NE(err.find("--dump-logits: a .npy file needs a seekable file; give a path instead of -"),
            std::string::npos)
      << err;
  EXPECT_NE(rc, 0);
  EXPECT_FALSE(fs::exists("-"));
  run_cli("generate -m " + dir + " --ids 1 -n 1 --dump-logits ''", &rc, &err);
  EXPECT_NE(err.find("--dump-logits: the file name is empty; give a path for the .npy file"),
            std::string::npos)
      << err;
  EXPECT_NE(rc, 0);
  fs::remove_all(dir);
  std::remove(npy.c_str());
}

TEST(GenerateCli, TextPromptStreamsTextAndStopsAtStopStrings) {
  if (!fs::exists(std::string(HOGWILD_BINARY_DIR) + "/hogwild"))
    GTEST_SKIP() << "hogwild not built";
  // A small byte-level BPE tokenizer from the tokenizer tests.
  const std::string tdir = testing::TempDir() + "/hogwild_gen_tok_src";
  fs::create_directories(tdir);
  fs::copy_file(std::string(HOGWILD_SOURCE_DIR) + "/tests/data/tokenizer/synthetic/split_a.json",
                tdir + "/tokenizer.json", fs::copy_options::overwrite_existing);
  std::ofstream(tdir + "/tokenizer_config.json")
      << R"({"tokenizer_class": "PreTrainedTokenizerFast"})";
  const std::string dir = make_tiny(Arch::llama, "tiny", "clitext", tdir);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  int rc = 0;
  std::string err;
  const std::string args = "generate --device cpu -m " + dir +
                           " -p \"the quick brown fox\" -n 16 --temperature 1 --seed 4";
  const auto j = nlohmann::json::parse(run_cli(args + " --json", &rc, &err));
  ASSERT_EQ(rc, 0) << err;
  EXPECT_EQ(j["prompt_ids"].get<std::vector<int32_t>>(), tok.encode("the quick brown fox", true));
  const auto gen = j["generated_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(gen.size(), 16u);
  const std::string text = tok.decode(gen);
  EXPECT_EQ(j["text"].get<std::string>(), text);
  // Streaming prints the same text (plus a final newline).
  EXPECT_EQ(run_cli(args, &rc, &err), text + "\n");
  // Stop at a piece of the text: output cut before it, generation ends at the token completing it.
  const std::string stop = text.substr(text.size() / 2, 3);
  const auto js = nlohmann::json::parse(run_cli(args + " --json --stop '" + stop + "'", &rc, &err));
  ASSERT_EQ(rc, 0) << err;
  EXPECT_EQ(js["stop_reason"], "stop_string");
  EXPECT_EQ(js["text"].get<std::string>(), text.substr(0, text.find(stop)));
  const auto gs = js["generated_ids"].get<std::vector<int32_t>>();
  EXPECT_LT(gs.size(), gen.size());
  EXPECT_TRUE(std::equal(gs.begin(), gs.end(), gen.begin()));
  EXPECT_NE(tok.decode(gs).find(stop), std::string::npos);
  EXPECT_EQ(tok.decode(std::vector<int32_t>(gs.begin(), gs.end() - 1)).find(stop),
            std::string::npos);
  // --ids on a model that has a tokenizer: the ids are used as given (same ids, same seed -> the
  // same tokens as the text prompt that encodes to them).
  std::string ids;
  for (int32_t id : tok.encode("the quick brown fox", true)) {
    if (!ids.empty())
      ids += ',';  // appends, not operator+: GCC 12 reports a false -Wrestrict there
    ids += std::to_string(id);
  }
  const auto ji = nlohmann::json::parse(run_cli("generate --device cpu -m " + dir + " --ids " +
                                                    ids + " -n 16 --temperature 1 --seed 4 --json",
                                                &rc, &err));
  ASSERT_EQ(rc, 0) << err;
  EXPECT_EQ(ji["prompt_ids"], j["prompt_ids"]);
  EXPECT_EQ(ji["generated_ids"].get<std::vector<int32_t>>(), gen);
  fs::remove_all(dir);
  fs::remove_all(tdir);
}

// `hogwild bench --kv-tokens` takes the same values as `generate` / `run`, and a bad one stops the
// command before it looks for a GPU.
TEST(BenchCli, BadKvTokensIsAClearError) {
  int rc = 0;
  std::string err;
  run_cli("bench -p qwen3-8b --kv-tokens -5", &rc, &err);
  EXPECT_NE(err.find("--kv-tokens: '-5' is not a whole number of tokens >= 0"), std::string::npos)
      << err;
  EXPECT_NE(rc, 0);
  run_cli("bench -p qwen3-8b --kv-tokens 2k", &rc, &err);
  EXPECT_NE(err.find("'2k' is not a whole number of tokens"), std::string::npos) << err;
  EXPECT_NE(rc, 0);
}

// --session-layout is a flag of hogwild bench: with it, the argument checks still run first (the
// bad worker count is reported, not the flag).
TEST(BenchCli, SessionLayoutFlagIsParsed) {
  int rc = 0;
  std::string err;
  run_cli("bench -p qwen3-8b --session-layout -w 0", &rc, &err);
  EXPECT_NE(err.find("workers is 0; it must be in 1..64 workers"), std::string::npos) << err;
  EXPECT_NE(rc, 0);
  run_cli("bench -p qwen3-8b --session-layout=maybe", &rc, &err);
  EXPECT_NE(rc, 0) << "a flag takes no value: " << err;
}

}  // namespace
}  // namespace hogwild
