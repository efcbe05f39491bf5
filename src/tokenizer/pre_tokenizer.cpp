// HF pre-tokenizers (tokenizers/src/pre_tokenizers/*.rs) and the SplitDelimiterBehavior logic of
// NormalizedString::split (tokenizers/src/tokenizer/normalizer.rs).
#include <utf8proc.h>

#include <algorithm>

#include "core/error.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/unicode.h"

namespace hogwild::tok {

namespace {

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// A region of a piece: [begin, end) bytes and whether it is a pattern match.
struct Region {
  size_t b, e;
  bool match;
};

// Turns a sorted list of matches into the alternating match / non-match regions of
// Pattern::find_matches (an empty piece yields one empty non-match region).
std::vector<Region> regions_from_matches(size_t n,
                                         const std::vector<std::pair<size_t, size_t>>& m,
                                         bool invert) {
  std::vector<Region> out;
  if (n == 0) return {{0, 0, invert}};
  size_t prev = 0;
  for (auto [b, e] : m) {
    if (b < prev) continue;  // defensive: never overlap
    if (prev != b) out.push_back({prev, b, invert});
    out.push_back({b, e, !invert});
    prev = e;
  }
  if (prev != n) out.push_back({prev, n, invert});
  return out;
}

// Applies the delimiter behavior and appends the kept non-empty pieces of s.
void split_by(const std::string& s, const std::vector<Region>& regions, Behavior behavior,
              std::vector<std::string>& out) {
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> kept;  // (offsets, remove)
  bool prev_match = false;
  switch (behavior) {
    case Behavior::Isolated:
      for (const auto& r : regions) kept.push_back({{r.b, r.e}, false});
      break;
    case Behavior::Removed:
      for (const auto& r : regions) kept.push_back({{r.b, r.e}, r.match});
      break;
    case Behavior::Contiguous:
      for (const auto& r : regions) {
        if (r.match == prev_match && !kept.empty()) {
          kept.back().first.second = r.e;
        } else {
          kept.push_back({{r.b, r.e}, false});
        }
        prev_match = r.match;
      }
      break;
    case Behavior::MergedWithPrevious:
      for (const auto& r : regions) {
        if (r.match && !prev_match && !kept.empty()) {
          kept.back().first.second = r.e;
        } else {
          kept.push_back({{r.b, r.e}, false});
        }
        prev_match = r.match;
      }
      break;
    case Behavior::MergedWithNext:
      for (auto it = regions.rbegin(); it != regions.rend(); ++it) {
        if (it->match && !prev_match && !kept.empty()) {
          kept.back().first.first = it->b;
        } else {
          kept.push_back({{it->b, it->e}, false});
        }
        prev_match = it->match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  for (const auto& [off, remove] : kept) {
    if (!remove && off.second > off.first) out.push_back(s.substr(off.first, off.second - off.first));
  }
}

Behavior parse_behavior(const json& j) {
  std::string b = j.is_string() ? j.get<std::string>() : "";
  if (b == "Removed") return Behavior::Removed;
  if (b == "Isolated") return Behavior::Isolated;
  if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::MergedWithNext;
  if (b == "Contiguous") return Behavior::Contiguous;
  fail("tokenizer.json: Split behavior \"{}\" is unknown (Removed, Isolated, MergedWithPrevious, "
       "MergedWithNext, Contiguous).",
       b);
}

// Regions where every character satisfying `pred` is one match (HF Pattern for Fn(char) -> bool).
template <typename Pred>
std::vector<Region> char_regions(const std::string& s, Pred pred) {
  std::vector<std::pair<size_t, size_t>> m;
  for (size_t i = 0; i < s.size();) {
    size_t b = i;
    char32_t c = utf8_next(s, i);
    if (pred(c)) m.emplace_back(b, i);
  }
  return regions_from_matches(s.size(), m, false);
}

struct Split : PreTokenizer {
  std::unique_ptr<Regex> re;
  Behavior behavior = Behavior::Isolated;
  bool invert = false;
  void split(std::vector<std::string>& pieces) const override {
    std::vector<std::string> out;
    out.reserve(pieces.size() * 4);
    std::vector<std::pair<size_t, size_t>> m;
    for (const auto& p : pieces) {
      m.clear();
      re->find_all(p, m);
      split_by(p, regions_from_matches(p.size(), m, invert), behavior, out);
    }
    pieces.swap(out);
  }
};

// GPT-2's pattern (HF byte_level.rs), used when ByteLevel has use_regex=true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct ByteLevel : PreTokenizer {
  bool add_prefix_space = true;
  std::unique_ptr<Regex> re;  // null when use_regex=false
  void split(std::vector<std::string>& pieces) const override {
    std::vector<std::string> out;
    out.reserve(pieces.size());
    std::vector<std::pair<size_t, size_t>> m;
    for (auto& p : pieces) {
      if (add_prefix_space && (p.empty() || p[0] != ' ')) {
        std::string q;
        q.reserve(p.size() + 1);
        q += ' ';
        q += p;
        p.swap(q);
      }
      if (re) {
        m.clear();
        re->find_all(p, m);
        split_by(p, regions_from_matches(p.size(), m, false), Behavior::Isolated, out);
      } else if (!p.empty()) {
        out.push_back(std::move(p));
      }
    }
    const auto& b2u = byte_to_utf8();
    for (auto& p : out) {
      std::string mapped;
      mapped.reserve(p.size() * 2);
      for (unsigned char c : p) mapped += b2u[c];
      p.swap(mapped);
    }
    pieces.swap(out);
  }
};

struct Digits : PreTokenizer {
  bool individual = false;
  void split(std::vector<std::string>& pieces) const override {
    std::vector<std::string> out;
    for (const auto& p : pieces) {
      auto regions = char_regions(p, [](char32_t c) {
        auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
        return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
               cat == UTF8PROC_CATEGORY_NO;
      });
      split_by(p, regions, individual ? Behavior::Isolated : Behavior::Contiguous, out);
    }
    pieces.swap(out);
  }
};

struct WhitespaceSplit : PreTokenizer {
  void split(std::vector<std::string>& pieces) const override {
    std::vector<std::string> out;
    for (const auto& p : pieces)
      split_by(p, char_regions(p, is_whitespace), Behavior::Removed, out);
    pieces.swap(out);
  }
};

struct Whitespace : PreTokenizer {  // HF: \w+|[^\w\s]+ kept, the rest removed
  Regex re{R"(\w+|[^\w\s]+)", false};
  void split(std::vector<std::string>& pieces) const override {
    std::vector<std::string> out;
    std::vector<std::pair<size_t, size_t>> m;
    for (const auto& p : pieces) {
      m.clear();
      re.find_all(p, m);
      split_by(p, regions_from_matches(p.size(), m, true), Behavior::Removed, out);
    }
    pieces.swap(out);
  }
};

// Metaspace: spaces become `replacement`, which is prepended per prepend_scheme ("first" is
// applied to the first piece handed to the pre-tokenizer), then split before each replacement.
struct Metaspace : PreTokenizer {
  std::string replacement = "\xE2\x96\x81";  // U+2581
  std::string scheme = "always";
  bool split_on = true;
  void split(std::vector<std::string>& pieces) const override {
    std::vector<std::string> out;
    for (size_t k = 0; k < pieces.size(); ++k) {
      std::string s;
      for (char c : pieces[k]) {
        if (c == ' ') s += replacement; else s += c;
      }
      bool prepend = scheme == "always" || (scheme == "first" && k == 0);
      if (prepend && s.compare(0, replacement.size(), replacement) != 0) s.insert(0, replacement);
      if (!split_on) {
        if (!s.empty()) out.push_back(std::move(s));
        continue;
      }
      std::vector<std::pair<size_t, size_t>> m;
      for (size_t pos = s.find(replacement); pos != std::string::npos && !replacement.empty();
           pos = s.find(replacement, pos + replacement.size()))
        m.emplace_back(pos, pos + replacement.size());
      split_by(s, regions_from_matches(s.size(), m, false), Behavior::MergedWithNext, out);
    }
    pieces.swap(out);
  }
};

struct Sequence : PreTokenizer {
  std::vector<std::unique_ptr<PreTokenizer>> items;
  void split(std::vector<std::string>& pieces) const override {
    for (const auto& p : items) p->split(pieces);
  }
};

}  // namespace

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const json& j, int depth) {
  if (j.is_null()) return nullptr;
  if (depth > kMaxDepth) fail("tokenizer.json: pre_tokenizers nested deeper than {}.", kMaxDepth);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    fail("tokenizer.json: a pre_tokenizer must be an object with a string \"type\".");
  const std::string type = j["type"].get<std::string>();
  if (type == "Split") {
    auto s = std::make_unique<Split>();
    if (!j.contains("pattern")) fail("tokenizer.json: pre_tokenizer Split needs \"pattern\".");
    s->re = parse_pattern(j["pattern"], "pre_tokenizer Split");
    s->behavior = parse_behavior(j.contains("behavior") ? j["behavior"] : json());
    s->invert = j.value("invert", false);
    return s;
  }
  if (type == "ByteLevel") {
    auto b = std::make_unique<ByteLevel>();
    b->add_prefix_space = j.value("add_prefix_space", true);
    if (j.value("use_regex", true)) b->re = std::make_unique<Regex>(kGpt2Pattern, false);
    return b;
  }
  if (type == "Digits") {
    auto d = std::make_unique<Digits>();
    d->individual = j.value("individual_digits", false);
    return d;
  }
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplit>();
  if (type == "Whitespace") return std::make_unique<Whitespace>();
  if (type == "Metaspace") {
    auto m = std::make_unique<Metaspace>();
    m->replacement = j.value("replacement", m->replacement);
    if (!utf8_valid(m->replacement)) fail("tokenizer.json: Metaspace replacement is not UTF-8.");
    if (j.contains("prepend_scheme")) {
      m->scheme = j["prepend_scheme"].get<std::string>();
    } else {
      m->scheme = j.value("add_prefix_space", true) ? "always" : "never";
    }
    m->split_on = j.value("split", true);
    return m;
  }
  if (type == "Sequence") {
    auto seq = std::make_unique<Sequence>();
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
      fail("tokenizer.json: pre_tokenizer Sequence needs an array \"pretokenizers\".");
    for (const auto& p : j["pretokenizers"]) {
      auto item = parse_pre_tokenizer(p, depth + 1);
      if (item) seq->items.push_back(std::move(item));
    }
    return seq;
  }
  fail("tokenizer.json: pre_tokenizer type \"{}\" is not supported (supported: Split, ByteLevel, "
       "Digits, Whitespace, WhitespaceSplit, Metaspace, Sequence).",
       type);
}

}  // namespace hogwild::tok
