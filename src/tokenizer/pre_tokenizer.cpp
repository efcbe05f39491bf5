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
std::vector<Region> regions_from_matches(size_t n, const std::vector<std::pair<size_t, size_t>>& m,
                                         bool invert) {
  std::vector<Region> out;
  if (n == 0) return {{0, 0, invert}};
  out.reserve(2 * m.size() + 1);
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

// Applies the delimiter behavior (HF NormalizedString::split) and emits the kept non-empty pieces.
void split_by(std::string_view s, std::vector<Region>& regions, Behavior behavior, bool first,
              EmitRef emit) {
  // Rewrite `regions` in place into the kept [b, e) spans; `match` now means "remove".
  size_t n = 0;
  bool prev_match = false;
  switch (behavior) {
    case Behavior::Isolated:
      for (auto& r : regions) r.match = false;
      n = regions.size();
      break;
    case Behavior::Removed:
      n = regions.size();
      break;
    case Behavior::Contiguous:
      for (size_t k = 0; k < regions.size(); ++k) {
        const Region r = regions[k];  // copy: slot k may be overwritten below
        if (r.match == prev_match && n > 0) {
          regions[n - 1].e = r.e;
        } else {
          regions[n++] = {r.b, r.e, false};
        }
        prev_match = r.match;
      }
      break;
    case Behavior::MergedWithPrevious:
      for (size_t k = 0; k < regions.size(); ++k) {
        const Region r = regions[k];  // copy: slot k may be overwritten below
        if (r.match && !prev_match && n > 0) {
          regions[n - 1].e = r.e;
        } else {
          regions[n++] = {r.b, r.e, false};
        }
        prev_match = r.match;
      }
      break;
    case Behavior::MergedWithNext: {
      // Walk backwards, writing kept spans from the end of the array.
      size_t w = regions.size();
      for (size_t k = regions.size(); k-- > 0;) {
        Region r = regions[k];
        if (r.match && !prev_match && w < regions.size()) {
          regions[w].b = r.b;
        } else {
          regions[--w] = {r.b, r.e, false};
        }
        prev_match = r.match;
      }
      regions.erase(regions.begin(), regions.begin() + static_cast<std::ptrdiff_t>(w));
      n = regions.size();
      break;
    }
  }
  bool is_first = first;
  for (size_t k = 0; k < n; ++k) {
    const Region& r = regions[k];
    if (!r.match && r.e > r.b) {
      emit(s.substr(r.b, r.e - r.b), is_first && r.b == 0);
    }
  }
}

Behavior parse_behavior(const json& j) {
  std::string b = j.is_string() ? j.get<std::string>() : "";
  if (b == "Removed") return Behavior::Removed;
  if (b == "Isolated") return Behavior::Isolated;
  if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::MergedWithNext;
  if (b == "Contiguous") return Behavior::Contiguous;
  fail(
      "tokenizer.json: Split behavior \"{}\" is unknown (Removed, Isolated, MergedWithPrevious, "
      "MergedWithNext, Contiguous).",
      b);
}

// Regions where every character satisfying `pred` is one match (HF Pattern for Fn(char) -> bool).
template <typename Pred>
std::vector<Region> char_regions(std::string_view s, Pred pred) {
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
  void split(std::string_view p, bool first, EmitRef emit) const override {
    if (behavior == Behavior::Isolated || behavior == Behavior::Removed) {
      // Each region stands alone: stream the matches (no lists for multi-MB inputs).
      const bool drop_match = behavior == Behavior::Removed && !invert;
      const bool drop_gap = behavior == Behavior::Removed && invert;
      size_t prev = 0;
      auto region = [&](size_t b, size_t e, bool drop) {
        if (!drop && e > b) emit(p.substr(b, e - b), first && b == 0);
      };
      re->for_each(p, [&](size_t b, size_t e) {
        if (b < prev) return;
        region(prev, b, drop_gap);
        region(b, e, drop_match);
        prev = e;
      });
      region(prev, p.size(), drop_gap);
      return;
    }
    std::vector<std::pair<size_t, size_t>> m;
    re->find_all(p, m);
    auto regions = regions_from_matches(p.size(), m, invert);
    split_by(p, regions, behavior, first, emit);
  }
};

// GPT-2's pattern (HF byte_level.rs), used when ByteLevel has use_regex=true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// ByteLevel: optional prefix space, optional GPT-2 split, then every byte -> its alphabet char.
struct ByteLevel : PreTokenizer {
  bool add_prefix_space = true;
  std::unique_ptr<Regex> re;  // null when use_regex=false
  void split(std::string_view p, bool first, EmitRef emit) const override {
    std::string prefixed;
    if (add_prefix_space && p[0] != ' ') {
      prefixed.reserve(p.size() + 1);
      prefixed += ' ';
      prefixed.append(p);
      p = prefixed;
    }
    const auto& b2u = byte_to_utf8();
    std::string mapped;
    auto map_emit = [&](std::string_view piece, bool f) {
      mapped.clear();
      for (unsigned char c : piece) mapped += b2u[c];
      emit(mapped, f);
    };
    if (re) {
      size_t prev = 0;
      re->for_each(p, [&](size_t b, size_t e) {
        if (b < prev) return;
        if (b > prev) map_emit(p.substr(prev, b - prev), first && prev == 0);
        if (e > b) map_emit(p.substr(b, e - b), first && b == 0);
        prev = e;
      });
      if (prev < p.size()) map_emit(p.substr(prev), first && prev == 0);
    } else {
      map_emit(p, first);
    }
  }
};

struct Digits : PreTokenizer {
  bool individual = false;
  void split(std::string_view p, bool first, EmitRef emit) const override {
    auto regions = char_regions(p, [](char32_t c) {
      auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
      return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
             cat == UTF8PROC_CATEGORY_NO;
    });
    split_by(p, regions, individual ? Behavior::Isolated : Behavior::Contiguous, first, emit);
  }
};

struct WhitespaceSplit : PreTokenizer {
  void split(std::string_view p, bool first, EmitRef emit) const override {
    auto regions = char_regions(p, is_whitespace);
    split_by(p, regions, Behavior::Removed, first, emit);
  }
};

struct Whitespace : PreTokenizer {  // HF: \w+|[^\w\s]+ kept, the rest removed
  Regex re{R"(\w+|[^\w\s]+)", false};
  void split(std::string_view p, bool first, EmitRef emit) const override {
    std::vector<std::pair<size_t, size_t>> m;
    re.find_all(p, m);
    auto regions = regions_from_matches(p.size(), m, true);
    split_by(p, regions, Behavior::Removed, first, emit);
  }
};

// Metaspace: spaces become `replacement`, which is prepended per prepend_scheme ("first": only to
// a piece that starts its segment), then split before each replacement (MergedWithNext).
struct Metaspace : PreTokenizer {
  std::string replacement = "\xE2\x96\x81";  // U+2581
  std::string scheme = "always";
  bool split_on = true;
  void split(std::string_view p, bool first, EmitRef emit) const override {
    std::string s;
    for (char c : p) {
      if (c == ' ')
        s += replacement;
      else
        s += c;
    }
    bool prepend = scheme == "always" || (scheme == "first" && first);
    if (prepend && s.compare(0, replacement.size(), replacement) != 0) s.insert(0, replacement);
    if (!split_on || replacement.empty()) {
      if (!s.empty()) emit(s, first);
      return;
    }
    std::vector<std::pair<size_t, size_t>> m;
    for (size_t pos = s.find(replacement); pos != std::string::npos;
         pos = s.find(replacement, pos + replacement.size()))
      m.emplace_back(pos, pos + replacement.size());
    auto regions = regions_from_matches(s.size(), m, false);
    split_by(s, regions, Behavior::MergedWithNext, first, emit);
  }
};

struct Sequence : PreTokenizer {
  std::vector<std::unique_ptr<PreTokenizer>> items;
  void run(size_t k, std::string_view p, bool first, EmitRef emit) const {
    if (k == items.size()) return emit(p, first);
    auto next = [&](std::string_view piece, bool f) { run(k + 1, piece, f, emit); };
    items[k]->split(p, first, EmitRef(next));
  }
  void split(std::string_view p, bool first, EmitRef emit) const override {
    run(0, p, first, emit);
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
  fail(
      "tokenizer.json: pre_tokenizer type \"{}\" is not supported (supported: Split, ByteLevel, "
      "Digits, Whitespace, WhitespaceSplit, Metaspace, Sequence).",
      type);
}

}  // namespace hogwild::tok
