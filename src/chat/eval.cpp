// Statements and expressions of the chat-template interpreter (see interp.h).
#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "chat/interp.h"
#include "chat/ustr.h"

namespace hogwild::chat {

const Value* Args::get(size_t i, const char* name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return i < pos.size() ? &pos[i] : nullptr;
}

// Bounds the C++ recursion of exec/eval (statements × expressions × macro calls nest).
struct Interp::NestGuard {
  Interp& in;
  NestGuard(Interp& interp, const Expr& at) : in(interp) {
    if (++in.nest_ > kMaxNest) {
      --in.nest_;
      in.error(at, fmt::format("evaluation nested deeper than {} levels.", kMaxNest));
    }
  }
  ~NestGuard() { --in.nest_; }
};

Interp::Interp(std::shared_ptr<const Program> program, Limits limits)
    : program_(std::move(program)), limits_(limits) {}

Interp::~Interp() {
  for (auto& w : namespaces_)
    if (auto ns = w.lock()) std::exchange(ns->attrs.items, {});  // drop refs outside the cycle walk
}

void Interp::error(const Expr& at, const std::string& msg) const {
  throw TemplateError(
      fmt::format("chat template error at line {}, column {}: {}", at.line, at.col, msg));
}

void Interp::step(const Expr& at, int64_t n) {
  steps_ += n;
  if (steps_ > limits_.max_steps)
    error(at, fmt::format("template ran more than {} steps; it probably loops without end.",
                          limits_.max_steps));
}

void Interp::check_size(const Expr& at, size_t bytes) const {
  if (bytes > limits_.max_bytes)
    error(at, fmt::format("string or output larger than the {} byte limit.", limits_.max_bytes));
}

void Interp::check_items(const Expr& at, size_t items) const {
  if (items > limits_.max_items)
    error(at, fmt::format("list larger than the {} item limit.", limits_.max_items));
}

void Interp::append(std::string& out, const std::string& s, int line, int col) const {
  if (out.size() + s.size() > limits_.max_bytes)
    throw TemplateError(fmt::format(
        "chat template error at line {}, column {}: output larger than the {} byte limit.", line,
        col, limits_.max_bytes));
  out += s;
}

std::string Interp::render(const Dict& context) {
  auto root = std::make_shared<Scope>();
  for (const auto& [k, v] : context.items) root->vars[k] = v;
  std::string out;
  steps_ = 0;
  call_depth_ = 0;
  exec(program_->body, root, out);
  return out;
}

Flow Interp::exec(const Body& body, const std::shared_ptr<Scope>& scope, std::string& out) {
  for (const Stmt& s : body) {
    Flow f;
    try {
      f = exec_stmt(s, scope, out);
    } catch (const TemplateError&) {
      throw;
    } catch (const Error& e) {
      throw TemplateError(
          fmt::format("chat template error at line {}, column {}: {}", s.line, s.col, e.what()));
    }
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Flow Interp::exec_stmt(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out) {
  Expr at;
  at.line = s.line;
  at.col = s.col;
  NestGuard guard(*this, at);
  step(at);
  switch (s.kind) {
    case Stmt::Kind::Text:
      append(out, s.text, s.line, s.col);
      return Flow::Normal;
    case Stmt::Kind::Output:
      append(out, to_str(eval(*s.expr, scope)), s.line, s.col);
      return Flow::Normal;
    case Stmt::Kind::If:
      return exec(truthy(eval(*s.expr, scope)) ? s.body : s.else_body, scope, out);
    case Stmt::Kind::For:
      return exec_for(s, scope, out);
    case Stmt::Kind::Set:
      exec_set(s, scope, eval(*s.expr, scope));
      return Flow::Normal;
    case Stmt::Kind::SetBlock: {
      std::string buf;
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      exec(s.body, inner, buf);
      Value v(std::move(buf));
      if (s.expr) v = apply_filter_chain(*s.expr, std::move(v), scope);  // `{% set x | filter %}`
      exec_set(s, scope, std::move(v));
      return Flow::Normal;
    }
    case Stmt::Kind::FilterBlock: {
      std::string buf;
      exec(s.body, scope, buf);
      Value v = apply_filter_chain(*s.expr, Value(std::move(buf)), scope);
      append(out, to_str(v), s.line, s.col);
      return Flow::Normal;
    }
    case Stmt::Kind::Macro: {
      auto fn = std::make_shared<Callable>();
      fn->kind = Callable::Kind::Macro;
      fn->name = s.text;
      fn->macro = &s;
      fn->closure = scope;
      fn->owner = program_;
      scope->vars[s.text] = Value(FnRef(fn));
      return Flow::Normal;
    }
    case Stmt::Kind::CallBlock:
      exec_call_block(s, scope, out);
      return Flow::Normal;
    case Stmt::Kind::Break:
      return Flow::Break;
    case Stmt::Kind::Continue:
      return Flow::Continue;
  }
  return Flow::Normal;
}

// The filters of a `{% set x | f | g %}` or `{% filter f | g %}` block applied to `v`, the
// block's rendered body: `chain` is the Filter expression whose innermost argument stands for the
// body, and the filters run innermost first. Throws TemplateError as apply_filter.
Value Interp::apply_filter_chain(const Expr& chain, Value v, const std::shared_ptr<Scope>& scope) {
  const Expr* e = &chain;
  std::vector<const Expr*> filters;
  while (e->kind == Expr::Kind::Filter) {
    filters.push_back(e);
    e = e->args[0].get();
  }
  for (auto it = filters.rbegin(); it != filters.rend(); ++it)
    v = apply_filter((*it)->name, v, eval_args(**it, 1, scope), **it);
  return v;
}

// `{% call m(args) %}body{% endcall %}`: calls macro m with a `caller` macro whose body is the
// block's, and appends the result to `out`. Throws TemplateError when m is not a macro, and as
// call_macro.
void Interp::exec_call_block(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out) {
  auto caller = std::make_shared<Callable>();
  caller->kind = Callable::Kind::Macro;
  caller->name = "caller";
  caller->macro = &s;
  caller->closure = scope;
  caller->owner = program_;
  const Expr& call = *s.expr;
  Value fn = eval(*call.args[0], scope);
  Args args = eval_args(call, 1, scope);
  if (!fn.is_callable() || std::get<FnRef>(fn.v)->kind != Callable::Kind::Macro)
    error(call, "'call' needs a macro.");
  Value callerv{FnRef(caller)};
  append(out, to_str(call_macro(*std::get<FnRef>(fn.v), std::move(args), call, &callerv)), s.line,
         s.col);
}

static void bind_targets(Interp& in, const Stmt& s, Scope& scope, const Value& item,
                         const Expr& at) {
  if (s.targets.size() == 1) {
    scope.vars[s.targets[0]] = item;
    return;
  }
  List parts = in.iterate(item, at);
  if (parts.size() != s.targets.size())
    in.error(at,
             fmt::format("cannot unpack {} values into {} names.", parts.size(), s.targets.size()));
  for (size_t i = 0; i < parts.size(); ++i) scope.vars[s.targets[i]] = parts[i];
}

Flow Interp::exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out) {
  const Expr& at = *s.expr;
  List items = iterate(eval(*s.expr, scope), at);
  if (s.cond) {  // `for x in xs if cond`: filter first; loop.* counts the kept items
    List kept;
    for (const Value& item : items) {
      step(at);
      auto tmp = std::make_shared<Scope>();
      tmp->parent = scope;
      bind_targets(*this, s, *tmp, item, at);
      if (truthy(eval(*s.cond, tmp))) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec(s.else_body, scope, out);
    return Flow::Normal;
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    step(at);
    auto body_scope = std::make_shared<Scope>();
    body_scope->parent = scope;
    Dict loop;
    loop.items = {{"index", Value(i + 1)},
                  {"index0", Value(i)},
                  {"revindex", Value(n - i)},
                  {"revindex0", Value(n - i - 1)},
                  {"first", Value(i == 0)},
                  {"last", Value(i == n - 1)},
                  {"length", Value(n)},
                  {"depth", Value(1)},
                  {"depth0", Value(0)},
                  {"previtem", i > 0 ? items[i - 1] : Value(Undefined{"loop.previtem"})},
                  {"nextitem", i + 1 < n ? items[i + 1] : Value(Undefined{"loop.nextitem"})}};
    Value lv(std::move(loop));
    std::get<DictRef>(lv.v).loop = true;
    body_scope->vars["loop"] = std::move(lv);
    bind_targets(*this, s, *body_scope, items[i], at);
    if (exec(s.body, body_scope, out) == Flow::Break) break;
  }
  return Flow::Normal;
}

void Interp::exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope, Value v) {
  Expr at;
  at.line = s.line;
  at.col = s.col;
  if (!s.text.empty()) {  // {% set ns.attr = v %}
    const Value* ns = scope->lookup(s.targets[0]);
    if (!ns || !ns->is_namespace())
      error(at, "cannot assign attribute '" + s.text + "' on '" + s.targets[0] +
                    "': only namespace() objects can be assigned attributes.");
    std::get<NsRef>(ns->v)->attrs.set(s.text, std::move(v));
    return;
  }
  if (s.targets.size() == 1) {
    scope->vars[s.targets[0]] = std::move(v);
    return;
  }
  List parts = iterate(v, at);
  if (parts.size() != s.targets.size())
    error(at,
          fmt::format("cannot unpack {} values into {} names.", parts.size(), s.targets.size()));
  for (size_t i = 0; i < parts.size(); ++i) scope->vars[s.targets[i]] = parts[i];
}

List Interp::iterate(const Value& v, const Expr& at) {
  if (v.is_list()) return v.list();
  if (v.is_undefined()) return {};
  if (v.is_dict()) {
    List keys;
    for (const auto& kv : v.dict().items) keys.emplace_back(kv.first);
    return keys;
  }
  if (v.is_string()) {
    List chars;
    for (char32_t c : utf8_decode(v.str())) {
      std::string ch;
      utf8_append(ch, c);
      chars.emplace_back(std::move(ch));
    }
    return chars;
  }
  if (v.is_namespace()) error(at, "'Namespace' object is not iterable.");
  error(at, fmt::format("'{}' object is not iterable.", type_name(v)));
}

Args Interp::eval_args(const Expr& e, size_t first, const std::shared_ptr<Scope>& scope) {
  Args a;
  for (size_t i = first; i < e.args.size(); ++i) a.pos.push_back(eval(*e.args[i], scope));
  for (const auto& [k, x] : e.kwargs) a.kw.emplace_back(k, eval(*x, scope));
  return a;
}

// The value of variable `name` in `scope` (innermost first), else the global function of that
// name (range, namespace, raise_exception, dict, strftime_now), else Undefined. Throws nothing.
static Value lookup_name(const std::string& name, const Scope& scope) {
  if (const Value* v = scope.lookup(name)) return *v;
  static const char* globals[] = {"range", "namespace", "raise_exception", "dict", "strftime_now"};
  for (const char* g : globals) {
    if (name == g) {
      auto fn = std::make_shared<Callable>();
      fn->kind = Callable::Kind::Global;
      fn->name = g;
      return Value(FnRef(fn));
    }
  }
  return Value(Undefined{name});
}

// Unary `-v` or `+v` (e.kind says which) of a number: bools become ints, ints stay int64. Throws
// TemplateError for a non-number and for -INT64_MIN.
static Value unary_sign(const Interp& in, const Expr& e, const Value& v) {
  if (!v.is_number())
    in.error(e, fmt::format("bad operand type for unary {}: '{}'.",
                            e.kind == Expr::Kind::Neg ? '-' : '+', type_name(v)));
  if (e.kind == Expr::Kind::Pos) return v.is_bool() ? Value(v.as_int()) : v;
  if (v.is_float()) return Value(-v.as_double());
  if (v.as_int() == INT64_MIN) in.error(e, "integer overflow.");
  return Value(-v.as_int());
}

Value Interp::eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
  NestGuard guard(*this, e);
  switch (e.kind) {
    case Expr::Kind::Literal:
      return e.value;
    case Expr::Kind::Name:
      return lookup_name(e.name, *scope);
    case Expr::Kind::ListLit:
    case Expr::Kind::TupleLit: {
      List l;
      for (const auto& x : e.args) l.push_back(eval(*x, scope));
      return Value(std::move(l), e.kind == Expr::Kind::TupleLit);
    }
    case Expr::Kind::DictLit: {
      Dict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i], scope);
        if (!k.is_string()) error(*e.args[i], "dict keys must be strings in chat templates.");
        d.set(k.str(), eval(*e.args[i + 1], scope));
      }
      return Value(std::move(d));
    }
    case Expr::Kind::GetAttr:
      return get_attr(eval(*e.args[0], scope), e.name, e);
    case Expr::Kind::GetItem: {
      Value obj = eval(*e.args[0], scope);
      if (e.args[1]->kind == Expr::Kind::Slice) return slice(obj, *e.args[1], scope);
      return get_item(obj, eval(*e.args[1], scope), e);
    }
    case Expr::Kind::Slice:
      error(e, "a slice is only valid inside [].");
    case Expr::Kind::Call: {
      Value fn = eval(*e.args[0], scope);
      return call(fn, eval_args(e, 1, scope), e);
    }
    case Expr::Kind::Filter: {
      Value v = eval(*e.args[0], scope);
      return apply_filter(e.name, v, eval_args(e, 1, scope), e);
    }
    case Expr::Kind::Test: {
      Value v = eval(*e.args[0], scope);
      bool r = apply_test(e.name, v, eval_args(e, 1, scope), e);
      return Value(e.negate ? !r : r);
    }
    case Expr::Kind::Neg:
    case Expr::Kind::Pos:
      return unary_sign(*this, e, eval(*e.args[0], scope));
    case Expr::Kind::Not:
      return Value(!truthy(eval(*e.args[0], scope)));
    case Expr::Kind::And: {
      Value a = eval(*e.args[0], scope);
      return truthy(a) ? eval(*e.args[1], scope) : a;
    }
    case Expr::Kind::Or: {
      Value a = eval(*e.args[0], scope);
      return truthy(a) ? a : eval(*e.args[1], scope);
    }
    case Expr::Kind::Binary: {
      Value a = eval(*e.args[0], scope);
      Value b = eval(*e.args[1], scope);
      return eval_binary(e, e.name, a, b);
    }
    case Expr::Kind::Compare: {
      Value a = eval(*e.args[0], scope);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value b = eval(*e.args[i + 1], scope);
        if (!compare(e, e.ops[i], a, b)) return Value(false);
        a = std::move(b);
      }
      return Value(true);
    }
    case Expr::Kind::CondExpr: {
      if (truthy(eval(*e.args[0], scope))) return eval(*e.args[1], scope);
      if (e.args[2]) return eval(*e.args[2], scope);
      return Value(Undefined{"else branch"});
    }
  }
  error(e, "internal: unknown expression kind.");
}

bool Interp::compare(const Expr& e, const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in" || op == "notin") {
    bool r;
    if (b.is_string()) {
      if (!a.is_string())
        error(e,
              fmt::format("'in <string>' requires string as left operand, not {}.", type_name(a)));
      r = b.str().find(a.str()) != std::string::npos;
    } else if (b.is_list()) {
      r = false;
      for (const Value& x : b.list()) {
        step(e);
        if (equals(a, x)) {
          r = true;
          break;
        }
      }
    } else if (b.is_dict()) {
      r = a.is_string() && b.dict().find(a.str()) != nullptr;
    } else if (b.is_undefined()) {
      r = false;
    } else {
      error(e, fmt::format("argument of type '{}' is not iterable.", type_name(b)));
    }
    return op == "in" ? r : !r;
  }
  if (a.is_undefined() || b.is_undefined())
    error(e, fmt::format("'{}' is undefined.",
                         std::get<Undefined>((a.is_undefined() ? a : b).v).name));
  try {
    if (op == "<") return less(a, b);
    if (op == ">") return less(b, a);
    if (op == "<=") return less(a, b) || (equals(a, b) && !less(b, a));
    if (op == ">=") return less(b, a) || (equals(a, b) && !less(a, b));
  } catch (const TemplateError&) {
    throw;
  } catch (const Error& err) {
    error(e, err.what());
  }
  error(e, "internal: unknown comparison " + op);
}

}  // namespace hogwild::chat
