// The CPU engine against HF transformers: logits within 1e-4 relative error.
// Golden files in tests/data/hf_golden were made by tools/hf/make_golden.py (versions inside each
// .json) from models written by `hogwild make-model` with the args in "make_model_args". Here the
// same model is regenerated (make-model is deterministic), loaded, and run through plain greedy
// generation: every position's logits (120 prompt tokens, then 32 decode steps) must be within
// relative error 1e-4 of transformers (fp32), and the 32 greedy tokens identical.
// The Qwen3-MoE goldens (kMoeGoldens, made by tools/hf/make_golden_models_moe.sh) are checked the
// same way; while their files are absent the test skips, saying how to make them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cpu/cpu_backend.h"
#include "engine/plain.h"
#include "hogwild/codec.h"
#include "model/dtype.h"
#include "model/make_model.h"
#include "model/weights.h"
#include "sampling/sampler.h"
#include "tests/greedy_logits.h"

namespace fs = std::filesystem;
using hogwild::Arch;

namespace {

const fs::path kGoldenDir = fs::path(HOGWILD_SOURCE_DIR) / "tests/data/hf_golden";

// The largest over rows of max |got - want| / max |want| (relative to the row's largest logit),
// and that row; got and want (n_rows, vocab).
std::pair<double, int64_t> worst_row_error(const std::vector<float>& got,
                                           const std::vector<float>& want, int64_t n_rows,
                                           int64_t vocab) {
  double worst = 0;
  int64_t worst_row = -1;
  for (int64_t r = 0; r < n_rows; ++r) {
    double max_diff = 0, max_ref = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      const double a = got[r * vocab + v], b = want[r * vocab + v];
      max_diff = std::max(max_diff, std::abs(a - b));
      max_ref = std::max(max_ref, std::abs(b));
    }
    const double rel = max_diff / max_ref;
    if (rel > worst) worst = rel, worst_row = r;
  }
  return {worst, worst_row};
}

// Qwen3MoeForCausalLM goldens: tools/hf/make_golden_models_moe.sh writes their models.
const char* const kMoeGoldens[] = {"qwen3_moe-tiny", "qwen3_moe-tiny-dense-layers",
                                   "qwen3_moe-tiny-no-norm"};

// Every golden present, and the MoE goldens whether present or not.
std::vector<std::string> golden_names() {
  std::vector<std::string> names(std::begin(kMoeGoldens), std::end(kMoeGoldens));
  for (const auto& e : fs::directory_iterator(kGoldenDir))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

class HfGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(HfGolden, LogitsAndGreedyTokensMatchTransformers) {
  const std::string name = GetParam();
  if (!fs::exists(kGoldenDir / (name + ".json")) ||
      !fs::exists(kGoldenDir / (name + ".logits.f32")))
    GTEST_SKIP() << "no golden " << name << " in tests/data/hf_golden yet; make it with "
                 << "tools/hf/make_golden_models_moe.sh here, then on a machine with PyTorch and "
                    "transformers: python3 tools/hf/make_golden.py --models models/golden-moe "
                    "--out tests/data/hf_golden";
  nlohmann::json meta;
  std::ifstream(kGoldenDir / (name + ".json")) >> meta;
  const auto& args = meta.at("make_model_args");

  // Regenerate the exact model the golden was computed on.
  const fs::path dir = fs::temp_directory_path() / ("hogwild_golden_" + name);
  fs::remove_all(dir);
  hogwild::MakeModelOptions mo;
  mo.arch = hogwild::arch_from_short_name(args.at("arch").get<std::string>());
  mo.preset = args.at("preset").get<std::string>();
  std::string dtype = args.at("dtype").get<std::string>();  // "f32" as on the make-model CLI
  for (auto& c : dtype) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ASSERT_TRUE(hogwild::dtype_from_name(dtype, &mo.dtype));
  mo.seed = args.at("seed").get<uint64_t>();
  mo.out_dir = dir.string();
  mo.show_progress = false;
  hogwild::make_model(mo);

  hogwild::LoadOptions lo;
  lo.show_progress = false;
  hogwild::cpu::CpuBackend backend(hogwild::load_model(dir.string(), lo));
  const int64_t vocab = backend.config().vocab_size;
  ASSERT_EQ(vocab, meta.at("vocab_size").get<int64_t>());

  const auto prompt = meta.at("prompt_ids").get<std::vector<int32_t>>();
  const auto want_ids = meta.at("greedy_ids").get<std::vector<int32_t>>();
  const int64_t n_rows = meta.at("logits_shape")[0].get<int64_t>();
  std::vector<float> want(static_cast<size_t>(n_rows * vocab));
  {
    std::ifstream f(kGoldenDir / meta.at("logits_file").get<std::string>(), std::ios::binary);
    f.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size() * 4));
    ASSERT_TRUE(f.good()) << "truncated golden logits for " << name;
  }

  const hogwild::testing::GreedyLogits res =
      hogwild::testing::greedy_logits(backend, prompt, static_cast<int64_t>(want_ids.size()));
  const std::vector<float>& got = res.logits;  // every position of prompt ++ generated

  EXPECT_EQ(res.generated, want_ids) << name << ": greedy tokens differ from transformers";
  ASSERT_EQ(got.size(), want.size());
  const auto [worst, worst_row] = worst_row_error(got, want, n_rows, vocab);
  EXPECT_LE(worst, 1e-4) << name << ": worst row " << worst_row;
  std::printf("%s: max relative error %.3g (row %lld)\n", name.c_str(), worst,
              static_cast<long long>(worst_row));
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, HfGolden, ::testing::ValuesIn(golden_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (auto& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

// The CPU backend against transformers fp32 on the models of tests/data/hf_golden_bf16 (made by
// tools/hf/make_golden_bf16.py; each .json's "logits_fp32_file" is HF fp32, eager attention, TF32
// off, one forward over the 120 prompt ids and HF's 32 greedy ids): the same 152 ids in one CPU
// forward, every row within 1e-4 relative error. This is the CPU's transformers check for the
// Qwen3-MoE models of that folder (fp32 on their bf16 weights), and a second one for the dense
// families at widths the tiny presets do not have.
const fs::path kBf16GoldenDir = fs::path(HOGWILD_SOURCE_DIR) / "tests/data/hf_golden_bf16";

std::vector<std::string> bf16_golden_names() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kBf16GoldenDir))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

class HfGoldenFp32OfBf16 : public ::testing::TestWithParam<std::string> {};

TEST_P(HfGoldenFp32OfBf16, OneForwardMatchesTransformersFp32) {
  const std::string name = GetParam();
  nlohmann::json meta;
  std::ifstream(kBf16GoldenDir / (name + ".json")) >> meta;
  const auto& args = meta.at("make_model_args");
  const fs::path dir = fs::temp_directory_path() / ("hogwild_golden_fp32_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path cfg = dir / "source_config.json";
  std::ofstream(cfg) << args.at("config").dump(1);
  hogwild::MakeModelOptions mo;
  mo.arch = hogwild::arch_from_short_name(args.at("arch").get<std::string>());
  mo.config_file = cfg.string();
  std::string dtype = args.at("dtype").get<std::string>();
  for (auto& c : dtype) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ASSERT_TRUE(hogwild::dtype_from_name(dtype, &mo.dtype));
  mo.seed = args.at("seed").get<uint64_t>();
  mo.out_dir = (dir / "model").string();
  mo.show_progress = false;
  hogwild::make_model(mo);
  hogwild::LoadOptions lo;
  lo.show_progress = false;
  hogwild::cpu::CpuBackend backend(hogwild::load_model(mo.out_dir, lo));
  const int64_t vocab = backend.config().vocab_size;

  std::vector<int32_t> ids = meta.at("prompt_ids").get<std::vector<int32_t>>();
  for (int32_t t : meta.at("greedy_ids").get<std::vector<int32_t>>()) ids.push_back(t);
  const int64_t n_rows = meta.at("logits_shape")[0].get<int64_t>();
  ASSERT_EQ(n_rows, static_cast<int64_t>(ids.size()));
  std::vector<float> want(static_cast<size_t>(n_rows * vocab));
  {
    std::ifstream f(kBf16GoldenDir / meta.at("logits_fp32_file").get<std::string>(),
                    std::ios::binary);
    f.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size() * 4));
    ASSERT_TRUE(f.good()) << "truncated fp32 logits for " << name;
  }
  hogwild::ForwardBatch b;
  const hogwild::BlockId blk = backend.new_block();
  b.views = {{blk}};
  for (int32_t t : ids) b.tokens.push_back({t, 0, blk, true});
  std::vector<float> got;
  backend.forward(b, got);
  ASSERT_EQ(got.size(), want.size());
  const auto [worst, worst_row] = worst_row_error(got, want, n_rows, vocab);
  EXPECT_LE(worst, 1e-4) << name << ": worst row " << worst_row;
  std::printf("%s: max relative error %.3g against HF fp32 (row %lld)\n", name.c_str(), worst,
              static_cast<long long>(worst_row));
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Bf16Models, HfGoldenFp32OfBf16, ::testing::ValuesIn(bf16_golden_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (auto& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
