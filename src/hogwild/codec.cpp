// TokenizerCodec: raw token bytes for step detection (see codec.h).
#include "hogwild/codec.h"

#include <array>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace hogwild {

namespace {

// Inverse of the GPT-2 byte-level alphabet (bytes_to_unicode in openai/gpt-2 encoder.py, used by
// HF ByteLevel): printable bytes 33..126, 161..172, 174..255 map to themselves, the other 68 bytes
// to U+0100 + n in increasing byte order. Returns -1 for a code point outside the alphabet.
int byte_of_codepoint(uint32_t cp) {
  static const std::array<int, 324> table = [] {
    std::array<int, 324> t{};
    t.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      if (printable)
        t[b] = b;
      else
        t[256 + n++] = b;
    }
    return t;
  }();
  return cp < table.size() ? table[cp] : -1;
}

// Decodes UTF-8 `s` into code points; returns false on invalid input.
bool utf8_codepoints(const std::string& s, std::vector<uint32_t>& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? c : (c & (0x7f >> len));
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    out.push_back(cp);
    i += len;
  }
  return true;
}

}  // namespace

TokenizerCodec::TokenizerCodec(const Tokenizer& tok) : tok_(&tok) {
  const int32_t n = tok.vocab_size();
  bytes_.resize(n);
  std::vector<uint32_t> cps;
  for (int32_t id = 0; id < n; ++id) {
    std::string piece = tok.decode({id}, false);
    if (piece.find("\xEF\xBF\xBD") == std::string::npos) {
      bytes_[id] = std::move(piece);
      continue;
    }
    // A partial UTF-8 character: recover the raw bytes from the byte-level vocab string.
    auto s = tok.id_to_token(id);
    std::string raw;
    bool ok = s && utf8_codepoints(*s, cps);
    for (size_t i = 0; ok && i < cps.size(); ++i) {
      int b = byte_of_codepoint(cps[i]);
      if (b < 0)
        ok = false;
      else
        raw.push_back(static_cast<char>(b));
    }
    bytes_[id] = ok ? raw : piece;
  }
}

std::vector<int32_t> TokenizerCodec::encode(std::string_view text) const {
  return tok_->encode(text, false);
}

std::string TokenizerCodec::token_bytes(int32_t id) const {
  return id >= 0 && id < vocab_size() ? bytes_[id] : std::string();
}

std::vector<int32_t> TokenizerCodec::eos_ids() const {
  auto e = tok_->eos_id();
  return e ? std::vector<int32_t>{*e} : std::vector<int32_t>{};
}

std::vector<int32_t> IdCodec::encode(std::string_view text) const {
  if (!text.empty())
    fail(
        "this model directory has no tokenizer.json, so text ('{}') cannot be encoded; feed token "
        "ids",
        text.substr(0, 40));
  return {};
}

}  // namespace hogwild
