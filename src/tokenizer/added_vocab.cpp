// Added tokens: matching them in text before normalization / pre-tokenization
// (HF tokenizers/src/tokenizer/added_vocabulary.rs `find_matches`, `extract_and_normalize`).
#include <algorithm>

#include "tokenizer/pipeline.h"
#include "tokenizer/unicode.h"

namespace hogwild::tok {

void TokenTrie::insert(std::string_view s, int32_t token_index) {
  if (s.empty()) return;
  int32_t node = 0;
  for (unsigned char c : s) {
    auto& next = nodes_[node].next;
    auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(c, int32_t{-1}));
    if (it != next.end() && it->first == c) {
      node = it->second;
    } else {
      int32_t child = static_cast<int32_t>(nodes_.size());
      next.insert(it, {c, child});
      nodes_.emplace_back();
      node = child;
    }
  }
  if (nodes_[node].token < 0) nodes_[node].token = token_index;  // first pattern wins ties
  first_[static_cast<unsigned char>(s[0])] = true;
}

bool TokenTrie::find(std::string_view s, size_t from, size_t& start, size_t& end,
                     int32_t& index) const {
  if (empty()) return false;
  for (size_t b = from; b < s.size(); ++b) {
    if (!first_[static_cast<unsigned char>(s[b])]) continue;
    int32_t node = 0;
    int32_t best = -1;
    size_t best_end = 0;
    for (size_t i = b; i < s.size(); ++i) {
      const auto& next = nodes_[node].next;
      unsigned char c = static_cast<unsigned char>(s[i]);
      auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(c, int32_t{-1}));
      if (it == next.end() || it->first != c) break;
      node = it->second;
      if (nodes_[node].token >= 0) best = nodes_[node].token, best_end = i + 1;
    }
    if (best >= 0) {
      start = b;
      end = best_end;
      index = best;
      return true;
    }
  }
  return false;
}

namespace {

// Last / first character of s (valid UTF-8, non-empty).
char32_t last_char(std::string_view s) {
  size_t b = s.size() - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  return utf8_next(s, b);
}
char32_t first_char(std::string_view s) {
  size_t i = 0;
  return utf8_next(s, i);
}
bool word_char(char32_t c) { return is_alnum(c) || c == '_'; }

}  // namespace

void Pipeline::split_added(std::vector<Segment>& segs, const TokenTrie& trie) const {
  if (trie.empty()) return;
  std::vector<Segment> out;
  out.reserve(segs.size());
  for (auto& seg : segs) {
    if (seg.id >= 0) {
      out.push_back(std::move(seg));
      continue;
    }
    const std::string& s = seg.text;
    size_t search = 0, start_offset = 0, mb, me;
    int32_t idx;
    while (trie.find(s, search, mb, me, idx)) {
      search = me;  // the next match starts after this one even if it is discarded below
      const AddedToken& tok = added[idx];
      size_t start = mb, stop = me;
      if (tok.single_word) {
        bool start_ok = start == 0 || !word_char(last_char(std::string_view(s).substr(0, start)));
        bool stop_ok = stop == s.size() || !word_char(first_char(std::string_view(s).substr(stop)));
        if (!start_ok || !stop_ok) continue;
      }
      if (tok.lstrip) {  // swallow whitespace to the left, but not into the previous match
        size_t ns = start;
        while (ns > 0) {
          size_t b = ns - 1;
          while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
          size_t k = b;
          if (!is_whitespace(utf8_next(s, k))) break;
          ns = b;
        }
        start = std::max(ns, start_offset);
      }
      if (tok.rstrip) {
        size_t k = stop;
        while (k < s.size()) {
          size_t n = k;
          if (!is_whitespace(utf8_next(s, n))) break;
          k = n;
        }
        stop = k;
      }
      if (start_offset < start) out.push_back({s.substr(start_offset, start - start_offset), -1});
      out.push_back({s.substr(start, stop - start), tok.id});
      start_offset = stop;
    }
    if (start_offset < s.size()) out.push_back({s.substr(start_offset), -1});
  }
  segs.swap(out);
}

}  // namespace hogwild::tok
