// Parser for chat templates: tokens (lexer.h) → syntax tree (ast.h), with jinja2's operator
// precedence (jinja2/parser.py): cond-expr < or < and < not < comparisons < + - < ~ < * / // % <
// ** < unary - + < postfix (.attr [item] (call)) and filters/tests.
#pragma once

#include <memory>
#include <string>

#include "chat/ast.h"

namespace hogwild::chat {

/// Parses a whole template. Throws hogwild::Error "... at line L, column C: ..." on a syntax error,
/// an unknown or unclosed statement, or nesting deeper than the parser's limit (200 levels).
std::shared_ptr<const Program> parse_template(const std::string& source);

}  // namespace hogwild::chat
