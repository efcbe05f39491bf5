#include "chat/lexer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "chat/ustr.h"
#include "core/error.h"

namespace hogwild::chat {
namespace {

bool is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

class Lexer {
 public:
  explicit Lexer(const std::string& src) {
    // jinja2 first rewrites every \r\n and \r to \n, then drops one trailing newline
    // (keep_trailing_newline=False).
    s_.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i] == '\r') {
        s_ += '\n';
        if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
      } else {
        s_ += src[i];
      }
    }
    if (!s_.empty() && s_.back() == '\n') s_.pop_back();
    line_starts_.push_back(0);
    for (size_t i = 0; i < s_.size(); ++i)
      if (s_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < s_.size()) {
      size_t start = find_tag(pos);
      std::string text = s_.substr(pos, start - pos);
      if (start == s_.size()) {
        emit_text(text, pos);
        break;
      }
      char kind = s_[start + 1];  // '{', '%' or '#'
      char sign = start + 2 < s_.size() ? s_[start + 2] : 0;
      bool has_sign = sign == '-' || sign == '+';
      if (sign == '-') {
        size_t n = text.size();
        while (n > 0 && is_ws(text[n - 1])) --n;
        text.resize(n);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: drop spaces/tabs between the line start and a block or comment tag.
        size_t l = text.rfind('\n');
        size_t l_pos = l == std::string::npos ? 0 : l + 1;
        if (l_pos > 0 || line_starting) {
          bool blank = std::all_of(text.begin() + l_pos, text.end(),
                                   [](char c) { return c == ' ' || c == '\t'; });
          if (blank) text.resize(l_pos);
        }
      }
      emit_text(text, pos);
      pos = start + 2 + (has_sign ? 1 : 0);
      if (kind == '#') {
        pos = skip_comment(start, pos);
      } else if (kind == '%' && is_raw(pos)) {
        pos = lex_raw(start, pos);
      } else {
        pos = lex_tag(start, pos, kind == '%');
      }
      line_starting = pos > 0 && s_[pos - 1] == '\n';
    }
    push(Token::Type::Eof, "", s_.size());
    return std::move(out_);
  }

 private:
  std::string s_;
  std::vector<size_t> line_starts_;
  std::vector<Token> out_;

  [[noreturn]] void error(size_t pos, const std::string& msg) {
    auto [line, col] = line_col(pos);
    fail("chat template syntax error at line {}, column {}: {}", line, col, msg);
  }

  std::pair<int, int> line_col(size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(pos - line_starts_[line - 1] + 1)};
  }

  Token& push(Token::Type t, std::string text, size_t pos) {
    Token tok{t, std::move(text)};
    std::tie(tok.line, tok.col) = line_col(pos);
    out_.push_back(std::move(tok));
    return out_.back();
  }

  void emit_text(const std::string& text, size_t pos) {
    if (!text.empty()) push(Token::Type::Text, text, pos);
  }

  size_t find_tag(size_t pos) const {
    for (size_t i = pos; i + 1 < s_.size(); ++i) {
      if (s_[i] == '{' && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    }
    return s_.size();
  }

  // After a block/comment end: `-` strips all following whitespace, `+` keeps it, otherwise
  // trim_blocks removes one newline.
  size_t after_end(size_t pos, char sign) const {
    if (sign == '-') {
      while (pos < s_.size() && is_ws(s_[pos])) ++pos;
    } else if (sign != '+' && pos < s_.size() && s_[pos] == '\n') {
      ++pos;
    }
    return pos;
  }

  size_t skip_comment(size_t start, size_t pos) {
    size_t end = s_.find("#}", pos);
    if (end == std::string::npos) error(start, "missing end of comment tag '#}'.");
    char sign = end > pos && (s_[end - 1] == '-' || s_[end - 1] == '+') ? s_[end - 1] : 0;
    return after_end(end + 2, sign);
  }

  // `{% raw %}` ... `{% endraw %}`: everything between is text.
  bool is_raw(size_t pos) const {
    while (pos < s_.size() && is_ws(s_[pos])) ++pos;
    if (s_.compare(pos, 3, "raw") != 0) return false;
    pos += 3;
    while (pos < s_.size() && is_ws(s_[pos])) ++pos;
    return s_.compare(pos, 2, "%}") == 0 || s_.compare(pos, 3, "-%}") == 0 ||
           s_.compare(pos, 3, "+%}") == 0;
  }

  size_t lex_raw(size_t start, size_t pos) {
    size_t close = s_.find("%}", pos);
    bool strip_after = s_[close - 1] == '-';
    pos = close + 2;
    if (strip_after)
      while (pos < s_.size() && is_ws(s_[pos])) ++pos;
    for (size_t i = pos;; ++i) {
      i = s_.find("{%", i);
      if (i == std::string::npos) error(start, "missing '{% endraw %}' for this raw block.");
      size_t j = i + 2;
      char sign = j < s_.size() && (s_[j] == '-' || s_[j] == '+') ? s_[j++] : 0;
      while (j < s_.size() && is_ws(s_[j])) ++j;
      if (s_.compare(j, 6, "endraw") != 0) continue;
      j += 6;
      while (j < s_.size() && is_ws(s_[j])) ++j;
      char esign = j < s_.size() && (s_[j] == '-' || s_[j] == '+') ? s_[j++] : 0;
      if (s_.compare(j, 2, "%}") != 0) continue;
      std::string text = s_.substr(pos, i - pos);
      if (sign == '-') {
        while (!text.empty() && is_ws(text.back())) text.pop_back();
      }
      emit_text(text, pos);
      return after_end(j + 2, esign);
    }
  }

  size_t lex_tag(size_t start, size_t pos, bool block) {
    push(block ? Token::Type::BlockBegin : Token::Type::VarBegin, "", start);
    int depth = 0;
    const char* close = block ? "%}" : "}}";
    while (true) {
      while (pos < s_.size() && is_ws(s_[pos])) ++pos;
      if (pos >= s_.size())
        error(start, block ? "missing '%}' to close this tag." : "missing '}}' to close this tag.");
      if (depth == 0) {
        char sign = (s_[pos] == '-' || s_[pos] == '+') ? s_[pos] : 0;
        if (s_.compare(pos + (sign ? 1 : 0), 2, close) == 0 && (block || sign != '+')) {
          push(block ? Token::Type::BlockEnd : Token::Type::VarEnd, "", pos);
          pos += 2 + (sign ? 1 : 0);
          if (!block) {
            if (sign == '-')
              while (pos < s_.size() && is_ws(s_[pos])) ++pos;
            return pos;
          }
          return after_end(pos, sign);
        }
      }
      pos = lex_token(pos, depth);
    }
  }

  size_t lex_token(size_t pos, int& depth) {
    char c = s_[pos];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = pos;
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_'))
        ++e;
      push(Token::Type::Name, s_.substr(pos, e - pos), pos);
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number(pos);
    if (c == '\'' || c == '"') return lex_string(pos);
    static const char* ops2[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : ops2) {
      if (s_.compare(pos, 2, op) == 0) {
        push(Token::Type::Op, op, pos);
        return pos + 2;
      }
    }
    if (std::strchr("+-*/%~<>=.,:|()[]{}", c) && c != 0) {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) error(pos, std::string("unexpected '") + c + "'.");
        --depth;
      }
      push(Token::Type::Op, std::string(1, c), pos);
      return pos + 1;
    }
    error(pos, "unexpected character '" + std::string(1, c) + "' in a tag.");
  }

  size_t lex_number(size_t pos) {
    size_t e = pos;
    auto digits = [&] {
      while (e < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[e])) ||
                               (s_[e] == '_' && e + 1 < s_.size() &&
                                std::isdigit(static_cast<unsigned char>(s_[e + 1])))))
        ++e;
    };
    digits();
    bool is_float = false;
    if (e + 1 < s_.size() && s_[e] == '.' && std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
      ++e;
      digits();
      is_float = true;
    }
    if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t f = e + 1;
      if (f < s_.size() && (s_[f] == '+' || s_[f] == '-')) ++f;
      if (f < s_.size() && std::isdigit(static_cast<unsigned char>(s_[f]))) {
        e = f;
        digits();
        is_float = true;
      }
    }
    std::string text = s_.substr(pos, e - pos);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    Token& t = push(is_float ? Token::Type::Float : Token::Type::Int, text, pos);
    if (is_float) {
      t.fval = std::strtod(text.c_str(), nullptr);
    } else {
      errno = 0;
      t.ival = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) error(pos, "integer literal " + text + " is too large (max 2^63-1).");
    }
    return e;
  }

  // The code point of the n hex digits at s_[i, i + n) of a \x, \u or \U escape in the string
  // literal that starts at `pos`; advances i past them. Throws Error when the digits are
  // truncated or not hex, or the value is past U+10FFFF.
  char32_t hex_escape(size_t pos, size_t& i, size_t n) {
    if (i + n > s_.size()) error(pos, "truncated \\x/\\u escape in a string literal.");
    char32_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      char h = s_[i + k];
      if (!std::isxdigit(static_cast<unsigned char>(h)))
        error(pos, "bad \\x/\\u escape in a string literal.");
      v = v * 16 +
          (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
    }
    i += n;
    if (v > 0x10FFFF) error(pos, "escape \\U is past U+10FFFF.");
    return v;
  }

  // Appends to `out` what the escape `\e` means with Python's rules: the one-character escapes,
  // a line continuation, \xHH, \uHHHH, \UHHHHHHHH, up to 3 octal digits; an unknown escape stays
  // as written. `i` is just past `e` and advances past any digits; `pos` is where the literal
  // starts. Throws as hex_escape.
  void lex_escape(size_t pos, char e, size_t& i, std::string& out) {
    switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '\n':
        break;  // line continuation
      case 'x':
        utf8_append(out, hex_escape(pos, i, 2));
        break;
      case 'u':
        utf8_append(out, hex_escape(pos, i, 4));
        break;
      case 'U':
        utf8_append(out, hex_escape(pos, i, 8));
        break;
      default:
        if (e >= '0' && e <= '7') {
          char32_t v = e - '0';
          for (int k = 0; k < 2 && i < s_.size() && s_[i] >= '0' && s_[i] <= '7'; ++k)
            v = v * 8 + (s_[i++] - '0');
          utf8_append(out, v);
        } else {
          out += '\\';
          out += e;
        }
    }
  }

  // The string literal quoted by s_[pos] (' or "), escapes decoded, pushed as a String token;
  // returns the index after its closing quote. Throws Error when it is unterminated or has a bad
  // escape.
  size_t lex_string(size_t pos) {
    char q = s_[pos];
    std::string out;
    size_t i = pos + 1;
    while (true) {
      if (i >= s_.size()) error(pos, "unterminated string literal.");
      char c = s_[i];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        ++i;
        continue;
      }
      if (i + 1 >= s_.size()) error(pos, "unterminated string literal.");
      char e = s_[i + 1];
      i += 2;
      lex_escape(pos, e, i, out);
    }
    push(Token::Type::String, std::move(out), pos);
    return i + 1;
  }
};

}  // namespace

std::vector<Token> lex(const std::string& source) { return Lexer(source).run(); }

}  // namespace hogwild::chat
