#include "chat/strings.h"

#include <algorithm>

#include "chat/ustr.h"

namespace hogwild::chat {

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left,
                     bool right) {
  std::u32string cps = utf8_decode(s);
  std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : py_isspace(c);
  };
  size_t a = 0, b = cps.size();
  if (left)
    while (a < b && strip_it(cps[a])) ++a;
  if (right)
    while (b > a && strip_it(cps[b - 1])) --b;
  return utf8_encode(std::u32string_view(cps).substr(a, b - a));
}

std::vector<std::string> py_split_sep(const std::string& s, const std::string& sep,
                                      int64_t maxsplit, bool right) {
  std::vector<std::string> out;
  if (!right) {
    size_t p = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t q = s.find(sep, p);
      if (q == std::string::npos) break;
      out.push_back(s.substr(p, q - p));
      p = q + sep.size();
    }
    out.push_back(s.substr(p));
    return out;
  }
  size_t end = s.size();
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    if (end < sep.size()) break;
    size_t q = s.rfind(sep, end - sep.size());
    if (q == std::string::npos) break;
    out.push_back(s.substr(q + sep.size(), end - q - sep.size()));
    end = q;
  }
  out.push_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> py_split_ws(const std::string& s, int64_t maxsplit, bool right) {
  std::u32string cps = utf8_decode(s);
  std::vector<std::string> out;
  if (!right) {
    size_t i = 0, n = cps.size();
    while (true) {
      while (i < n && py_isspace(cps[i])) ++i;
      if (i == n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        size_t e = n;
        while (e > i && py_isspace(cps[e - 1])) --e;
        out.push_back(utf8_encode(std::u32string_view(cps).substr(i, e - i)));
        break;
      }
      size_t j = i;
      while (j < n && !py_isspace(cps[j])) ++j;
      out.push_back(utf8_encode(std::u32string_view(cps).substr(i, j - i)));
      i = j;
    }
    return out;
  }
  size_t e = cps.size();
  while (true) {
    while (e > 0 && py_isspace(cps[e - 1])) --e;
    if (e == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      size_t b = 0;
      while (b < e && py_isspace(cps[b])) ++b;
      out.push_back(utf8_encode(std::u32string_view(cps).substr(b, e - b)));
      break;
    }
    size_t b = e;
    while (b > 0 && !py_isspace(cps[b - 1])) --b;
    out.push_back(utf8_encode(std::u32string_view(cps).substr(b, e - b)));
    e = b;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

static bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

std::vector<std::string> py_splitlines(const std::string& s) {
  std::u32string cps = utf8_decode(s);
  std::vector<std::string> out;
  size_t i = 0, start = 0;
  while (i < cps.size()) {
    if (is_line_break(cps[i])) {
      out.push_back(utf8_encode(std::u32string_view(cps).substr(start, i - start)));
      if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
      start = ++i;
    } else {
      ++i;
    }
  }
  if (start < cps.size()) out.push_back(utf8_encode(std::u32string_view(cps).substr(start)));
  return out;
}

std::string py_title(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (char32_t c : utf8_decode(s)) {
    bool cased = cp_is_upper(c) || cp_is_lower(c);
    utf8_append(out, cased ? (prev_cased ? cp_lower(c) : cp_upper(c)) : c);
    prev_cased = cased;
  }
  return out;
}

std::string py_capitalize(const std::string& s) {
  std::string out;
  bool first = true;
  for (char32_t c : utf8_decode(s)) {
    utf8_append(out, first ? cp_upper(c) : cp_lower(c));
    first = false;
  }
  return out;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& neu,
                       int64_t count, size_t max_bytes) {
  std::string out;
  if (old.empty()) {  // Python inserts `neu` before every code point and at the end
    std::u32string cps = utf8_decode(s);
    int64_t done = 0;
    for (char32_t c : cps) {
      if (count < 0 || done < count) {
        out += neu;
        ++done;
      }
      utf8_append(out, c);
      if (out.size() > max_bytes) return out;
    }
    if (count < 0 || done < count) out += neu;
    return out;
  }
  size_t p = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t q = s.find(old, p);
    if (q == std::string::npos) break;
    out.append(s, p, q - p);
    out += neu;
    p = q + old.size();
    ++done;
    if (out.size() > max_bytes) return out;
  }
  out.append(s, p, std::string::npos);
  return out;
}

}  // namespace hogwild::chat
