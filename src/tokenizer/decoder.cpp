// HF decoders (tokenizers/src/decoders/*.rs) and post-processors (tokenizers/src/processors/*.rs).
#include "core/error.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/unicode.h"

namespace hogwild::tok {

namespace {

// ByteLevel: each token's characters map back to bytes through the GPT-2 alphabet; a token with any
// character outside the alphabet (e.g. an added token "<｜end▁of▁sentence｜>") contributes its
// UTF-8 bytes as is. The joined bytes are decoded with the from_utf8_lossy rule.
struct ByteLevelDec : Decoder {
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) {
      size_t mark = bytes.size();
      bool ok = true;
      for (size_t i = 0; i < t.size();) {
        int b = char_to_byte(utf8_next(t, i));
        if (b < 0) {
          ok = false;
          break;
        }
        bytes += static_cast<char>(b);
      }
      if (!ok) {
        bytes.resize(mark);
        bytes += t;
      }
    }
    tokens.assign(1, utf8_lossy(bytes));
  }
};

// ByteFallback: runs of "<0xXX>" tokens become their bytes if those form valid UTF-8, else one
// U+FFFD per byte.
struct ByteFallbackDec : Decoder {
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string run;
    size_t run_len = 0;
    auto flush = [&] {
      if (run_len == 0) return;
      if (utf8_valid(run)) {
        out.push_back(run);
      } else {
        for (size_t k = 0; k < run_len; ++k) out.emplace_back("\xEF\xBF\xBD");
      }
      run.clear();
      run_len = 0;
    };
    for (auto& t : tokens) {
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        auto hex = [](char c) {
          if (c >= '0' && c <= '9') return c - '0';
          if (c >= 'A' && c <= 'F') return c - 'A' + 10;
          if (c >= 'a' && c <= 'f') return c - 'a' + 10;
          return -1;
        };
        int hi = hex(t[3]), lo = hex(t[4]);
        if (hi >= 0 && lo >= 0) byte = hi * 16 + lo;
      }
      if (byte >= 0) {
        run += static_cast<char>(byte);
        ++run_len;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }
};

struct FuseDec : Decoder {
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, all);
  }
};

struct ReplaceDec : Decoder {
  std::unique_ptr<Regex> pattern;
  std::string content;
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::pair<size_t, size_t>> m;
    for (auto& t : tokens) {
      m.clear();
      pattern->find_all(t, m);
      std::string out;
      size_t prev = 0;
      for (auto [b, e] : m) {
        if (b == e) continue;
        out.append(t, prev, b - prev);
        out += content;
        prev = e;
      }
      out.append(t, prev, std::string::npos);
      t.swap(out);
    }
  }
};

// Strip: removes up to `start` leading and `stop` trailing copies of the character `content`.
struct StripDec : Decoder {
  std::string content;
  size_t start = 0, stop = 0;
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (content.empty()) return;
    for (auto& t : tokens) {
      size_t b = 0, e = t.size();
      for (size_t k = 0;
           k < start && e - b >= content.size() && t.compare(b, content.size(), content) == 0; ++k)
        b += content.size();
      for (size_t k = 0; k < stop && e - b >= content.size() &&
                         t.compare(e - content.size(), content.size(), content) == 0;
           ++k)
        e -= content.size();
      t = t.substr(b, e - b);
    }
  }
};

struct MetaspaceDec : Decoder {
  std::string replacement = "\xE2\x96\x81";
  bool strip_first = true;  // prepend_scheme != "never"
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t p = 0; p < t.size();) {
        if (!replacement.empty() && t.compare(p, replacement.size(), replacement) == 0) {
          out += ' ';
          p += replacement.size();
        } else {
          out += t[p++];
        }
      }
      if (i == 0 && strip_first && !out.empty() && out[0] == ' ') out.erase(0, 1);
      tokens[i].swap(out);
    }
  }
};

struct SequenceDec : Decoder {
  std::vector<std::unique_ptr<Decoder>> items;
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& d : items) d->decode_chain(tokens);
  }
};

std::string utf8_field(const json& j, const char* key, const char* where) {
  if (!j.contains(key) || !j[key].is_string())
    fail("tokenizer.json: {} needs a string field \"{}\".", where, key);
  std::string s = j[key].get<std::string>();
  if (!utf8_valid(s)) fail("tokenizer.json: {} field \"{}\" is not UTF-8.", where, key);
  return s;
}

}  // namespace

std::unique_ptr<Decoder> parse_decoder(const json& j, int depth) {
  if (j.is_null()) return nullptr;
  if (depth > kMaxDepth) fail("tokenizer.json: decoders nested deeper than {}.", kMaxDepth);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    fail("tokenizer.json: a decoder must be an object with a string \"type\".");
  const std::string type = j["type"].get<std::string>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelDec>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDec>();
  if (type == "Fuse") return std::make_unique<FuseDec>();
  if (type == "Replace") {
    auto r = std::make_unique<ReplaceDec>();
    if (!j.contains("pattern")) fail("tokenizer.json: decoder Replace needs \"pattern\".");
    r->pattern = parse_pattern(j["pattern"], "decoder Replace");
    r->content = utf8_field(j, "content", "decoder Replace");
    return r;
  }
  if (type == "Strip") {
    auto s = std::make_unique<StripDec>();
    s->content = utf8_field(j, "content", "decoder Strip");
    s->start = j.value("start", size_t{0});
    s->stop = j.value("stop", size_t{0});
    return s;
  }
  if (type == "Metaspace") {
    auto m = std::make_unique<MetaspaceDec>();
    m->replacement = j.value("replacement", m->replacement);
    if (!utf8_valid(m->replacement)) fail("tokenizer.json: Metaspace replacement is not UTF-8.");
    if (j.contains("prepend_scheme")) {
      m->strip_first = j["prepend_scheme"].get<std::string>() != "never";
    } else {
      m->strip_first = j.value("add_prefix_space", true);
    }
    return m;
  }
  if (type == "Sequence") {
    auto seq = std::make_unique<SequenceDec>();
    if (!j.contains("decoders") || !j["decoders"].is_array())
      fail("tokenizer.json: decoder Sequence needs an array \"decoders\".");
    for (const auto& d : j["decoders"]) {
      auto item = parse_decoder(d, depth + 1);
      if (item) seq->items.push_back(std::move(item));
    }
    return seq;
  }
  fail(
      "tokenizer.json: decoder type \"{}\" is not supported (supported: ByteLevel, ByteFallback, "
      "Fuse, Replace, Strip, Metaspace, Sequence).",
      type);
}

namespace {

// Ids to put before and after the sequence when add_special_tokens is on.
struct Wrap : PostProcessor {
  std::vector<int32_t> before, after;
  void process(std::vector<int32_t>& ids, bool add_special) const override {
    if (!add_special) return;
    ids.insert(ids.begin(), before.begin(), before.end());
    ids.insert(ids.end(), after.begin(), after.end());
  }
};

struct SequencePP : PostProcessor {
  std::vector<std::unique_ptr<PostProcessor>> items;
  void process(std::vector<int32_t>& ids, bool add_special) const override {
    for (const auto& p : items) p->process(ids, add_special);
  }
};

int32_t pair_id(const json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_array() || j[key].size() != 2 ||
      !j[key][1].is_number_integer())
    fail("tokenizer.json: post_processor field \"{}\" must be [token, id].", key);
  return j[key][1].get<int32_t>();
}

// TemplateProcessing "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}, ...]
// with special_tokens {"<s>": {"ids": [1], ...}}.
std::unique_ptr<PostProcessor> parse_template(const json& j) {
  auto w = std::make_unique<Wrap>();
  if (!j.contains("single") || !j["single"].is_array())
    fail("tokenizer.json: TemplateProcessing needs an array \"single\".");
  const json specials = j.contains("special_tokens") ? j["special_tokens"] : json::object();
  bool seen_seq = false;
  for (const auto& item : j["single"]) {
    if (item.is_object() && item.contains("Sequence")) {
      seen_seq = true;
      continue;
    }
    if (!item.is_object() || !item.contains("SpecialToken") || !item["SpecialToken"].is_object())
      fail("tokenizer.json: TemplateProcessing items must be Sequence or SpecialToken objects.");
    std::string name = item["SpecialToken"].value("id", std::string());
    if (!specials.is_object() || !specials.contains(name) || !specials[name].is_object() ||
        !specials[name].contains("ids") || !specials[name]["ids"].is_array())
      fail(
          "tokenizer.json: TemplateProcessing uses special token \"{}\" without ids in "
          "special_tokens.",
          name);
    for (const auto& id : specials[name]["ids"]) {
      (seen_seq ? w->after : w->before).push_back(id.get<int32_t>());
    }
  }
  return w;
}

}  // namespace

std::unique_ptr<PostProcessor> parse_post_processor(const json& j, int depth) {
  if (j.is_null()) return nullptr;
  if (depth > kMaxDepth) fail("tokenizer.json: post_processors nested deeper than {}.", kMaxDepth);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    fail("tokenizer.json: a post_processor must be an object with a string \"type\".");
  const std::string type = j["type"].get<std::string>();
  if (type == "ByteLevel") return nullptr;  // only adjusts offsets
  if (type == "TemplateProcessing") return parse_template(j);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    auto w = std::make_unique<Wrap>();
    w->before.push_back(pair_id(j, "cls"));
    w->after.push_back(pair_id(j, "sep"));
    return w;
  }
  if (type == "Sequence") {
    auto seq = std::make_unique<SequencePP>();
    if (!j.contains("processors") || !j["processors"].is_array())
      fail("tokenizer.json: post_processor Sequence needs an array \"processors\".");
    for (const auto& p : j["processors"]) {
      auto item = parse_post_processor(p, depth + 1);
      if (item) seq->items.push_back(std::move(item));
    }
    return seq;
  }
  fail(
      "tokenizer.json: post_processor type \"{}\" is not supported (supported: ByteLevel, "
      "TemplateProcessing, BertProcessing, RobertaProcessing, Sequence).",
      type);
}

std::unique_ptr<PostProcessor> make_bos_eos_processor(std::optional<int32_t> bos,
                                                      std::optional<int32_t> eos) {
  auto w = std::make_unique<Wrap>();
  if (bos) w->before.push_back(*bos);
  if (eos) w->after.push_back(*eos);
  return w;
}

}  // namespace hogwild::tok
