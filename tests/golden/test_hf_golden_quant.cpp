// The CPU engine on quantized checkpoints against HF transformers (tests/data/hf_golden_quant,
// made by tools/hf/make_golden_quant_models.sh + tools/hf/make_golden_quant.py; README there).
// For each golden the model is regenerated from its "make_model_args" (`hogwild make-model --quant`
// is deterministic), loaded by load_model (dequantized to fp32) and run through plain greedy
// generation, as tests/golden/test_hf_golden.cpp does for dense models:
// - against transformers fp32 on the dense weights that Python dequantized from the stored tensors
//   by the formats' public definitions (AutoAWQ, AutoGPTQ, transformers FP8): every row within
//   relative error 1e-4 (the dense golden's tolerance), the greedy ids identical;
// - FP8 also against transformers' own FP8 path on the GPU (FP8Linear, bf16 activations quantized
//   to e4m3 per 128-group, "native"): that reference differs from fp32 by its activation rounding,
//   so the bound is the error transformers' own fp32 run has against it (stored by the script as
//   "native.hf_fp32_max_rel_error") plus 1e-4 — a misread weight or scale is far outside it.
// Skips, saying how to make them, when the golden files are absent.
#include <gtest/gtest.h>

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

namespace {

const fs::path kGoldenDir = fs::path(HOGWILD_SOURCE_DIR) / "tests/data/hf_golden_quant";

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  std::error_code ec;
  if (!fs::is_directory(kGoldenDir, ec)) return names;
  for (const auto& e : fs::directory_iterator(kGoldenDir))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<float> read_logits(const std::string& file, size_t n) {
  std::vector<float> v(n);
  std::ifstream f(kGoldenDir / file, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * 4));
  if (!f.good()) v.clear();
  return v;
}

// Worst over rows of max |a - b| / max |b| (relative to the row's largest reference logit).
double worst_row_error(const std::vector<float>& got, const std::vector<float>& want, int64_t vocab,
                       int64_t* worst_row) {
  double worst = 0;
  const int64_t rows = int64_t(want.size()) / vocab;
  for (int64_t r = 0; r < rows; ++r) {
    double max_diff = 0, max_ref = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      const double a = got[size_t(r * vocab + v)], b = want[size_t(r * vocab + v)];
      max_diff = std::max(max_diff, std::abs(a - b));
      max_ref = std::max(max_ref, std::abs(b));
    }
    if (max_diff / max_ref > worst) worst = max_diff / max_ref, *worst_row = r;
  }
  return worst;
}

hogwild::QuantMethod method_of(const std::string& s) {
  if (s == "awq") return hogwild::QuantMethod::awq;
  if (s == "gptq") return hogwild::QuantMethod::gptq;
  if (s == "fp8") return hogwild::QuantMethod::fp8;
  ADD_FAILURE() << "unknown quant " << s;
  return hogwild::QuantMethod::none;
}

TEST(HfGoldenQuant, LogitsAndGreedyTokensMatchTransformers) {
  const std::vector<std::string> names = golden_names();
  if (names.empty())
    GTEST_SKIP() << "no golden files in " << kGoldenDir.string()
                 << ": make them with tools/hf/make_golden_quant_models.sh (here) and "
                    "tools/hf/make_golden_quant.py (PyTorch + transformers, a GPU for the native "
                    "FP8 reference); see tools/hf/make_golden_quant_models.sh";
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    nlohmann::json meta;
    std::ifstream(kGoldenDir / (name + ".json")) >> meta;
    const auto& args = meta.at("make_model_args");

    const fs::path dir = fs::temp_directory_path() / ("hogwild_golden_quant_" + name);
    fs::remove_all(dir);
    hogwild::MakeModelOptions mo;
    mo.arch = hogwild::arch_from_short_name(args.at("arch").get<std::string>());
    const fs::path config_file = dir.string() + ".config.json";
    if (args.contains("config")) {  // a preset widened by make_golden_quant_models.sh
      std::ofstream(config_file) << args["config"].dump();
      mo.config_file = config_file.string();
    } else {
      mo.preset = args.at("preset").get<std::string>();
    }
    std::string dtype = args.at("dtype").get<std::string>();
    for (auto& c : dtype) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    ASSERT_TRUE(hogwild::dtype_from_name(dtype, &mo.dtype));
    mo.seed = args.at("seed").get<uint64_t>();
    mo.quant = method_of(args.at("quant").get<std::string>());
    mo.group_size = args.value("group_size", int64_t(0));
    mo.desc_act = args.value("desc_act", false);
    mo.sym = args.value("sym", true);
    mo.out_dir = dir.string();
    mo.show_progress = false;
    hogwild::make_model(mo);

    hogwild::LoadOptions lo;
    lo.show_progress = false;
    hogwild::cpu::CpuBackend backend(hogwild::load_model(dir.string(), lo));
    ASSERT_EQ(backend.config().quantization_config.method, mo.quant);
    const int64_t vocab = backend.config().vocab_size;
    ASSERT_EQ(vocab, meta.at("vocab_size").get<int64_t>());
    const auto prompt = meta.at("prompt_ids").get<std::vector<int32_t>>();
    const auto want_ids = meta.at("greedy_ids").get<std::vector<int32_t>>();
    const int64_t n_rows = meta.at("logits_shape")[0].get<int64_t>();
    const std::vector<float> want =
        read_logits(meta.at("logits_file").get<std::string>(), size_t(n_rows * vocab));
    ASSERT_FALSE(want.empty()) << "truncated golden logits";

    const hogwild::testing::GreedyLogits res =
        hogwild::testing::greedy_logits(backend, prompt, static_cast<int64_t>(want_ids.size()));
    const std::vector<float>& got = res.logits;  // every position of prompt ++ generated
    EXPECT_EQ(res.generated, want_ids) << "greedy tokens differ from transformers (fp32)";
    ASSERT_EQ(got.size(), want.size());
    int64_t worst_row = -1;
    const double worst = worst_row_error(got, want, vocab, &worst_row);
    EXPECT_LE(worst, 1e-4) << "worst row " << worst_row;
    std::printf("%s: max relative error %.3g vs transformers fp32 (row %lld)\n", name.c_str(),
                worst, static_cast<long long>(worst_row));

    if (meta.contains("native") && meta["native"].contains("logits_file")) {
      // The same ids through transformers' FP8 path: our logits on prompt + its greedy ids.
      const auto& nat = meta["native"];
      const auto nat_ids = nat.at("greedy_ids").get<std::vector<int32_t>>();
      const std::vector<float> want_nat =
          read_logits(nat.at("logits_file").get<std::string>(), size_t(n_rows * vocab));
      ASSERT_FALSE(want_nat.empty()) << "truncated native logits";
      std::vector<int32_t> ids = prompt;
      ids.insert(ids.end(), nat_ids.begin(), nat_ids.end());  // n_rows positions
      std::vector<float> got_nat;
      hogwild::cpu::CpuBackend b2(hogwild::load_model(dir.string(), lo));
      hogwild::sequence_logits(b2, ids, static_cast<int64_t>(ids.size()),
                               [&](const float* l, int64_t rows) {
                                 got_nat.insert(got_nat.end(), l, l + rows * vocab);
                               });
      ASSERT_EQ(got_nat.size(), want_nat.size());
      const double bound = nat.at("hf_fp32_max_rel_error").get<double>() + 1e-4;
      int64_t row = -1;
      const double err = worst_row_error(got_nat, want_nat, vocab, &row);
      EXPECT_LE(err, bound) << "vs transformers' native FP8, worst row " << row;
      std::printf("%s: max relative error %.3g vs transformers native fp8 (HF fp32: %.3g)\n",
                  name.c_str(), err, bound - 1e-4);
    }
    fs::remove_all(dir);
    fs::remove(config_file);
  }
}

}  // namespace
