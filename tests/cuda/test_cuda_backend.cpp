// CudaBackend end to end against the CPU reference backend (CpuBackend) on random tiny models with
// head_dim 64/128, every family flag (q/k/v bias, q/k norm, tied embeddings, partial rotary, YaRN,
// llama3 RoPE, GQA 1/2/5): a prompt, then hogwild decode steps of 3 workers in the combined layout
// (multi-token inputs included), step promotions, read_block. Both backends get the same weights,
// rounded to bf16, so the difference is the GPU's bf16 activations (fp32 accumulation).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "cpu/ops.h"
#include "cpu/rope.h"
#include "cuda/cuda_backend.h"
#include "model/make_model.h"
#include "model/weights.h"
#include "tests/cpu/tiny_model.h"
#include "tests/cuda/cuda_test_util.h"

namespace hogwild::test {
namespace {

// max |a - b| / max |b| (relative to the logits' scale).
double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double num = 0, den = 1e-3;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num = std::max(num, std::fabs(double(a[i]) - b[i]));
    den = std::max(den, std::fabs(double(b[i])));
  }
  return num / den;
}

struct Case {
  std::string name;
  TinySpec spec;
  int64_t head_dim;
};

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const TinySpec& s : tiny_specs()) v.push_back({s.name + "_hd64", s, 64});
  TinySpec g5{.name = "qwen2_gqa5",
              .arch = Arch::qwen2,
              .attention_bias = true,
              .n_heads = 10,
              .n_kv_heads = 2,
              .rope = {}};
  v.push_back({"qwen2_gqa5_hd128", g5, 128});
  v.push_back({"qwen2_gqa5_hd64", g5, 64});
  TinySpec q3{.name = "qwen3",
              .arch = Arch::qwen3,
              .qk_norm = true,
              .n_heads = 8,
              .n_kv_heads = 1,
              .rope = {}};
  v.push_back({"qwen3_gqa8_hd128", q3, 128});
  v.push_back({"qwen3_gqa8_hd64", q3, 64});
  TinySpec l2{.name = "llama", .arch = Arch::llama, .n_heads = 4, .n_kv_heads = 2, .rope = {}};
  v.push_back({"llama_gqa2_hd128", l2, 128});
  TinySpec l4{.name = "llama", .arch = Arch::llama, .n_heads = 8, .n_kv_heads = 2, .rope = {}};
  v.push_back({"llama_gqa4_hd128", l4, 128});
  TinySpec l3{.name = "llama", .arch = Arch::llama, .n_heads = 6, .n_kv_heads = 2, .rope = {}};
  v.push_back({"llama_gqa3_hd128", l3, 128});
  TinySpec l5{.name = "llama", .arch = Arch::llama, .n_heads = 10, .n_kv_heads = 2, .rope = {}};
  v.push_back({"llama_gqa5_hd128", l5, 128});
  TinySpec l8{.name = "llama", .arch = Arch::llama, .n_heads = 16, .n_kv_heads = 2, .rope = {}};
  v.push_back({"llama_gqa8_hd64", l8, 64});
  TinySpec l10{.name = "llama", .arch = Arch::llama, .n_heads = 20, .n_kv_heads = 2, .rope = {}};
  v.push_back({"llama_gqa10_hd64", l10, 64});
  return v;
}

ModelWeights make_weights(const Case& k) {
  ModelConfig c = tiny_config(k.spec);
  c.head_dim = k.head_dim;
  c.hidden_size = 96;
  c.intermediate_size = 136;
  c.vocab_size = 101;
  c.max_position_embeddings = 512;
  ModelWeights w = tiny_weights(c, 17);
  round_weights_bf16(w);
  return w;
}

constexpr double kTol = 2e-2;  // bf16 activations vs fp32

// A row of one forward whose own top-k on the CPU differs from the experts the GPU chose.
struct RoutingFlip {
  int64_t layer = 0, row = 0;  // MoE layer (dense layers skipped), token row
  double gap = 0;    // how far the CPU's fp32 router logits preferred its own choice: the largest
                     // logit it alone chose minus the smallest logit the GPU alone chose
  double range = 0;  // max - min of that row's router logits
};

// Routing is discrete: the GPU's bf16 activations move each router logit by a little, and a row
// whose k-th and (k+1)-th experts are that close takes the other expert on the GPU. run_session
// replays the GPU's routing on the CPU (CpuBackend::force_routing), so that both run the same
// experts, and lists here the rows where the CPU's own top-k (n rows, its fp32 router logits)
// would have differed from the GPU's choice `gpu` (per MoE layer, (n, k) ascending).
std::vector<RoutingFlip> routing_flips(const std::vector<std::vector<int32_t>>& gpu,
                                       const cpu::CpuBackend& cpu, const ModelConfig& c,
                                       int64_t n) {
  const int64_t k = c.num_experts_per_tok, E = c.num_experts;
  const std::vector<cpu::MoeTrace>& r = cpu.last_routing();
  EXPECT_EQ(gpu.size(), r.size());
  std::vector<RoutingFlip> flips;
  for (size_t l = 0; l < std::min(gpu.size(), r.size()); ++l)
    for (int64_t t = 0; t < n; ++t) {
      std::vector<int32_t> a(r[l].chosen.begin() + t * k, r[l].chosen.begin() + (t + 1) * k);
      const std::vector<int32_t> b(gpu[l].begin() + t * k, gpu[l].begin() + (t + 1) * k);
      std::sort(a.begin(), a.end());  // the GPU lists a row's experts ascending already
      if (a == b) continue;
      const float* lg = r[l].router_logits.data() + t * E;
      auto has = [](const std::vector<int32_t>& v, int32_t e) {
        return std::find(v.begin(), v.end(), e) != v.end();
      };
      double cpu_only = -INFINITY, gpu_only = INFINITY;
      for (int32_t e : a)
        if (!has(b, e)) cpu_only = std::max(cpu_only, double(lg[e]));
      for (int32_t e : b)
        if (!has(a, e)) gpu_only = std::min(gpu_only, double(lg[e]));
      const auto [lo, hi] = std::minmax_element(lg, lg + E);
      flips.push_back({int64_t(l), t, cpu_only - gpu_only, double(*hi - *lo)});
    }
  return flips;
}

// Applies the same operations to both backends and compares every forward's logits. A MoE model
// (the GPU backend built with record_routing) runs each forward's GPU routing on the CPU too, and
// every row where the CPU's own choice differs must be a near-tie of its router logits (a gap
// within kTol of their range).
void run_session(Backend& gpu, Backend& cpu, const ModelConfig& c, const std::string& name) {
  TestRng rng(99);
  auto tok = [&] { return static_cast<int32_t>(rng.next() % c.vocab_size); };
  auto* gpu_moe = c.num_experts > 0 ? dynamic_cast<cuda::CudaBackend*>(&gpu) : nullptr;
  auto* cpu_moe = c.num_experts > 0 ? dynamic_cast<cpu::CpuBackend*>(&cpu) : nullptr;
  if (cpu_moe) cpu_moe->record_routing(true);
  double worst = 0;
  int forwards = 0, near_ties = 0;
  auto both = [&](const ForwardBatch& b) {
    const int64_t n = static_cast<int64_t>(b.tokens.size());
    std::vector<float> lg, lc;
    gpu.forward(b, lg);
    std::vector<std::vector<int32_t>> routing;
    if (gpu_moe && cpu_moe) cpu_moe->force_routing(routing = gpu_moe->last_routing(n));
    cpu.forward(b, lc);
    if (gpu_moe && cpu_moe)
      for (const RoutingFlip& f : routing_flips(routing, *cpu_moe, c, n)) {
        ++near_ties;
        EXPECT_LE(f.gap, kTol * f.range)
            << name << ": forward " << forwards << ", MoE layer " << f.layer << ", row " << f.row
            << ": the GPU chose other experts where the router logits are no near-tie";
      }
    ++forwards;
    worst = std::max(worst, max_rel(lg, lc));
    ASSERT_LT(max_rel(lg, lc), kTol) << name;
  };
  const BlockId P = gpu.new_block();
  ASSERT_EQ(cpu.new_block(), P);
  {  // prompt of 40 tokens, logits at two rows
    ForwardBatch b;
    b.views = {{P}};
    for (int i = 0; i < 40; ++i) b.tokens.push_back({tok(), 0, P, i == 17 || i == 39});
    both(b);
  }
  constexpr int W = 3;
  std::vector<BlockId> S(W);
  for (int w = 0; w < W; ++w) {
    S[w] = gpu.new_block();
    ASSERT_EQ(cpu.new_block(), S[w]);
  }
  auto views = [&] {
    std::vector<std::vector<BlockId>> v(W);
    for (int w = 0; w < W; ++w) {
      v[w] = {P};
      for (int o = 0; o < W; ++o)
        if (o != w) v[w].push_back(S[o]);
      v[w].push_back(S[w]);
    }
    return v;
  };
  for (int step = 0; step < 8; ++step) {
    ForwardBatch b;
    b.views = views();
    for (int w = 0; w < W; ++w) {
      const int n = (step == 0 && w == 1) ? 3 : 1;  // multi-token input
      for (int k = 0; k < n; ++k) b.tokens.push_back({tok(), w, S[w], true});
    }
    both(b);
    if (step == 3 || step == 6) {  // worker (step % W) finishes its step: promote it
      const BlockId done = S[step % W];
      gpu.append_block(P, done);
      cpu.append_block(P, done);
      gpu.truncate_block(done, 0);
      cpu.truncate_block(done, 0);
      ASSERT_EQ(gpu.block_len(P), cpu.block_len(P));
      std::vector<float> kg, vg, kc, vc;
      gpu.read_block(P, c.num_hidden_layers - 1, kg, vg);
      cpu.read_block(P, c.num_hidden_layers - 1, kc, vc);
      EXPECT_LT(rel_error(kg, kc), kTol) << name << " promoted keys";
      EXPECT_LT(rel_error(vg, vc), kTol) << name << " promoted values";
    }
  }
  std::printf("[ %s ] max logits error relative to scale: %.2e over %d forwards", name.c_str(),
              worst, forwards);
  if (gpu_moe && cpu_moe) std::printf(" (%d rows routed at a near-tie)", near_ties);
  std::printf("\n");
}

class PerCase : public ::testing::TestWithParam<Case> {};

TEST_P(PerCase, LogitsMatchCpuBackendThroughHogwildSteps) {
  HOGWILD_REQUIRE_GPU();
  {
    const Case& k = GetParam();
    const ModelWeights w = make_weights(k);
    for (bool graphs : {true, false}) {
      cpu::CpuBackend cpu(w);
      cuda::CudaOptions o;
      o.max_batch_tokens = 128, o.max_kv_tokens = 4096, o.use_graphs = graphs;
      cuda::CudaBackend gpu(w, o);
      run_session(gpu, cpu, w.config, k.name + (graphs ? " graphs" : " no graphs"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CudaBackend, PerCase, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// Qwen3-MoE (cuda/moe.h) through the same hogwild steps: the make-model presets with every
// layer sparse, with dense layers (mlp_only_layers) and without renormalised top-k. The CPU
// replays the GPU's routing, and a row routed differently must be a near-tie (run_session).
TEST(CudaBackend, MoeLogitsMatchCpuBackendThroughHogwildSteps) {
  HOGWILD_REQUIRE_GPU();
  for (const char* preset : {"tiny", "tiny-dense-layers", "tiny-no-norm"}) {
    auto p = find_preset(Arch::qwen3_moe, preset);
    p.config.head_dim = 64;  // the tiny presets' 32, widened to a head_dim the attention supports
    ModelWeights w = make_model_weights(p, 5);
    round_weights_bf16(w);
    for (bool graphs : {true, false}) {
      cpu::CpuBackend cpu(w);
      cuda::CudaOptions o;
      o.max_batch_tokens = 128, o.max_kv_tokens = 4096, o.use_graphs = graphs;
      o.record_routing = true;
      cuda::CudaBackend gpu(w, o);
      run_session(gpu, cpu, w.config,
                  std::string("qwen3_moe ") + preset + (graphs ? " graphs" : " no graphs"));
      const std::vector<int32_t> touched = gpu.last_experts_touched();
      ASSERT_EQ(static_cast<int64_t>(touched.size()), w.config.num_moe_layers());
      for (int32_t n : touched) {  // the last forward: 3 rows of top-k each
        EXPECT_GE(n, w.config.num_experts_per_tok);
        EXPECT_LE(n, std::min<int64_t>(w.config.num_experts, 3 * w.config.num_experts_per_tok));
      }
    }
  }
}

// Quantized checkpoints (make-model --quant) streamed packed to the GPU, against the CPU backend
// loading the same files (each quantized layer dequantized once to fp32, the other tensors the
// same bf16 values): AWQ, GPTQ asymmetric with act-order and groups of 32, FP8 blocks, Phi3's fused
// quantized qkv_proj / gate_up_proj, and Qwen3-MoE's quantized experts (AWQ, FP8). The prompt runs
// quant_linear's kernel, the workers' decode steps the skinny kernel's quantized variant with its
// fused norms (the MoE block's fused router, expert SwiGLU and combine).
TEST(CudaBackend, QuantizedCheckpointLogitsMatchCpuBackendThroughHogwildSteps) {
  HOGWILD_REQUIRE_GPU();
  namespace fs = std::filesystem;
  struct QCase {
    Arch arch;
    QuantMethod method;
    int64_t group_size;
    bool desc_act, sym;
  };
  for (const QCase q : {QCase{Arch::qwen3, QuantMethod::awq, 0, false, true},
                        QCase{Arch::qwen3, QuantMethod::awq, 64, false, true},
                        QCase{Arch::qwen3, QuantMethod::gptq, 32, false, false},
                        // act-order: Phi-3's fused qkv_proj / gate_up_proj carry one g_idx each,
                        // as GPTQ writes them (the CUDA backend refuses separate q/k/v tensors
                        // with different permutations)
                        QCase{Arch::phi3, QuantMethod::gptq, 32, true, false},
                        QCase{Arch::qwen3, QuantMethod::fp8, 0, false, true},
                        QCase{Arch::phi3, QuantMethod::awq, 64, false, true},
                        QCase{Arch::qwen3_moe, QuantMethod::awq, 0, false, true},
                        QCase{Arch::qwen3_moe, QuantMethod::fp8, 0, false, true}}) {
    // the tiny preset widened to a head_dim the CUDA attention supports
    ModelConfig c = find_preset(q.arch, "tiny").config;
    c.head_dim = 64, c.hidden_size = 128, c.intermediate_size = 256;
    if (q.arch == Arch::qwen3_moe) c.moe_intermediate_size = 64;
    const std::string name = std::string(arch_short_name(q.arch)) + " " +
                             quant_method_name(q.method) + (q.desc_act ? " act-order" : "") +
                             (q.group_size ? " g" + std::to_string(q.group_size) : "");
    const fs::path dir = fs::temp_directory_path() /
                         ("hogwild_cuda_quant_" + std::to_string(getpid()) + "_" +
                          std::to_string(int(q.arch)) + "_" + std::to_string(int(q.method)) + "_g" +
                          std::to_string(q.group_size) + (q.desc_act ? "_act" : ""));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "shape.json") << model_config_to_json(c).dump();
    MakeModelOptions o;
    o.arch = q.arch;
    o.config_file = (dir / "shape.json").string();
    o.seed = 3;
    o.out_dir = (dir / "model").string();
    o.show_progress = false;
    o.quant = q.method;
    o.group_size = q.group_size;
    o.desc_act = q.desc_act;
    o.sym = q.sym;
    make_model(o);
    const ModelWeights w = load_model(o.out_dir, {.show_progress = false});
    for (bool graphs : {true, false}) {
      cpu::CpuBackend cpu(w);
      cuda::CudaOptions co;
      co.max_batch_tokens = 128, co.max_kv_tokens = 4096, co.use_graphs = graphs;
      co.record_routing = true;
      cuda::CudaBackend gpu(o.out_dir, co);
      ASSERT_EQ(gpu.config().quantization_config.method, q.method) << name;
      run_session(gpu, cpu, w.config, name + (graphs ? " graphs" : " no graphs"));
    }
    fs::remove_all(dir);
  }
}

// In situ: the attention output of a one-layer model's prompt forward against a CPU attention of
// the backend's own q (qkv buffer) and cached K/V (read_block).
TEST(CudaBackend, AttentionInSituMatchesCpuAttention) {
  HOGWILD_REQUIRE_GPU();
  for (int64_t nh : {4, 16}) {
    for (bool graphs : {false, true}) {
      TinySpec sp{.name = "llama", .arch = Arch::llama, .n_heads = nh, .n_kv_heads = 2, .rope = {}};
      ModelWeights w = make_weights({"x", sp, 64});
      w.config.num_hidden_layers = 1;
      w.layers.resize(1);
      const ModelConfig& c = w.config;
      cuda::CudaOptions o;
      o.max_batch_tokens = 128, o.max_kv_tokens = 4096, o.use_graphs = graphs;
      cuda::CudaBackend gpu(w, o);
      const BlockId P = gpu.new_block();
      const int T = 8;
      ForwardBatch b;
      b.views = {{P}};
      for (int i = 0; i < T; ++i) b.tokens.push_back({(i * 37 + 5) % 101, 0, P, true});
      std::vector<float> lg;
      gpu.forward(b, lg);
      const auto qkv = gpu.debug_activation("qkv", T);
      const auto att = gpu.debug_activation("attn", T);
      std::vector<float> K, V;
      gpu.read_block(P, 0, K, V);
      cpu::RopeTable rope(cpu::compute_rope_params(c));
      rope.reserve(64);
      const int64_t hd = c.head_dim, kvh = c.num_key_value_heads, G = nh / kvh;
      const int64_t stride = (nh + 2 * kvh) * hd;
      double worst = 0;
      std::vector<float> q(hd), ob(hd), want(hd);
      for (int t = 0; t < T; ++t)
        for (int64_t hq = 0; hq < nh; ++hq) {
          std::copy_n(&qkv[t * stride + hq * hd], hd, q.data());
          rope.rotate(q.data(), 1, t, 1.0f);
          cpu::AttnState st{0, 0, ob.data()};
          cpu::attn_state_init(st, hd);
          cpu::attn_partial(q.data(), &K[(hq / G) * hd], &V[(hq / G) * hd], t + 1, kvh * hd, hd,
                            1.0f / std::sqrt(float(hd)), st);
          cpu::attn_state_normalize(st, want.data(), hd);
          worst = std::max(worst, rel_error(&att[(t * nh + hq) * hd], want.data(), hd));
        }
      cpu::CpuBackend cpu(w);
      const BlockId Pc = cpu.new_block();
      for (auto& t : b.tokens) t.block = Pc;
      b.views = {{Pc}};
      std::vector<float> lc;
      cpu.forward(b, lc);
      std::vector<float> Kc, Vc;
      cpu.read_block(Pc, 0, Kc, Vc);
      EXPECT_LT(max_rel(lg, lc), kTol) << "1-layer logits, nh " << nh;
      EXPECT_LT(rel_error(K, Kc), kTol) << "nh " << nh;
      EXPECT_LT(rel_error(V, Vc), kTol) << "nh " << nh;
      // 2-layer variant: logits and layer-1 K/V
      ModelWeights w2 = make_weights({"x", sp, 64});
      cuda::CudaBackend gpu2(w2, o);
      cpu::CpuBackend cpu2(w2);
      const BlockId P2 = gpu2.new_block(), P2c = cpu2.new_block();
      ForwardBatch b2 = b;
      for (auto& t : b2.tokens) t.block = P2;
      b2.views = {{P2}};
      std::vector<float> lg2, lc2;
      gpu2.forward(b2, lg2);
      for (auto& t : b2.tokens) t.block = P2c;
      b2.views = {{P2c}};
      cpu2.forward(b2, lc2);
      std::vector<float> K1, V1, K1c, V1c;
      gpu2.read_block(P2, 1, K1, V1);
      cpu2.read_block(P2c, 1, K1c, V1c);
      EXPECT_LT(max_rel(lg2, lc2), kTol) << "2-layer logits, nh " << nh;
      EXPECT_LT(rel_error(K1, K1c), kTol) << "2-layer, layer-1 K, nh " << nh;
      EXPECT_LT(rel_error(V1, V1c), kTol) << "2-layer, layer-1 V, nh " << nh;
      EXPECT_LT(worst, 1e-2);
    }
  }
}

// A prompt fed in 8-token pieces (every projection on the skinny path): logits of each piece and
// every layer's K and V (functions of that layer's input only) match the CPU's, so a divergence
// is located to the first layer whose input differs. nh 16 x head_dim 64 caught a weight upload
// race (pageable cudaMemcpy vs. the backend's non-blocking stream).
TEST(CudaBackend, PromptKvMatchesCpuLayerByLayer) {
  HOGWILD_REQUIRE_GPU();
  for (int64_t nh : {4, 16}) {
    TinySpec sp{.name = "llama", .arch = Arch::llama, .n_heads = nh, .n_kv_heads = 2, .rope = {}};
    const ModelWeights w = make_weights({"x", sp, 64});
    for (bool graphs : {false, true}) {
      cpu::CpuBackend cpu(w);
      cuda::CudaOptions o;
      o.max_batch_tokens = 128, o.max_kv_tokens = 4096, o.use_graphs = graphs;
      cuda::CudaBackend gpu(w, o);
      const BlockId P = gpu.new_block();
      const BlockId Pc = cpu.new_block();
      std::vector<float> lg, lc;
      for (int piece = 0; piece < 5; ++piece) {  // 8-token pieces: every product is skinny
        ForwardBatch b;
        b.views = {{P}};
        for (int i = piece * 8; i < piece * 8 + 8; ++i)
          b.tokens.push_back({(i * 37 + 5) % 101, 0, P, i == 39});
        gpu.forward(b, lg);
        b.views = {{Pc}};
        for (auto& t : b.tokens) t.block = Pc;
        cpu.forward(b, lc);
        EXPECT_LT(max_rel(lg, lc), kTol) << "nh " << nh << " piece " << piece;
      }
      for (int64_t l = 0; l < w.config.num_hidden_layers; ++l) {
        std::vector<float> kg, vg, kc, vc;
        gpu.read_block(P, l, kg, vg);
        cpu.read_block(Pc, l, kc, vc);
        EXPECT_LT(rel_error(kg, kc), kTol) << "nh " << nh << " layer " << l;
        EXPECT_LT(rel_error(vg, vc), kTol) << "nh " << nh << " layer " << l;
      }
    }
  }
}

// A chunk that is not whole pages is refused with the rule, before any GPU is touched (so this
// runs without one too).
TEST(CudaBackend, AttentionChunkMustBeWholePages) {
  const ModelWeights w = make_weights(cases()[0]);
  for (int32_t chunk : {100, -64, 1}) {
    cuda::CudaOptions o;
    o.attn_chunk = chunk;
    try {
      cuda::CudaBackend gpu(w, o);
      ADD_FAILURE() << "attention chunk " << chunk << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("multiple of 64 keys"), std::string::npos) << e.what();
    }
  }
}

TEST(CudaBackend, BadInputThrowsAndLeavesTheCacheUnchanged) {
  HOGWILD_REQUIRE_GPU();
  const ModelWeights w = make_weights(cases()[0]);
  cuda::CudaOptions o;
  o.max_batch_tokens = 256, o.max_kv_tokens = 128;
  cuda::CudaBackend gpu(w, o);
  const BlockId a = gpu.new_block(), b = gpu.new_block();
  std::vector<float> logits;
  ForwardBatch bad_id{{{1000, 0, a, true}}, {{a}}, {}, {}};
  EXPECT_THROW(gpu.forward(bad_id, logits), Error);
  ForwardBatch not_in_view{{{1, 0, b, true}}, {{a}}, {}, {}};
  EXPECT_THROW(gpu.forward(not_in_view, logits), Error);
  ForwardBatch too_many;
  too_many.views = {{a}};
  for (int i = 0; i < 129; ++i) too_many.tokens.push_back({1, 0, a, false});
  EXPECT_THROW(gpu.forward(too_many, logits), Error);  // KV full (128 tokens)
  EXPECT_EQ(gpu.block_len(a), 0);
  EXPECT_THROW(gpu.require_kv_tokens(129), Error);
  EXPECT_NO_THROW(gpu.require_kv_tokens(128));
  EXPECT_THROW(gpu.block_len(7), Error);
}

}  // namespace
}  // namespace hogwild::test
