// Values of the chat-template interpreter, with Python/Jinja2 semantics (transformers renders chat
// templates with Python jinja2, so str(), ==, <, truthiness and json.dumps follow CPython).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace hogwild::chat {

struct Value;
struct Callable;
using List = std::vector<Value>;

/// An insertion-ordered string-keyed dict (Python dict from JSON objects or `{...}` literals).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
};

/// jinja2 `namespace(...)`: the one mutable object (`{% set ns.attr = v %}`), shared by reference.
struct Namespace {
  Dict attrs;
};

struct Undefined {
  std::string name;  // what was looked up, for error messages
};
struct None {};
struct ListRef {
  std::shared_ptr<const List> p;
  bool tuple = false;  // prints as (a, b)
};
struct DictRef {
  std::shared_ptr<const Dict> p;
  bool loop = false;  // the `loop` object of a for loop
};
using NsRef = std::shared_ptr<Namespace>;
using FnRef = std::shared_ptr<const Callable>;

/// A dynamically typed template value. Lists/dicts are immutable and shared (the sandbox forbids
/// mutation, as transformers' ImmutableSandboxedEnvironment does).
struct Value {
  std::variant<Undefined, None, bool, int64_t, double, std::string, ListRef, DictRef, NsRef, FnRef>
      v;

  Value() = default;
  Value(None) : v(None{}) {}
  Value(Undefined u) : v(std::move(u)) {}
  Value(bool b) : v(b) {}
  Value(int64_t i) : v(i) {}
  Value(int i) : v(int64_t{i}) {}
  Value(double d) : v(d) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(List l, bool tuple = false)
      : v(ListRef{std::make_shared<const List>(std::move(l)), tuple}) {}
  Value(Dict d) : v(DictRef{std::make_shared<const Dict>(std::move(d))}) {}
  Value(NsRef n) : v(std::move(n)) {}
  Value(FnRef f) : v(std::move(f)) {}

  bool is_undefined() const { return v.index() == 0; }
  bool is_none() const { return v.index() == 1; }
  bool is_bool() const { return v.index() == 2; }
  bool is_int() const { return v.index() == 3; }  // not bool
  bool is_float() const { return v.index() == 4; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }  // Python numbers.Number
  bool is_string() const { return v.index() == 5; }
  bool is_list() const { return v.index() == 6; }  // list or tuple
  bool is_dict() const { return v.index() == 7; }
  bool is_namespace() const { return v.index() == 8; }
  bool is_callable() const { return v.index() == 9; }

  const std::string& str() const { return std::get<std::string>(v); }
  const List& list() const { return *std::get<ListRef>(v).p; }
  const Dict& dict() const { return *std::get<DictRef>(v).p; }
  int64_t as_int() const;    // bool or int
  double as_double() const;  // bool, int or float
};

/// Python truthiness (undefined and none are false).
bool truthy(const Value& v);
/// Python str(): what `{{ v }}` prints. Undefined prints "".
std::string to_str(const Value& v);
/// Python repr().
std::string to_repr(const Value& v);
/// Python ==.
bool equals(const Value& a, const Value& b);
/// Python <; throws hogwild::Error for unorderable types.
bool less(const Value& a, const Value& b);
/// Python type name, for error messages ("str", "int", "list", ...).
const char* type_name(const Value& v);
/// CPython repr(float): shortest round-trip digits, "1.0", "1e-05", "inf", "nan".
std::string float_repr(double d);

/// JSON → Value (objects keep their order; integers that fit int64 become int, others float).
Value from_json(const nlohmann::ordered_json& j);

/// Python json.dumps(v, ensure_ascii=False, indent, separators) as transformers' tojson filter
/// calls it. indent < 0 means None. Throws hogwild::Error for values JSON cannot hold.
struct JsonStyle {
  int indent = -1;
  std::string indent_str;               // used when not empty (indent given as a string)
  std::optional<std::string> item_sep;  // default ", " (or "," when indent is set)
  std::string key_sep = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // escape non-ASCII as \uXXXX (surrogate pairs past U+FFFF)
};
std::string to_json(const Value& v, const JsonStyle& style);

}  // namespace hogwild::chat
