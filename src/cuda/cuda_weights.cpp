// CudaBackend weights: allocation, upload of fp32 host weights as bf16, random init on the GPU.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <random>

#include "core/error.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/elementwise.h"
#include "model/dtype.h"
#include "model/loader.h"
#include "model/safetensors.h"

namespace hogwild::cuda {

namespace {

// Elements of layer l's tensors; a MoE layer counts its router and `experts` of its experts.
int64_t layer_elems(const ModelConfig& c, int64_t qkv_dim, int64_t l, int64_t experts) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t qd = c.num_attention_heads * c.head_dim;
  int64_t n = 2 * H + qkv_dim * H + H * qd;
  if (c.is_moe_layer(l))
    n += c.num_experts * H + experts * 3 * c.moe_intermediate_size * H;
  else
    n += 3 * I * H;
  if (c.attention_bias) n += qkv_dim;
  if (c.qk_norm) n += 2 * c.head_dim;
  return n;
}

// Elements of every tensor but the embedding table and lm_head, `experts` experts per MoE layer.
int64_t body_elems(const ModelConfig& c, int64_t qkv_dim, int64_t experts) {
  int64_t n = c.hidden_size;  // the final norm
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) n += layer_elems(c, qkv_dim, l, experts);
  return n;
}

}  // namespace

int64_t CudaBackend::weight_bytes_per_step() const {
  const ModelConfig& c = cfg_;
  int64_t n = body_elems(c, qkv_dim_, c.num_experts_per_tok);
  n += c.vocab_size * c.hidden_size;  // lm_head (or the tied embedding, read as lm_head)
  int64_t bytes = n * 2;
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t qd = c.num_attention_heads * c.head_dim;
  for (const DeviceLayer& L : layers_) {  // a packed projection replaces its bf16 matrix
    const std::pair<const QuantWeight*, int64_t> parts[] = {
        {&L.qkv_q, qkv_dim_ * H}, {&L.o_q, H * qd}, {&L.gate_up_q, 2 * I * H}, {&L.down_q, H * I}};
    for (const auto& [q, elems] : parts)
      if (q->format != WeightFormat::dense) bytes += q->bytes() - elems * 2;
    if (L.moe && L.experts_gate_up_q.format != WeightFormat::dense)  // k packed experts
      bytes += c.num_experts_per_tok * (expert_bytes() - 3 * c.moe_intermediate_size * H * 2);
  }
  return bytes;
}

int64_t CudaBackend::expert_bytes() const {
  for (const DeviceLayer& L : layers_)  // packed: the experts' words, scales and zero points
    if (L.moe && L.experts_gate_up_q.format != WeightFormat::dense)
      return (L.experts_gate_up_q.bytes() + L.experts_down_q.bytes()) / cfg_.num_experts;
  return 3 * cfg_.moe_intermediate_size * cfg_.hidden_size * 2;
}

std::vector<int32_t> CudaBackend::last_experts_touched() const {
  std::vector<int32_t> all(static_cast<size_t>(cfg_.num_hidden_layers)), out;
  if (!has_moe_) return out;
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  HOGWILD_CUDA_CHECK(cudaMemcpy(all.data(), moe_active_, all.size() * 4, cudaMemcpyDeviceToHost));
  for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l)
    if (layers_[static_cast<size_t>(l)].moe) out.push_back(all[static_cast<size_t>(l)]);
  return out;
}

std::vector<std::vector<int32_t>> CudaBackend::last_routing(int64_t n_tokens) const {
  if (!moe_record_) fail("last_routing: the backend was built without CudaOptions::record_routing");
  if (n_tokens < 1 || n_tokens > opt_.max_batch_tokens)
    fail("last_routing: {} tokens; give the last forward's token count (1 to {})", n_tokens,
         opt_.max_batch_tokens);
  const int64_t k = cfg_.num_experts_per_tok;
  std::vector<std::vector<int32_t>> out;
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (int64_t l = 0; l < cfg_.num_hidden_layers; ++l) {
    if (!layers_[static_cast<size_t>(l)].moe) continue;
    std::vector<int32_t>& ids = out.emplace_back(static_cast<size_t>(n_tokens * k));
    HOGWILD_CUDA_CHECK(cudaMemcpy(ids.data(), moe_record_ + l * opt_.max_batch_tokens * k,
                                  ids.size() * 4, cudaMemcpyDeviceToHost));
  }
  return out;
}

int64_t CudaBackend::last_step_weight_bytes() const {
  int64_t b = weight_bytes_per_step();
  for (int32_t n : last_experts_touched()) b += (n - cfg_.num_experts_per_tok) * expert_bytes();
  return b;
}

void CudaBackend::set_quant_formats(DeviceLayer& L, int64_t layer) const {
  const ModelConfig& c = cfg_;
  const QuantConfig& q = c.quantization_config;
  auto fmt_of = [&](std::initializer_list<const char*> modules) {
    std::optional<WeightFormat> f;
    for (const char* m : modules) {
      const WeightFormat g = linear_format(q, fmt::format("model.layers.{}.{}", layer, m));
      if (f && *f != g)
        fail(
            "layer {}: {} are stored in different formats (modules_to_not_convert names one of "
            "them); the CUDA backend multiplies them as one matrix; use --device cpu",
            layer, fmt::join(modules, ", "));
      f = g;
    }
    return *f;
  };
  const WeightFormat f_qkv =
      c.fused_qkv ? fmt_of({"self_attn.qkv_proj"})
                  : fmt_of({"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"});
  L.qkv_q.format = f_qkv;
  L.o_q.format = fmt_of({"self_attn.o_proj"});
  if (c.is_moe_layer(layer)) {  // expert 0 stands for all (each is checked as it loads)
    L.experts_gate_up_q.format = fmt_of({"mlp.experts.0.gate_proj", "mlp.experts.0.up_proj"});
    L.experts_down_q.format = fmt_of({"mlp.experts.0.down_proj"});
    return;
  }
  L.gate_up_q.format =
      c.fused_gate_up ? fmt_of({"mlp.gate_up_proj"}) : fmt_of({"mlp.gate_proj", "mlp.up_proj"});
  L.down_q.format = fmt_of({"mlp.down_proj"});
}

void CudaBackend::keep_quant(QuantWeight& dst, const QuantWeightHost& h) {
  HOGWILD_CHECK(dst.format == h.format);
  dst = upload_quant_weight(h, stream_);
  for (void* p :
       {static_cast<void*>(dst.w), static_cast<void*>(dst.sz), static_cast<void*>(dst.perm)})
    if (p) allocations_.push_back(p);
}

int64_t CudaBackend::kv_bytes_per_token() const {
  return cfg_.num_hidden_layers * 2 * cfg_.num_key_value_heads * cfg_.head_dim * 2;
}

void CudaBackend::alloc_weights() {
  const ModelConfig& c = cfg_;
  const int64_t H = c.hidden_size, V = c.vocab_size;
  int64_t total = body_elems(c, qkv_dim_, c.num_experts) + V * H;
  if (!c.tie_word_embeddings) total += V * H;
  // A quantized checkpoint's packed projections are checked as they are uploaded.
  if (c.quantization_config.method != QuantMethod::none) total = 0;
  size_t free_b = 0, total_b = 0;
  HOGWILD_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (static_cast<double>(total) * 2 > static_cast<double>(free_b))
    fail(
        "the model's bf16 weights need {:.1f} GiB but the GPU has {:.1f} GiB free of {:.1f} GiB; "
        "use a GPU with more memory or a smaller model",
        total * 2.0 / (1 << 30), free_b / double(1 << 30), total_b / double(1 << 30));

  auto alloc = [&](int64_t elems) {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, static_cast<size_t>(elems) * 2);
    if (e != cudaSuccess)
      fail("out of GPU memory allocating {} MiB of weights ({}); use a GPU with more memory",
           elems * 2 >> 20, cudaGetErrorName(e));
    allocations_.push_back(p);
    return static_cast<bf16*>(p);
  };
  const int64_t qd = c.num_attention_heads * c.head_dim, I = c.intermediate_size;
  embed_tokens_ = alloc(V * H);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    DeviceLayer L;
    set_quant_formats(L, l);
    quantized_ = quantized_ || L.qkv_q.format != WeightFormat::dense ||
                 L.o_q.format != WeightFormat::dense || L.gate_up_q.format != WeightFormat::dense ||
                 L.down_q.format != WeightFormat::dense;
    L.input_layernorm = alloc(H);
    if (L.qkv_q.format == WeightFormat::dense) L.qkv_proj = alloc(qkv_dim_ * H);
    if (c.attention_bias) L.qkv_bias = alloc(qkv_dim_);
    if (c.qk_norm) {
      L.q_norm = alloc(c.head_dim);
      L.k_norm = alloc(c.head_dim);
    }
    if (L.o_q.format == WeightFormat::dense) L.o_proj = alloc(H * qd);
    L.post_attention_layernorm = alloc(H);
    if (c.is_moe_layer(l)) {
      const int64_t Ex = c.num_experts, Im = c.moe_intermediate_size;
      L.moe = has_moe_ = true;
      // The router stays dense (model/loader.h is_quantizable_linear).
      L.router = alloc(Ex * H);
      if (L.experts_gate_up_q.format == WeightFormat::dense)
        L.experts_gate_up = alloc(Ex * 2 * Im * H);
      if (L.experts_down_q.format == WeightFormat::dense) L.experts_down = alloc(Ex * H * Im);
    } else {
      if (L.gate_up_q.format == WeightFormat::dense) L.gate_up_proj = alloc(2 * I * H);
      if (L.down_q.format == WeightFormat::dense) L.down_proj = alloc(H * I);
    }
    layers_.push_back(L);
  }
  norm_ = alloc(H);
  lm_head_ = c.tie_word_embeddings ? embed_tokens_ : alloc(V * H);
}

namespace {

// Throws unless the host tensor `name` holds n values.
void need_size(const std::vector<float>& v, int64_t n, const char* name) {
  if (static_cast<int64_t>(v.size()) != n)
    fail("weight {}: expected {} values, got {}; the weights do not match config.json", name, n,
         v.size());
}

// fp32 host tensors into bf16 device ones: copied into an fp32 staging buffer on the device (at
// most max_elems values at once), converted to bf16 there.
class Bf16Upload {
 public:
  Bf16Upload(int64_t max_elems, cudaStream_t stream) : stream_(stream) {
    HOGWILD_CUDA_CHECK(cudaMalloc(&stage_, static_cast<size_t>(max_elems) * 4));
  }
  ~Bf16Upload() { HOGWILD_CUDA_CHECK(cudaFree(stage_)); }
  Bf16Upload(const Bf16Upload&) = delete;
  Bf16Upload& operator=(const Bf16Upload&) = delete;

  // dst (bf16) = the parts one after the other. Copies go on the stream too: a plain cudaMemcpy
  // from pageable memory may return before its DMA lands, and the legacy stream does not order
  // against a non-blocking stream (this raced).
  void put(bf16* dst, std::initializer_list<const std::vector<float>*> parts) {
    int64_t off = 0;
    for (const auto* p : parts) {
      HOGWILD_CUDA_CHECK(
          cudaMemcpyAsync(stage_ + off, p->data(), p->size() * 4, cudaMemcpyHostToDevice, stream_));
      off += static_cast<int64_t>(p->size());
    }
    f32_to_bf16(stage_, dst, off, stream_);
    HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

 private:
  float* stage_ = nullptr;
  cudaStream_t stream_;
};

// The sizes of layer s's attention tensors and dense MLP (config.json's).
void check_layer(const ModelConfig& c, const LayerWeights& s, const DeviceLayer& d) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t qd = c.num_attention_heads * c.head_dim;
  const int64_t kvd = c.num_key_value_heads * c.head_dim;
  need_size(s.input_layernorm, H, "input_layernorm");
  need_size(s.q_proj, qd * H, "self_attn.q_proj");
  need_size(s.k_proj, kvd * H, "self_attn.k_proj");
  need_size(s.v_proj, kvd * H, "self_attn.v_proj");
  need_size(s.o_proj, H * qd, "self_attn.o_proj");
  need_size(s.post_attention_layernorm, H, "post_attention_layernorm");
  if (!d.moe) {
    need_size(s.gate_proj, I * H, "mlp.gate_proj");
    need_size(s.up_proj, I * H, "mlp.up_proj");
    need_size(s.down_proj, H * I, "mlp.down_proj");
  }
}

// MoE layer l's router and experts.
void upload_experts(const ModelConfig& c, int64_t l, const LayerWeights& s, const DeviceLayer& d,
                    Bf16Upload& up) {
  const int64_t H = c.hidden_size, Ex = c.num_experts, Im = c.moe_intermediate_size;
  need_size(s.router, Ex * H, "mlp.gate");
  up.put(d.router, {&s.router});
  if (static_cast<int64_t>(s.experts.size()) != Ex)
    fail("layer {}: weights have {} experts but config.json says num_experts = {}", l,
         s.experts.size(), Ex);
  for (int64_t e = 0; e < Ex; ++e) {
    const ExpertWeights& x = s.experts[static_cast<size_t>(e)];
    need_size(x.gate_proj, Im * H, "mlp.experts.N.gate_proj");
    need_size(x.up_proj, Im * H, "mlp.experts.N.up_proj");
    need_size(x.down_proj, H * Im, "mlp.experts.N.down_proj");
    up.put(d.experts_gate_up + e * 2 * Im * H, {&x.gate_proj, &x.up_proj});
    up.put(d.experts_down + e * H * Im, {&x.down_proj});
  }
}

// Layer l's tensors into d (the fused [q; k; v] and [gate; up] layouts).
void upload_layer(const ModelConfig& c, int64_t l, const LayerWeights& s, const DeviceLayer& d,
                  Bf16Upload& up) {
  const int64_t qd = c.num_attention_heads * c.head_dim;
  const int64_t kvd = c.num_key_value_heads * c.head_dim;
  check_layer(c, s, d);
  up.put(d.input_layernorm, {&s.input_layernorm});
  up.put(d.qkv_proj, {&s.q_proj, &s.k_proj, &s.v_proj});
  if (c.attention_bias) {
    need_size(s.q_bias, qd, "self_attn.q_proj.bias");
    need_size(s.k_bias, kvd, "self_attn.k_proj.bias");
    need_size(s.v_bias, kvd, "self_attn.v_proj.bias");
    up.put(d.qkv_bias, {&s.q_bias, &s.k_bias, &s.v_bias});
  }
  if (c.qk_norm) {
    need_size(s.q_norm, c.head_dim, "self_attn.q_norm");
    need_size(s.k_norm, c.head_dim, "self_attn.k_norm");
    up.put(d.q_norm, {&s.q_norm});
    up.put(d.k_norm, {&s.k_norm});
  }
  up.put(d.o_proj, {&s.o_proj});
  up.put(d.post_attention_layernorm, {&s.post_attention_layernorm});
  if (d.moe) {
    upload_experts(c, l, s, d, up);
    return;
  }
  up.put(d.gate_up_proj, {&s.gate_proj, &s.up_proj});
  up.put(d.down_proj, {&s.down_proj});
}

}  // namespace

void CudaBackend::upload_weights(const ModelWeights& w) {
  const ModelConfig& c = cfg_;
  const int64_t H = c.hidden_size, V = c.vocab_size, I = c.intermediate_size;
  const int64_t qd = c.num_attention_heads * c.head_dim;
  // fp32 staging on the device for the largest tensor, converted to bf16 there.
  const int64_t max_elems = std::max(
      {V * H, qkv_dim_ * H, 2 * I * H, H * qd, c.num_experts * H, 2 * c.moe_intermediate_size * H});
  Bf16Upload up(max_elems, stream_);
  need_size(w.embed_tokens, V * H, "model.embed_tokens.weight");
  up.put(embed_tokens_, {&w.embed_tokens});
  if (static_cast<int64_t>(w.layers.size()) != c.num_hidden_layers)
    fail("weights have {} layers but config.json says num_hidden_layers = {}", w.layers.size(),
         c.num_hidden_layers);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) upload_layer(c, l, w.layers[l], layers_[l], up);
  need_size(w.norm, H, "model.norm.weight");
  up.put(norm_, {&w.norm});
  if (!c.tie_word_embeddings) {
    need_size(w.lm_head, V * H, "lm_head.weight");
    up.put(lm_head_, {&w.lm_head});
  }
}

void CudaBackend::random_weights(uint64_t seed) {
  const ModelConfig& c = cfg_;
  const int64_t H = c.hidden_size, V = c.vocab_size, I = c.intermediate_size;
  const int64_t qd = c.num_attention_heads * c.head_dim;
  uint64_t s = seed * 1000003;
  auto fill = [&](bf16* p, int64_t n, float scale, float center) {
    fill_uniform_bf16(p, n, ++s, scale, center, stream_);
  };
  const float aH = 1.0f / std::sqrt(static_cast<float>(H));
  fill(embed_tokens_, V * H, 1.0f, 0.0f);
  const QuantConfig& q = c.quantization_config;
  std::mt19937_64 perm_rng(seed);
  // A packed projection: random words and scales; GPTQ act-order with a random permutation of
  // the input rows (one per input, as real checkpoints share it).
  auto quant = [&](QuantWeight& w, int64_t out, int64_t in, const std::vector<int32_t>* perm) {
    const int64_t group = w.format == WeightFormat::fp8 ? q.block_k
                          : q.group_size > 0            ? q.group_size
                                                        : in;
    w = random_quant_weight(w.format, out, in, group, ++s, stream_);
    for (void* p : {static_cast<void*>(w.w), static_cast<void*>(w.sz)}) allocations_.push_back(p);
    if (perm) {
      HOGWILD_CUDA_CHECK(cudaMalloc(&w.perm, perm->size() * 4));
      allocations_.push_back(w.perm);
      HOGWILD_CUDA_CHECK(
          cudaMemcpyAsync(w.perm, perm->data(), perm->size() * 4, cudaMemcpyHostToDevice, stream_));
      HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
  };
  auto random_perm = [&](int64_t n) {
    std::vector<int32_t> p(static_cast<size_t>(n));
    std::iota(p.begin(), p.end(), 0);
    std::shuffle(p.begin(), p.end(), perm_rng);
    return p;
  };
  const bool act_order = q.method == QuantMethod::gptq && q.desc_act;
  for (DeviceLayer& d : layers_) {
    const std::vector<int32_t> p_h = act_order ? random_perm(H) : std::vector<int32_t>{};
    const std::vector<int32_t> p_q = act_order ? random_perm(qd) : std::vector<int32_t>{};
    const std::vector<int32_t> p_i = act_order ? random_perm(I) : std::vector<int32_t>{};
    if (d.qkv_q.format != WeightFormat::dense)
      quant(d.qkv_q, qkv_dim_, H, act_order ? &p_h : nullptr);
    if (d.o_q.format != WeightFormat::dense) quant(d.o_q, H, qd, act_order ? &p_q : nullptr);
    if (d.gate_up_q.format != WeightFormat::dense)
      quant(d.gate_up_q, 2 * I, H, act_order ? &p_h : nullptr);
    if (d.down_q.format != WeightFormat::dense) quant(d.down_q, H, I, act_order ? &p_i : nullptr);
    const int64_t Ex = c.num_experts, Im = c.moe_intermediate_size;  // experts: no act-order
    if (d.experts_gate_up_q.format != WeightFormat::dense)
      quant(d.experts_gate_up_q, Ex * 2 * Im, H, nullptr);
    if (d.experts_down_q.format != WeightFormat::dense)
      quant(d.experts_down_q, Ex * H, Im, nullptr);
  }
  for (const DeviceLayer& d : layers_) {
    fill(d.input_layernorm, H, 0.1f, 1.0f);
    if (d.qkv_proj) fill(d.qkv_proj, qkv_dim_ * H, aH, 0.0f);
    if (d.qkv_bias) fill(d.qkv_bias, qkv_dim_, 0.1f, 0.0f);
    if (d.q_norm) fill(d.q_norm, c.head_dim, 0.1f, 1.0f);
    if (d.k_norm) fill(d.k_norm, c.head_dim, 0.1f, 1.0f);
    if (d.o_proj) fill(d.o_proj, H * qd, 1.0f / std::sqrt(static_cast<float>(qd)), 0.0f);
    fill(d.post_attention_layernorm, H, 0.1f, 1.0f);
    if (d.gate_up_proj) fill(d.gate_up_proj, 2 * I * H, aH, 0.0f);
    if (d.down_proj) fill(d.down_proj, H * I, 1.0f / std::sqrt(static_cast<float>(I)), 0.0f);
    if (d.moe) {
      const int64_t Ex = c.num_experts, Im = c.moe_intermediate_size;
      fill(d.router, Ex * H, aH, 0.0f);
      if (d.experts_gate_up) fill(d.experts_gate_up, Ex * 2 * Im * H, aH, 0.0f);
      if (d.experts_down)
        fill(d.experts_down, Ex * H * Im, 1.0f / std::sqrt(static_cast<float>(Im)), 0.0f);
    }
  }
  fill(norm_, H, 0.1f, 1.0f);
  if (!c.tie_word_embeddings) fill(lm_head_, V * H, aH, 0.0f);
  HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

uint64_t CudaBackend::weight_fingerprint() const {
  const ModelConfig& c = cfg_;
  const int64_t H = c.hidden_size, V = c.vocab_size, I = c.intermediate_size;
  const int64_t qd = c.num_attention_heads * c.head_dim;
  uint64_t h = 1469598103934665603ull;
  std::vector<uint16_t> buf;
  auto add = [&](const bf16* p, int64_t n) {
    if (!p) return;
    buf.resize(static_cast<size_t>(n));
    HOGWILD_CUDA_CHECK(cudaMemcpyAsync(buf.data(), p, n * 2, cudaMemcpyDeviceToHost, stream_));
    HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (uint16_t x : buf) {
      h = (h ^ (x & 0xff)) * 1099511628211ull;
      h = (h ^ (x >> 8)) * 1099511628211ull;
    }
  };
  auto add_quant = [&](const QuantWeight& q) {
    if (q.format == WeightFormat::dense) return;
    const int64_t words = (q.bytes() - (q.perm ? q.in * 4 : 0)) / 4;
    std::vector<uint32_t> w(static_cast<size_t>(words));
    const int64_t n_sz = q.out * q.n_groups;
    HOGWILD_CUDA_CHECK(
        cudaMemcpyAsync(w.data(), q.w, (words - n_sz) * 4, cudaMemcpyDeviceToHost, stream_));
    HOGWILD_CUDA_CHECK(cudaMemcpyAsync(w.data() + (words - n_sz), q.sz, n_sz * 4,
                                       cudaMemcpyDeviceToHost, stream_));
    HOGWILD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (uint32_t x : w)
      for (int i = 0; i < 4; ++i) h = (h ^ ((x >> (8 * i)) & 0xff)) * 1099511628211ull;
  };
  add(embed_tokens_, V * H);
  for (const DeviceLayer& d : layers_) {
    add_quant(d.qkv_q);
    add_quant(d.o_q);
    add_quant(d.gate_up_q);
    add_quant(d.down_q);
    add_quant(d.experts_gate_up_q);
    add_quant(d.experts_down_q);
    add(d.input_layernorm, H);
    add(d.qkv_proj, qkv_dim_ * H);
    add(d.qkv_bias, qkv_dim_);
    add(d.q_norm, c.head_dim);
    add(d.k_norm, c.head_dim);
    add(d.o_proj, H * qd);
    add(d.post_attention_layernorm, H);
    add(d.gate_up_proj, 2 * I * H);
    add(d.down_proj, H * I);
    if (d.moe) {
      const int64_t Ex = c.num_experts, Im = c.moe_intermediate_size;
      add(d.router, Ex * H);
      add(d.experts_gate_up, Ex * 2 * Im * H);
      add(d.experts_down, Ex * H * Im);
    }
  }
  add(norm_, H);
  add(lm_head_, V * H);
  return h;
}

}  // namespace hogwild::cuda
