#include "sampling/stop_strings.h"

#include <algorithm>

#include "core/request_fields.h"

namespace hogwild {

StopStrings::StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string& s : stops_) check_stop_string(s);
}

std::string StopStrings::push(std::string_view text) {
  if (stopped_) return "";
  held_.append(text);
  // A match can only start inside held_: text before it was released because no stop string
  // could begin there.
  size_t best = std::string::npos;
  for (const std::string& s : stops_) {
    const size_t p = held_.find(s);
    if (p != std::string::npos && p < best) {
      best = p;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    std::string out = held_.substr(0, best);
    held_.clear();
    stopped_ = true;
    return out;
  }
  // Keep the longest suffix of held_ that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_)
    for (size_t k = std::min(s.size() - 1, held_.size()); k > hold; --k)
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopStrings::flush() {
  std::string out;
  out.swap(held_);
  return stopped_ ? std::string() : out;
}

}  // namespace hogwild
