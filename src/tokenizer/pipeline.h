// Internal pieces of the tokenizer pipeline (see tokenizer.h for the order they run in). Each
// component mirrors the HF `tokenizers` type of the same name and is built from its JSON object by
// a parse_* function that throws hogwild::Error naming the unsupported/invalid field.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hogwild::tok {

using json = nlohmann::json;

/// Nesting limit for Sequence components (hostile files must not recurse without bound).
constexpr int kMaxDepth = 32;

/// Transparent hash so maps keyed by std::string can be probed with a string_view.
struct StrHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StrMap = std::unordered_map<std::string, int32_t, StrHash, std::equal_to<>>;

/// A compiled PCRE2 pattern (UTF | UCP). Regex patterns from tokenizer.json are Oniguruma syntax
/// in HF; the two agree on what these files use, except that PCRE2's \s also matches U+180E, so
/// \s and \S are rewritten to \p{White_Space} / \P{White_Space} (Oniguruma's meaning).
class Regex {
 public:
  /// literal=true matches `pattern` as a plain string (HF `{"String": ...}` patterns).
  /// Throws hogwild::Error with PCRE2's message and offset on a bad pattern.
  Regex(const std::string& pattern, bool literal);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  /// Appends the [start, end) byte offsets of successive non-overlapping matches in s (valid
  /// UTF-8). An empty match advances one character, as Oniguruma's find_iter does. Throws
  /// hogwild::Error if PCRE2's match/depth limits are hit (catastrophic backtracking).
  void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;
  /// Same matches, handed one at a time to f(begin, end) without building a list.
  template <typename F>
  void for_each(std::string_view s, F&& f) const {
    for_each_impl(s, &f, [](void* o, size_t b, size_t e) { (*static_cast<F*>(o))(b, e); });
  }

 private:
  void for_each_impl(std::string_view s, void* ctx, void (*cb)(void*, size_t, size_t)) const;
  void* code_ = nullptr;  // pcre2_code*
  void* mctx_ = nullptr;  // pcre2_match_context*
  bool jit_ = false;
  bool never_ = false;
};

/// Parses an HF pattern object {"Regex": "..."} or {"String": "..."}.
std::unique_ptr<Regex> parse_pattern(const json& j, const char* where);

/// HF normalizers (normalizers/*.rs): NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace,
/// Sequence.
struct Normalizer {
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& s) const = 0;
};
std::unique_ptr<Normalizer> parse_normalizer(const json& j, int depth = 0);  // null -> nullptr

/// Non-owning callback for the pieces a pre-tokenizer produces: (piece, first) where piece is a
/// non-empty view valid only during the call and `first` says it starts its input segment.
class EmitRef {
 public:
  template <typename F>
  EmitRef(F& f)  // NOLINT: implicit from any callable lvalue
      : obj_(&f),
        fn_([](void* o, std::string_view s, bool first) { (*static_cast<F*>(o))(s, first); }) {}
  void operator()(std::string_view s, bool first) const { fn_(obj_, s, first); }

 private:
  void* obj_;
  void (*fn_)(void*, std::string_view, bool);
};

/// HF pre-tokenizers: Sequence, Split, ByteLevel, Digits, Metaspace, Whitespace, WhitespaceSplit.
/// split() cuts one piece (valid UTF-8) and emits the resulting non-empty pieces in order; it
/// streams so that a large input never materializes millions of strings.
struct PreTokenizer {
  virtual ~PreTokenizer() = default;
  virtual void split(std::string_view piece, bool first, EmitRef emit) const = 0;
};
std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const json& j, int depth = 0);

/// HF decoders: ByteLevel, ByteFallback, Fuse, Replace, Strip, Metaspace, Sequence.
/// decode_chain rewrites the token strings; the final text is their concatenation.
struct Decoder {
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};
std::unique_ptr<Decoder> parse_decoder(const json& j, int depth = 0);

/// HF post-processors: ByteLevel (no ids), TemplateProcessing (single sequence), Bert, Roberta,
/// Sequence. process() adds special ids around one encoded sequence when add_special is true.
struct PostProcessor {
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int32_t>& ids, bool add_special) const = 0;
};
std::unique_ptr<PostProcessor> parse_post_processor(const json& j, int depth = 0);
/// TemplateProcessing "bos? $A eos?" as transformers' LlamaTokenizerFast.update_post_processor.
std::unique_ptr<PostProcessor> make_bos_eos_processor(std::optional<int32_t> bos,
                                                      std::optional<int32_t> eos);

/// HF models/bpe/model.rs: vocab, merges by rank, byte_fallback, ignore_merges, unk.
class Bpe {
 public:
  explicit Bpe(const json& model);
  /// Appends the ids of one pre-tokenized piece (non-empty, valid UTF-8).
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(int32_t id) const;
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;  // no cache
  // The ids of word's characters before any merge (with prefix / suffix, byte fallback, unk).
  std::vector<int32_t> initial_ids(std::string_view word) const;
  // Applies the merges to ids (non-empty) by rank, lowest first, ties leftmost (HF word.rs
  // merge_all), and appends the result to out.
  void merge_by_rank(const std::vector<int32_t>& ids, std::vector<int32_t>& out) const;
  uint64_t uid_;  // identifies this model in the per-thread word cache
  StrMap vocab_;
  std::vector<const std::string*> id_to_token_;  // keys of vocab_; nullptr for holes
  // (left id << 32 | right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::string prefix_, suffix_;          // continuing_subword_prefix, end_of_word_suffix
  std::array<int32_t, 256> byte_ids_{};  // id of "<0xXX>" or -1 (byte_fallback)
  std::array<int32_t, 512> char_ids_{};  // id of the one-character token U+0000..U+01FF or -1
};

/// One added token (tokenizer.json "added_tokens"; HF added_vocabulary.rs).
struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

/// A piece of the input: plain text still to be tokenized (id < 0) or a matched added token.
struct Segment {
  std::string text;
  int32_t id = -1;
};

/// Byte trie for leftmost-longest matching of added-token contents.
class TokenTrie {
 public:
  void insert(std::string_view s, int32_t token_index);
  bool empty() const { return nodes_.size() <= 1; }
  /// Leftmost-longest match at or after `from`: sets [start, end) and the token index.
  bool find(std::string_view s, size_t from, size_t& start, size_t& end, int32_t& index) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    int32_t token = -1;
  };
  std::vector<Node> nodes_{Node{}};
  std::array<bool, 256> first_{};  // bytes that start some token
};

/// Everything a loaded tokenizer holds.
struct Pipeline {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Bpe> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  std::vector<AddedToken> added;                     // in file order, ids resolved as HF does
  std::unordered_map<int32_t, int32_t> added_by_id;  // id -> index in `added`
  StrMap added_by_content;                           // content -> id
  TokenTrie raw_trie, normalized_trie;               // normalized=false / normalized=true tokens

  /// Cuts added tokens out of each plain segment, matching `trie` (HF find_matches).
  void split_added(std::vector<Segment>& segs, const TokenTrie& trie) const;
  std::vector<int32_t> encode(std::string_view text, bool add_special) const;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const;
};

}  // namespace hogwild::tok
