#include "cpu/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "cpu/moe.h"
#include "cpu/ops.h"
#include "cpu/parallel.h"
#include "sampling/row_draw.h"

namespace hogwild::cpu {
namespace {

void check_size(const std::vector<float>& t, int64_t expected, const std::string& name) {
  if (static_cast<int64_t>(t.size()) != expected)
    fail("tensor {}: expected {} values, got {}; the weights do not match config.json", name,
         expected, t.size());
}

// Throws hogwild::Error unless `forced` (force_routing: per MoE layer, (rows,
// num_experts_per_tok)) is empty or gives every row of every MoE layer its experts.
void check_forced_routing(const ModelConfig& c, const std::vector<std::vector<int32_t>>& forced,
                          int64_t rows) {
  if (!forced.empty() && static_cast<int64_t>(forced.size()) != c.num_moe_layers())
    fail("force_routing: {} layers given, the model has {} MoE layers", forced.size(),
         c.num_moe_layers());
  for (const auto& f : forced)
    if (static_cast<int64_t>(f.size()) != rows * c.num_experts_per_tok)
      fail("force_routing: {} experts given for {} rows of top-{}", f.size(), rows,
           c.num_experts_per_tok);
}

}  // namespace

// Adds the time since the previous lap to a CpuProfile field (no-op without a profile).
class CpuBackend::Laps {
 public:
  explicit Laps(CpuProfile* p)
      : p_(p), start_(p ? clock::now() : clock::time_point{}), t_(start_) {}
  void lap(double CpuProfile::*field) {
    if (!p_) return;
    const auto now = clock::now();
    p_->*field += std::chrono::duration<double>(now - t_).count();
    t_ = now;
  }
  ~Laps() {
    if (!p_) return;
    p_->total += std::chrono::duration<double>(clock::now() - start_).count();
    ++p_->forwards;
  }

 private:
  using clock = std::chrono::steady_clock;
  CpuProfile* p_;
  clock::time_point start_, t_;
};

// One forward's activations; rows are the batch's tokens, row-major.
struct CpuBackend::Activations {
  Activations(const ModelConfig& c, int64_t T)
      : x(T * c.hidden_size),
        h(T * c.hidden_size),
        tmp(T * c.hidden_size),
        q(T * c.num_attention_heads * c.head_dim),
        k(T * c.num_key_value_heads * c.head_dim),
        v(T * c.num_key_value_heads * c.head_dim),
        att(T * c.num_attention_heads * c.head_dim),
        gate(T * c.intermediate_size),
        up(T * c.intermediate_size) {}
  std::vector<float> x, h, tmp;     // (T, hidden): residual stream, normed, projection out
  std::vector<float> q, k, v, att;  // (T, heads * head_dim) of the query / key-value heads
  std::vector<float> gate, up;      // (T, intermediate): the SwiGLU MLP's
};

CpuBackend::CpuBackend(ModelWeights weights, int64_t max_tokens)
    : w_(std::move(weights)),
      rope_(compute_rope_params(w_.config)),
      table_((max_tokens + kPageTokens - 1) / kPageTokens, kPageTokens) {
  check_weights();
}

void CpuBackend::check_weights() const {
  const ModelConfig& c = w_.config;
  if (c.hidden_size <= 0 || c.num_hidden_layers <= 0 || c.num_attention_heads <= 0 ||
      c.num_key_value_heads <= 0 || c.head_dim <= 0 || c.vocab_size <= 0 ||
      c.intermediate_size <= 0)
    fail(
        "model config: hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, "
        "num_key_value_heads, head_dim and vocab_size must all be positive");
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    fail("model config: num_attention_heads ({}) must be a multiple of num_key_value_heads ({})",
         c.num_attention_heads, c.num_key_value_heads);
  if (c.num_moe_layers() > 0 &&
      (c.num_experts_per_tok < 1 || c.num_experts_per_tok > c.num_experts ||
       c.moe_intermediate_size <= 0))
    fail(
        "model config: a MoE model needs 1 <= num_experts_per_tok ({}) <= num_experts ({}) and a "
        "positive moe_intermediate_size ({})",
        c.num_experts_per_tok, c.num_experts, c.moe_intermediate_size);
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t qd = c.num_attention_heads * c.head_dim, kvd = c.num_key_value_heads * c.head_dim;
  check_size(w_.embed_tokens, c.vocab_size * H, "model.embed_tokens.weight");
  check_size(w_.norm, H, "model.norm.weight");
  if (!c.tie_word_embeddings || !w_.lm_head.empty())
    check_size(w_.lm_head, c.vocab_size * H, "lm_head.weight");
  if (static_cast<int64_t>(w_.layers.size()) != c.num_hidden_layers)
    fail("model weights: expected {} layers (num_hidden_layers), got {}", c.num_hidden_layers,
         w_.layers.size());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const LayerWeights& L = w_.layers[i];
    const std::string p = fmt::format("model.layers.{}.", i);
    check_size(L.input_layernorm, H, p + "input_layernorm.weight");
    check_size(L.post_attention_layernorm, H, p + "post_attention_layernorm.weight");
    check_size(L.q_proj, qd * H, p + "self_attn.q_proj.weight");
    check_size(L.k_proj, kvd * H, p + "self_attn.k_proj.weight");
    check_size(L.v_proj, kvd * H, p + "self_attn.v_proj.weight");
    check_size(L.o_proj, H * qd, p + "self_attn.o_proj.weight");
    if (c.is_moe_layer(i)) {
      const int64_t MI = c.moe_intermediate_size;
      check_size(L.router, c.num_experts * H, p + "mlp.gate.weight");
      if (static_cast<int64_t>(L.experts.size()) != c.num_experts)
        fail("model weights: layer {} has {} experts, num_experts is {}", i, L.experts.size(),
             c.num_experts);
      for (int64_t e = 0; e < c.num_experts; ++e) {
        const ExpertWeights& x = L.experts[e];
        const std::string q = fmt::format("{}mlp.experts.{}.", p, e);
        check_size(x.gate_proj, MI * H, q + "gate_proj.weight");
        check_size(x.up_proj, MI * H, q + "up_proj.weight");
        check_size(x.down_proj, H * MI, q + "down_proj.weight");
      }
    } else {
      check_size(L.gate_proj, I * H, p + "mlp.gate_proj.weight");
      check_size(L.up_proj, I * H, p + "mlp.up_proj.weight");
      check_size(L.down_proj, H * I, p + "mlp.down_proj.weight");
    }
    check_size(L.q_bias, c.attention_bias ? qd : 0, p + "self_attn.q_proj.bias");
    check_size(L.k_bias, c.attention_bias ? kvd : 0, p + "self_attn.k_proj.bias");
    check_size(L.v_bias, c.attention_bias ? kvd : 0, p + "self_attn.v_proj.bias");
    check_size(L.q_norm, c.qk_norm ? c.head_dim : 0, p + "self_attn.q_norm.weight");
    check_size(L.k_norm, c.qk_norm ? c.head_dim : 0, p + "self_attn.k_norm.weight");
  }
}

BlockId CpuBackend::new_block() {
  const BlockId id = table_.new_block();
  if (id >= static_cast<BlockId>(blocks_.size())) blocks_.resize(id + 1);
  blocks_[id].k.assign(w_.config.num_hidden_layers * w_.config.num_key_value_heads, {});
  blocks_[id].v.assign(w_.config.num_hidden_layers * w_.config.num_key_value_heads, {});
  return id;
}

void CpuBackend::free_block(BlockId b) {
  table_.free_block(b);
  if (!table_.is_live(b)) blocks_[b] = Block{};
}

int64_t CpuBackend::block_len(BlockId b) const { return table_.len(b); }

void CpuBackend::forward(const ForwardBatch& batch, ForwardResult& out) {
  check_row_sampling(batch);
  compute_logits(batch, out.logits);
  draw_on_host(batch, w_.config.vocab_size, out);
}

int64_t CpuBackend::cached_tokens() const {
  int64_t n = 0;
  for (BlockId b = 0; b < table_.id_bound(); ++b) n += table_.is_live(b) ? table_.len(b) : 0;
  return n;
}

void CpuBackend::fill_block_random(BlockId b, int64_t len, uint64_t seed) {
  table_.check(b, "fill_block_random");
  if (table_.len(b) != 0) fail("fill_block_random: block {} is not empty", b);
  table_.grow(b, len);
  const int64_t n = len * w_.config.head_dim;
  Block& blk = blocks_[b];
  parallel_for(static_cast<int64_t>(blk.k.size()), [&](int64_t lg, int) {  // (layer, kv head)
    uint64_t s =
        (seed + 1) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(lg) * 0xda942042e4dd58b5ULL;
    for (std::vector<float>* kv : {&blk.k[lg], &blk.v[lg]}) {
      kv->resize(n);
      for (float& x : *kv) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;  // xorshift64
        x = static_cast<float>(s >> 40) * 0x1.0p-23f - 1.0f;
      }
    }
  });
}

int64_t weight_bytes_per_step(const ModelWeights& w) {
  int64_t n = 0;
  for (const LayerWeights& L : w.layers) {
    for (const auto* t : {&L.input_layernorm, &L.q_proj, &L.k_proj, &L.v_proj, &L.q_bias, &L.k_bias,
                          &L.v_bias, &L.q_norm, &L.k_norm, &L.o_proj, &L.post_attention_layernorm,
                          &L.gate_proj, &L.up_proj, &L.down_proj, &L.router})
      n += static_cast<int64_t>(t->size());
    // A MoE layer: the num_experts_per_tok experts one row is routed to.
    if (!L.experts.empty())
      n += w.config.num_experts_per_tok *
           static_cast<int64_t>(L.experts[0].gate_proj.size() + L.experts[0].up_proj.size() +
                                L.experts[0].down_proj.size());
  }
  n += static_cast<int64_t>(w.norm.size() + w.output_weight().size());
  return n * static_cast<int64_t>(sizeof(float));
}

int64_t CpuBackend::weight_bytes_per_step() const { return cpu::weight_bytes_per_step(w_); }

int64_t CpuBackend::kv_bytes_per_token() const {
  const ModelConfig& c = w_.config;
  return 2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim *
         static_cast<int64_t>(sizeof(float));
}

void CpuBackend::truncate_block(BlockId b, int64_t new_len) {
  table_.truncate(b, new_len);
  const int64_t hd = w_.config.head_dim;
  for (auto& k : blocks_[b].k) k.resize(new_len * hd);
  for (auto& v : blocks_[b].v) v.resize(new_len * hd);
}

void CpuBackend::append_block(BlockId dst, BlockId src) {
  table_.check_append(dst, src);
  const int64_t shift = table_.len(dst), n = table_.len(src);
  table_.grow(dst, shift + n);  // "KV cache full" before anything changes
  Block& d = blocks_[dst];
  const Block& s = blocks_[src];
  const ModelConfig& c = w_.config;
  const int64_t hd = c.head_dim;
  rope_.reserve(shift + 1);
  for (size_t lg = 0; lg < d.k.size(); ++lg) {  // (layer, kv head)
    std::vector<float> k(s.k[lg].begin(), s.k[lg].begin() + n * hd);
    // Keys: rotate once by len(dst), a pure rotation (scale 1): q(p-o).k(j) stays exact.
    rope_.rotate(k.data(), n, shift, 1.0f);
    d.k[lg].insert(d.k[lg].end(), k.begin(), k.end());
    d.v[lg].insert(d.v[lg].end(), s.v[lg].begin(), s.v[lg].begin() + n * hd);
  }
  table_.append_gaps(dst, src, shift);
}

int64_t CpuBackend::share_prefix(BlockId b, const int32_t* tokens, int64_t n) {
  const int64_t len = table_.share(b, tokens, n);
  const int64_t hd = w_.config.head_dim, page = kPageTokens * hd;
  Block& blk = blocks_[b];
  for (size_t lg = 0; lg < blk.k.size(); ++lg) {  // (layer, kv head)
    blk.k[lg].resize(len * hd);
    blk.v[lg].resize(len * hd);
  }
  const std::vector<int32_t>& pages = table_.pages(b);
  for (size_t i = 0; i < pages.size(); ++i) {
    const Block& src = page_kv_[pages[i]];
    HOGWILD_CHECK(src.k.size() == blk.k.size());
    for (size_t lg = 0; lg < blk.k.size(); ++lg) {
      std::copy(src.k[lg].begin(), src.k[lg].end(), blk.k[lg].begin() + i * page);
      std::copy(src.v[lg].begin(), src.v[lg].end(), blk.v[lg].begin() + i * page);
    }
  }
  return len;
}

void CpuBackend::cache_prefix(BlockId b, const int32_t* tokens, int64_t n) {
  const auto added = table_.publish(b, tokens, n);
  for (int32_t p : table_.take_evicted())
    if (p < static_cast<int32_t>(page_kv_.size())) page_kv_[p] = Block{};
  const int64_t page = kPageTokens * w_.config.head_dim;
  const Block& blk = blocks_[b];
  for (const auto& [i, p] : added) {
    if (p >= static_cast<int32_t>(page_kv_.size())) page_kv_.resize(p + 1);
    Block& dst = page_kv_[p];
    dst.k.resize(blk.k.size());
    dst.v.resize(blk.v.size());
    for (size_t lg = 0; lg < blk.k.size(); ++lg) {
      dst.k[lg].assign(blk.k[lg].begin() + i * page, blk.k[lg].begin() + (i + 1) * page);
      dst.v[lg].assign(blk.v[lg].begin() + i * page, blk.v[lg].begin() + (i + 1) * page);
    }
  }
}

void CpuBackend::forget_tokens(BlockId b, int64_t begin, int64_t end) {
  table_.forget(b, begin, end);
}

void CpuBackend::read_block(BlockId b, int64_t layer, std::vector<float>& k,
                            std::vector<float>& v) const {
  table_.check(b, "read_block");
  const Block& blk = blocks_[b];
  if (layer < 0 || layer >= w_.config.num_hidden_layers)
    fail("read_block: layer {} is outside [0, {})", layer, w_.config.num_hidden_layers);
  const int64_t nkv = w_.config.num_key_value_heads, hd = w_.config.head_dim;
  const int64_t len = table_.len(b);
  k.resize(len * nkv * hd);
  v.resize(len * nkv * hd);
  for (int64_t g = 0; g < nkv; ++g)
    for (int64_t j = 0; j < len; ++j) {
      const std::vector<float>& kg = blk.k[layer * nkv + g];
      const std::vector<float>& vg = blk.v[layer * nkv + g];
      std::copy(kg.begin() + j * hd, kg.begin() + (j + 1) * hd, k.begin() + (j * nkv + g) * hd);
      std::copy(vg.begin() + j * hd, vg.begin() + (j + 1) * hd, v.begin() + (j * nkv + g) * hd);
    }
}

void CpuBackend::compute_logits(const ForwardBatch& batch, std::vector<float>& logits) {
  const ModelConfig& c = w_.config;
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  logits.clear();
  // A forced routing is for this forward only, an empty one included.
  const std::vector<std::vector<int32_t>> forced = std::move(forced_routing_);
  forced_routing_.clear();
  if (T == 0) return;
  Laps laps(profile_);
  check_forced_routing(c, forced, T);
  const ForwardPlan plan = begin_forward(batch);

  Activations a(c, T);
  std::vector<int32_t> ids(T);
  for (int64_t t = 0; t < T; ++t) ids[t] = batch.tokens[t].token_id;
  embedding(w_.embed_tokens.data(), ids.data(), T, c.hidden_size, a.x.data());
  laps.lap(&CpuProfile::plan);

  size_t moe_layer = 0;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    attention_block(batch, plan, l, a, laps);
    const int32_t* f = nullptr;
    if (c.is_moe_layer(l)) f = forced.empty() ? nullptr : forced[moe_layer++].data();
    mlp_block(l, T, a, f, laps);
  }
  merge_scores();
  lm_head(batch, a.x, logits, laps);
}

ForwardPlan CpuBackend::begin_forward(const ForwardBatch& batch) {
  const ModelConfig& c = w_.config;
  // ---- check and plan (kv/forward_plan.h: positions from the view rule), then append
  ForwardPlan plan = plan_forward(batch, table_, c, /*max_positions=*/0);
  apply_appends(plan, table_);
  rope_.reserve(plan.max_position + 1);
  for (const auto& [b, len] : plan.grown) {
    for (auto& k : blocks_[b].k) k.resize(len * c.head_dim);
    for (auto& v : blocks_[b].v) v.resize(len * c.head_dim);
  }
  routing_.clear();
  // Attention scores of the blocks the batch names (summed up after the layers).
  scores_.clear();
  score_acc_.assign(batch.score_blocks.empty() ? 0 : num_threads(), {});
  for (auto& per_thread : score_acc_)
    for (BlockId b : batch.score_blocks)
      per_thread.emplace_back(static_cast<size_t>(table_.len(b)), 0.0f);
  return plan;
}

void CpuBackend::attention_block(const ForwardBatch& batch, const ForwardPlan& plan, int64_t l,
                                 Activations& a, Laps& laps) {
  const ModelConfig& c = w_.config;
  const LayerWeights& L = w_.layers[l];
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t H = c.hidden_size, nh = c.num_attention_heads, nkv = c.num_key_value_heads;
  const int64_t hd = c.head_dim, qd = nh * hd, kvd = nkv * hd;
  const float eps = static_cast<float>(c.rms_norm_eps);
  auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };
  // ---- norm, q/k/v projections (+ bias: Qwen2)
  rmsnorm(a.x.data(), L.input_layernorm.data(), a.h.data(), T, H, eps);
  laps.lap(&CpuProfile::norms);
  matmul_shared(a.h.data(), T, H,
                {{L.q_proj.data(), bias(L.q_bias), a.q.data(), qd},
                 {L.k_proj.data(), bias(L.k_bias), a.k.data(), kvd},
                 {L.v_proj.data(), bias(L.v_bias), a.v.data(), kvd}});
  laps.lap(&CpuProfile::qkv);
  // ---- per-head RMSNorm of q and k (Qwen3), before RoPE
  if (c.qk_norm) {
    rmsnorm(a.q.data(), L.q_norm.data(), a.q.data(), T * nh, hd, eps);
    rmsnorm(a.k.data(), L.k_norm.data(), a.k.data(), T * nkv, hd, eps);
  }
  write_kv(batch, plan, l, a.k.data(), a.v.data());
  laps.lap(&CpuProfile::rope);
  // ---- attention over the writer's view (queries rotated per block occurrence)
  attention(batch, plan, l, a.q.data(), a.att.data());
  laps.lap(&CpuProfile::attention);
  // ---- o_proj, residual
  matmul(a.att.data(), L.o_proj.data(), nullptr, a.tmp.data(), T, qd, H);
  laps.lap(&CpuProfile::o_proj);
  add_inplace(a.x.data(), a.tmp.data(), T * H);
}

void CpuBackend::write_kv(const ForwardBatch& batch, const ForwardPlan& plan, int64_t l, float* k,
                          const float* v) {
  const ModelConfig& c = w_.config;
  const int64_t nkv = c.num_key_value_heads, hd = c.head_dim, kvd = nkv * hd;
  const float attn_scaling = rope_.params().attention_scaling;
  // ---- rope on keys at block-local j; write K, V of every row before any attention
  for (int64_t t = 0; t < static_cast<int64_t>(batch.tokens.size()); ++t) {
    float* kt = k + t * kvd;
    const int64_t j = plan.index[t];
    rope_.rotate(kt, nkv, j, attn_scaling);
    Block& blk = blocks_[batch.tokens[t].block];
    for (int64_t g = 0; g < nkv; ++g) {
      std::memcpy(blk.k[l * nkv + g].data() + j * hd, kt + g * hd, sizeof(float) * hd);
      std::memcpy(blk.v[l * nkv + g].data() + j * hd, v + t * kvd + g * hd, sizeof(float) * hd);
    }
  }
}

void CpuBackend::mlp_block(int64_t l, int64_t T, Activations& a, const int32_t* forced,
                           Laps& laps) {
  const ModelConfig& c = w_.config;
  const LayerWeights& L = w_.layers[l];
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  // ---- post-attention norm, SwiGLU MLP (or the MoE block: cpu/moe.h), residual
  rmsnorm(a.x.data(), L.post_attention_layernorm.data(), a.h.data(), T, H,
          static_cast<float>(c.rms_norm_eps));
  laps.lap(&CpuProfile::norms);
  if (c.is_moe_layer(l)) {
    moe_mlp(c, L, a.h.data(), T, a.tmp.data(), record_routing_ ? &routing_.emplace_back() : nullptr,
            forced);
    laps.lap(&CpuProfile::mlp);
    add_inplace(a.x.data(), a.tmp.data(), T * H);
    return;
  }
  matmul_shared(a.h.data(), T, H,
                {{L.gate_proj.data(), nullptr, a.gate.data(), I},
                 {L.up_proj.data(), nullptr, a.up.data(), I}});
  laps.lap(&CpuProfile::mlp);
  swiglu(a.gate.data(), a.up.data(), a.gate.data(), T * I);
  laps.lap(&CpuProfile::norms);
  matmul(a.gate.data(), L.down_proj.data(), nullptr, a.tmp.data(), T, I, H);
  laps.lap(&CpuProfile::mlp);
  add_inplace(a.x.data(), a.tmp.data(), T * H);
}

void CpuBackend::merge_scores() {
  if (score_acc_.empty()) return;
  // The threads' maxima, into one vector per score block.
  scores_ = std::move(score_acc_[0]);
  for (size_t th = 1; th < score_acc_.size(); ++th)
    for (size_t si = 0; si < scores_.size(); ++si)
      for (size_t j = 0; j < scores_[si].size(); ++j)
        scores_[si][j] = std::max(scores_[si][j], score_acc_[th][si][j]);
  score_acc_.clear();
}

void CpuBackend::lm_head(const ForwardBatch& batch, const std::vector<float>& x,
                         std::vector<float>& logits, Laps& laps) const {
  const ModelConfig& c = w_.config;
  const int64_t H = c.hidden_size;
  // ---- final norm and lm_head, only for rows that want logits
  std::vector<float> sel;
  int64_t n_out = 0;
  for (int64_t t = 0; t < static_cast<int64_t>(batch.tokens.size()); ++t) {
    if (!batch.tokens[t].want_logits) continue;
    sel.insert(sel.end(), x.begin() + t * H, x.begin() + (t + 1) * H);
    ++n_out;
  }
  if (n_out == 0) return;
  rmsnorm(sel.data(), w_.norm.data(), sel.data(), n_out, H, static_cast<float>(c.rms_norm_eps));
  logits.resize(n_out * c.vocab_size);
  laps.lap(&CpuProfile::norms);
  matmul(sel.data(), w_.output_weight().data(), nullptr, logits.data(), n_out, H, c.vocab_size);
  laps.lap(&CpuProfile::lm_head);
}

}  // namespace hogwild::cpu
