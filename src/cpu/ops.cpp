#include "cpu/ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

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

void matmul(const float* x, const float* W, const float* bias, float* y, int64_t n_rows,
            int64_t in, int64_t out) {
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

float silu(float x) { return x / (1.0f + std::exp(-x)); }

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = silu(gate[i]) * up[i];
}

void embedding(const float* table, const int32_t* ids, int64_t n, int64_t hidden_size,
               float* out) {
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

namespace {

// q . k in 16 lanes (lane l: elements l, l + 16, ...; the tail of head_dim % 16 elements joins
// lanes 0..), then the halving tree. Written with plain arrays so that each compiled clone
// vectorises it at its own width; the order of additions is the same in every clone.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void attn_scores(
    const float* q, const float* k, int64_t n_keys, int64_t stride, int64_t head_dim, float scale,
    float* scores) {
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* kj = k + j * stride;
    float lane[16] = {};
    int64_t i = 0;
    for (; i + 16 <= head_dim; i += 16)
      for (int l = 0; l < 16; ++l) lane[l] += q[i + l] * kj[i + l];
    for (int l = 0; i + l < head_dim; ++l) lane[l] += q[i + l] * kj[i + l];
    for (int n = 8; n >= 1; n /= 2)
      for (int l = 0; l < n; ++l) lane[l] += lane[l + n];
    scores[j] = lane[0] * scale;
  }
}

// o = o * c + sum_j w_j v_j over n keys, in key order (each element its own chain).
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void attn_values(
    const float* v, int64_t n_keys, int64_t stride, int64_t head_dim, const float* w, float c,
    float* o) {
  for (int64_t i = 0; i < head_dim; ++i) o[i] *= c;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* vj = v + j * stride;
    const float wj = w[j];
    for (int64_t i = 0; i < head_dim; ++i) o[i] += wj * vj[i];
  }
}

}  // namespace

void attn_partial(const float* q, const float* k, const float* v, int64_t n_keys, int64_t stride,
                  int64_t head_dim, float scale, AttnState& s) {
  constexpr int64_t kChunk = 64;
  float w[kChunk];
  for (int64_t j0 = 0; j0 < n_keys; j0 += kChunk) {
    const int64_t n = std::min(kChunk, n_keys - j0);
    attn_scores(q, k + j0 * stride, n, stride, head_dim, scale, w);
    float m = s.m;
    for (int64_t j = 0; j < n; ++j) m = std::max(m, w[j]);
    // New max: rescale what we have (exp(-inf) = 0 handles the empty state).
    const float c = m > s.m ? std::exp(s.m - m) : 1.0f;
    float d = s.d * c;
    for (int64_t j = 0; j < n; ++j) {
      w[j] = std::exp(w[j] - m);
      d += w[j];
    }
    attn_values(v + j0 * stride, n, stride, head_dim, w, c, s.o);
    s.m = m;
    s.d = d;
  }
}

}  // namespace hogwild::cpu
