// CudaBackend end to end against HF transformers in bf16 on the GPU. Golden files in
// tests/data/hf_golden_bf16 were made by tools/hf/make_golden_bf16.py (versions inside each .json)
// on models written by `hogwild make-model --config` with bf16 weights
// (tools/hf/make_golden_bf16_models.sh; the config is stored in "make_model_args"). Here the same
// model is regenerated in-process, loaded, and fed teacher-forced on HF's ids with HF's schedule:
// the 120 prompt ids in one forward (logits of every row), then the 32 greedy ids one per forward.
// 152 logit rows are compared with
//   * HF bf16 (sdpa): the reference the backend is held to. Both sides hold the same bf16 weights;
//   HF
//     keeps a bf16 residual stream and bf16 logits, we keep an fp32 residual stream and fp32
//     logits, so the two differ by bf16 rounding of activations on both sides.
//   * HF fp32 (eager, TF32 off) of the same model and ids: the exact answer, which tells how far
//     each bf16 forward is from it.
// Error measures (printed per model): max |ours - ref| over all rows and vocab (abs); per row
// max_v |ours - ref| / max_v |ref| (relative to the row's largest |logit|), max over rows (rel);
// ||ours - ref|| / ||ref|| over all logits (rms).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cuda/cuda_backend.h"
#include "model/dtype.h"
#include "model/make_model.h"
#include "model/weights.h"
#include "tests/cuda/cuda_test_util.h"

namespace fs = std::filesystem;

namespace hogwild::test {
namespace {

// Tolerances, per model, from HF's own bf16 error. bf16 keeps 8 significant bits (u = 2^-8), and
// on these models transformers' bf16 forward is itself 2.4e-2 .. 5.3e-2 (rel), 0.07 .. 0.28 (abs),
// 1.1e-2 .. 2.1e-2 (rms) away from its fp32 forward of the same weights ("hf_bf16_vs_fp32" in each
// .json, measured when the goldens were made): it rounds the residual stream after every add, every
// projection output and the logits, and the two layers amplify those roundings. Our engine holds
// the same bf16 weights and rounds a subset of those places (projection inputs, q/k/v, K/V cache;
// the residual stream and the logits stay fp32), so
//   (1) against the exact (fp32) logits it must be at least as accurate as HF bf16: our max abs,
//       max rel and rms errors <= HF bf16's (kNoWorseThanHf = 1; measured on the H200,
//       2026-11-29, commit fc281ed: ours / HF's = 0.67 .. 0.97 abs, 0.77 .. 0.90 rel,
//       0.82 .. 0.90 rms);
//   (2) against HF bf16, by the triangle inequality |ours - hf| <= |ours - exact| + |exact - hf|,
//       max abs <= 2 x HF's max abs error and max rel <= 2 x HF's max rel error;
//   (3) greedy ids: where HF's top-2 margin exceeds 2 x the bound of (2) (= 4 x HF's max abs
//       error), no error within the bound can swap the two, so our argmax must equal HF's there.
//       Nearer ties may flip (HF bf16 and HF fp32 disagree on 0-6 rows per model, all with margin
//       <= 0.062): counted and printed, not asserted.
//   Mixture of experts (qwen3_moe): a router near-tie sends a row to another expert, a discrete
//   jump that either implementation may take (HF's own bf16 forward jumps: abs 0.58 / 0.41 against
//   its fp32). The largest single-logit error is then one sample of such a jump, not a measure of
//   accuracy: (1) holds for rel and rms, the abs error obeys (2)'s bound; and (3) compares the
//   rows whose margin exceeds 2 x HF's own max abs error (none passes 4 x on these models; first
//   run on an H100: ours vs fp32 abs 0.666 / 0.402 against HF's 0.577 / 0.407, rel and rms below
//   HF's).
constexpr double kNoWorseThanHf = 1.0;

fs::path golden_dir() {
  // The tests may run in a copy of the working tree on another host than the build: prefer the
  // path relative to the working directory, then the source tree the binary was configured in.
  const fs::path rel = "tests/data/hf_golden_bf16";
  if (fs::is_directory(rel)) return rel;
  return fs::path(HOGWILD_SOURCE_DIR) / rel;
}

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  if (!fs::is_directory(golden_dir())) return names;
  for (const auto& e : fs::directory_iterator(golden_dir()))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<float> read_f32(const fs::path& p, size_t n) {
  std::vector<float> v(n);
  std::ifstream f(p, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(float)));
  EXPECT_TRUE(f.good()) << "missing or truncated golden logits " << p;
  return v;
}

struct Errors {
  double abs = 0, rel = 0;  // max |got - want|; max over rows of (max |got - want| / max |want|)
  double rms = 0;           // ||got - want|| / ||want|| over all rows (Frobenius)
  int64_t abs_row = -1, rel_row = -1;
};

Errors compare(const std::vector<float>& got, const std::vector<float>& want, int64_t vocab) {
  Errors e;
  double num = 0, den = 0;
  for (int64_t r = 0; r * vocab < static_cast<int64_t>(want.size()); ++r) {
    double diff = 0, scale = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      const double a = got[r * vocab + v], b = want[r * vocab + v];
      diff = std::isfinite(a) ? std::max(diff, std::abs(a - b)) : INFINITY;
      scale = std::max(scale, std::abs(b));
      num += (a - b) * (a - b), den += b * b;
    }
    if (diff > e.abs) e.abs = diff, e.abs_row = r;
    if (diff / scale > e.rel) e.rel = diff / scale, e.rel_row = r;
  }
  e.rms = std::sqrt(num / den);
  return e;
}

// Regenerates the golden's model (make-model is deterministic) into a temporary directory.
ModelWeights regenerate(const std::string& name, const nlohmann::json& args) {
  const fs::path dir = fs::temp_directory_path() / ("hogwild_golden_bf16_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path cfg = dir / "source_config.json";
  std::ofstream(cfg) << args.at("config").dump(1);
  MakeModelOptions mo;
  mo.arch = arch_from_short_name(args.at("arch").get<std::string>());
  mo.config_file = cfg.string();
  std::string dtype = args.at("dtype").get<std::string>();  // "bf16" as on the make-model CLI
  for (auto& c : dtype) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_TRUE(dtype_from_name(dtype, &mo.dtype)) << dtype;
  mo.seed = args.at("seed").get<uint64_t>();
  mo.out_dir = (dir / "model").string();
  mo.show_progress = false;
  make_model(mo);
  LoadOptions lo;
  lo.show_progress = false;
  ModelWeights w = load_model(mo.out_dir, lo);
  fs::remove_all(dir);
  return w;
}

// Teacher-forced run with HF's schedule: the prompt in one forward, then one id per forward.
// Returns (n_prompt + n_decode, vocab) logits.
std::vector<float> run_cuda(const ModelWeights& w, const std::vector<int32_t>& prompt,
                            const std::vector<int32_t>& decode, bool graphs) {
  cuda::CudaOptions o;
  o.max_batch_tokens = 128, o.max_kv_tokens = 1024, o.use_graphs = graphs;
  cuda::CudaBackend gpu(w, o);
  const BlockId b = gpu.new_block();
  std::vector<float> all, lg;
  ForwardBatch fb;
  fb.views = {{b}};
  for (int32_t t : prompt) fb.tokens.push_back({t, 0, b, true});
  gpu.forward(fb, lg);
  all = lg;
  for (int32_t t : decode) {
    fb.tokens = {{t, 0, b, true}};
    gpu.forward(fb, lg);
    all.insert(all.end(), lg.begin(), lg.end());
  }
  return all;
}

class HfGoldenBf16 : public ::testing::TestWithParam<std::string> {};

TEST_P(HfGoldenBf16, LogitsAndGreedyIdsMatchTransformersBf16) {
  HOGWILD_REQUIRE_GPU();
  const std::string name = GetParam();
  nlohmann::json meta;
  std::ifstream(golden_dir() / (name + ".json")) >> meta;
  const ModelWeights w = regenerate(name, meta.at("make_model_args"));
  const int64_t vocab = w.config.vocab_size;
  ASSERT_EQ(vocab, meta.at("vocab_size").get<int64_t>());
  const auto prompt = meta.at("prompt_ids").get<std::vector<int32_t>>();
  const auto greedy = meta.at("greedy_ids").get<std::vector<int32_t>>();
  const auto hf_argmax = meta.at("row_argmax").get<std::vector<int32_t>>();
  const auto margin = meta.at("row_top2_margin").get<std::vector<double>>();
  const int64_t n_rows = meta.at("logits_shape")[0].get<int64_t>();
  ASSERT_EQ(n_rows, static_cast<int64_t>(prompt.size() + greedy.size()));
  const size_t n = static_cast<size_t>(n_rows * vocab);
  const auto want = read_f32(golden_dir() / meta.at("logits_file").get<std::string>(), n);
  const auto exact = read_f32(golden_dir() / meta.at("logits_fp32_file").get<std::string>(), n);

  const Errors hf = compare(want, exact, vocab);  // HF bf16 against HF fp32
  const bool moe = w.config.num_experts > 0;
  const double abs_tol = 2 * hf.abs, rel_tol = 2 * hf.rel;
  const double margin_tol = moe ? 2 * hf.abs : 2 * abs_tol;
  for (bool graphs : {true, false}) {
    const std::string tag = name + (graphs ? " graphs" : " no graphs");
    const std::vector<float> got = run_cuda(w, prompt, greedy, graphs);
    ASSERT_EQ(got.size(), n);
    const Errors e = compare(got, want, vocab);
    const Errors e32 = compare(got, exact, vocab);
    EXPECT_LE(e32.abs, (moe ? 2 : kNoWorseThanHf) * hf.abs)
        << tag << " vs fp32: worst row " << e32.abs_row;
    EXPECT_LE(e32.rel, kNoWorseThanHf * hf.rel) << tag << " vs fp32: worst row " << e32.rel_row;
    EXPECT_LE(e32.rms, kNoWorseThanHf * hf.rms) << tag << " vs fp32";
    EXPECT_LE(e.abs, abs_tol) << tag << ": worst row " << e.abs_row;
    EXPECT_LE(e.rel, rel_tol) << tag << ": worst row " << e.rel_row;
    int compared = 0, near_ties_flipped = 0;
    for (int64_t r = 0; r < n_rows; ++r) {
      const float* row = got.data() + r * vocab;
      const int32_t ours = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
      if (margin[r] > margin_tol) {
        ++compared;
        EXPECT_EQ(ours, hf_argmax[r]) << tag << ": row " << r << " HF margin " << margin[r];
      } else {
        near_ties_flipped += ours != hf_argmax[r];
      }
    }
    EXPECT_GT(compared, 0) << tag << ": no row has a margin above " << margin_tol;
    std::printf(
        "[ %s ] vs HF bf16: abs %.3g (tol %.3g), rel %.3g (tol %.3g), rms %.3g | vs HF fp32: abs "
        "%.3g, rel %.3g, rms %.3g | HF bf16 vs fp32: abs %.3g, rel %.3g, rms %.3g | max|logit| "
        "%.2f | greedy: %d rows with margin > %.3g agree, %d nearer ties flipped\n",
        tag.c_str(), e.abs, abs_tol, e.rel, rel_tol, e.rms, e32.abs, e32.rel, e32.rms, hf.abs,
        hf.rel, hf.rms, meta.at("max_abs_logit").get<double>(), compared, margin_tol,
        near_ties_flipped);
  }
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, HfGoldenBf16, ::testing::ValuesIn(golden_names()),
                         param_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(HfGoldenBf16);

// The golden set must be present in the source tree (a missing folder would otherwise pass with
// zero instantiated cases).
TEST(HfGoldenBf16Files, EveryArchitecturePresent) {
  const auto names = golden_names();
  EXPECT_EQ(names,
            (std::vector<std::string>{"llama-tiny", "llama-tiny-linear", "mistral-tiny",
                                      "phi3-tiny", "qwen2-tiny", "qwen3-tiny", "qwen3-tiny-yarn",
                                      "qwen3_moe-tiny", "qwen3_moe-tiny-no-norm"}))
      << "in " << golden_dir();
}

}  // namespace
}  // namespace hogwild::test
