// Answer extraction; the rules are written out in answer.h.
#include "hogwild/answer.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace hogwild {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

/// Given text just after an opening "{", returns the offset of the balancing "}" or npos.
/// A backslash takes the next byte with it, so \{ and \} do not count.
size_t balancing_brace(std::string_view s) {
  int depth = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '{') {
      ++depth;
    } else if (s[i] == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

/// The argument of a box command whose name ends at `i`, or nullopt when it is not complete.
std::optional<std::string> box_argument(std::string_view text, size_t i) {
  if (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i])))
    return std::nullopt;  // \boxedx
  size_t j = i;
  while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
  if (j < text.size() && text[j] == '{') {
    std::string_view inner = text.substr(j + 1);
    size_t close = balancing_brace(inner);
    if (close == std::string_view::npos) return std::nullopt;
    return trim(inner.substr(0, close));
  }
  if (j == i) return std::nullopt;  // "\boxed" followed by neither a space nor "{"
  size_t k = j;
  while (k < text.size() && !is_space(text[k]) && text[k] != '$') ++k;
  if (k == j) return std::nullopt;
  return std::string(text.substr(j, k - j));
}

/// True when `line` (without its newline) is a closing ``` fence line of at least `len` backticks.
bool is_closing_fence(std::string_view line, size_t len) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  size_t n = 0;
  while (i + n < line.size() && line[i + n] == '`') ++n;
  return n >= len && std::all_of(line.begin() + i + n, line.end(), is_space);
}

std::string strip_final_newline(std::string_view s) {
  if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return std::string(s);
}

/// Offset of the first closing fence line (>= 3 backticks) in code that starts at a line start,
/// or npos.
size_t closing_fence_line(std::string_view code) {
  size_t begin = 0;
  while (begin <= code.size()) {
    size_t end = code.find('\n', begin);
    bool last = end == std::string_view::npos;
    if (last) end = code.size();
    std::string_view line = code.substr(begin, end - begin);
    if (!line.empty() && is_closing_fence(line, 3)) return begin;
    if (last) break;
    begin = end + 1;
  }
  return std::string_view::npos;
}

}  // namespace

std::optional<std::string> extract_boxed(std::string_view text) {
  // Every box command, rightmost start first.
  std::vector<std::pair<size_t, size_t>> starts;  // (offset of backslash, offset after the name)
  for (std::string_view name : {std::string_view("\\boxed"), std::string_view("\\fbox")}) {
    for (size_t p = text.find(name); p != std::string_view::npos; p = text.find(name, p + 1))
      starts.emplace_back(p, p + name.size());
  }
  std::sort(starts.begin(), starts.end(), std::greater<>());
  for (auto [p, after] : starts) {
    if (auto arg = box_argument(text, after)) return arg;
  }
  return std::nullopt;
}

std::optional<std::string> extract_python_block(std::string_view text) {
  std::optional<std::string> found;
  size_t begin = 0;
  char fence_char = 0;  // inside any fence
  size_t fence_len = 0;
  bool python = false;
  size_t code_begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    size_t i = 0;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    char c = i < line.size() ? line[i] : 0;
    size_t run = 0;
    while ((c == '`' || c == '~') && i + run < line.size() && line[i + run] == c) ++run;
    if (fence_char) {
      if (c == fence_char && run >= fence_len &&
          std::all_of(line.begin() + i + run, line.end(), is_space)) {
        if (python) found = strip_final_newline(text.substr(code_begin, begin - code_begin));
        fence_char = 0;
      }
    } else if (run >= 3) {
      std::string info = trim(line.substr(i + run));
      std::transform(info.begin(), info.end(), info.begin(),
                     [](unsigned char x) { return std::tolower(x); });
      if (c == '`' && info.find('`') != std::string::npos) {
        // inline code such as ```x```, not a fence
      } else {
        fence_char = c;
        fence_len = run;
        python = info == "python" || info == "py" || info == "python3";
        code_begin = std::min(end + 1, text.size());
      }
    }
    begin = end + 1;
  }
  return found;
}

std::optional<std::string> extract_answer(std::string_view text, AnswerKind kind) {
  return kind == AnswerKind::boxed ? extract_boxed(text) : extract_python_block(text);
}

std::optional<std::string> step_answer(std::string_view step_text, const AnswerFormat& format) {
  if (!format.marker.empty()) {
    size_t p = step_text.rfind(format.marker);
    if (p == std::string_view::npos) return std::nullopt;
    step_text = step_text.substr(p + format.marker.size());
  }
  return extract_answer(step_text, format.kind);
}

bool has_final_answer(std::string_view step_text, const AnswerFormat& format) {
  return step_answer(step_text, format).has_value();
}

std::optional<std::string> finish_answer(std::string_view continuation, AnswerKind kind) {
  if (kind == AnswerKind::boxed) {
    size_t close = balancing_brace(continuation);
    if (close == std::string_view::npos) return std::nullopt;
    return trim(continuation.substr(0, close));
  }
  size_t fence = closing_fence_line(continuation);
  if (fence == std::string_view::npos) return std::nullopt;
  return strip_final_newline(continuation.substr(0, fence));
}

bool finisher_done(std::string_view continuation, AnswerKind kind) {
  return finish_answer(continuation, kind).has_value();
}

int majority_answer(const std::vector<std::optional<std::string>>& answers,
                    const std::function<bool(const std::string&, const std::string&)>& same) {
  std::vector<std::pair<size_t, int>> classes;  // (first answer's index, votes), first-seen order
  for (size_t i = 0; i < answers.size(); ++i) {
    const auto& a = answers[i];
    if (!a || a->find_first_not_of(" \t\r\n") == std::string::npos) continue;
    auto it = std::find_if(classes.begin(), classes.end(),
                           [&](auto& c) { return same(*a, *answers[c.first]); });
    if (it == classes.end())
      classes.push_back({i, 1});
    else
      ++it->second;
  }
  if (classes.empty()) return -1;
  size_t best = 0;  // ties: the class seen first (strict > keeps it)
  for (size_t i = 1; i < classes.size(); ++i)
    if (classes[i].second > classes[best].second) best = i;
  return static_cast<int>(classes[best].first);
}

}  // namespace hogwild
