// Lexer for chat templates: splits the source into text and tag tokens the way jinja2's lexer does
// with transformers' settings (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False),
// including `-`/`+` whitespace control, and tokenizes the expressions inside tags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hogwild::chat {

struct Token {
  enum class Type {
    Text,
    VarBegin,
    VarEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Int,
    Float,
    Op,
    Eof
  };
  Type type;
  std::string text;  // Text/Name/String/Op payload
  int64_t ival = 0;
  double fval = 0;
  int line = 1, col = 1;
};

/// Tokenizes `source`. Throws hogwild::Error (with line:column) on unterminated tags/strings or
/// characters that cannot start a token.
std::vector<Token> lex(const std::string& source);

}  // namespace hogwild::chat
