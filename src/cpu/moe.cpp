#include "cpu/moe.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "cpu/ops.h"

namespace hogwild::cpu {

ExpertGroups group_by_expert(const int32_t* experts, const float* weights, int64_t n_rows,
                             int64_t top_k, int64_t n_experts) {
  // Counting sort of the (row, slot) pairs by expert; rows stay in increasing order per expert.
  std::vector<int64_t> count(static_cast<size_t>(n_experts) + 1, 0);
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t i = 0; i < top_k; ++i) {
      const int32_t e = experts[r * top_k + i];
      if (e < 0 || e >= n_experts)
        fail("group_by_expert: row {} is routed to expert {}, outside [0, {})", r, e, n_experts);
      for (int64_t j = 0; j < i; ++j)
        if (experts[r * top_k + j] == e)
          fail("group_by_expert: row {} is routed to expert {} twice", r, e);
      ++count[static_cast<size_t>(e) + 1];
    }
  std::vector<int64_t> start(count.size(), 0);
  for (size_t e = 1; e < count.size(); ++e) start[e] = start[e - 1] + count[e];
  ExpertGroups g;
  g.row.resize(static_cast<size_t>(n_rows * top_k));
  g.weight.resize(g.row.size());
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t i = 0; i < top_k; ++i) {
      const size_t e = static_cast<size_t>(experts[r * top_k + i]);
      const size_t at = static_cast<size_t>(fill[e]++);
      g.row[at] = r;
      g.weight[at] = weights[r * top_k + i];
    }
  for (int64_t e = 0; e < n_experts; ++e)
    if (count[static_cast<size_t>(e) + 1] > 0) {
      g.expert.push_back(static_cast<int32_t>(e));
      g.begin.push_back(start[static_cast<size_t>(e)]);
    }
  g.begin.push_back(n_rows * top_k);
  return g;
}

void moe_mlp(const ModelConfig& c, const LayerWeights& L, const float* x, int64_t n_rows,
             float* out, MoeTrace* trace, const int32_t* forced) {
  const int64_t H = c.hidden_size, E = c.num_experts, K = c.num_experts_per_tok,
                I = c.moe_intermediate_size;
  std::memset(out, 0, sizeof(float) * static_cast<size_t>(n_rows * H));
  if (n_rows == 0) return;
  // Router (Qwen3MoeSparseMoeBlock.gate): logits (n_rows, E), then softmax / top-k / renorm.
  std::vector<float> logits(static_cast<size_t>(n_rows * E));
  matmul(x, L.router.data(), nullptr, logits.data(), n_rows, H, E);
  std::vector<int32_t> chosen(static_cast<size_t>(n_rows * K));
  std::vector<float> weight(chosen.size());
  moe_route(logits.data(), n_rows, E, K, c.norm_topk_prob, chosen.data(), weight.data());
  std::vector<int32_t> used;
  std::vector<float> used_weight;
  if (forced) {  // every expert's probability (top-E, not renormalised), then the forced ones'
    std::vector<int32_t> order(static_cast<size_t>(n_rows * E));
    std::vector<float> prob(order.size());
    moe_route(logits.data(), n_rows, E, E, false, order.data(), prob.data());
    used.assign(forced, forced + n_rows * K);
    used_weight.resize(used.size());
    for (int64_t r = 0; r < n_rows; ++r) {
      float sum = 0.0f;
      for (int64_t i = 0; i < K; ++i) {
        const int32_t e = used[static_cast<size_t>(r * K + i)];
        if (e < 0 || e >= E)
          fail("moe_mlp: forced expert {} of row {} is outside [0, {})", e, r, E);
        const auto at = std::find(order.begin() + r * E, order.begin() + (r + 1) * E, e);
        float& w = used_weight[static_cast<size_t>(r * K + i)];
        w = prob[static_cast<size_t>(at - order.begin())];
        sum += w;
      }
      if (c.norm_topk_prob)
        for (int64_t i = 0; i < K; ++i) used_weight[static_cast<size_t>(r * K + i)] /= sum;
    }
  }
  ExpertGroups g = forced ? group_by_expert(used.data(), used_weight.data(), n_rows, K, E)
                          : group_by_expert(chosen.data(), weight.data(), n_rows, K, E);

  // Each touched expert once over its rows: gather, gate/up in one pass, SwiGLU, down, then the
  // weighted add into each row's output (experts in increasing index, as index_add_ runs them).
  int64_t most = 0;
  for (size_t i = 0; i + 1 < g.begin.size(); ++i)
    most = std::max(most, g.begin[i + 1] - g.begin[i]);
  std::vector<float> xe(static_cast<size_t>(most * H)), gate(static_cast<size_t>(most * I)),
      up(gate.size()), ye(xe.size());
  for (size_t i = 0; i < g.expert.size(); ++i) {
    const ExpertWeights& ew = L.experts[static_cast<size_t>(g.expert[i])];
    const int64_t b = g.begin[i], n = g.begin[i + 1] - b;
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(xe.data() + j * H, x + g.row[static_cast<size_t>(b + j)] * H, sizeof(float) * H);
    matmul_shared(xe.data(), n, H,
                  {{ew.gate_proj.data(), nullptr, gate.data(), I},
                   {ew.up_proj.data(), nullptr, up.data(), I}});
    swiglu(gate.data(), up.data(), gate.data(), n * I);
    matmul(gate.data(), ew.down_proj.data(), nullptr, ye.data(), n, I, H);
    for (int64_t j = 0; j < n; ++j) {
      const float w = g.weight[static_cast<size_t>(b + j)];
      float* o = out + g.row[static_cast<size_t>(b + j)] * H;
      const float* y = ye.data() + j * H;
      for (int64_t d = 0; d < H; ++d) {
        const float wy = y[d] * w;  // expert output times its routing weight, then the add
        o[d] += wy;
      }
    }
  }
  if (trace) {
    trace->groups = std::move(g);
    trace->chosen = std::move(chosen);
    trace->router_logits = std::move(logits);
  }
}

}  // namespace hogwild::cpu
