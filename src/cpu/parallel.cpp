#include "cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace hogwild::cpu {
namespace {

class Pool {
 public:
  explicit Pool(int n_threads) {
    for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { loop(i); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(m_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void run(int64_t n, const std::function<void(int64_t, int)>& fn) {
    std::lock_guard<std::mutex> one_job(job_m_);
    {
      std::lock_guard<std::mutex> l(m_);
      fn_ = &fn;
      n_ = n;
      next_.store(0);
      busy_ = static_cast<int>(workers_.size());
      ++generation_;
    }
    cv_.notify_all();
    work(0);
    std::unique_lock<std::mutex> l(m_);
    done_cv_.wait(l, [this] { return busy_ == 0; });
    fn_ = nullptr;
  }

 private:
  void work(int thread) {
    for (int64_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1)) (*fn_)(i, thread);
  }
  void loop(int thread) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return quit_ || generation_ != seen; });
        if (quit_) return;
        seen = generation_;
      }
      work(thread);
      std::lock_guard<std::mutex> l(m_);
      if (--busy_ == 0) done_cv_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex m_, job_m_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t, int)>* fn_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
  int busy_ = 0;
  uint64_t generation_ = 0;
  bool quit_ = false;
};

int configured_threads() {
  if (const char* e = std::getenv("HOGWILD_THREADS")) {
    const int n = std::atoi(e);
    if (n > 0) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Pool& pool() {
  static Pool p(configured_threads());
  return p;
}

}  // namespace

int num_threads() { return pool().size(); }

void parallel_for(int64_t n, const std::function<void(int64_t, int)>& fn) {
  if (n <= 0) return;
  if (n == 1 || pool().size() == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  pool().run(n, fn);
}

}  // namespace hogwild::cpu
