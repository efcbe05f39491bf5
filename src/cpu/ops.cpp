#include "cpu/ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "cpu/skinny.h"

namespace hogwild::cpu {

void rmsnorm(const float* x, const float* w, float* y, int64_t n_rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    // HF accumulates the mean in fp32 (torch reduction); double here only makes it more exact.
    double ss = 0.0;
    for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float var = static_cast<float>(ss / static_cast<double>(dim));
    const float inv = 1.0f / std::sqrt(var + eps);
    for (int64_t i = 0; i < dim; ++i) yr[i] = w[i] * (xr[i] * inv);
  }
}

void matmul(const float* x, const float* W, const float* bias, float* y, int64_t n_rows, int64_t in,
            int64_t out) {
  if (n_rows == 0 || out == 0) return;
  if (n_rows <= kSkinnyMaxRows) {
    skinny_matmul(x, n_rows, in, {{W, bias, y, out}});
    return;
  }
  if (bias) {
    for (int64_t r = 0; r < n_rows; ++r) std::memcpy(y + r * out, bias, sizeof(float) * out);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n_rows),
              static_cast<int>(out), static_cast<int>(in), 1.0f, x, static_cast<int>(in), W,
              static_cast<int>(in), bias ? 1.0f : 0.0f, y, static_cast<int>(out));
}

void matmul_shared(const float* x, int64_t n_rows, int64_t in,
                   std::initializer_list<SkinnyProjection> projections) {
  if (n_rows == 0) return;
  if (n_rows <= kSkinnyMaxRows) {
    skinny_matmul(x, n_rows, in, projections);
    return;
  }
  for (const SkinnyProjection& p : projections) matmul(x, p.W, p.bias, p.y, n_rows, in, p.out);
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  silu_mul(gate, up, out, n);  // vectorised (cpu/skinny.h)
}

void moe_route(const float* router_logits, int64_t n_rows, int64_t n_experts, int64_t top_k,
               bool norm_topk_prob, int32_t* experts, float* weights) {
  if (top_k < 1 || top_k > n_experts)
    fail("moe_route: num_experts_per_tok ({}) must be between 1 and num_experts ({})", top_k,
         n_experts);
  std::vector<float> p(static_cast<size_t>(n_experts));
  std::vector<int32_t> order(static_cast<size_t>(n_experts));
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* l = router_logits + r * n_experts;
    // F.softmax(router_logits, dtype=torch.float): exp(l - max) / sum, in fp32.
    int32_t* er = experts + r * top_k;
    float* wr = weights + r * top_k;
    bool finite = true;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t e = 0; e < n_experts; ++e) {
      finite = finite && std::isfinite(l[e]);
      m = std::max(m, l[e]);
    }
    if (!finite) {  // NaN/inf activations: a NaN output, as the dense MLP would give
      for (int64_t i = 0; i < top_k; ++i) {
        er[i] = static_cast<int32_t>(i);
        wr[i] = std::numeric_limits<float>::quiet_NaN();
      }
      continue;
    }
    float sum = 0.0f;
    for (int64_t e = 0; e < n_experts; ++e) sum += (p[e] = std::exp(l[e] - m));
    for (int64_t e = 0; e < n_experts; ++e) p[e] /= sum;
    // torch.topk(probs, top_k): the k largest, descending; ties by the lower expert index.
    for (int64_t e = 0; e < n_experts; ++e) order[e] = static_cast<int32_t>(e);
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                      [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    float chosen = 0.0f;
    for (int64_t i = 0; i < top_k; ++i) {
      er[i] = order[i];
      wr[i] = p[order[i]];
      chosen += wr[i];
    }
    if (norm_topk_prob)  // routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
      for (int64_t i = 0; i < top_k; ++i) wr[i] /= chosen;
  }
}

void embedding(const float* table, const int32_t* ids, int64_t n, int64_t hidden_size, float* out) {
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out + i * hidden_size, table + static_cast<int64_t>(ids[i]) * hidden_size,
                sizeof(float) * hidden_size);
}

void add_inplace(float* out, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += x[i];
}

void attn_state_init(AttnState& s, int64_t head_dim) {
  s.m = -std::numeric_limits<float>::infinity();
  s.d = 0.0f;
  std::memset(s.o, 0, sizeof(float) * head_dim);
}

void attn_state_merge(AttnState& a, const AttnState& b, int64_t head_dim) {
  if (b.d == 0.0f) return;  // b empty
  if (a.d == 0.0f) {
    a.m = b.m;
    a.d = b.d;
    std::memcpy(a.o, b.o, sizeof(float) * head_dim);
    return;
  }
  const float m = std::max(a.m, b.m);
  const float ca = std::exp(a.m - m), cb = std::exp(b.m - m);
  a.d = a.d * ca + b.d * cb;
  for (int64_t i = 0; i < head_dim; ++i) a.o[i] = a.o[i] * ca + b.o[i] * cb;
  a.m = m;
}

void attn_state_normalize(const AttnState& s, float* out, int64_t head_dim) {
  const float inv = 1.0f / s.d;
  for (int64_t i = 0; i < head_dim; ++i) out[i] = s.o[i] * inv;
}

void attn_partial(const float* q, const float* k, const float* v, int64_t n_keys, int64_t stride,
                  int64_t head_dim, float scale, AttnState& s) {
  attn_partial(q, 1, k, v, n_keys, stride, head_dim, scale, &s);
}

void attn_partial(const float* q, int64_t n_q, const float* k, const float* v, int64_t n_keys,
                  int64_t stride, int64_t head_dim, float scale, AttnState* s) {
  constexpr int64_t kChunk = 64;
  constexpr int64_t kMaxHeads = 16;  // query heads per call; larger groups go in several calls
  if (n_q > kMaxHeads) {
    for (int64_t h = 0; h < n_q; h += kMaxHeads)
      attn_partial(q + h * head_dim, std::min(kMaxHeads, n_q - h), k, v, n_keys, stride, head_dim,
                   scale, s + h);
    return;
  }
  float w[kMaxHeads * kChunk], c[kMaxHeads];
  float* o[kMaxHeads];
  for (int64_t h = 0; h < n_q; ++h) o[h] = s[h].o;
  for (int64_t j0 = 0; j0 < n_keys; j0 += kChunk) {
    const int64_t n = std::min(kChunk, n_keys - j0);
    skinny_dots({q, n_q, head_dim, k + j0 * stride, stride, nullptr, w, kChunk}, n);
    for (int64_t h = 0; h < n_q; ++h) {
      AttnState& sh = s[h];
      float m;
      const float sum = softmax_chunk(w + h * kChunk, n, scale, sh.m, &m);
      // New max: rescale what we have (exp(-inf) = 0 handles the empty state).
      c[h] = m > sh.m ? std::exp(sh.m - m) : 1.0f;
      sh.m = m;
      sh.d = sh.d * c[h] + sum;
    }
    weighted_sum_heads(v + j0 * stride, n, stride, head_dim, w, kChunk, c, o, n_q);
  }
}

}  // namespace hogwild::cpu
