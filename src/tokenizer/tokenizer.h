// Hugging Face `tokenizer.json` tokenizer (BPE family), byte-identical to the Rust `tokenizers`
// library (v0.22) on the files of Qwen3, Llama 3 and DeepSeek-V3 (see tests/tokenizer/).
//
// Usage (for the chat-template, engine and server code):
//
//   hogwild::Tokenizer tok = hogwild::Tokenizer::from_dir("/models/Qwen3-8B");
//   std::vector<int32_t> ids = tok.encode("Hello <|im_start|>", /*add_special_tokens=*/false);
//   std::string text = tok.decode(ids, /*skip_special_tokens=*/false);
//   hogwild::IncrementalDecoder stream(tok);            // for streaming generation output
//   for (int32_t id : generated) std::cout << stream.push(id);
//   std::cout << stream.flush();
//
// Pipeline of encode (HF tokenizer/mod.rs `encode_single_sequence`):
//   1. UTF-8 validation: invalid byte sequences are replaced by U+FFFD, one per maximal invalid
//      subpart (the rule of Rust `String::from_utf8_lossy` and of JS `TextDecoder`). HF cannot hold
//      invalid UTF-8 at all; this is our documented choice, and encode never throws on any bytes.
//   2. Added tokens with normalized=false are cut out of the raw text (leftmost-longest match,
//      honoring lstrip / rstrip / single_word); they are never split further.
//   3. The normalizer runs on the remaining pieces; added tokens with normalized=true are then cut
//      out of the normalized pieces.
//   4. The pre-tokenizer splits the rest (Split regexes run with PCRE2, UTF + UCP; ByteLevel maps
//      bytes to the GPT-2 printable alphabet), the model (BPE, merges by rank) turns each piece
//      into ids, and with add_special_tokens the post-processor adds e.g. a BOS id.
//
// Thread-safety: a loaded Tokenizer is immutable; encode/decode/lookup may be called from many
// threads at once. IncrementalDecoder is one per stream.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hogwild {

namespace tok {
struct Pipeline;  // internal (tokenizer/pipeline.h)
}

/// Flags read from `tokenizer_config.json` (transformers' side of the tokenizer). All optional.
struct TokenizerConfig {
  std::optional<std::string> bos_token;  // e.g. "<|begin_of_text|>"; nullopt when null/absent
  std::optional<std::string> eos_token;  // e.g. "<|im_end|>"
  std::optional<std::string> pad_token;
  std::optional<bool> add_bos_token;  // transformers LlamaTokenizerFast: prepend BOS on encode
  std::optional<bool> add_eos_token;  // transformers LlamaTokenizerFast: append EOS on encode
  std::string tokenizer_class;        // e.g. "Qwen2Tokenizer", "LlamaTokenizerFast"
  std::string chat_template;          // raw Jinja source if present in the config (may be "")
};

class Tokenizer {
 public:
  /// Parses the contents of a `tokenizer.json`. `source` names it in error messages.
  /// Throws hogwild::Error on malformed JSON, unsupported component types (only the BPE model is
  /// supported), invalid regexes, or merges that reference tokens missing from the vocab.
  static Tokenizer from_json(std::string_view json_text,
                             const std::string& source = "tokenizer.json");
  /// Reads and parses a `tokenizer.json` file. Throws hogwild::Error (with the path) on failure.
  static Tokenizer from_file(const std::string& path);
  /// Loads `dir/tokenizer.json` and, when present, `dir/tokenizer_config.json`. When the config
  /// names a transformers class that rebuilds the post-processor from add_bos_token/add_eos_token
  /// (LlamaTokenizerFast, CodeLlamaTokenizerFast, GemmaTokenizerFast: transformers
  /// `update_post_processor`), encode(…, add_special_tokens=true) follows those flags exactly as
  /// `AutoTokenizer.from_pretrained(dir)(text)` does (e.g. DeepSeek-V3 gets its BOS). Otherwise
  /// behavior is that of tokenizer.json alone. Throws hogwild::Error if tokenizer.json is missing.
  static Tokenizer from_dir(const std::string& dir);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  /// Text (any bytes; see the header comment for invalid UTF-8) -> token ids. With
  /// add_special_tokens the post-processor adds its tokens (e.g. Llama-style BOS). Never throws on
  /// input text, except hogwild::Error if a hostile tokenizer.json regex exceeds PCRE2's match
  /// limits.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;

  /// Token ids -> text, through the tokenizer.json decoder (ByteLevel, ByteFallback, …). Ids
  /// outside the vocab are skipped (as HF does). With skip_special_tokens, added tokens marked
  /// special are dropped. Bytes that do not form valid UTF-8 come out as U+FFFD (Rust
  /// from_utf8_lossy rule).
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

  /// Token string -> id (added tokens first, then the model vocab); nullopt if unknown.
  std::optional<int32_t> token_to_id(std::string_view token) const;
  /// Id -> token string as stored in the vocab (byte-level form, e.g. "Ġhello"); nullopt if none.
  std::optional<std::string> id_to_token(int32_t id) const;
  /// The printable piece of one token as decode({id}) renders it (for CLIs and logs).
  std::string piece(int32_t id) const { return decode({id}, false); }
  /// Number of ids in use = (largest id of the model vocab or added tokens) + 1. Size the
  /// embedding matrix check against this, not against the entry count.
  int32_t vocab_size() const;
  /// True if id is an added token flagged "special" (e.g. <|im_end|>).
  bool is_special(int32_t id) const;

  /// tokenizer_config.json contents (empty struct when loaded without a directory).
  const TokenizerConfig& config() const { return config_; }
  /// Ids of config().bos_token / eos_token when they name a known token; nullopt otherwise.
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  /// Throws hogwild::Error when this tokenizer produces ids >= vocab_size (the model's
  /// config.json vocab_size): tokenizer.json then belongs to another model. `model_dir` names the
  /// directory in the message.
  void check_fits(int64_t vocab_size, const std::string& model_dir) const;

 private:
  Tokenizer();
  std::unique_ptr<tok::Pipeline> p_;
  TokenizerConfig config_;
};

/// Streaming detokenizer (the algorithm of HF `DecodeStream`): push ids one at a time and get the
/// text they complete. A UTF-8 character split across several byte-level tokens is held back until
/// it is complete, so push() never returns a broken character. The concatenation of all push()
/// results and a final flush() equals tok.decode(all ids, skip_special_tokens).
/// PRECONDITION: the Tokenizer outlives the decoder.
class IncrementalDecoder {
 public:
  explicit IncrementalDecoder(const Tokenizer& tok, bool skip_special_tokens = false)
      : tok_(&tok), skip_special_(skip_special_tokens) {}
  /// Adds one id; returns the newly completed text (often "", e.g. mid-character).
  std::string push(int32_t id);
  /// Returns whatever is still held back (e.g. a trailing incomplete character, rendered as
  /// U+FFFD exactly as decode would) and resets the stream.
  std::string flush();

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;  // window of recent ids; ids_[0..prefix_index_) are context
  std::string prefix_;        // decode(ids_[0..prefix_index_)) already emitted
  size_t prefix_index_ = 0;
};

}  // namespace hogwild
