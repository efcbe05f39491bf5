// cpu::parallel_for: every item of every job runs exactly once, inside its own job, even when
// the pool's threads are preempted at any point (more threads than cores), and a job never
// returns while one of its items is still running.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "cpu/parallel.h"

namespace hogwild::cpu {
namespace {

TEST(ParallelFor, EveryItemOnceInItsOwnJobUnderPreemption) {
  const int before = num_threads();
  set_num_threads(8);  // more threads than this machine's cores: threads are preempted anywhere
  std::vector<std::atomic<int>> hits(7);
  std::atomic<int64_t> wrong{0};
  for (int job = 0; job < 20000; ++job) {
    const int64_t n = 1 + job % 7;  // job sizes change, so a stale item count would show
    for (auto& h : hits) h.store(0);
    std::atomic<int64_t> running{0};
    parallel_for(n, [&](int64_t i, int) {
      running.fetch_add(1);
      // A stale call (an item of an earlier job run with this job's function, or past n) writes
      // outside hits' range or twice into it.
      if (i < 0 || i >= n)
        wrong.fetch_add(1);
      else
        hits[static_cast<size_t>(i)].fetch_add(1);
      running.fetch_sub(1);
    });
    // parallel_for has returned: nothing of this job may still run.
    if (running.load() != 0) ++wrong;
    for (int64_t i = 0; i < 7; ++i)
      if (hits[static_cast<size_t>(i)].load() != (i < n ? 1 : 0)) ++wrong;
  }
  EXPECT_EQ(wrong.load(), 0);
  set_num_threads(before);
}

// A thread count past kMaxThreads (a mistyped --threads 100000 would start that many threads) is
// refused and leaves the pool as it was; so is 0.
TEST(ParallelFor, RefusesThreadCountsPastTheLimit) {
  const int before = num_threads();
  EXPECT_THROW(set_num_threads(kMaxThreads + 1), Error);
  EXPECT_THROW(set_num_threads(100000), Error);
  EXPECT_THROW(set_num_threads(0), Error);
  EXPECT_EQ(num_threads(), before);
  set_num_threads(kMaxThreads);  // the limit itself is allowed
  EXPECT_EQ(num_threads(), kMaxThreads);
  set_num_threads(before);
}

}  // namespace
}  // namespace hogwild::cpu
