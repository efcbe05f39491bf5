// Naive reference of the Hogwild! semantics; see naive_reference.h. Double precision, no blocks.
#include "tests/hogwild/naive_reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "cpu/rope.h"

namespace hogwild::testing {

namespace {

using Vec = std::vector<double>;

// y = W x (+ b); W (out, in) row-major fp32.
Vec matvec(const std::vector<float>& W, const std::vector<float>& b, const Vec& x, int64_t out) {
  const int64_t in = static_cast<int64_t>(x.size());
  Vec y(out, 0.0);
  for (int64_t o = 0; o < out; ++o) {
    double s = b.empty() ? 0.0 : b[o];
    const float* row = W.data() + o * in;
    for (int64_t i = 0; i < in; ++i) s += row[i] * x[i];
    y[o] = s;
  }
  return y;
}

// RMSNorm over consecutive groups of `dim` values (HF LlamaRMSNorm / Qwen3 q_norm, k_norm).
void rmsnorm(Vec& x, const std::vector<float>& w, int64_t dim, double eps) {
  for (size_t g = 0; g < x.size(); g += dim) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += x[g + i] * x[g + i];
    double r = 1.0 / std::sqrt(ss / dim + eps);
    for (int64_t i = 0; i < dim; ++i) x[g + i] = x[g + i] * r * w[i];
  }
}

// down(silu(gate x) * up x), inner size n.
Vec swiglu_mlp(const std::vector<float>& gate, const std::vector<float>& up,
               const std::vector<float>& down, const Vec& x, int64_t n, int64_t hidden) {
  Vec g = matvec(gate, {}, x, n);
  Vec u = matvec(up, {}, x, n);
  for (int64_t j = 0; j < n; ++j) g[j] = g[j] / (1.0 + std::exp(-g[j])) * u[j];
  return matvec(down, {}, g, hidden);
}

// The MLP of layer L on the post-attention-normed x: dense, or (L holds a router) the Qwen3-MoE
// block: softmax over the router logits, the top num_experts_per_tok (ties to the lower index),
// renormalised when norm_topk_prob, weighted sum of those experts' MLPs.
Vec mlp(const ModelConfig& c, const LayerWeights& L, const Vec& x) {
  const int64_t H = c.hidden_size;
  if (L.router.empty())
    return swiglu_mlp(L.gate_proj, L.up_proj, L.down_proj, x, c.intermediate_size, H);
  Vec p = matvec(L.router, {}, x, c.num_experts);
  const double mx = *std::max_element(p.begin(), p.end());
  double den = 0;
  for (double& e : p) den += (e = std::exp(e - mx));
  std::vector<int64_t> top;  // chosen experts, most probable first
  std::vector<bool> taken(p.size(), false);
  for (int64_t i = 0; i < c.num_experts_per_tok; ++i) {
    int64_t best = -1;
    for (int64_t e = 0; e < c.num_experts; ++e)
      if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
    taken[best] = true;
    top.push_back(best);
  }
  double sum = 0;
  for (int64_t e : top) sum += p[e] / den;
  Vec out(H, 0.0);
  for (int64_t e : top) {
    const double w = c.norm_topk_prob ? p[e] / den / sum : p[e] / den;
    const ExpertWeights& x_e = L.experts[e];
    Vec y = swiglu_mlp(x_e.gate_proj, x_e.up_proj, x_e.down_proj, x, c.moe_intermediate_size, H);
    for (int64_t j = 0; j < H; ++j) out[j] += w * y[j];
  }
  return out;
}

}  // namespace

NaiveSession::NaiveSession(const ModelWeights& w, Layout layout, int n_workers)
    : w_(w), layout_(layout), n_(n_workers) {
  cpu::RopeParams rp = cpu::compute_rope_params(w_.config);
  for (float f : rp.inv_freq) inv_freq_.push_back(f);
  attn_scale_ = rp.attention_scaling;
  rotary_dim_ = rp.rotary_dim;
}

int NaiveSession::add_token(int32_t id) {
  Tok t;
  t.id = id;
  t.k.resize(w_.config.num_hidden_layers);
  t.v.resize(w_.config.num_hidden_layers);
  toks_.push_back(std::move(t));
  return static_cast<int>(toks_.size()) - 1;
}

NaiveSession::Seg NaiveSession::current(int w) const {
  Seg s;
  auto in_history = [&](const std::pair<int, int>& key) {
    return std::find(history_.begin(), history_.end(), key) != history_.end();
  };
  // contiguous: every step of w; independent: every step of w not in the history (only a
  // Skeleton-of-Thought session promotes: its outline, then its expansions), in step order.
  if (layout_ == Layout::contiguous || layout_ == Layout::independent) {
    for (auto& [key, seg] : steps_)
      if (key.first == w && (layout_ == Layout::contiguous || !in_history(key)))
        s.insert(s.end(), seg.begin(), seg.end());
    return s;
  }
  int last = 0;
  for (auto& [key, seg] : steps_)
    if (key.first == w && !in_history(key)) last = std::max(last, key.second);
  if (last > 0) s = steps_.at({w, last});
  return s;
}

NaiveSession::Seg NaiveSession::history() const {
  Seg v = prompt_;
  for (auto& h : history_) {
    const Seg& s = steps_.at(h);
    v.insert(v.end(), s.begin(), s.end());
  }
  return v;
}

void NaiveSession::forget(int64_t begin, int64_t end) {
  const Seg h = history();
  if (begin < 0 || end > static_cast<int64_t>(h.size()) || begin >= end)
    throw std::logic_error("reference: forgotten range outside the history");
  forgotten_.resize(toks_.size(), false);
  for (int64_t i = begin; i < end; ++i) forgotten_[h[i]] = true;
}

std::vector<int> NaiveSession::view(int w) const {
  Seg v = history();
  auto add = [&](const Seg& s) { v.insert(v.end(), s.begin(), s.end()); };
  if (n_ > 1 && layout_ != Layout::interleaved && layout_ != Layout::independent) {
    add(others_header_[w]);
    bool first = true;
    for (int o = 0; o < n_; ++o) {
      if (o == w) continue;
      if (!first) add(sep_);
      first = false;
      add(current(o));
    }
    add(sep_own_header_[w]);
  }
  add(current(w));
  return v;
}

std::vector<double> NaiveSession::prefill(const std::vector<int32_t>& prompt,
                                          const std::vector<std::vector<int32_t>>& others_header,
                                          const std::vector<int32_t>& sep,
                                          const std::vector<std::vector<int32_t>>& sep_own_header) {
  std::vector<int> rows;
  std::vector<std::vector<int>> views;
  std::vector<bool> want;
  for (size_t i = 0; i < prompt.size(); ++i) prompt_.push_back(add_token(prompt[i]));
  for (size_t i = 0; i < prompt.size(); ++i) {
    rows.push_back(prompt_[i]);
    views.push_back(prompt_);
    want.push_back(i + 1 == prompt.size());
  }
  auto constant = [&](const std::vector<int32_t>& ids) {
    Seg s;
    for (int32_t id : ids) s.push_back(add_token(id));
    Seg v = prompt_;
    v.insert(v.end(), s.begin(), s.end());
    for (int r : s) {
      rows.push_back(r);
      views.push_back(v);
      want.push_back(false);
    }
    return s;
  };
  for (auto& t : others_header) others_header_.push_back(constant(t));
  sep_ = constant(sep);
  for (auto& t : sep_own_header) sep_own_header_.push_back(constant(t));
  return run(rows, views, want).at(0);
}

std::map<int, std::vector<double>> NaiveSession::forward(
    const std::vector<RefFed>& fed, const std::vector<std::pair<int, int>>& closed) {
  const Seg read_as_history = history();  // the history block of this forward (no closing steps)
  for (auto& c : closed) history_.push_back(c);
  std::vector<int> rows, writer;
  std::map<int, size_t> last;  // worker -> index in rows of its last fed token
  for (auto& f : fed) {
    int r = add_token(f.token);
    steps_[{f.worker, f.step}].push_back(r);
    last[f.worker] = rows.size();
    rows.push_back(r);
    writer.push_back(f.worker);
  }
  std::vector<std::vector<int>> views;
  std::vector<bool> want(rows.size(), false);
  std::map<int, std::vector<int>> wview;
  for (auto& [w, i] : last) {
    wview[w] = view(w);
    want[i] = true;
  }
  for (size_t i = 0; i < rows.size(); ++i) views.push_back(wview.at(writer[i]));
  auto out = run(rows, views, want);
  history_scores_.clear();
  for (int r : read_as_history) history_scores_.push_back(std::max(0.0, score_by_rec_[r]));
  std::map<int, std::vector<double>> res;
  size_t k = 0;
  for (size_t i = 0; i < rows.size(); ++i)
    if (want[i]) res[writer[i]] = out[k++];
  return res;
}

std::vector<std::vector<double>> NaiveSession::run(const std::vector<int>& rows,
                                                   const std::vector<std::vector<int>>& views,
                                                   const std::vector<bool>& want) {
  const ModelConfig& c = w_.config;
  const int64_t H = c.hidden_size, hd = c.head_dim, nq = c.num_attention_heads;
  const int64_t nkv = c.num_key_value_heads, group = nq / nkv, half = rotary_dim_ / 2;
  const size_t n = rows.size();
  // Position of each new token in its writer's view (it occurs there exactly once).
  std::vector<int64_t> pos(n);
  for (size_t i = 0; i < n; ++i) {
    auto& v = views[i];
    if (std::count(v.begin(), v.end(), rows[i]) != 1)
      throw std::logic_error("reference: a new token must occur exactly once in its view");
    pos[i] = std::find(v.begin(), v.end(), rows[i]) - v.begin();
  }
  auto rotate = [&](const double* x, int64_t p, double* y) {  // one head, rotate-half pairing
    std::copy(x, x + hd, y);
    for (int64_t i = 0; i < half; ++i) {
      double a = static_cast<double>(p) * inv_freq_[i];  // exact angle (HF: fp32)
      double cs = std::cos(a) * attn_scale_, sn = std::sin(a) * attn_scale_;
      y[i] = x[i] * cs - x[i + half] * sn;
      y[i + half] = x[i + half] * cs + x[i] * sn;
    }
  };
  forgotten_.resize(toks_.size(), false);
  score_by_rec_.assign(toks_.size(), -1.0);
  auto is_forgotten = [&](int rec) { return forgotten_[rec]; };
  std::vector<Vec> h(n, Vec(H));
  for (size_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < H; ++j) h[i][j] = w_.embed_tokens[toks_[rows[i]].id * H + j];
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerWeights& L = w_.layers[l];
    std::vector<Vec> q(n);
    for (size_t i = 0; i < n; ++i) {  // norm, qkv, q/k norm; K stored un-rotated
      Vec x = h[i];
      rmsnorm(x, L.input_layernorm, H, c.rms_norm_eps);
      q[i] = matvec(L.q_proj, L.q_bias, x, nq * hd);
      Vec k = matvec(L.k_proj, L.k_bias, x, nkv * hd);
      if (c.qk_norm) {
        rmsnorm(q[i], L.q_norm, hd, c.rms_norm_eps);
        rmsnorm(k, L.k_norm, hd, c.rms_norm_eps);
      }
      toks_[rows[i]].k[l] = k;
      toks_[rows[i]].v[l] = matvec(L.v_proj, L.v_bias, x, nkv * hd);
    }
    for (size_t i = 0; i < n; ++i) {  // attention over view positions <= pos[i], keys re-rotated
      const auto& v = views[i];
      const int64_t p = pos[i];
      Vec att(nq * hd, 0.0), qr(hd), kr(hd), scores(p + 1);
      for (int64_t hq = 0; hq < nq; ++hq) {
        const int64_t kvh = hq / group;
        rotate(q[i].data() + hq * hd, p, qr.data());
        double mx = -1e300;
        for (int64_t j = 0; j <= p; ++j) {
          if (is_forgotten(v[j])) continue;  // a gap: no attention, the position still counts
          const Tok& t = toks_[v[j]];
          if (t.k[l].empty()) throw std::logic_error("reference: key not computed yet");
          rotate(t.k[l].data() + kvh * hd, j, kr.data());
          double s = 0;
          for (int64_t d = 0; d < hd; ++d) s += qr[d] * kr[d];
          scores[j] = s / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, scores[j]);
        }
        double den = 0;
        for (int64_t j = 0; j <= p; ++j)
          if (!is_forgotten(v[j])) den += (scores[j] = std::exp(scores[j] - mx));
        for (int64_t j = 0; j <= p; ++j) {
          if (is_forgotten(v[j])) continue;
          score_by_rec_[v[j]] = std::max(score_by_rec_[v[j]], scores[j] / den);
          const double* vv = toks_[v[j]].v[l].data() + kvh * hd;
          for (int64_t d = 0; d < hd; ++d) att[hq * hd + d] += scores[j] / den * vv[d];
        }
      }
      Vec o = matvec(L.o_proj, {}, att, H);
      for (int64_t j = 0; j < H; ++j) h[i][j] += o[j];
      Vec x = h[i];  // MLP: down(silu(gate x) * up x), or the MoE block
      rmsnorm(x, L.post_attention_layernorm, H, c.rms_norm_eps);
      Vec d = mlp(c, L, x);
      for (int64_t j = 0; j < H; ++j) h[i][j] += d[j];
    }
  }
  std::vector<Vec> out;
  for (size_t i = 0; i < n; ++i) {
    if (!want[i]) continue;
    Vec x = h[i];
    rmsnorm(x, w_.norm, H, c.rms_norm_eps);
    out.push_back(matvec(w_.output_weight(), {}, x, c.vocab_size));
  }
  return out;
}

}  // namespace hogwild::testing
