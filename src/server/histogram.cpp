#include "server/histogram.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace hogwild::server {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  HOGWILD_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()));
  counts_.assign(bounds_.size() + 1, 0);
}

std::vector<double> Histogram::seconds_bounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

std::vector<double> Histogram::count_bounds() {
  std::vector<double> b = {0};
  for (double v = 1; v <= 4096; v *= 2) b.push_back(v);
  return b;
}

void Histogram::observe(double v) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  counts_[i] += 1;
  sum_ += v;
  count_ += 1;
}

int64_t Histogram::cumulative(size_t i) const {
  HOGWILD_CHECK(i < counts_.size());
  int64_t n = 0;
  for (size_t k = 0; k <= i; ++k) n += counts_[k];
  return n;
}

std::string Histogram::prometheus(const std::string& name, const std::string& help) const {
  return fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name) +
         prometheus_series(name, "");
}

std::string Histogram::prometheus_series(const std::string& name, const std::string& labels) const {
  const std::string le = labels.empty() ? "" : labels + ",";
  const std::string only = labels.empty() ? "" : "{" + labels + "}";
  std::string out;
  int64_t n = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    n += counts_[i];
    out += fmt::format("{}_bucket{{{}le=\"{}\"}} {}\n", name, le, bounds_[i], n);
  }
  out += fmt::format("{}_bucket{{{}le=\"+Inf\"}} {}\n{}_sum{} {}\n{}_count{} {}\n", name, le,
                     count_, name, only, sum_, name, only, count_);
  return out;
}

}  // namespace hogwild::server
