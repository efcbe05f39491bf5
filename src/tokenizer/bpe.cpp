// BPE model (HF tokenizers/src/models/bpe/{model.rs,word.rs}).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <queue>

#include "core/error.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/unicode.h"

namespace hogwild::tok {

namespace {

// Ids may leave holes, but at most this many beyond the entry count: bounds the id -> token table a
// hostile file can make us allocate (real vocabs are dense).
constexpr int64_t kMaxVocabHoles = 1 << 20;

std::pair<std::string, std::string> parse_merge(const json& m) {
  if (m.is_string()) {  // "a b" (tokenizers < 0.20)
    const std::string& s = m.get_ref<const std::string&>();
    size_t sp = s.find(' ');
    if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
      fail("tokenizer.json: merge \"{}\" must be two tokens separated by one space.", s);
    return {s.substr(0, sp), s.substr(sp + 1)};
  }
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
    return {m[0].get<std::string>(), m[1].get<std::string>()};
  fail("tokenizer.json: each merge must be \"a b\" or [\"a\", \"b\"]; got {}.",
       m.dump().substr(0, 80));
}

std::string opt_string(const json& model, const char* key) {
  if (!model.contains(key) || model[key].is_null()) return "";
  if (!model[key].is_string()) fail("tokenizer.json: model.{} must be a string or null.", key);
  return model[key].get<std::string>();
}

// Per-thread cache of word -> ids (HF keeps a similar cache). Natural text repeats words, so most
// pieces skip the merge loop. Keyed by the owning model's uid so a new model never sees stale ids.
struct WordCache {
  uint64_t owner = 0;
  std::unordered_map<std::string, std::vector<int32_t>, StrHash, std::equal_to<>> map;
};
constexpr size_t kCacheEntries = 1 << 16;
constexpr size_t kMaxCachedWordBytes = 64;
std::atomic<uint64_t> g_next_uid{1};

}  // namespace

Bpe::Bpe(const json& model) : uid_(g_next_uid.fetch_add(1)) {
  if (!model.is_object()) fail("tokenizer.json: \"model\" must be an object.");
  std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE")
    fail("tokenizer.json: model type \"{}\" is not supported; hogwild reads BPE tokenizers only.",
         type);
  if (!model.contains("vocab") || !model["vocab"].is_object())
    fail("tokenizer.json: model.vocab must be an object {{token: id}}.");
  const auto& vocab = model["vocab"];
  vocab_.reserve(vocab.size());
  int64_t max_id = -1;
  const int64_t kMaxVocabId = static_cast<int64_t>(vocab.size()) + kMaxVocabHoles;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer())
      fail("tokenizer.json: vocab entry \"{}\" has a non-integer id.", it.key());
    int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= kMaxVocabId)
      fail("tokenizer.json: vocab id {} of \"{}\" is out of range [0, {}).", id, it.key(),
           kMaxVocabId);
    vocab_[it.key()] = static_cast<int32_t>(id);
    max_id = std::max(max_id, id);
  }
  id_to_token_.assign(static_cast<size_t>(max_id + 1), nullptr);
  for (const auto& [tok, id] : vocab_) id_to_token_[id] = &tok;  // map nodes never move

  prefix_ = opt_string(model, "continuing_subword_prefix");
  suffix_ = opt_string(model, "end_of_word_suffix");
  std::string unk = opt_string(model, "unk_token");
  if (!unk.empty()) {
    auto it = vocab_.find(unk);
    if (it == vocab_.end())
      fail("tokenizer.json: unk_token \"{}\" is not in the vocab; fix model.unk_token.", unk);
    unk_id_ = it->second;
  }
  auto flag = [&](const char* key) {
    return model.contains(key) && model[key].is_boolean() && model[key].get<bool>();
  };
  fuse_unk_ = flag("fuse_unk");
  byte_fallback_ = flag("byte_fallback");
  ignore_merges_ = flag("ignore_merges");
  for (int b = 0; b < 256; ++b) {
    auto it = vocab_.find(fmt::format("<0x{:02X}>", b));
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }
  for (char32_t c = 0; c < char_ids_.size(); ++c) {
    std::string u;
    utf8_append(u, c);
    auto it = vocab_.find(u);
    char_ids_[c] = it == vocab_.end() ? -1 : it->second;
  }

  if (model.contains("merges") && !model["merges"].is_null()) {
    const auto& merges = model["merges"];
    if (!merges.is_array()) fail("tokenizer.json: model.merges must be an array.");
    merges_.reserve(merges.size());
    int32_t rank = 0;
    for (const auto& m : merges) {
      auto [a, b] = parse_merge(m);
      auto ia = vocab_.find(a), ib = vocab_.find(b);
      if (ia == vocab_.end() || ib == vocab_.end())
        fail("tokenizer.json: merge \"{} {}\" uses a token missing from the vocab.", a, b);
      std::string merged = a + (prefix_.empty() || b.compare(0, prefix_.size(), prefix_) != 0
                                    ? b
                                    : b.substr(prefix_.size()));
      auto im = vocab_.find(merged);
      if (im == vocab_.end())
        fail("tokenizer.json: merge \"{} {}\" makes \"{}\", which is not in the vocab.", a, b,
             merged);
      uint64_t key = (static_cast<uint64_t>(ia->second) << 32) | static_cast<uint32_t>(ib->second);
      merges_[key] = {rank++, im->second};  // a repeated pair keeps its last rank, as in HF
    }
  }
}

std::optional<int32_t> Bpe::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* Bpe::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return nullptr;
  return id_to_token_[id];
}

void Bpe::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (word.size() > kMaxCachedWordBytes) return merge_word(word, out);
  thread_local WordCache cache;
  if (cache.owner != uid_) {
    cache.map.clear();
    cache.owner = uid_;
  }
  if (auto it = cache.map.find(word); it != cache.map.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
    return;
  }
  size_t first = out.size();
  merge_word(word, out);
  if (cache.map.size() >= kCacheEntries) cache.map.clear();
  cache.map.emplace(std::string(word), std::vector<int32_t>(out.begin() + first, out.end()));
}

void Bpe::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  const std::vector<int32_t> ids = initial_ids(word);
  if (!ids.empty()) merge_by_rank(ids, out);
}

std::vector<int32_t> Bpe::initial_ids(std::string_view word) const {
  std::vector<int32_t> ids;
  ids.reserve(word.size());
  auto add = [&](int32_t id) { ids.push_back(id); };
  int32_t pending_unk = -1;  // unk id waiting to be added (fuse_unk)
  std::string buf;
  for (size_t i = 0; i < word.size();) {
    size_t b = i;
    int l = utf8_seq_len(word, i);
    i += l > 0 ? l : 1;
    std::string_view ch = word.substr(b, i - b);
    std::string_view key = ch;
    const bool affixed = (b != 0 && !prefix_.empty()) || (i == word.size() && !suffix_.empty());
    if (!affixed) {  // fast path: one character, looked up in the small table
      size_t k = 0;
      char32_t c = utf8_next(ch, k);
      if (c < char_ids_.size() && char_ids_[c] >= 0) {
        if (pending_unk >= 0) add(pending_unk), pending_unk = -1;
        add(char_ids_[c]);
        continue;
      }
    }
    if (affixed) {
      buf.assign(b != 0 ? prefix_ : "");
      buf.append(ch);
      if (i == word.size()) buf += suffix_;
      key = buf;
    }
    auto it = vocab_.find(key);
    if (it != vocab_.end()) {
      if (pending_unk >= 0) add(pending_unk), pending_unk = -1;
      add(it->second);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char c : key) all &= byte_ids_[c] >= 0;
      if (all) {
        if (pending_unk >= 0) add(pending_unk), pending_unk = -1;
        for (unsigned char c : key) add(byte_ids_[c]);
        continue;
      }
    }
    if (unk_id_) {  // HF: consecutive unknowns fuse into one unk when fuse_unk
      if (pending_unk >= 0 && !fuse_unk_) add(pending_unk);
      pending_unk = *unk_id_;
    }
    // No unk token: HF drops the character.
  }
  if (pending_unk >= 0) add(pending_unk);
  return ids;
}

void Bpe::merge_by_rank(const std::vector<int32_t>& ids, std::vector<int32_t>& out) const {
  struct Sym {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  std::vector<Sym> syms;
  syms.reserve(ids.size());
  for (int32_t id : ids) {
    const auto n = static_cast<int32_t>(syms.size());
    syms.push_back({id, n - 1, n + 1, true});
  }
  syms.back().next = -1;
  // Merge by rank, lowest first; ties go to the leftmost position (HF word.rs merge_all).
  struct Cand {
    int32_t rank, pos, new_id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  auto lookup = [&](int32_t a, int32_t b) -> const std::pair<int32_t, int32_t>* {
    auto it = merges_.find((static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b));
    return it == merges_.end() ? nullptr : &it->second;
  };
  std::vector<Cand> heap_store;
  heap_store.reserve(syms.size());
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> queue(std::greater<Cand>(),
                                                                         std::move(heap_store));
  for (size_t k = 0; k + 1 < syms.size(); ++k) {
    if (auto* m = lookup(syms[k].id, syms[k + 1].id))
      queue.push({m->first, static_cast<int32_t>(k), m->second});
  }
  while (!queue.empty()) {
    Cand top = queue.top();
    queue.pop();
    Sym& cur = syms[top.pos];
    if (!cur.alive || cur.next < 0) continue;
    Sym& right = syms[cur.next];
    auto* m = lookup(cur.id, right.id);
    if (!m || m->second != top.new_id) continue;  // stale entry
    cur.id = top.new_id;
    right.alive = false;
    cur.next = right.next;
    if (cur.next >= 0) syms[cur.next].prev = top.pos;
    if (cur.prev >= 0) {
      if (auto* pm = lookup(syms[cur.prev].id, cur.id))
        queue.push({pm->first, cur.prev, pm->second});
    }
    if (cur.next >= 0) {
      if (auto* nm = lookup(cur.id, syms[cur.next].id))
        queue.push({nm->first, top.pos, nm->second});
    }
  }
  for (const auto& s : syms) {
    if (s.alive) out.push_back(s.id);
  }
}

}  // namespace hogwild::tok
