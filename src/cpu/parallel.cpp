#include "cpu/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"

namespace hogwild::cpu {
namespace {

void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

// Job tickets: generation in the high 24 bits, next item index in the low 40. A thread claims an
// item with a compare-and-swap that also checks the generation, so a thread that wakes up late
// can never take an item of a later job, and the caller waits only for items, never for a thread
// the OS has not scheduled yet (when other programs use the cores, that wait was the cost).
constexpr int kIndexBits = 40;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;

class Pool {
 public:
  explicit Pool(int n_threads) {
    for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { loop(i); });
  }
  ~Pool() {
    quit_.store(true);
    { std::lock_guard<std::mutex> l(m_); }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void run(int64_t n, const std::function<void(int64_t, int)>& fn) {
    std::lock_guard<std::mutex> one_job(job_m_);
    // First a closed generation (no index below kIndexMask is free): a thread that read the last
    // job's ticket before this job began, and reads n_ / fn_ only after they change below, then
    // fails its compare-and-swap instead of claiming an index of the last job with this job's
    // count and function (an item run twice, a job ending while its item still ran, or a call of
    // the last job's function after its caller returned).
    const uint64_t closed = (ticket_.load() >> kIndexBits) + 1;
    ticket_.store((closed << kIndexBits) | kIndexMask);
    fn_.store(&fn);
    n_.store(n);
    done_.store(0);
    const uint64_t gen = closed + 1;
    ticket_.store(gen << kIndexBits);  // publishes the job: index 0 of a new generation
    {
      std::lock_guard<std::mutex> l(m_);  // a worker between its check and its wait sees it
    }
    cv_.notify_all();
    work(gen, 0);
    // Wait for items still running on other threads: spin briefly, then block.
    const auto t0 = std::chrono::steady_clock::now();
    while (done_.load() < n) {
      if (std::chrono::steady_clock::now() - t0 > kSpin) {
        std::unique_lock<std::mutex> l(m_);
        done_cv_.wait(l, [&] { return done_.load() >= n; });
        break;
      }
      cpu_relax();
    }
  }

 private:
  // How long a thread spins for the next job or for the last items before it blocks: longer than
  // the gaps between the projections of a forward, short against a time slice.
  static constexpr std::chrono::microseconds kSpin{50};

  // Runs items of generation gen until none is left.
  void work(uint64_t gen, int thread) {
    uint64_t t = ticket_.load();
    for (;;) {
      if ((t >> kIndexBits) != gen) return;
      // fn_ and n_ belong to gen while an item of gen is unclaimed: the caller waits for it.
      const int64_t n = n_.load();
      const int64_t i = static_cast<int64_t>(t & kIndexMask);
      if (i >= n) return;
      if (!ticket_.compare_exchange_weak(t, t + 1)) continue;
      (*fn_.load())(i, thread);
      if (done_.fetch_add(1) + 1 == n) {
        std::lock_guard<std::mutex> l(m_);
        done_cv_.notify_one();
      }
      t = ticket_.load();
    }
  }

  void loop(int thread) {
    uint64_t seen = 0;
    for (;;) {
      auto gen = [&] { return ticket_.load() >> kIndexBits; };
      const auto t0 = std::chrono::steady_clock::now();
      while (gen() == seen && !quit_.load() && std::chrono::steady_clock::now() - t0 < kSpin)
        cpu_relax();
      if (gen() == seen && !quit_.load()) {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return quit_.load() || gen() != seen; });
      }
      if (quit_.load()) return;
      seen = gen();
      work(seen, thread);
    }
  }

  std::vector<std::thread> workers_;
  std::mutex m_, job_m_;
  std::condition_variable cv_, done_cv_;
  std::atomic<const std::function<void(int64_t, int)>*> fn_{nullptr};
  std::atomic<int64_t> n_{0}, done_{0};
  std::atomic<uint64_t> ticket_{0};
  std::atomic<bool> quit_{false};
};

int configured_threads() {
  if (const char* e = std::getenv("HOGWILD_THREADS")) {
    const long n = std::strtol(e, nullptr, 10);
    if (n > kMaxThreads) fail("HOGWILD_THREADS: {}", thread_count_problem(n));
    if (n > 0) return static_cast<int>(n);
  }
  return static_cast<int>(
      std::clamp(std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(kMaxThreads)));
}

std::unique_ptr<Pool>& pool_ptr() {
  static std::unique_ptr<Pool> p = std::make_unique<Pool>(configured_threads());
  return p;
}

Pool& pool() { return *pool_ptr(); }

}  // namespace

std::string thread_count_problem(int64_t n) {
  if (n < 1) return fmt::format("{} is not >= 1", n);
  if (n > kMaxThreads)
    return fmt::format("{} is more than {} (this machine has {} cores)", n, kMaxThreads,
                       std::thread::hardware_concurrency());
  return "";
}

int num_threads() { return pool().size(); }

void set_num_threads(int n) {
  if (const std::string why = thread_count_problem(n); !why.empty())
    fail("set_num_threads: {}", why);
  if (n != pool().size()) {
    pool_ptr().reset();
    pool_ptr() = std::make_unique<Pool>(n);
  }
}

void parallel_for(int64_t n, const std::function<void(int64_t, int)>& fn) {
  if (n <= 0) return;
  if (n == 1 || pool().size() == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  pool().run(n, fn);
}

}  // namespace hogwild::cpu
