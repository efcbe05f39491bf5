// Tokenizer loading and the encode / decode pipeline (HF tokenizers/src/tokenizer/mod.rs,
// serialization.rs, added_vocabulary.rs `add_tokens`).
#include "tokenizer/tokenizer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/io.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/unicode.h"

namespace hogwild {

using tok::json;

namespace tok {

std::vector<int32_t> Pipeline::encode(std::string_view text, bool add_special) const {
  std::vector<Segment> segs;
  std::string clean = utf8_lossy(text);
  if (!clean.empty()) segs.push_back({std::move(clean), -1});
  split_added(segs, raw_trie);
  if (normalizer) {
    std::vector<Segment> kept;
    kept.reserve(segs.size());
    for (auto& s : segs) {
      if (s.id < 0) normalizer->normalize(s.text);
      if (s.id >= 0 || !s.text.empty()) kept.push_back(std::move(s));
    }
    segs.swap(kept);
  }
  split_added(segs, normalized_trie);

  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  auto to_model = [&](std::string_view piece, bool) { model->tokenize(piece, ids); };
  for (size_t k = 0; k < segs.size(); ++k) {
    const Segment& s = segs[k];
    if (s.id >= 0) {
      ids.push_back(s.id);
    } else if (pre_tokenizer) {
      pre_tokenizer->split(s.text, k == 0, EmitRef(to_model));
    } else {
      model->tokenize(s.text, ids);
    }
  }
  if (post_processor) post_processor->process(ids, add_special);
  return ids;
}

std::string Pipeline::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    auto it = added_by_id.find(id);
    if (it != added_by_id.end()) {
      const AddedToken& t = added[it->second];
      if (!(skip_special && t.special)) tokens.push_back(t.content);
      continue;
    }
    if (const std::string* s = model->id_to_token(id)) tokens.push_back(*s);
  }
  std::string out;
  if (decoder) {
    decoder->decode_chain(tokens);
    for (const auto& t : tokens) out += t;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
  }
  return out;
}

namespace {

bool get_flag(const json& j, const char* key, bool dflt) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  if (!j[key].is_boolean()) fail("tokenizer.json: added token field \"{}\" must be a bool.", key);
  return j[key].get<bool>();
}

// Resolves ids exactly like HF AddedVocabulary::add_tokens: a content already in the model vocab
// keeps the model's id; otherwise the next id after the model vocab / the last added token. (The
// "id" written in the file is only checked by HF, never used; for consistent files they agree.)
void load_added(Pipeline& p, const json& arr) {
  if (arr.is_null()) return;
  if (!arr.is_array()) fail("tokenizer.json: \"added_tokens\" must be an array.");
  const int64_t model_size = p.model->max_id() + 1;
  int64_t max_added = -1;
  for (const auto& j : arr) {
    if (!j.is_object() || !j.contains("content") || !j["content"].is_string())
      fail("tokenizer.json: each added token needs a string \"content\".");
    tok::AddedToken t;
    t.content = j["content"].get<std::string>();
    if (t.content.empty()) continue;
    if (!utf8_valid(t.content)) fail("tokenizer.json: an added token's content is not UTF-8.");
    t.special = get_flag(j, "special", false);
    t.lstrip = get_flag(j, "lstrip", false);
    t.rstrip = get_flag(j, "rstrip", false);
    t.single_word = get_flag(j, "single_word", false);
    t.normalized = get_flag(j, "normalized", !t.special);
    int64_t id;
    if (auto it = p.added_by_content.find(t.content); it != p.added_by_content.end()) {
      id = it->second;
    } else if (auto mid = p.model->token_to_id(t.content)) {
      id = *mid;
    } else if (max_added < 0) {
      id = model_size;
    } else {
      id = (max_added >= model_size || model_size == 0) ? max_added + 1 : model_size;
    }
    if (id >= (int64_t{1} << 24)) fail("tokenizer.json: too many added tokens.");
    t.id = static_cast<int32_t>(id);
    max_added = std::max(max_added, id);
    p.added_by_content[t.content] = t.id;
    if (auto it = p.added_by_id.find(t.id); it != p.added_by_id.end()) {
      p.added[it->second] = t;  // same id again: the later entry's flags win
    } else {
      p.added_by_id[t.id] = static_cast<int32_t>(p.added.size());
      p.added.push_back(t);
    }
  }
  // Tries: normalized=false tokens match the raw text, normalized=true ones the normalized text
  // (their content is normalized too). Special tokens first, as HF chains them.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < p.added.size(); ++i) {
      const auto& t = p.added[i];
      if (t.special != (pass == 0)) continue;
      if (!t.normalized) {
        p.raw_trie.insert(t.content, static_cast<int32_t>(i));
      } else {
        std::string c = t.content;
        if (p.normalizer) p.normalizer->normalize(c);
        p.normalized_trie.insert(c, static_cast<int32_t>(i));
      }
    }
  }
}

std::string read_file(const std::string& path) {
  return hogwild::read_file(path, std::filesystem::path(path).filename().string());
}

std::optional<std::string> token_field(const json& cfg, const char* key) {
  if (!cfg.contains(key) || cfg[key].is_null()) return std::nullopt;
  const json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return std::nullopt;
}

}  // namespace
}  // namespace tok

Tokenizer::Tokenizer() : p_(std::make_unique<tok::Pipeline>()) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_json(std::string_view json_text, const std::string& source) {
  Tokenizer t;
  try {
    json j = json::parse(json_text.begin(), json_text.end());
    if (!j.is_object() || !j.contains("model"))
      fail("{}: not a tokenizer.json (no \"model\" object).", source);
    tok::Pipeline& p = *t.p_;
    p.model = std::make_unique<tok::Bpe>(j["model"]);
    p.normalizer = tok::parse_normalizer(j.value("normalizer", json()));
    p.pre_tokenizer = tok::parse_pre_tokenizer(j.value("pre_tokenizer", json()));
    p.post_processor = tok::parse_post_processor(j.value("post_processor", json()));
    p.decoder = tok::parse_decoder(j.value("decoder", json()));
    tok::load_added(p, j.value("added_tokens", json()));
  } catch (const json::exception& e) {
    fail("{}: invalid tokenizer JSON ({}). Re-download the file from the model repository.", source,
         e.what());
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind(source, 0) != 0) msg = source + ": " + msg;
    throw Error(msg);
  }
  return t;
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  return from_json(tok::read_file(path), path);
}

Tokenizer Tokenizer::from_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::path tj = fs::path(dir) / "tokenizer.json";
  if (!fs::exists(tj))
    fail("{} has no tokenizer.json; point -m/--tokenizer at a Hugging Face model directory.", dir);
  Tokenizer t = from_file(tj.string());
  fs::path cj = fs::path(dir) / "tokenizer_config.json";
  if (!fs::exists(cj)) return t;
  try {
    json cfg = json::parse(tok::read_file(cj.string()));
    if (!cfg.is_object()) fail("{} is not a JSON object.", cj.string());
    TokenizerConfig& c = t.config_;
    c.bos_token = tok::token_field(cfg, "bos_token");
    c.eos_token = tok::token_field(cfg, "eos_token");
    c.pad_token = tok::token_field(cfg, "pad_token");
    if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean())
      c.add_bos_token = cfg["add_bos_token"].get<bool>();
    if (cfg.contains("add_eos_token") && cfg["add_eos_token"].is_boolean())
      c.add_eos_token = cfg["add_eos_token"].get<bool>();
    if (cfg.contains("tokenizer_class") && cfg["tokenizer_class"].is_string())
      c.tokenizer_class = cfg["tokenizer_class"].get<std::string>();
    if (cfg.contains("chat_template") && cfg["chat_template"].is_string())
      c.chat_template = cfg["chat_template"].get<std::string>();
  } catch (const json::exception& e) {
    fail("{}: invalid JSON ({}).", cj.string(), e.what());
  }
  // transformers LlamaTokenizerFast / GemmaTokenizerFast.update_post_processor: the template is
  // rebuilt from add_bos_token (default true) and add_eos_token (default false).
  const std::string& cls = t.config_.tokenizer_class;
  if (cls == "LlamaTokenizerFast" || cls == "CodeLlamaTokenizerFast" ||
      cls == "GemmaTokenizerFast") {
    bool add_bos = t.config_.add_bos_token.value_or(true);
    bool add_eos = t.config_.add_eos_token.value_or(false);
    if (add_bos && !t.bos_id())
      fail("{}: add_bos_token is set but bos_token is missing or unknown.", cj.string());
    if (add_eos && !t.eos_id())
      fail("{}: add_eos_token is set but eos_token is missing or unknown.", cj.string());
    t.p_->post_processor = tok::make_bos_eos_processor(add_bos ? t.bos_id() : std::nullopt,
                                                       add_eos ? t.eos_id() : std::nullopt);
  }
  return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return p_->encode(text, add_special_tokens);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  return p_->decode(ids, skip_special_tokens);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto it = p_->added_by_content.find(token); it != p_->added_by_content.end())
    return it->second;
  return p_->model->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (auto it = p_->added_by_id.find(id); it != p_->added_by_id.end())
    return p_->added[it->second].content;
  if (const std::string* s = p_->model->id_to_token(id)) return *s;
  return std::nullopt;
}

int32_t Tokenizer::vocab_size() const {
  int32_t n = p_->model->max_id() + 1;
  for (const auto& t : p_->added) n = std::max(n, t.id + 1);
  return n;
}

bool Tokenizer::is_special(int32_t id) const {
  auto it = p_->added_by_id.find(id);
  return it != p_->added_by_id.end() && p_->added[it->second].special;
}

std::optional<int32_t> Tokenizer::bos_id() const {
  return config_.bos_token ? token_to_id(*config_.bos_token) : std::nullopt;
}
void Tokenizer::check_fits(int64_t vocab_size, const std::string& model_dir) const {
  if (vocab_size > 0 && this->vocab_size() > vocab_size)
    fail(
        "{}: tokenizer.json has token ids up to {} but config.json's vocab_size is {}; the "
        "tokenizer belongs to another model (copy the model's own tokenizer files)",
        model_dir, this->vocab_size() - 1, vocab_size);
}

std::optional<int32_t> Tokenizer::eos_id() const {
  return config_.eos_token ? token_to_id(*config_.eos_token) : std::nullopt;
}

// HF DecodeStream::step: decode the window, emit what extends the already-emitted prefix unless the
// text ends in U+FFFD (an incomplete character); then drop the emitted context from the window.
std::string IncrementalDecoder::push(int32_t id) {
  static const std::string kRepl = "\xEF\xBF\xBD";
  auto ends_repl = [](const std::string& s) {
    return s.size() >= 3 && s.compare(s.size() - 3, 3, kRepl) == 0;
  };
  if (prefix_.empty() && !ids_.empty()) {
    std::string p = tok_->decode(ids_, skip_special_);
    if (!ends_repl(p)) {
      prefix_ = std::move(p);
      prefix_index_ = ids_.size();
    }
  }
  ids_.push_back(id);
  std::string s = tok_->decode(ids_, skip_special_);
  if (s.size() > prefix_.size() && !ends_repl(s) && s.compare(0, prefix_.size(), prefix_) == 0) {
    std::string out = s.substr(prefix_.size());
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_index_));
    prefix_ = tok_->decode(ids_, skip_special_);
    prefix_index_ = ids_.size();
    return out;
  }
  return "";
}

std::string IncrementalDecoder::flush() {
  std::string s = tok_->decode(ids_, skip_special_);
  std::string out;
  if (s.size() > prefix_.size() && s.compare(0, prefix_.size(), prefix_) == 0)
    out = s.substr(prefix_.size());
  ids_.clear();
  prefix_.clear();
  prefix_index_ = 0;
  return out;
}

}  // namespace hogwild
