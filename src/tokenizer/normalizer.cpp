// HF normalizers (tokenizers/src/normalizers/*.rs), operating on valid UTF-8 strings.
#include <utf8proc.h>

#include <cstdlib>

#include "core/error.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/unicode.h"

namespace hogwild::tok {

namespace {

std::string get_string(const json& j, const char* key, const char* type) {
  if (!j.contains(key) || !j[key].is_string())
    fail("tokenizer.json: normalizer {} needs a string field \"{}\".", type, key);
  std::string s = j[key].get<std::string>();
  if (!utf8_valid(s)) fail("tokenizer.json: normalizer {} field \"{}\" is not UTF-8.", type, key);
  return s;
}

// Unicode normalization forms via utf8proc (NFC = STABLE|COMPOSE, NFKC adds COMPAT, …).
struct UnicodeForm : Normalizer {
  utf8proc_option_t opts;
  explicit UnicodeForm(int o) : opts(static_cast<utf8proc_option_t>(o | UTF8PROC_STABLE)) {}
  void normalize(std::string& s) const override {
    if (s.empty()) return;
    bool ascii = true;
    for (unsigned char c : s) ascii &= c < 0x80;
    if (ascii) return;  // every normalization form is the identity on ASCII
    utf8proc_uint8_t* dst = nullptr;
    utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                      static_cast<utf8proc_ssize_t>(s.size()), &dst, opts);
    if (n < 0) return;  // cannot happen on valid UTF-8; keep the text unchanged
    s.assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
    std::free(dst);
  }
};

// Simple (1:1) lowercase mapping; Rust's str::to_lowercase also applies the few 1:n mappings
// (U+0130) and the final-sigma rule, which utf8proc does not offer.
struct Lowercase : Normalizer {
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      char32_t c = utf8_next(s, i);
      utf8_append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
    s.swap(out);
  }
};

struct Strip : Normalizer {
  bool left, right;
  Strip(bool l, bool r) : left(l), right(r) {}
  void normalize(std::string& s) const override {
    size_t b = 0, e = s.size();
    if (left) {
      while (b < e) {
        size_t k = b;
        if (!is_whitespace(utf8_next(s, k))) break;
        b = k;
      }
    }
    if (right) {
      while (e > b) {
        size_t start = e - 1;
        while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
        size_t k = start;
        if (!is_whitespace(utf8_next(s, k))) break;
        e = start;
      }
    }
    s = s.substr(b, e - b);
  }
};

struct Prepend : Normalizer {
  std::string prefix;
  void normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, prefix);
  }
};

struct Replace : Normalizer {
  std::unique_ptr<Regex> pattern;
  std::string content;
  void normalize(std::string& s) const override {
    std::vector<std::pair<size_t, size_t>> m;
    pattern->find_all(s, m);
    if (m.empty()) return;
    std::string out;
    size_t prev = 0;
    for (auto [b, e] : m) {
      if (b == e) continue;
      out.append(s, prev, b - prev);
      out += content;
      prev = e;
    }
    out.append(s, prev, std::string::npos);
    s.swap(out);
  }
};

struct Sequence : Normalizer {
  std::vector<std::unique_ptr<Normalizer>> items;
  void normalize(std::string& s) const override {
    for (const auto& n : items) n->normalize(s);
  }
};

}  // namespace

std::unique_ptr<Normalizer> parse_normalizer(const json& j, int depth) {
  if (j.is_null()) return nullptr;
  if (depth > kMaxDepth) fail("tokenizer.json: normalizers nested deeper than {}.", kMaxDepth);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    fail("tokenizer.json: a normalizer must be an object with a string \"type\".");
  const std::string type = j["type"].get<std::string>();
  if (type == "NFC") return std::make_unique<UnicodeForm>(UTF8PROC_COMPOSE);
  if (type == "NFD") return std::make_unique<UnicodeForm>(UTF8PROC_DECOMPOSE);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Strip") {
    return std::make_unique<Strip>(j.value("strip_left", true), j.value("strip_right", true));
  }
  if (type == "Prepend") {
    auto p = std::make_unique<Prepend>();
    p->prefix = get_string(j, "prepend", "Prepend");
    return p;
  }
  if (type == "Replace") {
    auto r = std::make_unique<Replace>();
    if (!j.contains("pattern")) fail("tokenizer.json: normalizer Replace needs \"pattern\".");
    r->pattern = parse_pattern(j["pattern"], "normalizer Replace");
    r->content = get_string(j, "content", "Replace");
    return r;
  }
  if (type == "Sequence") {
    auto seq = std::make_unique<Sequence>();
    if (!j.contains("normalizers") || !j["normalizers"].is_array())
      fail("tokenizer.json: normalizer Sequence needs an array \"normalizers\".");
    for (const auto& n : j["normalizers"]) {
      auto item = parse_normalizer(n, depth + 1);
      if (item) seq->items.push_back(std::move(item));
    }
    return seq;
  }
  fail(
      "tokenizer.json: normalizer type \"{}\" is not supported (supported: NFC, NFD, NFKC, NFKD, "
      "Lowercase, Strip, Prepend, Replace, Sequence).",
      type);
}

}  // namespace hogwild::tok
