// Skinny fp32 projections for few token rows (decode of 1..64 workers, small prefill chunks):
// y = x W^T (+ bias) with every weight row streamed from memory ONCE per forward and dotted with
// all token rows, both threads of the pool working on disjoint output features.
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
