// Evaluator for parsed chat templates (ast.h), with jinja2's runtime semantics as transformers
// configures it (ImmutableSandboxedEnvironment, default Undefined, loopcontrols). Statements and
// expressions live in eval.cpp; filters and tests in filters.cpp; str/dict methods and globals in
// methods.cpp.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/ast.h"
#include "core/error.h"

namespace hogwild::chat {

/// Resource limits; exceeding one throws hogwild::Error (a template can never hang or exhaust
/// memory).
struct Limits {
  int64_t max_steps = 5'000'000;  // statements executed + loop iterations + per-element work
  size_t max_bytes = 64u << 20;   // largest rendered output or string value, in bytes
  size_t max_items = 1'000'000;   // largest list built by range(), *, filters
  int max_call_depth = 64;        // nested macro calls
};

/// A template error that already names its line and column.
class TemplateError : public Error {
 public:
  using Error::Error;
};

/// Positional and keyword arguments of a call, filter or test.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  /// Argument `i` (positional) or `name` (keyword), or nullptr when absent.
  const Value* get(size_t i, const char* name) const;
};

enum class Flow { Normal, Break, Continue };

class Interp {
 public:
  Interp(std::shared_ptr<const Program> program, Limits limits);
  /// Clears every namespace() this render created: one may hold itself (`set ns.x = ns`), and
  /// the cycle would otherwise keep it alive.
  ~Interp();
  Interp(const Interp&) = delete;
  Interp& operator=(const Interp&) = delete;
  /// Renders the template with `context` as the top-level variables.
  std::string render(const Dict& context);

  // Used by the built-ins (filters.cpp, methods.cpp).
  [[noreturn]] void error(const Expr& at, const std::string& msg) const;
  void step(const Expr& at, int64_t n = 1);
  void check_size(const Expr& at, size_t bytes) const;
  void check_items(const Expr& at, size_t items) const;
  const Limits& limits() const { return limits_; }
  Value call(const Value& fn, Args args, const Expr& at);
  /// Filter `name` (jinja2/filters.py) applied to `v`; an unknown filter or a bad argument is an
  /// error (TemplateError).
  Value apply_filter(const std::string& name, const Value& v, const Args& a, const Expr& at);
  bool apply_test(const std::string& name, const Value& v, const Args& a, const Expr& at);
  Value call_method(const Value& self, const std::string& name, const Args& a, const Expr& at);
  Value call_global(const std::string& name, const Args& a, const Expr& at);
  /// Attribute lookup with jinja2's rules (methods first for dict/str, then items), `obj.a.b` for
  /// dotted names when `dotted`.
  Value get_attr(const Value& obj, const std::string& name, const Expr& at, bool dotted = false);
  Value get_item(const Value& obj, const Value& key, const Expr& at);
  /// Items of an iterable (list/tuple, dict keys, string characters, undefined → empty).
  List iterate(const Value& v, const Expr& at);

 private:
  std::shared_ptr<const Program> program_;
  Limits limits_;
  int64_t steps_ = 0;
  int call_depth_ = 0;
  std::vector<std::weak_ptr<Namespace>> namespaces_;
  static constexpr int kMaxNest = 1000;  // exec/eval recursion, ~1 KiB of stack per level
  int nest_ = 0;
  struct NestGuard;

  Flow exec(const Body& body, const std::shared_ptr<Scope>& scope, std::string& out);
  Flow exec_stmt(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out);
  Flow exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out);
  void exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope, Value v);
  void exec_call_block(const Stmt& s, const std::shared_ptr<Scope>& scope, std::string& out);
  Value apply_filter_chain(const Expr& chain, Value v, const std::shared_ptr<Scope>& scope);
  Value eval(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_binary(const Expr& e, const std::string& op, const Value& a, const Value& b);
  bool compare(const Expr& e, const std::string& op, const Value& a, const Value& b);
  Args eval_args(const Expr& e, size_t first, const std::shared_ptr<Scope>& scope);
  Value slice(const Value& obj, const Expr& s, const std::shared_ptr<Scope>& scope);
  Value call_macro(const Callable& m, Args args, const Expr& at, const Value* caller);
  // The families of apply_filter (filters.cpp): each applies filter `name` to `v` when it is one
  // of its own, else returns nullopt; errors as apply_filter's.
  std::optional<Value> value_filter(const std::string& name, const Value& v, const Args& a,
                                    const Expr& at);
  std::optional<Value> text_filter(const std::string& name, const Value& v, const Args& a,
                                   const Expr& at);
  std::optional<Value> number_filter(const std::string& name, const Value& v, const Args& a,
                                     const Expr& at);
  std::optional<Value> sequence_filter(const std::string& name, const Value& v, const Args& a,
                                       const Expr& at);
  std::optional<Value> ordering_filter(const std::string& name, const Value& v, const Args& a,
                                       const Expr& at);
  std::optional<Value> higher_order_filter(const std::string& name, const Value& v, const Args& a,
                                           const Expr& at);
  void append(std::string& out, const std::string& s, int line, int col) const;
};

/// Python-style slice of a sequence of length n: indices for `[start:stop:step]`.
std::vector<size_t> slice_indices(int64_t n, const Value& start, const Value& stop,
                                  const Value& step);

}  // namespace hogwild::chat
