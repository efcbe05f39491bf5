// A small pool of worker threads for the CPU backend's own loops (skinny projections, attention).
// Between jobs a thread spins for 50 us (the gaps between the projections of a forward), then
// blocks on a condition variable, so it shares the cores politely with OpenBLAS's threads during
// a prefill (OpenMP's default, longer spin-wait made decode 4x slower on a 2-core machine).
// A job waits only for its items, never for a thread the OS has not yet scheduled.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace hogwild::cpu {

/// The most threads the pool takes (set_num_threads, HOGWILD_THREADS, the CLI's --threads); as
/// llama.cpp's GGML_MAX_N_THREADS. Threads past the cores only slow the loops down, and each one
/// holds a stack, so a mistyped count must not exhaust the host's processes.
inline constexpr int kMaxThreads = 512;

/// "" when 1 <= n <= kMaxThreads, else what is wrong with n, e.g. "100000 is more than 512 (this
/// machine has 2 cores)": the one wording of set_num_threads, HOGWILD_THREADS and --threads.
std::string thread_count_problem(int64_t n);

/// Threads used by parallel_for (from the first use until set_num_threads):
/// std::thread::hardware_concurrency() (at most kMaxThreads), or HOGWILD_THREADS when set.
/// Throws hogwild::Error when HOGWILD_THREADS is above kMaxThreads.
int num_threads();

/// Replaces the pool by one of n threads (tests and benchmarks: results must not depend on it).
/// Throws hogwild::Error for n < 1 or n > kMaxThreads. PRECONDITION: no parallel_for is running.
void set_num_threads(int n);

/// Calls fn(i, thread) for every i in [0, n), spread over the pool (the caller takes part);
/// returns when all calls are done. thread in [0, num_threads()) identifies the executing thread
/// (for per-thread scratch). Items are handed out one at a time (dynamic schedule). fn must not
/// throw. Concurrent calls from several threads are serialised.
void parallel_for(int64_t n, const std::function<void(int64_t i, int thread)>& fn);

}  // namespace hogwild::cpu
