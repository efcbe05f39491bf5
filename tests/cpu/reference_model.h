// Test references, written independently of src/cpu (plain loops, double accumulation):
//  - dense_logits: a plain causal forward over one sequence, RoPE at absolute positions as HF
//    applies it (cos/sin times attention_scaling on both q and k).
//  - NaiveBackend: the reference semantics of docs/ARCHITECTURE.md §2 at the backend's level
//  (blocks
//    and ForwardBatch views, as Backend::forward takes them): stores UN-rotated keys, re-rotates
//    every key to its current view position at every forward, plain masked attention. (The
//    session-level reference, from text-level state, is tests/hogwild/naive_reference.h
//    NaiveSession.)
// Only RopeParams::inv_freq / attention_scaling are shared with the engine (tested on their own in
// test_rope.cpp against values from the HF formulas).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/rope.h"
#include "kv/backend.h"
#include "model/weights.h"

namespace hogwild::test {

using Vec = std::vector<double>;

inline Vec ref_linear(const std::vector<float>& W, const std::vector<float>& b, const Vec& x,
                      int64_t out) {
  const int64_t in = static_cast<int64_t>(x.size());
  Vec y(out);
  for (int64_t o = 0; o < out; ++o) {
    double s = b.empty() ? 0.0 : b[o];
    for (int64_t i = 0; i < in; ++i) s += static_cast<double>(W[o * in + i]) * x[i];
    y[o] = s;
  }
  return y;
}

inline void ref_rmsnorm(Vec& x, int64_t off, int64_t n, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[off + i] * x[off + i];
  const double inv = 1.0 / std::sqrt(ss / n + eps);
  for (int64_t i = 0; i < n; ++i) x[off + i] = x[off + i] * inv * w[i];
}

/// HF apply_rotary_pos_emb on one head at absolute position pos, with cos/sin scaled.
inline void ref_rope(Vec& x, int64_t off, const cpu::RopeParams& rp, int64_t pos, double scale) {
  const int64_t h = rp.rotary_dim / 2;
  for (int64_t i = 0; i < h; ++i) {
    const double a = static_cast<double>(pos) * rp.inv_freq[i];
    const double c = std::cos(a) * scale, s = std::sin(a) * scale;
    const double x1 = x[off + i], x2 = x[off + i + h];
    x[off + i] = x1 * c - x2 * s;
    x[off + i + h] = x2 * c + x1 * s;
  }
}

/// One layer's projections for one token: q (nh*hd) and k, v (nkv*hd), after qk_norm, un-rotated.
struct RefQKV {
  Vec q, k, v;
};
inline RefQKV ref_qkv(const ModelConfig& c, const LayerWeights& L, const Vec& x) {
  Vec h = x;
  ref_rmsnorm(h, 0, c.hidden_size, L.input_layernorm, c.rms_norm_eps);
  RefQKV r;
  r.q = ref_linear(L.q_proj, L.q_bias, h, c.num_attention_heads * c.head_dim);
  r.k = ref_linear(L.k_proj, L.k_bias, h, c.num_key_value_heads * c.head_dim);
  r.v = ref_linear(L.v_proj, L.v_bias, h, c.num_key_value_heads * c.head_dim);
  if (c.qk_norm) {
    for (int64_t hh = 0; hh < c.num_attention_heads; ++hh)
      ref_rmsnorm(r.q, hh * c.head_dim, c.head_dim, L.q_norm, c.rms_norm_eps);
    for (int64_t hh = 0; hh < c.num_key_value_heads; ++hh)
      ref_rmsnorm(r.k, hh * c.head_dim, c.head_dim, L.k_norm, c.rms_norm_eps);
  }
  return r;
}

/// SwiGLU MLP down(silu(gate h) * up h) with inner size `inner`.
inline Vec ref_swiglu_mlp(const std::vector<float>& gate, const std::vector<float>& up,
                          const std::vector<float>& down, const Vec& h, int64_t inner,
                          int64_t hidden) {
  Vec g = ref_linear(gate, {}, h, inner);
  Vec u = ref_linear(up, {}, h, inner);
  for (int64_t i = 0; i < inner; ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return ref_linear(down, {}, g, hidden);
}

/// Qwen3MoeSparseMoeBlock for one token (modeling_qwen3_moe.py): softmax of the router logits, the
/// num_experts_per_tok most probable experts (a tie to the lower index), renormalised when
/// norm_topk_prob, and the weighted sum of their SwiGLU outputs. A layer is MoE when it holds a
/// router (L.router non-empty).
inline Vec ref_moe(const ModelConfig& c, const LayerWeights& L, const Vec& h) {
  const int64_t E = c.num_experts, K = c.num_experts_per_tok;
  Vec p = ref_linear(L.router, {}, h, E);
  const double mx = *std::max_element(p.begin(), p.end());
  double den = 0;
  for (double& e : p) den += (e = std::exp(e - mx));
  for (double& e : p) e /= den;
  std::vector<int64_t> order(E);
  for (int64_t e = 0; e < E; ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
  double chosen = 0;
  for (int64_t i = 0; i < K; ++i) chosen += p[order[i]];
  Vec out(c.hidden_size, 0.0);
  for (int64_t e = 0; e < E; ++e) {
    if (std::find(order.begin(), order.begin() + K, e) == order.begin() + K) continue;
    const double w = c.norm_topk_prob ? p[e] / chosen : p[e];
    const ExpertWeights& x = L.experts[e];
    Vec y = ref_swiglu_mlp(x.gate_proj, x.up_proj, x.down_proj, h, c.moe_intermediate_size,
                           c.hidden_size);
    for (int64_t i = 0; i < c.hidden_size; ++i) out[i] += w * y[i];
  }
  return out;
}

/// o_proj + residual, then MLP (or the MoE block) + residual, on x in place. att: (nh*hd).
inline void ref_post_attention(const ModelConfig& c, const LayerWeights& L, Vec& x,
                               const Vec& att) {
  Vec o = ref_linear(L.o_proj, {}, att, c.hidden_size);
  for (int64_t i = 0; i < c.hidden_size; ++i) x[i] += o[i];
  Vec h = x;
  ref_rmsnorm(h, 0, c.hidden_size, L.post_attention_layernorm, c.rms_norm_eps);
  Vec d = L.router.empty() ? ref_swiglu_mlp(L.gate_proj, L.up_proj, L.down_proj, h,
                                            c.intermediate_size, c.hidden_size)
                           : ref_moe(c, L, h);
  for (int64_t i = 0; i < c.hidden_size; ++i) x[i] += d[i];
}

inline std::vector<float> ref_logits(const ModelWeights& w, Vec x) {
  const ModelConfig& c = w.config;
  ref_rmsnorm(x, 0, c.hidden_size, w.norm, c.rms_norm_eps);
  Vec lg = ref_linear(w.output_weight(), {}, x, c.vocab_size);
  return std::vector<float>(lg.begin(), lg.end());
}

/// Softmax attention of rotated query heads q over keys ks / values vs (each nkv*hd), GQA.
inline Vec ref_attend(const ModelConfig& c, const Vec& q, const std::vector<Vec>& ks,
                      const std::vector<Vec>& vs) {
  const int64_t nh = c.num_attention_heads, hd = c.head_dim, group = nh / c.num_key_value_heads;
  Vec out(nh * hd, 0.0);
  for (int64_t h = 0; h < nh; ++h) {
    const int64_t g = h / group;
    std::vector<double> s(ks.size());
    double mx = -1e300;
    for (size_t u = 0; u < ks.size(); ++u) {
      double d = 0;
      for (int64_t i = 0; i < hd; ++i) d += q[h * hd + i] * ks[u][g * hd + i];
      s[u] = d / std::sqrt(static_cast<double>(hd));
      mx = std::max(mx, s[u]);
    }
    double den = 0;
    for (double& e : s) den += (e = std::exp(e - mx));
    for (size_t u = 0; u < ks.size(); ++u)
      for (int64_t i = 0; i < hd; ++i) out[h * hd + i] += s[u] / den * vs[u][g * hd + i];
  }
  return out;
}

/// Plain causal forward over ids; returns (ids.size(), vocab_size) logits.
inline std::vector<float> dense_logits(const ModelWeights& w, const std::vector<int32_t>& ids) {
  const ModelConfig& c = w.config;
  const cpu::RopeParams rp = cpu::compute_rope_params(c);
  const int64_t T = static_cast<int64_t>(ids.size()), H = c.hidden_size;
  std::vector<Vec> x(T);
  for (int64_t t = 0; t < T; ++t)
    x[t] = Vec(w.embed_tokens.begin() + ids[t] * H, w.embed_tokens.begin() + (ids[t] + 1) * H);
  for (const LayerWeights& L : w.layers) {
    std::vector<RefQKV> p(T);
    for (int64_t t = 0; t < T; ++t) {
      p[t] = ref_qkv(c, L, x[t]);
      for (int64_t h = 0; h < c.num_attention_heads; ++h)
        ref_rope(p[t].q, h * c.head_dim, rp, t, rp.attention_scaling);
      for (int64_t h = 0; h < c.num_key_value_heads; ++h)
        ref_rope(p[t].k, h * c.head_dim, rp, t, rp.attention_scaling);
    }
    for (int64_t t = 0; t < T; ++t) {
      std::vector<Vec> ks, vs;
      for (int64_t u = 0; u <= t; ++u) {
        ks.push_back(p[u].k);
        vs.push_back(p[u].v);
      }
      ref_post_attention(c, L, x[t], ref_attend(c, p[t].q, ks, vs));
    }
  }
  std::vector<float> out;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> lg = ref_logits(w, x[t]);
    out.insert(out.end(), lg.begin(), lg.end());
  }
  return out;
}

/// docs/ARCHITECTURE.md §2 reference: blocks of un-rotated K/V; every key re-rotated to its current
/// view position each forward.
class NaiveBackend {
 public:
  explicit NaiveBackend(const ModelWeights& w) : w_(w), rp_(cpu::compute_rope_params(w.config)) {}
  BlockId new_block() {
    blocks_.emplace_back();
    blocks_.back().k.resize(w_.config.num_hidden_layers);
    blocks_.back().v.resize(w_.config.num_hidden_layers);
    return static_cast<BlockId>(blocks_.size() - 1);
  }
  int64_t len(BlockId b) const { return static_cast<int64_t>(blocks_[b].k[0].size()); }
  void append_block(BlockId dst, BlockId src) {
    Blk s = blocks_[src];
    for (size_t l = 0; l < s.k.size(); ++l) {
      blocks_[dst].k[l].insert(blocks_[dst].k[l].end(), s.k[l].begin(), s.k[l].end());
      blocks_[dst].v[l].insert(blocks_[dst].v[l].end(), s.v[l].begin(), s.v[l].end());
    }
  }
  std::vector<float> forward(const ForwardBatch& b) {
    const ModelConfig& c = w_.config;
    const int64_t T = static_cast<int64_t>(b.tokens.size()), H = c.hidden_size;
    // Post-append lengths, block index j of each row, view position p.
    std::vector<int64_t> nl(blocks_.size());
    for (size_t i = 0; i < blocks_.size(); ++i) nl[i] = len(static_cast<BlockId>(i));
    std::vector<int64_t> j(T), p(T);
    for (int64_t t = 0; t < T; ++t) j[t] = nl[b.tokens[t].block]++;
    auto offsets = [&](int w) {
      std::vector<int64_t> o;
      int64_t s = 0;
      for (BlockId blk : b.views[w]) {
        o.push_back(s);
        s += nl[blk];
      }
      return o;
    };
    for (int64_t t = 0; t < T; ++t) {
      const auto& v = b.views[b.tokens[t].worker];
      const auto o = offsets(b.tokens[t].worker);
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i] == b.tokens[t].block) p[t] = o[i] + j[t];
    }
    std::vector<Vec> x(T);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t id = b.tokens[t].token_id;
      x[t] = Vec(w_.embed_tokens.begin() + id * H, w_.embed_tokens.begin() + (id + 1) * H);
    }
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      const LayerWeights& L = w_.layers[l];
      std::vector<RefQKV> r(T);
      for (int64_t t = 0; t < T; ++t) {
        r[t] = ref_qkv(c, L, x[t]);
        Blk& blk = blocks_[b.tokens[t].block];
        blk.k[l].resize(j[t] + 1);
        blk.v[l].resize(j[t] + 1);
        blk.k[l][j[t]] = r[t].k;
        blk.v[l][j[t]] = r[t].v;
      }
      for (int64_t t = 0; t < T; ++t) {
        const int w = b.tokens[t].worker;
        const auto o = offsets(w);
        std::vector<Vec> ks, vs;
        for (size_t i = 0; i < b.views[w].size(); ++i) {
          const Blk& blk = blocks_[b.views[w][i]];
          for (int64_t u = 0; u < static_cast<int64_t>(blk.k[l].size()); ++u) {
            if (o[i] + u > p[t]) break;
            Vec k = blk.k[l][u];
            for (int64_t h = 0; h < c.num_key_value_heads; ++h)
              ref_rope(k, h * c.head_dim, rp_, o[i] + u, rp_.attention_scaling);
            ks.push_back(k);
            vs.push_back(blk.v[l][u]);
          }
        }
        Vec q = r[t].q;
        for (int64_t h = 0; h < c.num_attention_heads; ++h)
          ref_rope(q, h * c.head_dim, rp_, p[t], rp_.attention_scaling);
        ref_post_attention(c, L, x[t], ref_attend(c, q, ks, vs));
      }
    }
    std::vector<float> out;
    for (int64_t t = 0; t < T; ++t) {
      if (!b.tokens[t].want_logits) continue;
      std::vector<float> lg = ref_logits(w_, x[t]);
      out.insert(out.end(), lg.begin(), lg.end());
    }
    return out;
  }

 private:
  struct Blk {
    std::vector<std::vector<Vec>> k, v;  // [layer][token] -> (nkv*hd) un-rotated
  };
  const ModelWeights& w_;
  cpu::RopeParams rp_;
  std::vector<Blk> blocks_;
};

}  // namespace hogwild::test
