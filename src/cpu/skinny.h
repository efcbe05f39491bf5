// Skinny fp32 projections for few token rows (decode of 1..64 workers, small prefill chunks):
// y = x W^T (+ bias) with every weight row streamed from memory ONCE per forward and dotted with
// all token rows, both threads of the pool working on disjoint output features. The same kernel
// gives attention its q.k scores (skinny_dots), next to the attention value sum
// (weighted_sum_heads).
//
// Batch invariance: the bits of y[r][o] depend only on x row r, W row o and bias[o] — not on the
// number of rows, the other rows, the thread count or how the work is split (the fixed order of
// reduction is described in cpu/skinny_kernel.h). The instruction set is chosen once per process
// (AVX-512F, else AVX2 + FMA, else portable C++); the bits may differ between instruction sets.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace hogwild::cpu {

/// One projection of a skinny_matmul call: W (out, in) row-major as HF stores nn.Linear weights,
/// bias (out) or nullptr, y (n_rows, out) row-major, written (not accumulated).
struct SkinnyProjection {
  const float* W;
  const float* bias;
  float* y;
  int64_t out;
};

/// One dot-product problem for the kernel (cpu/skinny_kernel.h): y[r * ldy + o] = x[r] . W[o]
/// (+ bias[o]) for r < n_rows, where x[r] = x + r * in (in values) and W[o] = W + o * ldw.
struct SkinnyArgs {
  const float* x;
  int64_t n_rows, in;
  const float* W;
  int64_t ldw;
  const float* bias;  // or nullptr
  float* y;
  int64_t ldy;
};

/// Single-threaded form for small problems inside a parallel loop (attention scores: a query
/// head's keys are the weight rows, ldw = the cache row stride): outputs o in [0, out).
void skinny_dots(const SkinnyArgs& a, int64_t out);

/// For each head h < n_heads: o[h][i] = o[h][i] * c[h] + sum_j w[h * ldw + j] * v[j * stride + i]
/// for i < dim, j < n (attention values of the query heads that share one KV head: v the value
/// rows, w their softmax weights, c the rescales of o; fp32). Each element is one chain, o * c
/// then fused multiply-adds in increasing j (cpu/skinny_kernel.h), so its bits depend neither on
/// dim nor on the other elements or heads; the value rows are read once per 4 heads.
void weighted_sum_heads(const float* v, int64_t n, int64_t stride, int64_t dim, const float* w,
                        int64_t ldw, const float* c, float* const* o, int64_t n_heads);

/// One chunk of an online softmax over n attention scores w (fp32, in place): w[j] *= scale;
/// m = max(m_in, max_j w[j]); w[j] = exp(w[j] - m) (a vectorised exp, relative error about 2e-7,
/// cpu/skinny_kernel.h); returns sum_j w[j] and writes m to *m_out. m_in may be -inf (no keys yet).
/// Its bits depend on n and the scores only (fixed order of the sum), never on the batch.
float softmax_chunk(float* w, int64_t n, float scale, float m_in, float* m_out);

/// out[i] = silu(gate[i]) * up[i] for i < n (fp32; out may alias gate or up) with the vectorised
/// exp of softmax_chunk: within ~1e-6 relative of x / (1 + exp(-x)) * up (cpu/skinny_kernel.h).
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

/// y_p = x W_p^T (+ bias_p) for every projection p sharing the input x (n_rows, in) fp32 row-major,
/// e.g. q/k/v or gate/up: one parallel_for over the output features of all of them.
/// PRECONDITION: y buffers do not alias x or each other.
void skinny_matmul(const float* x, int64_t n_rows, int64_t in,
                   std::initializer_list<SkinnyProjection> projections);

/// The instruction set in use: "avx512", "avx2" or "generic".
const char* skinny_isa();
/// Selects an instruction set by name (for tests and benchmarks; not thread-safe with running
/// projections). Returns false, changing nothing, when this CPU lacks it or the name is unknown.
bool select_skinny_isa(const char* name);

}  // namespace hogwild::cpu
