// Histograms for /metrics (Prometheus text format, "histogram" type): cumulative bucket counts by
// upper bound, the sum and the count of the observed values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hogwild::server {

/// A Prometheus histogram: counts of observed values per bucket (by upper bound, inclusive; a
/// last +Inf bucket takes the rest), their sum and count. Not thread-safe (the scheduler guards
/// its histograms with its mutex).
class Histogram {
 public:
  /// bounds: the upper bounds of the buckets, increasing (units of the values observed).
  explicit Histogram(std::vector<double> bounds = {});
  /// Bounds for durations in seconds: 1 ms to 60 s.
  static std::vector<double> seconds_bounds();
  /// Bounds for counts: 0, 1, 2, 4, ..., 4096.
  static std::vector<double> count_bounds();

  void observe(double v);
  int64_t count() const { return count_; }
  double sum() const { return sum_; }
  const std::vector<double>& bounds() const { return bounds_; }
  /// Values observed at most bounds()[i]; i == bounds().size() is the +Inf bucket (= count()).
  int64_t cumulative(size_t i) const;

  /// The histogram as Prometheus text: HELP, TYPE, name_bucket{le="..."} lines (cumulative),
  /// name_sum and name_count.
  std::string prometheus(const std::string& name, const std::string& help) const;
  /// Only the sample lines, each with `labels` (e.g. `method="plain"`) before `le`: one series
  /// of a histogram family whose HELP and TYPE the caller writes.
  std::string prometheus_series(const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // (bounds + 1) per bucket, not cumulative
  double sum_ = 0;
  int64_t count_ = 0;
};

}  // namespace hogwild::server
