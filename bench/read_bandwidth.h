// Host read bandwidth probe shared by the CPU benchmarks: every thread of the backend's pool
// (cpu/parallel.h) sums its slice of one large buffer with independent accumulators (bound by
// memory, not by add latency); GB/s = buffer bytes / wall time of the whole read.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "cpu/parallel.h"

namespace hogwild::bench {

/// Bandwidth of `probes` reads of a `bytes` buffer in GB/s (1e9 bytes/s): the best and the
/// median (the machine may be shared: the best is the closest to what the hardware gives).
struct ReadBandwidth {
  double best_gbs = 0, median_gbs = 0;
  std::vector<double> gbs;  // every probe, ascending
};

inline ReadBandwidth measure_read_bandwidth(size_t bytes = size_t{1} << 30, int probes = 7) {
  const size_t n = bytes / sizeof(float);
  std::vector<float> buf(n, 1.0f);
  const int nt = cpu::num_threads();
  std::vector<double> gbs;
  for (int rep = 0; rep < probes; ++rep) {
    std::vector<double> part(nt, 0.0);
    const auto t = std::chrono::steady_clock::now();
    cpu::parallel_for(nt, [&](int64_t s, int) {
      float acc[16] = {};
      const size_t b = n * s / nt, e = n * (s + 1) / nt;
      size_t i = b;
      for (; i + 16 <= e; i += 16)
        for (int k = 0; k < 16; ++k) acc[k] += buf[i + k];
      double sum = 0;
      for (; i < e; ++i) sum += buf[i];
      for (float a : acc) sum += a;
      part[s] = sum;
    });
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    double sum = 0;
    for (double x : part) sum += x;
    if (sum != static_cast<double>(n)) std::fprintf(stderr, "read probe: bad sum\n");
    gbs.push_back(static_cast<double>(bytes) / sec / 1e9);
  }
  std::sort(gbs.begin(), gbs.end());
  return {gbs.back(), gbs[gbs.size() / 2], gbs};
}

}  // namespace hogwild::bench
