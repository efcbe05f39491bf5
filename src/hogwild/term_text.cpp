// Terminal-safe text, display widths and wrapping (term_text.h).
#include "hogwild/term_text.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include "core/utf8.h"

namespace hogwild {

namespace {
constexpr int kTab = 8;

bool shown_as_code(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}
}  // namespace

std::string terminal_safe(std::string_view bytes) {
  const std::string s = utf8_lossy(bytes);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const char32_t cp = utf8_next(s, i);
    if (cp == '\n' || cp == '\t') {
      out += static_cast<char>(cp);
    } else if (cp < 0x20) {
      out += '^';
      out += static_cast<char>(cp + 0x40);
    } else if (cp == 0x7F) {
      out += "^?";
    } else if (shown_as_code(cp)) {
      out += fmt::format("<U+{:04X}>", static_cast<uint32_t>(cp));
    } else {
      out.append(s, at, i - at);
    }
  }
  return out;
}

int char_width(char32_t cp) {
  const int w = utf8proc_charwidth(static_cast<utf8proc_int32_t>(cp));
  return w < 0 ? 0 : w;
}

int display_width(std::string_view s) {
  int col = 0;
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = utf8_next(s, i);
    col = cp == '\t' ? (col / kTab + 1) * kTab : col + char_width(cp);
  }
  return col;
}

std::vector<std::string> wrap_display(std::string_view s, int cols) {
  if (cols < 1) cols = 1;
  std::vector<std::string> lines(1);
  int col = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const char32_t cp = utf8_next(s, i);
    if (cp == '\n') {
      lines.emplace_back();
      col = 0;
      continue;
    }
    if (cp == '\t') {
      int spaces = (col / kTab + 1) * kTab - col;
      while (spaces-- > 0) {
        if (col == cols) lines.emplace_back(), col = 0;
        lines.back() += ' ';
        ++col;
      }
      continue;
    }
    const int w = char_width(cp);
    if (col + w > cols && col > 0) lines.emplace_back(), col = 0;
    lines.back().append(s.data() + at, i - at);
    col += w;
  }
  return lines;
}

std::string fit_columns(std::string_view s, int cols, bool keep_end) {
  if (display_width(s) <= cols) return std::string(s);
  std::vector<std::pair<size_t, size_t>> chars;  // (offset, length)
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    utf8_next(s, i);
    chars.emplace_back(at, i - at);
  }
  int used = 0;
  if (keep_end) {
    size_t k = chars.size();
    while (k > 0) {
      size_t j = 0;
      const int w = char_width(utf8_next(s.substr(chars[k - 1].first), j));
      if (used + w > cols) break;
      used += w;
      --k;
    }
    return std::string(s.substr(k < chars.size() ? chars[k].first : s.size()));
  }
  size_t k = 0;
  while (k < chars.size()) {
    size_t j = 0;
    const int w = char_width(utf8_next(s.substr(chars[k].first), j));
    if (used + w > cols) break;
    used += w;
    ++k;
  }
  return std::string(s.substr(0, k < chars.size() ? chars[k].first : s.size()));
}

}  // namespace hogwild
