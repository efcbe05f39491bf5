#include "sampling/stop_strings.h"

#include <algorithm>

namespace hogwild {

bool StopStrings::push(const std::string& piece) {
  if (stopped_) return true;
  const size_t before = text_.size();
  text_ += piece;
  size_t cut = std::string::npos;
  for (const std::string& s : stops_) {
    if (s.empty()) continue;
    // Only matches that end in the new piece can be new.
    const size_t from = before >= s.size() ? before - s.size() + 1 : 0;
    const size_t at = text_.find(s, from);
    if (at != std::string::npos) cut = std::min(cut, at);
  }
  if (cut == std::string::npos) return false;
  text_.resize(cut);
  stopped_ = true;
  return true;
}

size_t StopStrings::safe_length() const {
  if (stopped_) return text_.size();
  size_t hold = 0;  // longest suffix of text_ that is a proper prefix of some stop string
  for (const std::string& s : stops_)
    for (size_t n = std::min(s.size() - (s.empty() ? 0 : 1), text_.size()); n > hold; --n)
      if (text_.compare(text_.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
  return text_.size() - hold;
}

}  // namespace hogwild
