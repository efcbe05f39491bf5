// CudaBackend(model_dir): the checkpoint streamed to the GPU as bf16 holds bit-identical weights to
// the fp32 host load (load_model) rounded on the device, for f32 / bf16 / f16 checkpoints, sharded
// or not, with Phi3's fused qkv/gate_up tensors, q/k/v biases and q/k norms; a checkpoint that does
// not match config.json is refused. CudaBackend::forward's draw against the host: greedy rows are
// the argmax of the same forward's logits, sampled rows the inverse CDF of the CPU Sampler's
// processed probabilities at the given uniform, banned ids are never drawn.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "cuda/cuda_backend.h"
#include "model/config.h"
#include "model/make_model.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "sampling/sampler.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/sampling/row_sampling_twin.h"

namespace hogwild::test {
namespace {

namespace fs = std::filesystem;

struct Spec {
  std::string name;
  Arch arch;
  bool bias, qk_norm, tie;
  Dtype dtype;
  uint64_t shard;  // max shard bytes
};

// A small checkpoint of `arch` with head_dim 64 (the CUDA kernel's), written by make_model.
std::string write_model(const Spec& s, uint64_t seed = 5) {
  const fs::path dir = fs::temp_directory_path() / ("hogwild_cuda_loading_" + s.name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  ModelConfig c = find_preset(s.arch, "tiny").config;
  c.hidden_size = 128;
  c.intermediate_size = 192;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 64;
  c.vocab_size = 300;
  c.attention_bias = s.bias;
  c.qk_norm = s.qk_norm;
  c.tie_word_embeddings = s.tie;
  const fs::path cfg = dir / "in_config.json";
  std::ofstream(cfg) << model_config_to_json(c).dump(1);
  MakeModelOptions o;
  o.arch = s.arch;
  o.config_file = cfg.string();
  o.dtype = s.dtype;
  o.seed = seed;
  o.out_dir = (dir / "model").string();
  o.max_shard_size = s.shard;
  o.show_progress = false;
  make_model(o);
  return o.out_dir;
}

ForwardBatch prompt_batch(BlockId b, int64_t n, int64_t vocab, int n_logit_rows) {
  ForwardBatch fb;
  fb.views = {{b}};
  for (int64_t i = 0; i < n; ++i)
    fb.tokens.push_back({static_cast<int32_t>((i * 37 + 11) % vocab), 0, b, i >= n - n_logit_rows});
  return fb;
}

std::vector<Spec> specs() {
  return {
      {"qwen3_f32", Arch::qwen3, false, true, true, Dtype::f32, 2ull << 30},
      {"qwen3_bf16_sharded", Arch::qwen3, false, true, false, Dtype::bf16, 100000},
      {"qwen2_bias_f16", Arch::qwen2, true, false, false, Dtype::f16, 2ull << 30},
      {"phi3_fused_bf16", Arch::phi3, false, false, false, Dtype::bf16, 2ull << 30},
      {"llama_f32", Arch::llama, false, false, false, Dtype::f32, 2ull << 30},
  };
}

cuda::CudaOptions small_options() {
  cuda::CudaOptions o;
  o.max_kv_tokens = 4096;
  o.show_progress = false;
  return o;
}

TEST(CudaLoading, StreamedCheckpointEqualsHostLoad) {
  HOGWILD_REQUIRE_GPU();
  for (const Spec& s : specs()) {
    SCOPED_TRACE(s.name);
    const std::string dir = write_model(s);
    cuda::CudaBackend streamed(dir, small_options());
    cuda::CudaBackend host(load_model(dir), small_options());
    // The same bf16 bits in every tensor (the streamed path rounds on the host, the other on the
    // device; both round to nearest even).
    EXPECT_EQ(streamed.weight_fingerprint(), host.weight_fingerprint());
    // And the logits agree. Not bit for bit: the fused RMSNorm sums squares with atomics, whose
    // order varies, and a last-bit change can flip a bf16 rounding; 2^-8 of the logits' scale
    // bounds one such flip, a wrong tensor gives O(1).
    std::vector<float> a, b;
    const BlockId ba = streamed.new_block(), bb = host.new_block();
    const int64_t V = streamed.config().vocab_size;
    streamed.forward(prompt_batch(ba, 40, V, 40), a);
    host.forward(prompt_batch(bb, 40, V, 40), b);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a.size(), static_cast<size_t>(40 * V));
    double worst = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
      scale = std::max(scale, std::fabs(double(b[i])));
    }
    EXPECT_LE(worst, scale / 256) << "logits differ by " << worst << " of scale " << scale;
    EXPECT_GT(scale, 0.1);  // the logits are not trivially zero
  }
  // The fingerprint tells weights apart: another seed gives another hash.
  Spec other = specs()[0];
  other.name += "_seed6";
  cuda::CudaBackend a(write_model(specs()[0]), small_options());
  cuda::CudaBackend b(write_model(other, 6), small_options());
  EXPECT_NE(a.weight_fingerprint(), b.weight_fingerprint());
}

TEST(CudaLoading, MismatchedCheckpointIsRefused) {
  HOGWILD_REQUIRE_GPU();
  const std::string dir = write_model(specs()[0]);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(fs::path(dir) / "config.json"));
  j["intermediate_size"] = 256;
  std::ofstream(fs::path(dir) / "config.json") << j.dump(1);
  try {
    cuda::CudaBackend be(dir, small_options());
    FAIL() << "a checkpoint that does not match config.json was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("do not match config.json"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(cuda::CudaBackend(dir + "/nonexistent", small_options()), Error);
}

TEST(CudaLoading, ForwardSampleMatchesHostSampling) {
  HOGWILD_REQUIRE_GPU();
  const std::string dir = write_model(specs()[1]);
  cuda::CudaBackend ref(dir, small_options());
  cuda::CudaBackend dev(dir, small_options());
  const int64_t V = ref.config().vocab_size;
  const int rows = 8;
  std::vector<float> logits;
  const BlockId br = ref.new_block(), bd = dev.new_block();
  ref.forward(prompt_batch(br, 30, V, rows), logits);
  ASSERT_EQ(logits.size(), static_cast<size_t>(rows * V));
  // Ban each row's argmax in row 0 so the banned path changes a greedy pick.
  const int32_t top0 =
      static_cast<int32_t>(std::max_element(logits.begin(), logits.begin() + V) - logits.begin());
  const std::vector<int32_t> banned = {top0, 7, 299};
  std::vector<RowSampling> rs(rows);
  rs[0] = RowSampling{};  // greedy
  rs[1] = RowSampling{};
  rs[2] = RowSampling{1.0f, 0, 1.0f, 0.0f, 0.25f};
  rs[3] = RowSampling{0.7f, 5, 1.0f, 0.0f, 0.9f};
  rs[4] = RowSampling{1.3f, 0, 0.8f, 0.0f, 0.5f};
  rs[5] = RowSampling{1.0f, 0, 1.0f, 0.1f, 0.05f};
  rs[6] = RowSampling{2.0f, 50, 0.95f, 0.02f, 0.999f};
  rs[7] = RowSampling{1.0f, 0, 1.0f, 0.0f, 0.0f};
  // Per-row banned sets (one per session in a merged forward): rows 0, 3, 6 ban `banned`, rows
  // 1, 4, 7 a second set holding row 1's argmax, rows 2 and 5 nothing.
  const int32_t top1 = static_cast<int32_t>(
      std::max_element(logits.begin() + V, logits.begin() + 2 * V) - (logits.begin() + V));
  const std::vector<std::vector<int32_t>> sets = {banned, {top1, 11}};
  for (int r = 0; r < rows; ++r) rs[r].banned = r % 3 == 2 ? -1 : r % 3;
  ForwardBatch drawing = prompt_batch(bd, 30, V, rows);
  drawing.draw = ForwardDraw{rs, sets, /*keep_logits=*/true};
  ForwardResult out;
  dev.forward(drawing, out);
  const std::vector<int32_t>& got = out.tokens;
  const std::vector<float>& fetched = out.logits;  // the rows drawn from, fetched for dumps
  ASSERT_EQ(got.size(), static_cast<size_t>(rows));
  EXPECT_EQ(fetched, logits) << "the fetched rows are the forward's logits, before the banned ids";
  for (int r = 0; r < rows; ++r) {
    std::vector<float> row(logits.begin() + r * V, logits.begin() + (r + 1) * V);
    const std::vector<int32_t> none_banned;
    const std::vector<int32_t>& mine = rs[r].banned < 0 ? none_banned : sets[rs[r].banned];
    EXPECT_EQ(got[r], host_row_draw(row, rs[r], mine)) << "row " << r;
    for (int32_t b : mine) EXPECT_NE(got[r], b) << "row " << r;
  }
  EXPECT_NE(got[0], top0);
  EXPECT_NE(got[1], top1);
  // Wrong row count, or a row naming a set that does not exist: refused before anything runs.
  ForwardResult none;
  const int64_t len = dev.block_len(bd);
  ForwardBatch two_rows = prompt_batch(bd, 2, V, 1);
  two_rows.draw = ForwardDraw{std::vector<RowSampling>(2), sets, false};
  EXPECT_THROW(dev.forward(two_rows, none), Error);
  ForwardBatch bad = prompt_batch(bd, 2, V, 1);
  bad.draw = ForwardDraw{std::vector<RowSampling>(1), sets, false};
  bad.draw.rows[0].banned = 2;
  EXPECT_THROW(dev.forward(bad, none), Error);
  EXPECT_EQ(dev.block_len(bd), len);
}

// A Qwen3-MoE layer whose experts are not all stored in one format: the CPU backend loads it
// (each quantized layer is dequantized on its own), the CUDA backend, which holds a layer's
// experts as one matrix, refuses it with a message naming the tensor, for an AWQ checkpoint whose
// expert 1 keeps a dense gate_proj (modules_to_not_convert) and one whose expert 0 does.
TEST(CudaLoading, ExpertsOfOneLayerInTwoFormatsAreRefused) {
  HOGWILD_REQUIRE_GPU();
  ModelConfig c = find_preset(Arch::qwen3_moe, "tiny").config;
  c.head_dim = 64, c.hidden_size = 128, c.intermediate_size = 256, c.moe_intermediate_size = 64;
  const fs::path root = fs::temp_directory_path() / "hogwild_cuda_loading_mixed_experts";
  fs::remove_all(root);
  fs::create_directories(root);
  std::ofstream(root / "shape.json") << model_config_to_json(c).dump();
  auto make = [&](QuantMethod m, const std::string& name) {
    MakeModelOptions o;
    o.arch = Arch::qwen3_moe;
    o.config_file = (root / "shape.json").string();
    o.seed = 3;
    o.out_dir = (root / name).string();
    o.show_progress = false;
    o.quant = m;
    make_model(o);
    return o.out_dir;
  };
  const std::string awq = make(QuantMethod::awq, "awq"), dense = make(QuantMethod::none, "dense");
  struct Case {
    std::vector<std::string> modules;  // stored dense (modules_to_not_convert)
    std::string error;                 // a part of the CUDA backend's message
  };
  const std::string e = "model.layers.0.mlp.experts.";
  const std::vector<Case> cases = {
      {{e + "1.gate_proj"},
       e + "1.gate_proj.weight is stored dense but expert 0 of its layer is quantized"},
      {{e + "0.gate_proj", e + "0.up_proj"}, "is stored int4 but expert 0 of layer 0 is dense"},
  };
  const Checkpoint qa(awq), de(dense);
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& cs = cases[k];
    const fs::path dir = root / ("mixed" + std::to_string(k));
    fs::create_directories(dir);
    nlohmann::json cfg = nlohmann::json::parse(std::ifstream(fs::path(awq) / "config.json"));
    cfg["quantization_config"]["modules_to_not_convert"] = cs.modules;
    std::ofstream(dir / "config.json") << cfg.dump(1);
    // The AWQ tensors, with the modules' packed tensors replaced by the dense model's weights.
    auto listed = [&](const std::string& name) {
      return std::any_of(cs.modules.begin(), cs.modules.end(),
                         [&](const std::string& m) { return name.starts_with(m + "."); });
    };
    std::vector<TensorToWrite> out;
    std::vector<const Checkpoint::Entry*> src;
    for (const auto& [name, en] : qa.tensors()) {
      if (listed(name)) continue;
      out.push_back({name, en.info->dtype, en.info->shape});
      src.push_back(&en);
    }
    for (const std::string& m : cs.modules) {
      const Checkpoint::Entry* w = de.find(m + ".weight");
      ASSERT_NE(w, nullptr) << m;
      out.push_back({m + ".weight", w->info->dtype, w->info->shape});
      src.push_back(w);
    }
    write_safetensors((dir / "model.safetensors").string(), out, {{"format", "pt"}},
                      [&](size_t i, std::vector<uint8_t>& bytes) {
                        const uint8_t* p = src[i]->file->data(*src[i]->info);
                        bytes.assign(p, p + src[i]->info->nbytes());
                      });
    EXPECT_NO_THROW(load_model(dir.string(), {.show_progress = false})) << cs.error;
    try {
      cuda::CudaBackend be(dir.string(), small_options());
      FAIL() << "experts in two formats were accepted: " << cs.error;
    } catch (const Error& err) {
      const std::string m = err.what();
      EXPECT_NE(m.find(cs.error), std::string::npos) << m;
      EXPECT_NE(m.find("use --device cpu"), std::string::npos) << m;
    }
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace hogwild::test
