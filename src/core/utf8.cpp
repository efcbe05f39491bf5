// UTF-8 validity and U+FFFD substitution (utf8.h).
#include "core/utf8.h"

namespace hogwild {

namespace {

// Well-formed UTF-8 lead bytes (Unicode Table 3-7): sequence length and the allowed range of the
// second byte. Returns false for a byte that cannot start a multi-byte sequence.
bool utf8_lead(unsigned char c, int& len, unsigned char& lo, unsigned char& hi) {
  lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c == 0xE0) {
    len = 3, lo = 0xA0;
  } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
    len = 3;
  } else if (c == 0xED) {
    len = 3, hi = 0x9F;
  } else if (c == 0xF0) {
    len = 4, lo = 0x90;
  } else if (c >= 0xF1 && c <= 0xF3) {
    len = 4;
  } else if (c == 0xF4) {
    len = 4, hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

// Number of bytes of the maximal subpart of an ill-formed sequence starting at s[i]: the lead byte
// plus the continuation bytes that could still have been a valid prefix (at least 1).
size_t maximal_subpart(std::string_view s, size_t i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  int len;
  unsigned char lo, hi;
  if (!utf8_lead(p[i], len, lo, hi)) return 1;
  if (i + 1 >= n || p[i + 1] < lo || p[i + 1] > hi) return 1;
  size_t k = 2;
  while (static_cast<int>(k) < len && i + k < n && (p[i + k] & 0xC0) == 0x80) ++k;
  return k;
}

}  // namespace

int utf8_seq_len(std::string_view s, size_t i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  const unsigned char c = p[i];
  if (c < 0x80) return 1;
  int len;
  unsigned char lo, hi;
  if (!utf8_lead(c, len, lo, hi)) return 0;
  if (i + 1 >= n || p[i + 1] < lo || p[i + 1] > hi) return 0;
  for (int k = 2; k < len; ++k)
    if (i + k >= n || (p[i + k] & 0xC0) != 0x80) return 0;
  return len;
}

bool utf8_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const int l = utf8_seq_len(s, i);
    if (l == 0) return false;
    i += l;
  }
  return true;
}

std::string utf8_lossy(std::string_view s) {
  if (utf8_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    const int l = utf8_seq_len(s, i);
    if (l > 0) {
      out.append(s.data() + i, l);
      i += l;
    } else {
      out += "\xEF\xBF\xBD";
      i += maximal_subpart(s, i);
    }
  }
  return out;
}

size_t utf8_complete_prefix(std::string_view s) {
  // A sequence still being streamed starts at most 3 bytes from the end and is a maximal subpart
  // that reaches the end of s without reaching its full length.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t i = n - back;
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: the lead is further back
    int len;
    unsigned char lo, hi;
    if (c < 0x80 || !utf8_lead(c, len, lo, hi)) return n;
    return maximal_subpart(s, i) == back && static_cast<int>(back) < len ? i : n;
  }
  return n;
}

char32_t utf8_next(std::string_view s, size_t& i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char c = p[i];
  if (c < 0x80) {
    i += 1;
    return c;
  }
  if (c < 0xE0) {
    const char32_t cp = ((c & 0x1F) << 6) | (p[i + 1] & 0x3F);
    i += 2;
    return cp;
  }
  if (c < 0xF0) {
    const char32_t cp = ((c & 0x0F) << 12) | ((p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
    i += 3;
    return cp;
  }
  const char32_t cp = ((c & 0x07) << 18) | ((p[i + 1] & 0x3F) << 12) | ((p[i + 2] & 0x3F) << 6) |
                      (p[i + 3] & 0x3F);
  i += 4;
  return cp;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace hogwild
