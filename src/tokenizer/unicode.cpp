#include "tokenizer/unicode.h"

#include <utf8proc.h>

namespace hogwild::tok {

bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
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
