// Host read bandwidth probe of the CPU benchmarks and `hogwild bench --device cpu`: every thread of
// the backend's pool (cpu/parallel.h) sums its slice of one large buffer; GB/s = buffer bytes /
// wall time of the whole read. Two ways of reading, the best counts:
//   plain     one sequential stream per thread, 16 independent accumulators (bound by memory, not
//             by add latency), hardware prefetch only;
//   prefetch  the access pattern of the skinny kernel (cpu/skinny_kernel.h): groups of 6 rows of
//             4 KiB read side by side, the next group prefetched into L2 (AVX2 where the CPU has
//             it). On an AMD EPYC Zen 4 core one thread reads ~22 GB/s this way, ~19 plainly.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu/parallel.h"

namespace hogwild::bench {

/// Bandwidth of reads of a `bytes` buffer in GB/s (1e9 bytes/s): the best and the median over
/// every probe of both methods (other programs may be reading memory too: the best is the closest
/// to what the hardware gives).
struct ReadBandwidth {
  double best_gbs = 0, median_gbs = 0;
  double best_plain_gbs = 0, best_prefetch_gbs = 0;
  std::vector<double> gbs;  // every probe, ascending
};

namespace detail {

inline double sum_plain(const float* b, size_t n) {
  float acc[16] = {};
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; ++k) acc[k] += b[i + k];
  double sum = 0;
  for (; i < n; ++i) sum += b[i];
  for (float a : acc) sum += a;
  return sum;
}

constexpr size_t kRow = 1024, kGroup = 6;  // floats per row, rows per group

#if defined(__x86_64__)
__attribute__((target("avx2"))) static double sum_prefetch_avx2(const float* b, size_t n) {
  __m256 acc[kGroup];
  for (auto& a : acc) a = _mm256_setzero_ps();
  size_t r0 = 0;
  for (; r0 + kGroup * kRow <= n; r0 += kGroup * kRow)
    for (size_t i = 0; i < kRow; i += 16)
      for (size_t s = 0; s < kGroup; ++s) {
        const float* p = b + r0 + s * kRow + i;
        _mm_prefetch(reinterpret_cast<const char*>(p + kGroup * kRow), _MM_HINT_T1);
        acc[s] = _mm256_add_ps(acc[s], _mm256_add_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)));
      }
  float t[8];
  __m256 x = acc[0];
  for (size_t s = 1; s < kGroup; ++s) x = _mm256_add_ps(x, acc[s]);
  _mm256_storeu_ps(t, x);
  double sum = sum_plain(b + r0, n - r0);
  for (float v : t) sum += v;
  return sum;
}
#endif

inline double sum_prefetch(const float* b, size_t n) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) return sum_prefetch_avx2(b, n);
#endif
  size_t r0 = 0;
  double sum = 0;
  for (; r0 + kGroup * kRow <= n; r0 += kGroup * kRow) {
    float acc[kGroup][16] = {};
    for (size_t i = 0; i < kRow; i += 16)
      for (size_t s = 0; s < kGroup; ++s) {
        const float* p = b + r0 + s * kRow + i;
        __builtin_prefetch(p + kGroup * kRow, 0, 2);
        for (int k = 0; k < 16; ++k) acc[s][k] += p[k];
      }
    for (auto& a : acc)
      for (float v : a) sum += v;
  }
  return sum + sum_plain(b + r0, n - r0);
}

}  // namespace detail

/// `probes` reads by each method, alternating.
inline ReadBandwidth measure_read_bandwidth(size_t bytes = size_t{1} << 30, int probes = 4) {
  const size_t n = bytes / sizeof(float);
  std::vector<float> buf(n, 1.0f);
  const int nt = cpu::num_threads();
  ReadBandwidth r;
  for (int rep = 0; rep < 2 * probes; ++rep) {
    const bool pf = rep % 2 == 1;
    std::vector<double> part(nt, 0.0);
    const auto t = std::chrono::steady_clock::now();
    cpu::parallel_for(nt, [&](int64_t s, int) {
      const size_t b = n * s / nt, e = n * (s + 1) / nt;
      part[s] = pf ? detail::sum_prefetch(buf.data() + b, e - b)
                   : detail::sum_plain(buf.data() + b, e - b);
    });
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    double sum = 0;
    for (double x : part) sum += x;
    if (sum != static_cast<double>(n)) std::fprintf(stderr, "read probe: bad sum\n");
    const double gbs = static_cast<double>(bytes) / sec / 1e9;
    r.gbs.push_back(gbs);
    (pf ? r.best_prefetch_gbs : r.best_plain_gbs) =
        std::max(pf ? r.best_prefetch_gbs : r.best_plain_gbs, gbs);
  }
  std::sort(r.gbs.begin(), r.gbs.end());
  r.best_gbs = r.gbs.back();
  r.median_gbs = r.gbs[r.gbs.size() / 2];
  return r;
}

}  // namespace hogwild::bench
