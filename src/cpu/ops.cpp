#include "cpu/ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/parallel.h"

namespace hogwild::cpu {

namespace {

// Skinny projection for 2..kSkinnyMaxRows rows (a decode step of several workers): every weight
// row is read ONCE for all token rows, 16 fp32 lanes per row accumulated separately (vectorised
// by the compiler; FMA on AVX2 machines through the x86-64-v3 clone). OpenBLAS SGEMM with M <= 8
// reads W as slowly as M GEMVs (measured: 2 workers were slower than 1).
constexpr int64_t kSkinnyMaxRows = 8;
constexpr int64_t kOutBlock = 16;  // output features per parallel_for item (<= 192 KiB of W)

typedef float v8f __attribute__((vector_size(32)));  // 8 fp32 lanes (GCC vector extension)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // v8f never crosses a non-inlined call
// R token rows, V 8-lane vectors per row per step (R * V accumulators stay in registers).
template <int R, int V>
inline __attribute__((always_inline)) void skinny_rows(const float* x, const float* W, float* y,
                                                       int64_t in, int64_t out, int64_t o0,
                                                       int64_t o1) {
  constexpr int64_t step = 8 * V;
  for (int64_t o = o0; o < o1; ++o) {
    const float* w = W + o * in;
    v8f acc[R][V];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[r][v] = v8f{};
    int64_t k = 0;
    for (; k + step <= in; k += step) {
      v8f wv[V];
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) std::memcpy(&wv[v], w + k + 8 * v, sizeof(v8f));
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) {
          v8f xv;
          std::memcpy(&xv, x + r * in + k + 8 * v, sizeof(v8f));
          acc[r][v] += wv[v] * xv;
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      v8f a = acc[r][0];
#pragma GCC unroll 2
      for (int v = 1; v < V; ++v) a += acc[r][v];
      float sum = 0.0f;
      for (int j = 0; j < 8; ++j) sum += a[j];
      for (int64_t kk = k; kk < in; ++kk) sum += w[kk] * x[r * in + kk];
      y[r * out + o] += sum;  // y holds the bias or 0
    }
  }
}
#pragma GCC diagnostic pop

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void skinny_block(
    const float* x, const float* W, float* y, int64_t n_rows, int64_t in, int64_t out, int64_t o0,
    int64_t o1) {
  // At most 4 rows per pass (8 accumulators + operands stay in the 16 AVX2 registers); a second
  // pass over the same output block re-reads its weights from L2, not from memory.
  for (int64_t r0 = 0; r0 < n_rows; r0 += 4) {
    const float* xr = x + r0 * in;
    float* yr = y + r0 * out;
    switch (std::min<int64_t>(4, n_rows - r0)) {
      case 1: skinny_rows<1, 2>(xr, W, yr, in, out, o0, o1); break;
      case 2: skinny_rows<2, 2>(xr, W, yr, in, out, o0, o1); break;
      case 3: skinny_rows<3, 2>(xr, W, yr, in, out, o0, o1); break;
      default: skinny_rows<4, 2>(xr, W, yr, in, out, o0, o1); break;
    }
  }
}

}  // namespace

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
  if (bias) {
    for (int64_t r = 0; r < n_rows; ++r) std::memcpy(y + r * out, bias, sizeof(float) * out);
  }
  if (n_rows == 1) {
    // y (1, out) = W (out, in) . x  — GEMV reads W once with better threading than 1-row GEMM.
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(out), static_cast<int>(in), 1.0f, W,
                static_cast<int>(in), x, 1, bias ? 1.0f : 0.0f, y, 1);
    return;
  }
  if (n_rows <= kSkinnyMaxRows) {
    if (!bias) std::memset(y, 0, sizeof(float) * n_rows * out);
    parallel_for((out + kOutBlock - 1) / kOutBlock, [&](int64_t b, int) {
      skinny_block(x, W, y, n_rows, in, out, b * kOutBlock, std::min(out, (b + 1) * kOutBlock));
    });
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n_rows),
              static_cast<int>(out), static_cast<int>(in), 1.0f, x, static_cast<int>(in), W,
              static_cast<int>(in), bias ? 1.0f : 0.0f, y, static_cast<int>(out));
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

void attn_partial(const float* q, const float* k, const float* v, int64_t n_keys, int64_t stride,
                  int64_t head_dim, float scale, AttnState& s) {
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* kj = k + j * stride;
    float dot = 0.0f;
    for (int64_t i = 0; i < head_dim; ++i) dot += q[i] * kj[i];
    const float score = dot * scale;
    const float* vj = v + j * stride;
    if (score > s.m) {
      // New max: rescale what we have (exp(-inf) = 0 handles the empty state).
      const float c = std::exp(s.m - score);
      s.d = s.d * c + 1.0f;
      for (int64_t i = 0; i < head_dim; ++i) s.o[i] = s.o[i] * c + vj[i];
      s.m = score;
    } else {
      const float w = std::exp(score - s.m);
      s.d += w;
      for (int64_t i = 0; i < head_dim; ++i) s.o[i] += w * vj[i];
    }
  }
}

}  // namespace hogwild::cpu
