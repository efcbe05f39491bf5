#include "tokenizer/unicode.h"

#include <utf8proc.h>

namespace hogwild::tok {

// Well-formed UTF-8 lead bytes (Unicode Table 3-7): sequence length and the allowed range of the
// second byte. Returns false for a byte that cannot start a multi-byte sequence.
static bool utf8_lead(unsigned char c, int& len, unsigned char& lo, unsigned char& hi) {
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

int utf8_seq_len(std::string_view s, size_t i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  unsigned char c = p[i];
  if (c < 0x80) return 1;
  int len;
  unsigned char lo, hi;
  if (!utf8_lead(c, len, lo, hi)) return 0;
  if (i + 1 >= n || p[i + 1] < lo || p[i + 1] > hi) return 0;
  for (int k = 2; k < len; ++k) {
    if (i + k >= n || (p[i + k] & 0xC0) != 0x80) return 0;
  }
  return len;
}

// Number of bytes of the maximal subpart of an ill-formed sequence starting at s[i]: the lead byte
// plus the continuation bytes that could still have been a valid prefix (at least 1).
static size_t maximal_subpart(std::string_view s, size_t i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  unsigned char c = p[i];
  int len;
  unsigned char lo, hi;
  if (!utf8_lead(c, len, lo, hi)) return 1;
  size_t k = 1;
  if (i + 1 >= n || p[i + 1] < lo || p[i + 1] > hi) return 1;
  k = 2;
  while (static_cast<int>(k) < len && i + k < n && (p[i + k] & 0xC0) == 0x80) ++k;
  return k;
}

bool utf8_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    int l = utf8_seq_len(s, i);
    if (l == 0) return false;
    i += l;
  }
  return true;
}

std::string utf8_sanitize(std::string_view s) {
  if (utf8_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    int l = utf8_seq_len(s, i);
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

char32_t utf8_next(std::string_view s, size_t& i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  unsigned char c = p[i];
  if (c < 0x80) {
    i += 1;
    return c;
  }
  if (c < 0xE0) {
    char32_t cp = ((c & 0x1F) << 6) | (p[i + 1] & 0x3F);
    i += 2;
    return cp;
  }
  if (c < 0xF0) {
    char32_t cp = ((c & 0x0F) << 12) | ((p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
    i += 3;
    return cp;
  }
  char32_t cp = ((c & 0x07) << 18) | ((p[i + 1] & 0x3F) << 12) | ((p[i + 2] & 0x3F) << 6) |
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

bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

bool is_alnum(char32_t c) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

namespace {
struct ByteTables {
  std::array<char32_t, 256> b2c{};
  std::array<std::string, 256> b2u{};
  std::array<int16_t, 324> c2b{};  // code points < 324 cover the whole alphabet
  ByteTables() {
    c2b.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      b2c[b] = printable ? static_cast<char32_t>(b) : next++;
      c2b[b2c[b]] = static_cast<int16_t>(b);
      utf8_append(b2u[b], b2c[b]);
    }
  }
};
const ByteTables& tables() {
  static const ByteTables t;
  return t;
}
}  // namespace

const std::array<char32_t, 256>& byte_to_char() { return tables().b2c; }
const std::array<std::string, 256>& byte_to_utf8() { return tables().b2u; }
int char_to_byte(char32_t cp) { return cp < 324 ? tables().c2b[cp] : -1; }

}  // namespace hogwild::tok
