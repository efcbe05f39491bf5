// Text <-> token ids as the session needs them: encode formatting texts, and the raw bytes of each
// token (steps.h works on concatenated token bytes, not on a streaming decode). An interface so
// that tests can use a toy byte-level vocabulary; TokenizerCodec adapts hogwild::Tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hogwild {

class Tokenizer;

class TextCodec {
 public:
  virtual ~TextCodec() = default;
  /// Text -> ids, no special tokens added (formatting texts, prompts already templated).
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  /// Raw bytes of one token: for byte-level BPE the token's bytes (possibly a partial UTF-8
  /// character), for special tokens their text. Ids outside the vocabulary give "".
  virtual std::string token_bytes(int32_t id) const = 0;
  /// Number of ids the codec knows (ids >= this are never produced by encode).
  virtual int32_t vocab_size() const = 0;
  /// End-of-sequence ids of the tokenizer (tokenizer_config eos_token); may be empty.
  virtual std::vector<int32_t> eos_ids() const = 0;
  /// Concatenated token_bytes of ids.
  std::string bytes(const std::vector<int32_t>& ids) const {
    std::string s;
    for (int32_t id : ids) s += token_bytes(id);
    return s;
  }
};

/// Adapter over hogwild::Tokenizer. token_bytes: decode({id}) when that is valid UTF-8 without a
/// replacement character; otherwise the vocab string mapped back through the GPT-2 byte-level
/// alphabet (Qwen, Llama 3, DeepSeek). Precomputes every token's bytes (vocab_size strings).
/// PRECONDITION: the tokenizer outlives the codec.
class TokenizerCodec : public TextCodec {
 public:
  explicit TokenizerCodec(const Tokenizer& tok);
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string token_bytes(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(bytes_.size()); }
  std::vector<int32_t> eos_ids() const override;

 private:
  const Tokenizer* tok_;
  std::vector<std::string> bytes_;  // (vocab_size) raw bytes per id
};

/// A codec for token ids without text (a model directory without tokenizer.json, fed ids as they
/// are): every token's bytes are "" and the only text it encodes is "" (a one-worker "plain"
/// session encodes nothing else). Throws hogwild::Error for any other text.
class IdCodec : public TextCodec {
 public:
  explicit IdCodec(int32_t vocab_size) : vocab_size_(vocab_size) {}
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string token_bytes(int32_t) const override { return {}; }
  int32_t vocab_size() const override { return vocab_size_; }
  std::vector<int32_t> eos_ids() const override { return {}; }

 private:
  int32_t vocab_size_;
};

}  // namespace hogwild
