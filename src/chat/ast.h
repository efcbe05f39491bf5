// Syntax tree of a parsed chat template (the Jinja subset HF chat templates use). Node kinds follow
// jinja2's nodes.py; every node keeps its source line/column for error messages.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/value.h"

namespace hogwild::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,   // value
    Name,      // name
    ListLit,   // args = items
    TupleLit,  // args = items
    DictLit,   // args = key0, value0, key1, value1, ...
    GetAttr,   // args[0].name
    GetItem,   // args[0][args[1]]
    Slice,     // args = start, stop, step (null = omitted)
    Call,      // args[0](args[1:], kwargs)
    Filter,    // args[0] | name(args[1:], kwargs)
    Test,      // args[0] is [not] name(args[1:], kwargs); negate
    Neg,       // -args[0]
    Pos,       // +args[0]
    Not,       // not args[0]
    And,       // args[0] and args[1]
    Or,        // args[0] or args[1]
    Binary,    // args[0] name args[1]; name in + - * / // % ** ~
    Compare,   // args[0] ops[0] args[1] ops[1] args[2] ...; ops in == != < <= > >= in notin
    CondExpr,  // args[1] if args[0] else args[2] (args[2] may be null)
  };
  Kind kind;
  int line = 0, col = 0;
  Value value;
  std::string name;
  std::vector<std::string> ops;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negate = false;
};

struct Stmt;
using Body = std::vector<Stmt>;

struct Stmt {
  enum class Kind {
    Text,      // text
    Output,    // {{ expr }}
    If,        // if expr: body else: else_body (elif = nested If in else_body)
    For,       // for targets in expr [if cond]: body else: else_body
    Set,       // set targets = expr, or set targets[0].attr = expr (ns assignment)
    SetBlock,  // set targets[0] %}body{% endset; optional filter chain in expr (applied to Literal)
    Macro,     // macro name(params = defaults) body
    CallBlock,    // call[(caller params)] expr %} body (the caller)
    FilterBlock,  // filter expr (a Filter chain over a placeholder) %} body
    Break,
    Continue,
  };
  Kind kind;
  int line = 0, col = 0;
  std::string text;                  // Text; Macro: name; Set: attr for ns.attr assignment
  ExprPtr expr;                      // Output/If cond/For iterable/Set value/CallBlock call
  ExprPtr cond;                      // For: `if` filter
  std::vector<std::string> targets;  // For/Set targets; Set with attr: targets[0] is the ns
  std::vector<std::string> params;   // Macro/CallBlock parameters
  std::vector<ExprPtr> defaults;     // parallel to params (null = none)
  Body body, else_body;
};

/// A parsed template; owns the tree that macros point into.
struct Program {
  Body body;
};

struct Scope;
/// Something callable: a macro, a bound built-in method (str.strip, dict.get, ...) or a global
/// function (range, namespace, raise_exception, ...).
struct Callable {
  enum class Kind { Macro, Method, Global };
  Kind kind;
  std::string name;
  Value self;                            // Method: the object
  const Stmt* macro = nullptr;           // Macro: definition (params, defaults, body)
  std::weak_ptr<Scope> closure;          // Macro: defining scope (weak: the scope holds the macro)
  std::shared_ptr<const Program> owner;  // keeps the tree alive
};

/// Variable scope chain. Jinja2 gives for-loop bodies and macros their own scope; if does not.
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
  const Value* lookup(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

}  // namespace hogwild::chat
