#include "server/text_stream.h"

namespace hogwild::server {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the sequence a lead byte opens and the range of its second byte (RFC 3629 table);
// 0 for a byte that cannot start a character.
struct Lead {
  int len;
  unsigned char lo, hi;
};
Lead lead_of(unsigned char c) {
  if (c < 0x80) return {1, 0, 0};
  if (c >= 0xC2 && c <= 0xDF) return {2, 0x80, 0xBF};
  if (c == 0xE0) return {3, 0xA0, 0xBF};
  if (c == 0xED) return {3, 0x80, 0x9F};
  if (c >= 0xE1 && c <= 0xEF) return {3, 0x80, 0xBF};
  if (c == 0xF0) return {4, 0x90, 0xBF};
  if (c >= 0xF1 && c <= 0xF3) return {4, 0x80, 0xBF};
  if (c == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// Decodes s into out; stops before a trailing incomplete (but so far valid) sequence unless
// `final`. Returns the number of bytes consumed.
size_t decode(std::string_view s, bool final, std::string& out) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const Lead l = lead_of(c);
    if (l.len == 1) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (l.len == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    // Count the valid continuation bytes that follow.
    size_t k = 1;
    while (k < static_cast<size_t>(l.len) && i + k < s.size()) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      const bool ok = k == 1 ? (b >= l.lo && b <= l.hi) : (b >= 0x80 && b <= 0xBF);
      if (!ok) break;
      ++k;
    }
    if (k == static_cast<size_t>(l.len)) {
      out.append(s.substr(i, k));
      i += k;
    } else if (i + k == s.size() && !final) {
      break;  // incomplete at the end: wait for more bytes
    } else {
      out += kReplacement;  // the maximal invalid subpart
      i += k;
    }
  }
  return i;
}

}  // namespace

std::string Utf8Decoder::push(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  const size_t used = decode(pending_, false, out);
  pending_.erase(0, used);
  return out;
}

std::string Utf8Decoder::flush() {
  std::string out;
  decode(pending_, true, out);
  pending_.clear();
  return out;
}

}  // namespace hogwild::server
