// A small pool of worker threads for the CPU backend's own loops (attention). Workers block on a
// condition variable between jobs instead of spinning, so they share the cores politely with
// OpenBLAS's threads (OpenMP's default spin-wait made decode 4x slower on a 2-core machine).
#pragma once

#include <cstdint>
#include <functional>

namespace hogwild::cpu {

/// Threads used by parallel_for (fixed at first use): std::thread::hardware_concurrency(), or
/// HOGWILD_THREADS when set.
int num_threads();

/// Calls fn(i, thread) for every i in [0, n), spread over the pool (the caller takes part);
/// returns when all calls are done. thread in [0, num_threads()) identifies the executing thread
/// (for per-thread scratch). Items are handed out one at a time (dynamic schedule). fn must not
/// throw. Concurrent calls from several threads are serialised.
void parallel_for(int64_t n, const std::function<void(int64_t i, int thread)>& fn);

}  // namespace hogwild::cpu
