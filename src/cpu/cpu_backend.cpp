#include "cpu/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "cpu/moe.h"
#include "cpu/ops.h"
#include "cpu/parallel.h"
#include "cpu/skinny.h"
#include "sampling/row_draw.h"

namespace hogwild::cpu {
namespace {

void check_size(const std::vector<float>& t, int64_t expected, const std::string& name) {
  if (static_cast<int64_t>(t.size()) != expected)
    fail("tensor {}: expected {} values, got {}; the weights do not match config.json", name,
         expected, t.size());
}

// Adds the time since the previous lap to a CpuProfile field (no-op without a profile).
class Laps {
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

}  // namespace

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

void CpuBackend::forward_sample(const ForwardBatch& batch,
                                const std::vector<std::vector<int32_t>>& banned_sets,
                                const std::vector<RowSampling>& rows,
                                std::vector<int32_t>& tokens) {
  forward_sample_on_host(*this, batch, banned_sets, rows, tokens);
}

void CpuBackend::forward_sample_logits(const ForwardBatch& batch,
                                       const std::vector<std::vector<int32_t>>& banned_sets,
                                       const std::vector<RowSampling>& rows,
                                       std::vector<int32_t>& tokens, std::vector<float>& logits) {
  forward_sample_on_host(*this, batch, banned_sets, rows, tokens, &logits);
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

void CpuBackend::attention(const ForwardBatch& batch, const ForwardPlan& plan, int64_t layer,
                           const float* q, float* out) {
  const ModelConfig& c = w_.config;
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t nh = c.num_attention_heads, hd = c.head_dim, nkv = c.num_key_value_heads;
  const int64_t group = nh / nkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const float attn_scaling = rope_.params().attention_scaling;
  // Work per (row t, key/value head g): the group of query heads that share g read each key once.
  // Items are (g, run of consecutive rows). Rows of one problem begin their views with the same
  // blocks (header, prompt, finished steps), each fully visible to each of them: these leading
  // occurrences are attended by all rows of the run together, one attn_partial over the rows'
  // stacked queries (each rotated by its own p - o), so every key is read once for the run; the
  // rest of each row's view follows row by row. A row's states see the same partial updates in
  // the same order either way (attn_partial's per-head results do not depend on the other
  // queries of a call), so the bits do not depend on the batch. Runs are as long as ~4 items per
  // thread allow. Per-thread scratch: the run's rotated queries, states and their outputs.
  const int n_threads = num_threads();
  const int64_t run = std::clamp<int64_t>(T * nkv / (4 * static_cast<int64_t>(n_threads)), 1, T);
  const int64_t n_runs = (T + run - 1) / run;
  const size_t per_thread = static_cast<size_t>(run * group * hd);
  std::vector<float> scratch(static_cast<size_t>(n_threads) * 2 * per_thread);
  std::vector<AttnState> states(static_cast<size_t>(n_threads) * run * group);
  auto view_of = [&](int64_t t) -> const std::vector<ViewOccurrence>& {
    return plan.views[batch.tokens[t].worker];
  };
  auto keys = [&](BlockId b, int64_t g) {  // post-append length of block b
    return static_cast<int64_t>(blocks_[b].k[layer * nkv + g].size()) / hd;
  };
  // Calls f(s, e) for every run [s, e) of keys below n of block b that is not forgotten
  // (ForwardPlan::gaps); one run [0, n) when nothing is.
  auto for_kept = [&](BlockId b, int64_t n, auto&& f) {
    const auto* gaps = plan.gaps_of(b);
    if (!gaps) {
      f(int64_t{0}, n);
      return;
    }
    int64_t s = 0;
    for (const auto& [gs, ge] : *gaps) {
      if (gs >= n) break;
      if (gs > s) f(s, gs);
      s = std::max(s, ge);
    }
    if (s < n) f(s, n);
  };
  // Rows [t0, t1) of one item: states init, the shared leading occurrences together, the rest
  // row by row, normalised into `out`.
  auto attend = [&](int64_t t0, int64_t t1, int64_t g, int thread) {
    float* qr = scratch.data() + static_cast<size_t>(thread) * 2 * per_thread;
    float* ob = qr + per_thread;
    AttnState* acc = states.data() + static_cast<size_t>(thread) * run * group;
    const int64_t n = t1 - t0;
    for (int64_t i = 0; i < n * group; ++i) {
      acc[i] = {0, 0, ob + i * hd};
      attn_state_init(acc[i], hd);
    }
    // Queries of row t rotated by p - o into its slice of qr (with the model's attention
    // scaling: its one rotation for this dot product); keys are already rotated at j, so
    // q(p-o).k(j) = q(p).k(o+j).
    auto rotate_row = [&](int64_t t, int64_t o) {
      float* dst = qr + (t - t0) * group * hd;
      std::memcpy(dst, q + t * nh * hd + g * group * hd, sizeof(float) * group * hd);
      rope_.rotate(dst, group, plan.position[t] - o, attn_scaling);
    };
    size_t k = 0;  // leading occurrences done together
    for (;; ++k) {
      const std::vector<ViewOccurrence>& v0 = view_of(t0);
      if (n < 2 || k >= v0.size()) break;
      const BlockId b = v0[k].block;
      const int64_t len = keys(b, g);
      bool shared = len > 0;
      for (int64_t t = t0; t < t1 && shared; ++t) {
        const std::vector<ViewOccurrence>& v = view_of(t);
        shared = k < v.size() && v[k].block == b && plan.position[t] - v[k].offset + 1 >= len;
      }
      if (!shared) break;
      for (int64_t t = t0; t < t1; ++t) rotate_row(t, view_of(t)[k].offset);
      for_kept(b, len, [&](int64_t s, int64_t e) {
        attn_partial(qr, n * group, blocks_[b].k[layer * nkv + g].data() + s * hd,
                     blocks_[b].v[layer * nkv + g].data() + s * hd, e - s, hd, hd, scale, acc);
      });
    }
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t p = plan.position[t];
      const std::vector<ViewOccurrence>& v = view_of(t);
      for (size_t i = k; i < v.size(); ++i) {
        const ViewOccurrence& oc = v[i];
        if (oc.offset > p) break;  // offsets grow along the view: nothing further is visible
        const int64_t n_vis = std::min(keys(oc.block, g), p - oc.offset + 1);  // o + j <= p
        if (n_vis <= 0) continue;
        rotate_row(t, oc.offset);
        for_kept(oc.block, n_vis, [&](int64_t s, int64_t e) {
          attn_partial(qr + (t - t0) * group * hd, group,
                       blocks_[oc.block].k[layer * nkv + g].data() + s * hd,
                       blocks_[oc.block].v[layer * nkv + g].data() + s * hd, e - s, hd, hd, scale,
                       acc + (t - t0) * group);
        });
      }
      // Scores (ForwardBatch::score_blocks): every visible kept key's softmax weight, from the
      // row's final max and denominator, kept as the thread's maximum.
      for (size_t si = 0; si < batch.score_blocks.size(); ++si) {
        const BlockId sb = batch.score_blocks[si];
        float* best = score_acc_[thread][si].data();
        for (const ViewOccurrence& oc : v) {
          if (oc.block != sb || oc.offset > p) continue;
          const int64_t n_vis = std::min(keys(sb, g), p - oc.offset + 1);
          rotate_row(t, oc.offset);
          const float* qt = qr + (t - t0) * group * hd;
          const float* kb = blocks_[sb].k[layer * nkv + g].data();
          // The dots as attn_partial takes them (skinny_dots, 64 keys by up to 16 heads).
          for_kept(sb, n_vis, [&](int64_t s, int64_t e) {
            float w[16 * 64];
            for (int64_t h0 = 0; h0 < group; h0 += 16) {
              const int64_t nq = std::min<int64_t>(16, group - h0);
              for (int64_t j0 = s; j0 < e; j0 += 64) {
                const int64_t nk = std::min<int64_t>(64, e - j0);
                skinny_dots({qt + h0 * hd, nq, hd, kb + j0 * hd, hd, nullptr, w, 64}, nk);
                for (int64_t i = 0; i < nq; ++i) {
                  const AttnState& st = acc[(t - t0) * group + h0 + i];
                  for (int64_t j = 0; j < nk; ++j)
                    best[j0 + j] =
                        std::max(best[j0 + j], std::exp(w[i * 64 + j] * scale - st.m) / st.d);
                }
              }
            }
          });
        }
      }
      // The token's own key (o + j = p) is always visible, so no state is empty.
      for (int64_t i = 0; i < group; ++i)
        attn_state_normalize(acc[(t - t0) * group + i], out + t * nh * hd + (g * group + i) * hd,
                             hd);
    }
  };
  parallel_for(n_runs * nkv, [&](int64_t idx, int thread) {
    const int64_t g = idx / n_runs, r0 = idx % n_runs * run, r1 = std::min(T, r0 + run);
    // Sub-runs of rows whose views start with the same block (one problem's rows).
    for (int64_t t0 = r0; t0 < r1;) {
      int64_t t1 = t0 + 1;
      const auto& v0 = view_of(t0);
      while (t1 < r1 && !v0.empty() && !view_of(t1).empty() && view_of(t1)[0].block == v0[0].block)
        ++t1;
      attend(t0, t1, g, thread);
      t0 = t1;
    }
  });
}

void CpuBackend::forward(const ForwardBatch& batch, std::vector<float>& logits) {
  const ModelConfig& c = w_.config;
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  logits.clear();
  // A forced routing is for this forward only, an empty one included.
  const std::vector<std::vector<int32_t>> forced = std::move(forced_routing_);
  forced_routing_.clear();
  if (T == 0) return;
  Laps laps(profile_);
  if (!forced.empty() && static_cast<int64_t>(forced.size()) != c.num_moe_layers())
    fail("force_routing: {} layers given, the model has {} MoE layers", forced.size(),
         c.num_moe_layers());
  for (const auto& f : forced)
    if (static_cast<int64_t>(f.size()) != T * c.num_experts_per_tok)
      fail("force_routing: {} experts given for {} rows of top-{}", f.size(), T,
           c.num_experts_per_tok);

  // ---- check and plan (model/forward_plan.h: positions from the view rule), then append
  const ForwardPlan plan = plan_forward(batch, table_, c, /*max_positions=*/0);
  apply_appends(plan, table_);
  rope_.reserve(plan.max_position + 1);
  const int64_t kvd = c.num_key_value_heads * c.head_dim;
  for (const auto& [b, len] : plan.grown) {
    for (auto& k : blocks_[b].k) k.resize(len * c.head_dim);
    for (auto& v : blocks_[b].v) v.resize(len * c.head_dim);
  }
  routing_.clear();
  size_t moe_layer = 0;
  // Attention scores of the blocks the batch names (summed up after the layers).
  scores_.clear();
  score_acc_.assign(batch.score_blocks.empty() ? 0 : num_threads(), {});
  for (auto& per_thread : score_acc_)
    for (BlockId b : batch.score_blocks)
      per_thread.emplace_back(static_cast<size_t>(table_.len(b)), 0.0f);

  // ---- activations (rows = batch tokens)
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const int64_t qd = nh * hd;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const float attn_scaling = rope_.params().attention_scaling;
  std::vector<float> x(T * H), h(T * H), tmp(T * H);  // residual stream, normed, projection out
  std::vector<float> q(T * qd), k(T * kvd), v(T * kvd), att(T * qd);
  std::vector<float> gate(T * I), up(T * I);
  std::vector<int32_t> ids(T);
  for (int64_t t = 0; t < T; ++t) ids[t] = batch.tokens[t].token_id;
  embedding(w_.embed_tokens.data(), ids.data(), T, H, x.data());
  laps.lap(&CpuProfile::plan);

  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerWeights& L = w_.layers[l];
    auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };
    // ---- norm, q/k/v projections (+ bias: Qwen2)
    rmsnorm(x.data(), L.input_layernorm.data(), h.data(), T, H, eps);
    laps.lap(&CpuProfile::norms);
    matmul_shared(h.data(), T, H,
                  {{L.q_proj.data(), bias(L.q_bias), q.data(), qd},
                   {L.k_proj.data(), bias(L.k_bias), k.data(), kvd},
                   {L.v_proj.data(), bias(L.v_bias), v.data(), kvd}});
    laps.lap(&CpuProfile::qkv);
    // ---- per-head RMSNorm of q and k (Qwen3), before RoPE
    if (c.qk_norm) {
      rmsnorm(q.data(), L.q_norm.data(), q.data(), T * nh, hd, eps);
      rmsnorm(k.data(), L.k_norm.data(), k.data(), T * nkv, hd, eps);
    }
    // ---- rope on keys at block-local j; write K, V of every row before any attention
    for (int64_t t = 0; t < T; ++t) {
      float* kt = k.data() + t * kvd;
      const int64_t j = plan.index[t];
      rope_.rotate(kt, nkv, j, attn_scaling);
      Block& blk = blocks_[batch.tokens[t].block];
      for (int64_t g = 0; g < nkv; ++g) {
        std::memcpy(blk.k[l * nkv + g].data() + j * hd, kt + g * hd, sizeof(float) * hd);
        std::memcpy(blk.v[l * nkv + g].data() + j * hd, v.data() + t * kvd + g * hd,
                    sizeof(float) * hd);
      }
    }
    laps.lap(&CpuProfile::rope);
    // ---- attention over the writer's view (queries rotated per block occurrence)
    attention(batch, plan, l, q.data(), att.data());
    laps.lap(&CpuProfile::attention);
    // ---- o_proj, residual
    matmul(att.data(), L.o_proj.data(), nullptr, tmp.data(), T, qd, H);
    laps.lap(&CpuProfile::o_proj);
    add_inplace(x.data(), tmp.data(), T * H);
    // ---- post-attention norm, SwiGLU MLP (or the MoE block: cpu/moe.h), residual
    rmsnorm(x.data(), L.post_attention_layernorm.data(), h.data(), T, H, eps);
    laps.lap(&CpuProfile::norms);
    if (c.is_moe_layer(l)) {
      moe_mlp(c, L, h.data(), T, tmp.data(), record_routing_ ? &routing_.emplace_back() : nullptr,
              forced.empty() ? nullptr : forced[moe_layer].data());
      ++moe_layer;
      laps.lap(&CpuProfile::mlp);
      add_inplace(x.data(), tmp.data(), T * H);
      continue;
    }
    matmul_shared(
        h.data(), T, H,
        {{L.gate_proj.data(), nullptr, gate.data(), I}, {L.up_proj.data(), nullptr, up.data(), I}});
    laps.lap(&CpuProfile::mlp);
    swiglu(gate.data(), up.data(), gate.data(), T * I);
    laps.lap(&CpuProfile::norms);
    matmul(gate.data(), L.down_proj.data(), nullptr, tmp.data(), T, I, H);
    laps.lap(&CpuProfile::mlp);
    add_inplace(x.data(), tmp.data(), T * H);
  }
  if (!score_acc_.empty()) {  // the threads' maxima, into one vector per score block
    scores_ = std::move(score_acc_[0]);
    for (size_t th = 1; th < score_acc_.size(); ++th)
      for (size_t si = 0; si < scores_.size(); ++si)
        for (size_t j = 0; j < scores_[si].size(); ++j)
          scores_[si][j] = std::max(scores_[si][j], score_acc_[th][si][j]);
    score_acc_.clear();
  }

  // ---- final norm and lm_head, only for rows that want logits
  std::vector<float> sel;
  int64_t n_out = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (!batch.tokens[t].want_logits) continue;
    sel.insert(sel.end(), x.begin() + t * H, x.begin() + (t + 1) * H);
    ++n_out;
  }
  if (n_out == 0) return;
  rmsnorm(sel.data(), w_.norm.data(), sel.data(), n_out, H, eps);
  logits.resize(n_out * c.vocab_size);
  laps.lap(&CpuProfile::norms);
  matmul(sel.data(), w_.output_weight().data(), nullptr, logits.data(), n_out, H, c.vocab_size);
  laps.lap(&CpuProfile::lm_head);
}

}  // namespace hogwild::cpu
