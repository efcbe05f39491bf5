// GPU sampling kernel (sampling.h). Kernels first, launchers second.
#include <cfloat>

#include "cuda/cuda_check.h"
#include "cuda/sampling.h"

namespace hogwild::cuda {
namespace {

constexpr int kThreads = 1024;

// Order-preserving map float <-> uint32 (larger float -> larger key).
__device__ __forceinline__ uint32_t fkey(float f) {
  const uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float fval(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T* smem) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // smem reuse across calls
  if ((threadIdx.x & 31) == 0) smem[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    T w = smem[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) w = op(w, __shfl_xor_sync(0xffffffffu, w, o));
    if (threadIdx.x == 0) smem[0] = w;
  }
  __syncthreads();
  return smem[0];
}

struct Add {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct MinF {
  __device__ float operator()(float a, float b) const { return fminf(a, b); }
};

// top-p, then min-p, over the survivors s >= tau: the largest tau_p with
// mass(s >= tau_p) >= top_p * mass(s >= tau) (a bisection over the order-preserving keys; mass is
// the block-wide sum of exp(s - mx) in double), then p_i >= min_p * p_max <=> s_i >= mx +
// ln(min_p). Returns the final threshold.
template <typename Mass>
__device__ float top_p_min_p(float tau, float mx, const SampleParams& p, Mass mass) {
  if (p.top_p < 1.0f) {
    const double target = double(p.top_p) * mass(tau);
    uint32_t lo = fkey(tau), hi = fkey(mx);
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo + 1) / 2;
      if (mass(fval(mid)) >= target)
        lo = mid;
      else
        hi = mid - 1;
    }
    tau = fval(lo);
  }
  if (p.min_p > 0.0f) tau = fmaxf(tau, mx + logf(p.min_p));
  return tau;
}

constexpr int kCand = 2048;  // top-k survivors kept in shared memory (else the full-vocab path)

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* logits, const SampleParams* params, int32_t* out, int64_t V) {
  __shared__ float fsm[32];
  __shared__ int isum[32];
  __shared__ double dsm[32];
  __shared__ float thread_mass[kThreads];
  __shared__ int hist[256];
  __shared__ float cand_s[kCand];
  __shared__ int32_t cand_i[kCand];
  const float* l = logits + blockIdx.x * V;
  const SampleParams p = params[blockIdx.x];
  const bool greedy = p.temperature <= 0.0f;
  const float temp = greedy ? 1.0f : p.temperature;  // s = l / T exactly as the CPU sampler

  float mx = -INFINITY, mn = INFINITY;
  int n_finite = 0;
  for (int64_t i = threadIdx.x; i < V; i += kThreads) {
    const float s = l[i] / temp;
    mx = fmaxf(mx, s);
    if (s > -INFINITY) {
      mn = fminf(mn, s);
      ++n_finite;
    }
  }
  mx = block_reduce(mx, Max{}, fsm);
  mn = block_reduce(mn, MinF{}, fsm);
  n_finite = block_reduce(n_finite, Add{}, isum);
  if (mx == -INFINITY) {
    if (threadIdx.x == 0) out[blockIdx.x] = -1;
    return;
  }
  if (greedy) {  // lowest index holding the max
    int best = INT_MAX;
    for (int64_t i = threadIdx.x; i < V; i += kThreads)
      if (l[i] == mx && i < best) best = static_cast<int>(i);
    for (int o = 16; o > 0; o >>= 1) best = min(best, __shfl_xor_sync(0xffffffffu, best, o));
    __syncthreads();
    if ((threadIdx.x & 31) == 0) isum[threadIdx.x / 32] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
      int b = INT_MAX;
      for (int w = 0; w < kThreads / 32; ++w) b = min(b, isum[w]);
      out[blockIdx.x] = b;
    }
    return;
  }

  // top-k: largest tau with count(s >= tau) >= k, i.e. the k-th largest s: a radix select over
  // the order-preserving keys of the finite s (8 bits per pass from the top, 4 passes; -0 counts
  // as +0, as the float comparison does). k >= the finite count keeps every finite s (tau = mn).
  float tau = mn;
  if (p.top_k > 0 && p.top_k < n_finite) {
    uint32_t prefix = 0, mask = 0;
    int k_left = p.top_k;  // rank still to find among keys matching prefix
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int b = threadIdx.x; b < 256; b += kThreads) hist[b] = 0;
      __syncthreads();
      for (int64_t i = threadIdx.x; i < V; i += kThreads) {
        const float s = l[i] / temp + 0.0f;
        const uint32_t key = fkey(s);
        if (s > -INFINITY && (key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1);
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        int cum = 0, d = 255;
        for (; d > 0 && cum + hist[d] < k_left; --d) cum += hist[d];
        isum[0] = d;
        isum[1] = k_left - cum;
      }
      __syncthreads();
      prefix |= uint32_t(isum[0]) << shift;
      mask |= 255u << shift;
      k_left = isum[1];
      __syncthreads();
    }
    tau = fval(prefix);
  }

  // The survivors of top-k in vocabulary order into shared memory when they fit (top-k on):
  // top-p, min-p and the draw then read kCand values at most instead of the vocabulary.
  int n_cand = -1;  // -1: use the full-vocab path below
  const int64_t C = (V + kThreads - 1) / kThreads;
  const int64_t b0 = threadIdx.x * C, b1 = min(V, b0 + C);
  if (p.top_k > 0 && p.top_k < n_finite) {
    int own = 0;
    for (int64_t i = b0; i < b1; ++i) own += (l[i] / temp >= tau);
    thread_mass[threadIdx.x] = __int_as_float(own);
    __syncthreads();
    if (threadIdx.x == 0) {  // exclusive scan of the per-thread counts
      int acc = 0;
      for (int j = 0; j < kThreads; ++j) {
        const int c = __float_as_int(thread_mass[j]);
        thread_mass[j] = __int_as_float(acc);
        acc += c;
      }
      isum[0] = acc;
    }
    __syncthreads();
    n_cand = isum[0];
    if (n_cand <= kCand) {
      int at = __float_as_int(thread_mass[threadIdx.x]);
      for (int64_t i = b0; i < b1; ++i) {
        const float s = l[i] / temp;
        if (s >= tau) {
          cand_s[at] = s;
          cand_i[at] = static_cast<int32_t>(i);
          ++at;
        }
      }
    } else {
      n_cand = -1;
    }
    __syncthreads();
  }
  if (n_cand >= 0) {
    // top-p / min-p over the candidates (mass summed over them only).
    auto cmass = [&](float t) {
      double m = 0.0;
      for (int c = threadIdx.x; c < n_cand; c += kThreads)
        if (cand_s[c] >= t) m += exp(double(cand_s[c]) - mx);
      return block_reduce(m, Add{}, dsm);
    };
    tau = top_p_min_p(tau, mx, p, cmass);
    if (threadIdx.x == 0) {  // inverse CDF in vocabulary order over the survivors
      float total = 0.0f;
      for (int c = 0; c < n_cand; ++c)
        if (cand_s[c] >= tau) total += expf(cand_s[c] - mx);
      const float target = p.u * total;
      float acc = 0.0f;
      int32_t pick = -1;
      for (int c = 0; c < n_cand; ++c) {
        if (cand_s[c] < tau) continue;
        const float m = expf(cand_s[c] - mx);
        if (m <= 0.0f) continue;
        pick = cand_i[c];
        acc += m;
        if (target < acc) break;
      }
      out[blockIdx.x] = pick;
    }
    return;
  }
  // Full-vocab path: top-p / min-p over every s >= tau.
  auto mass = [&](float t) {
    double m = 0.0;
    for (int64_t i = threadIdx.x; i < V; i += kThreads) {
      const float s = l[i] / temp;
      if (s >= t) m += exp(double(s) - mx);
    }
    return block_reduce(m, Add{}, dsm);
  };
  tau = top_p_min_p(tau, mx, p, mass);

  // Draw: inverse CDF in vocabulary order. Thread j owns the contiguous range [j*C, (j+1)*C).
  float own = 0.0f;
  for (int64_t i = b0; i < b1; ++i) {
    const float s = l[i] / temp;
    if (s >= tau) own += expf(s - mx);
  }
  thread_mass[threadIdx.x] = own;
  __syncthreads();
  if (threadIdx.x == 0) {  // sequential exclusive scan: 1024 adds, once per row
    float acc = 0.0f;
    for (int j = 0; j < kThreads; ++j) {
      const float m = thread_mass[j];
      thread_mass[j] = acc;
      acc += m;
    }
    fsm[0] = acc;
  }
  __syncthreads();
  const float total = fsm[0];
  const float target = p.u * total;
  const float before = thread_mass[threadIdx.x];
  const bool last_owner = own > 0.0f && (threadIdx.x == kThreads - 1 || before + own >= total);
  if (own > 0.0f && target >= before && (target < before + own || last_owner)) {
    float acc = before;
    int32_t pick = -1;
    for (int64_t i = b0; i < b1; ++i) {
      const float s = l[i] / temp;
      if (s < tau) continue;
      pick = static_cast<int32_t>(i);
      acc += expf(s - mx);
      if (target < acc) break;
    }
    out[blockIdx.x] = pick;
  }
}

__global__ void ban_kernel(float* logits, int64_t vocab_size, const int32_t* ids,
                           const SampleParams* params) {
  float* row = logits + blockIdx.x * vocab_size;
  const int32_t* mine = ids + params[blockIdx.x].ban_begin;
  const int32_t n_ids = params[blockIdx.x].ban_count;
  for (int32_t i = threadIdx.x; i < n_ids; i += blockDim.x) {
    const int32_t id = mine[i];
    if (id >= 0 && id < vocab_size) row[id] = -INFINITY;
  }
}

}  // namespace

void ban_tokens(float* logits, int64_t n_rows, int64_t vocab_size, const int32_t* ids,
                const SampleParams* params, cudaStream_t stream) {
  if (n_rows == 0 || ids == nullptr) return;
  ban_kernel<<<n_rows, 256, 0, stream>>>(logits, vocab_size, ids, params);
  HOGWILD_CUDA_CHECK_LAUNCH();
}

void sample_rows(const float* logits, const SampleParams* params, int32_t* out, int64_t n_rows,
                 int64_t vocab_size, cudaStream_t stream) {
  HOGWILD_CUDA_REQUIRE(vocab_size >= 1 && vocab_size < (int64_t(1) << 31));
  if (n_rows == 0) return;
  sample_kernel<<<n_rows, kThreads, 0, stream>>>(logits, params, out, vocab_size);
  HOGWILD_CUDA_CHECK_LAUNCH();
}

}  // namespace hogwild::cuda
