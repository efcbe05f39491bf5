// Step-end detection; the rule is written out in steps.h.
#include "hogwild/steps.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"

namespace hogwild {
namespace {

/// Decodes the UTF-8 code point that ends at text.size(); sets `len` to its byte length.
/// Returns 0xFFFFFFFF (and len 1) for an invalid or truncated sequence.
uint32_t last_code_point(std::string_view text, size_t& len) {
  len = 1;
  if (text.empty()) return 0xFFFFFFFF;
  size_t start = text.size() - 1;
  while (start > 0 && text.size() - start < 4 && (uint8_t(text[start]) & 0xC0) == 0x80) --start;
  const auto* b = reinterpret_cast<const uint8_t*>(text.data()) + start;
  size_t n = text.size() - start;
  uint32_t cp = 0;
  size_t need = 0;
  if (b[0] < 0x80)
    need = 1, cp = b[0];
  else if ((b[0] & 0xE0) == 0xC0)
    need = 2, cp = b[0] & 0x1F;
  else if ((b[0] & 0xF0) == 0xE0)
    need = 3, cp = b[0] & 0x0F;
  else if ((b[0] & 0xF8) == 0xF0)
    need = 4, cp = b[0] & 0x07;
  if (need == 0 || need != n) return 0xFFFFFFFF;
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (b[i] & 0x3F);
  len = n;
  return cp;
}

// Characters that may follow the punctuation that ends a sentence: closing brackets and quotes,
// markdown emphasis/code marks, and the dollar that closes inline math.
constexpr uint32_t kClosers[] = {
    ')',
    ']',
    '}',
    '"',
    '\'',
    '`',
    '*',
    '_',
    '$',
    0x201D /* ” */,
    0x2019 /* ’ */,
    0x00BB /* » */,
    0x203A /* › */,
    0x300D /* 」 */,
    0x300F /* 』 */,
    0x3011 /* 】 */,
    0x3015 /* 〕 */,
    0x3009 /* 〉 */,
    0x300B /* 》 */,
    0xFF09 /* ） */,
    0xFF3D /* ］ */,
    0xFF5D /* ｝ */,
    0xFF02 /* ＂ */,
    0xFF07 /* ＇ */,
};

// Sentence-ending punctuation, by script (steps.h lists them).
constexpr uint32_t kSentenceEnds[] = {
    '.',
    '?',
    '!',
    0x203C /* ‼ */,
    0x203D /* ‽ */,
    0x2047 /* ⁇ */,
    0x2048 /* ⁈ */,
    0x2049 /* ⁉ */,
    0x2026 /* … */,
    0x3002 /* 。 */,
    0xFF1F /* ？ */,
    0xFF01 /* ！ */,
    0xFF0E /* ． */,
    0xFF61 /* ｡ */,
    0xFE12 /* ︒ */,
    0xFE52 /* ﹒ */,
    0xFE56 /* ﹖ */,
    0xFE57 /* ﹗ */,
    0x061F /* ؟ Arabic */,
    0x06D4 /* ۔ Arabic full stop */,
    0x0964 /* । */,
    0x0965 /* ॥ */,
    0x0589 /* ։ Armenian */,
    0x055E /* ՞ Armenian */,
    0x037E /* ; Greek question mark */,
    0x1362 /* ። Ethiopic */,
    0x1367 /* ፧ Ethiopic */,
    0x104B /* ။ Myanmar */,
    0x17D4 /* ។ Khmer */,
    0x0F0D /* ། Tibetan */,
};

template <size_t N>
bool contains(const uint32_t (&table)[N], uint32_t cp) {
  return std::find(std::begin(table), std::end(table), cp) != std::end(table);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/// Length of a run of `c` starting at i.
size_t run_length(std::string_view s, size_t i, char c) {
  size_t n = 0;
  while (i + n < s.size() && s[i + n] == c) ++n;
  return n;
}

/// True when the last line of `text` is a fence line that closes a code fence (a finished code
/// block is a complete unit, like a sentence). Precondition: open_block(text) == none.
bool ends_with_closed_fence(std::string_view text) {
  size_t line_begin = text.rfind('\n');
  line_begin = line_begin == std::string_view::npos ? 0 : line_begin + 1;
  std::string_view line = text.substr(line_begin);
  size_t indent = 0;
  while (indent < line.size() && (line[indent] == ' ' || line[indent] == '\t')) ++indent;
  if (indent == line.size() || (line[indent] != '`' && line[indent] != '~')) return false;
  size_t run = run_length(line, indent, line[indent]);
  if (run < 3 || !std::all_of(line.begin() + indent + run, line.end(), is_space)) return false;
  OpenBlock before = open_block(text.substr(0, line_begin));
  return before == OpenBlock::backtick_fence || before == OpenBlock::tilde_fence;
}

}  // namespace

bool is_sentence_end(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  while (!text.empty()) {
    size_t len = 0;
    uint32_t cp = last_code_point(text, len);
    if (contains(kSentenceEnds, cp)) return true;
    if (!contains(kClosers, cp)) return false;
    text.remove_suffix(len);
  }
  return false;
}

OpenBlock open_block(std::string_view text) {
  char fence_char = 0;  // '`' or '~' while inside a fence
  size_t fence_len = 0;
  bool dollar = false, bracket = false;
  size_t line_begin = 0;
  while (line_begin < text.size()) {
    size_t line_end = text.find('\n', line_begin);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::string_view line = text.substr(line_begin, line_end - line_begin);
    size_t indent = 0;
    while (indent < line.size() && (line[indent] == ' ' || line[indent] == '\t')) ++indent;
    char c = indent < line.size() ? line[indent] : 0;
    size_t run = (c == '`' || c == '~') ? run_length(line, indent, c) : 0;
    if (fence_char) {
      // Inside a fence only a closing fence line matters: same char, at least as long, nothing
      // else.
      if (c == fence_char && run >= fence_len &&
          std::all_of(line.begin() + indent + run, line.end(), is_space))
        fence_char = 0;
    } else if (run >= 3 && !dollar && !bracket &&
               (c == '~' || line.find('`', indent + run) == std::string_view::npos)) {
      // (CommonMark: a backtick fence's info string has no backtick, so ```x``` is inline code.)
      fence_char = c;
      fence_len = run;
    } else {
      for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) {
          if (line[i + 1] == '[' && !dollar) bracket = true;
          if (line[i + 1] == ']' && bracket) bracket = false;
          ++i;  // a backslash takes the next byte with it (\$ is a literal dollar)
        } else if (line[i] == '$' && i + 1 < line.size() && line[i + 1] == '$' && !bracket) {
          dollar = !dollar;
          ++i;
        }
      }
    }
    line_begin = line_end + 1;
  }
  if (fence_char == '`') return OpenBlock::backtick_fence;
  if (fence_char == '~') return OpenBlock::tilde_fence;
  if (dollar) return OpenBlock::dollar_math;
  if (bracket) return OpenBlock::bracket_math;
  return OpenBlock::none;
}

StepEnd find_step_end(std::string_view step_text, size_t newest_len, std::string_view separator) {
  HOGWILD_CHECK(newest_len <= step_text.size());
  HOGWILD_CHECK(!separator.empty());
  if (newest_len == 0) return {};
  const size_t newest_begin = step_text.size() - newest_len;
  const size_t from =
      newest_begin >= separator.size() - 1 ? newest_begin - (separator.size() - 1) : 0;
  const size_t pos = step_text.find(separator, from);
  if (pos == std::string_view::npos) return {};
  if (!std::all_of(step_text.begin() + pos + separator.size(), step_text.end(), is_space))
    return {};
  std::string_view before = step_text.substr(0, pos);
  if (open_block(before) != OpenBlock::none) return {};
  if (!is_sentence_end(before) && !ends_with_closed_fence(before)) return {};
  return {true, pos, step_text.size()};
}

}  // namespace hogwild
