// Views for the four layouts; see layout.h for the block picture of each.
#include "hogwild/layout.h"

#include "core/error.h"

namespace hogwild {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::combined:
      return "combined";
    case Layout::interleaved:
      return "interleaved";
    case Layout::contiguous:
      return "contiguous";
    case Layout::independent:
      return "independent";
  }
  return "?";
}

Layout parse_layout(const std::string& name) {
  if (name == "combined") return Layout::combined;
  if (name == "interleaved") return Layout::interleaved;
  if (name == "contiguous") return Layout::contiguous;
  if (name == "independent") return Layout::independent;
  fail("unknown layout '{}': use combined, interleaved, contiguous or independent", name);
}

namespace {

void push(std::vector<BlockId>& v, BlockId b) {
  if (b >= 0) v.push_back(b);
}

void check_state(const LayoutState& s) {
  const size_t n = s.current.size();
  if (n == 0) fail("layout: a session needs at least one worker");
  if (s.history < 0) fail("layout: the history block is missing");
  if (s.layout == Layout::contiguous && !s.closing.empty())
    fail("layout: the contiguous layout never promotes steps (closing blocks given)");
  if (n > 1 && s.layout != Layout::interleaved && s.layout != Layout::independent &&
      (s.text.sep_own_header.size() != n || s.text.others_header.size() != n))
    fail("layout: {} workers need {} others-header and sep+own-header blocks, got {} and {}", n, n,
         s.text.others_header.size(), s.text.sep_own_header.size());
}

}  // namespace

std::vector<std::vector<BlockId>> build_views(const LayoutState& s) {
  check_state(s);
  const size_t n = s.current.size();
  std::vector<std::vector<BlockId>> views(n);
  for (size_t w = 0; w < n; ++w) {
    auto& v = views[w];
    v.push_back(s.history);
    for (BlockId b : s.closing) v.push_back(b);
    if (n > 1 && s.layout != Layout::interleaved && s.layout != Layout::independent) {
      push(v, s.text.others_header[w]);
      bool first = true;
      for (size_t o = 0; o < n; ++o) {
        if (o == w) continue;
        if (!first) push(v, s.text.sep);
        first = false;
        v.push_back(s.current[o]);
      }
      push(v, s.text.sep_own_header[w]);
    }
    push(v, s.current[w]);
  }
  return views;
}

std::vector<BlockId> finisher_view(const LayoutState& s, BlockId suffix, int worker) {
  check_state(s);
  if (worker >= static_cast<int>(s.current.size()))
    fail("finisher_view: worker {} of {}", worker, s.current.size());
  std::vector<BlockId> v{s.history};
  for (BlockId b : s.closing) v.push_back(b);
  for (size_t w = 0; w < s.current.size(); ++w) {
    if (s.current[w] < 0 || (worker >= 0 && static_cast<int>(w) != worker)) continue;
    v.push_back(s.current[w]);
    push(v, s.text.sep);
  }
  v.push_back(suffix);
  return v;
}

}  // namespace hogwild
