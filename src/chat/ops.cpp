// Operators, attribute/item access, slicing and calls of the chat-template interpreter, with
// Python semantics (jinja2 evaluates these with Python's operators).
#include <fmt/format.h>

#include <cmath>

#include "chat/interp.h"
#include "chat/ustr.h"

namespace hogwild::chat {

std::string percent_format(Interp& in, const Expr& at, const std::string& fmt, const Value& args);

static const Undefined& undef(const Value& v) { return std::get<Undefined>(v.v); }

// Python's TypeError for `a op b` when neither operand type supports `op`: always throws
// TemplateError.
[[noreturn]] static void operand_type_error(const Interp& in, const Expr& e, const std::string& op,
                                            const Value& a, const Value& b) {
  in.error(e, fmt::format("unsupported operand type(s) for {}: '{}' and '{}'.", op, type_name(a),
                          type_name(b)));
}

// `a + b`: checked int64 sum of ints/bools, float sum of numbers, concatenation of two strings
// or two lists (the list keeps a's tuple-ness). Throws TemplateError on integer overflow, on a
// result over the size/item limits and on mixed types (Python's wording for str + non-str).
static Value add(Interp& in, const Expr& e, const Value& a, const Value& b, bool ints, bool nums) {
  if (ints) {
    int64_t r = 0;
    if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) in.error(e, "integer overflow.");
    return Value(r);
  }
  if (nums) return Value(a.as_double() + b.as_double());
  if (a.is_string() && b.is_string()) {
    in.check_size(e, a.str().size() + b.str().size());
    return Value(a.str() + b.str());
  }
  if (a.is_list() && b.is_list()) {
    in.check_items(e, a.list().size() + b.list().size());
    List l = a.list();
    l.insert(l.end(), b.list().begin(), b.list().end());
    in.step(e, static_cast<int64_t>(l.size()));
    return Value(std::move(l), std::get<ListRef>(a.v).tuple);
  }
  if (a.is_string() || b.is_string())
    in.error(e, fmt::format("can only concatenate str (not \"{}\") to str.",
                            type_name(a.is_string() ? b : a)));
  operand_type_error(in, e, "+", a, b);
}

// `a * b`: checked int64 product of ints/bools, float product of numbers, or a string/list
// repeated by an int on either side (a negative count gives an empty one; a list keeps its
// tuple-ness). Throws TemplateError on integer overflow, on a result over the size/item limits
// and on other types.
static Value multiply(Interp& in, const Expr& e, const Value& a, const Value& b, bool ints,
                      bool nums) {
  if (ints) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) in.error(e, "integer overflow.");
    return Value(r);
  }
  if (nums) return Value(a.as_double() * b.as_double());
  const Value* seq = (a.is_string() || a.is_list()) ? &a : &b;
  const Value* cnt = seq == &a ? &b : &a;
  if (!(seq->is_string() || seq->is_list()) || !(cnt->is_int() || cnt->is_bool()))
    operand_type_error(in, e, "*", a, b);
  int64_t n = std::max<int64_t>(cnt->as_int(), 0);
  const Limits& limits = in.limits();
  if (seq->is_string()) {
    if (n > 0 && seq->str().size() > limits.max_bytes / static_cast<uint64_t>(n))
      in.check_size(e, limits.max_bytes + 1);
    std::string s;
    for (int64_t i = 0; i < n; ++i) s += seq->str();
    return Value(std::move(s));
  }
  if (n > 0 && seq->list().size() > limits.max_items / static_cast<uint64_t>(n))
    in.check_items(e, limits.max_items + 1);
  List l;
  for (int64_t i = 0; i < n; ++i) l.insert(l.end(), seq->list().begin(), seq->list().end());
  in.step(e, static_cast<int64_t>(l.size()));
  return Value(std::move(l), std::get<ListRef>(seq->v).tuple);
}

// `a // b` or numeric `a % b` (op says which) with Python's floor semantics: the quotient rounds
// toward -inf and the remainder takes the divisor's sign; ints stay int64, else float
// (CPython float_divmod). The caller has checked both are numbers. Throws TemplateError on a
// zero divisor and on INT64_MIN // -1.
static Value floor_div_mod(const Interp& in, const Expr& e, const std::string& op, const Value& a,
                           const Value& b, bool ints) {
  if (ints) {
    int64_t x = a.as_int(), y = b.as_int();
    if (y == 0) in.error(e, "integer division or modulo by zero.");
    if (x == INT64_MIN && y == -1) in.error(e, "integer overflow.");
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {
      --q;
      m += y;
    }
    return Value(op == "//" ? q : m);
  }
  double x = a.as_double(), y = b.as_double();
  if (y == 0) in.error(e, "float division or modulo by zero.");
  // CPython float_divmod.
  double m = std::fmod(x, y);
  double div = (x - m) / y;
  if (m != 0) {
    if ((y < 0) != (m < 0)) {
      m += y;
      div -= 1.0;
    }
  } else {
    m = std::copysign(0.0, y);
  }
  if (op == "%") return Value(m);
  double fl = std::copysign(0.0, x / y);
  if (div != 0) {
    fl = std::floor(div);
    if (div - fl > 0.5) fl += 1.0;
  }
  return Value(fl);
}

// `a ** b`: exact int64 power by squaring for ints/bools with b >= 0, else std::pow of the two
// numbers. Throws TemplateError on integer overflow, on 0.0 to a negative power and on
// non-numbers.
static Value power(const Interp& in, const Expr& e, const Value& a, const Value& b, bool ints,
                   bool nums) {
  if (ints && b.as_int() >= 0) {
    int64_t base = a.as_int(), ex = b.as_int(), acc = 1;
    while (ex > 0) {
      if ((ex & 1) && __builtin_mul_overflow(acc, base, &acc)) in.error(e, "integer overflow.");
      ex >>= 1;
      if (ex > 0 && __builtin_mul_overflow(base, base, &base)) in.error(e, "integer overflow.");
    }
    return Value(acc);
  }
  if (!nums) operand_type_error(in, e, "**", a, b);
  if (a.as_double() == 0 && b.as_double() < 0)
    in.error(e, "0.0 cannot be raised to a negative power.");
  return Value(std::pow(a.as_double(), b.as_double()));
}

Value Interp::eval_binary(const Expr& e, const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = to_str(a);
    std::string t = to_str(b);
    check_size(e, s.size() + t.size());
    return Value(s + t);
  }
  if (a.is_undefined() || b.is_undefined())
    error(e, fmt::format("'{}' is undefined.", undef(a.is_undefined() ? a : b).name));
  bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  bool nums = a.is_number() && b.is_number();
  if (op == "+") return add(*this, e, a, b, ints, nums);
  if (op == "-") {
    int64_t r = 0;
    if (ints) {
      if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) error(e, "integer overflow.");
      return Value(r);
    }
    if (nums) return Value(a.as_double() - b.as_double());
    operand_type_error(*this, e, op, a, b);
  }
  if (op == "*") return multiply(*this, e, a, b, ints, nums);
  if (op == "/") {
    if (!nums) operand_type_error(*this, e, op, a, b);
    if (b.as_double() == 0) error(e, "division by zero.");
    return Value(a.as_double() / b.as_double());
  }
  if (op == "//" || (op == "%" && !a.is_string())) {
    if (!nums) operand_type_error(*this, e, op, a, b);
    return floor_div_mod(*this, e, op, a, b, ints);
  }
  if (op == "%") return Value(percent_format(*this, e, a.str(), b));
  if (op == "**") return power(*this, e, a, b, ints, nums);
  error(e, "internal: unknown operator " + op);
}

static bool is_method(const Value& obj, const std::string& name) {
  static const char* str_methods[] = {
      "startswith",   "endswith",     "split",   "rsplit",  "strip",      "lstrip",
      "rstrip",       "upper",        "lower",   "title",   "capitalize", "replace",
      "find",         "rfind",        "count",   "join",    "format",     "isdigit",
      "isalpha",      "isalnum",      "isspace", "islower", "isupper",    "splitlines",
      "removeprefix", "removesuffix", "index",   "swapcase"};
  static const char* dict_methods[] = {"get", "items", "keys", "values", "copy"};
  static const char* list_methods[] = {"index", "count", "copy"};
  if (obj.is_string()) {
    for (const char* m : str_methods)
      if (name == m) return true;
  } else if (obj.is_dict() && std::get<DictRef>(obj.v).loop) {
    return name == "cycle";
  } else if (obj.is_dict()) {
    for (const char* m : dict_methods)
      if (name == m) return true;
  } else if (obj.is_list()) {
    for (const char* m : list_methods)
      if (name == m) return true;
  }
  return false;
}

Value Interp::get_attr(const Value& obj, const std::string& name, const Expr& at, bool dotted) {
  if (dotted && name.find('.') != std::string::npos) {
    Value v = obj;
    size_t p = 0;
    while (true) {
      size_t q = name.find('.', p);
      std::string part = name.substr(p, q == std::string::npos ? std::string::npos : q - p);
      bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
      v = digits && part.size() < 18
              ? get_item(v, Value(static_cast<int64_t>(std::stoll(part))), at)
              : get_attr(v, part, at);
      if (q == std::string::npos) return v;
      p = q + 1;
    }
  }
  if (obj.is_undefined()) error(at, fmt::format("'{}' is undefined.", undef(obj).name));
  if (is_method(obj, name)) {
    auto fn = std::make_shared<Callable>();
    fn->kind = Callable::Kind::Method;
    fn->name = name;
    fn->self = obj;
    return Value(FnRef(fn));
  }
  if (obj.is_dict()) {
    static const char* unsafe[] = {"pop", "popitem", "setdefault", "update", "clear", "fromkeys"};
    for (const char* u : unsafe)
      if (name == u && !std::get<DictRef>(obj.v).loop) return Value(Undefined{name});
    if (const Value* v = obj.dict().find(name)) return *v;
  } else if (obj.is_namespace()) {
    if (const Value* v = std::get<NsRef>(obj.v)->attrs.find(name)) return *v;
  }
  return Value(Undefined{name});
}

Value Interp::get_item(const Value& obj, const Value& key, const Expr& at) {
  if (obj.is_undefined()) error(at, fmt::format("'{}' is undefined.", undef(obj).name));
  if (obj.is_dict()) {
    if (!key.is_string()) return Value(Undefined{to_str(key)});
    if (const Value* v = obj.dict().find(key.str())) return *v;
    return get_attr(obj, key.str(), at);
  }
  if (obj.is_list() || obj.is_string()) {
    if (key.is_int() || key.is_bool()) {
      int64_t i = key.as_int();
      if (obj.is_list()) {
        int64_t n = static_cast<int64_t>(obj.list().size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value(Undefined{"index " + std::to_string(key.as_int())});
        return obj.list()[static_cast<size_t>(i)];
      }
      std::u32string cps = utf8_decode(obj.str());
      int64_t n = static_cast<int64_t>(cps.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value(Undefined{"index " + std::to_string(key.as_int())});
      std::string ch;
      utf8_append(ch, cps[static_cast<size_t>(i)]);
      return Value(std::move(ch));
    }
    if (key.is_string()) return get_attr(obj, key.str(), at);
    return Value(Undefined{to_str(key)});
  }
  if (obj.is_namespace() && key.is_string()) return get_attr(obj, key.str(), at);
  return Value(Undefined{to_str(key)});
}

std::vector<size_t> slice_indices(int64_t n, const Value& start, const Value& stop,
                                  const Value& step) {
  int64_t st = step.is_none() ? 1 : step.as_int();
  auto adjust = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    int64_t x = v.as_int();
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  int64_t a = adjust(start, st > 0 ? 0 : n - 1);
  int64_t b = adjust(stop, st > 0 ? n : -1);
  std::vector<size_t> idx;
  if (st > 0) {
    for (int64_t i = a; i < b; i += st) idx.push_back(static_cast<size_t>(i));
  } else {
    for (int64_t i = a; i > b; i += st) idx.push_back(static_cast<size_t>(i));
  }
  return idx;
}

Value Interp::slice(const Value& obj, const Expr& s, const std::shared_ptr<Scope>& scope) {
  Value parts[3];
  for (int i = 0; i < 3; ++i) parts[i] = s.args[i] ? eval(*s.args[i], scope) : Value(None{});
  if (obj.is_undefined()) error(s, fmt::format("'{}' is undefined.", undef(obj).name));
  for (const Value& p : parts)
    if (!(p.is_none() || p.is_int() || p.is_bool())) return Value(Undefined{"slice"});
  if (!parts[2].is_none() && parts[2].as_int() == 0) error(s, "slice step cannot be zero.");
  if (obj.is_list()) {
    const List& l = obj.list();
    List out;
    for (size_t i : slice_indices(static_cast<int64_t>(l.size()), parts[0], parts[1], parts[2]))
      out.push_back(l[i]);
    step(s, static_cast<int64_t>(out.size()));
    return Value(std::move(out), std::get<ListRef>(obj.v).tuple);
  }
  if (obj.is_string()) {
    std::u32string cps = utf8_decode(obj.str());
    std::u32string out;
    for (size_t i : slice_indices(static_cast<int64_t>(cps.size()), parts[0], parts[1], parts[2]))
      out.push_back(cps[i]);
    return Value(utf8_encode(out));
  }
  return Value(Undefined{"slice"});
}

Value Interp::call(const Value& fn, Args args, const Expr& at) {
  if (fn.is_undefined()) error(at, fmt::format("'{}' is undefined.", undef(fn).name));
  if (!fn.is_callable()) error(at, fmt::format("'{}' object is not callable.", type_name(fn)));
  const Callable& c = *std::get<FnRef>(fn.v);
  switch (c.kind) {
    case Callable::Kind::Macro:
      return call_macro(c, std::move(args), at, nullptr);
    case Callable::Kind::Method:
      return call_method(c.self, c.name, args, at);
    case Callable::Kind::Global:
      return call_global(c.name, args, at);
  }
  error(at, "internal: bad callable.");
}

Value Interp::call_macro(const Callable& m, Args args, const Expr& at, const Value* caller) {
  if (call_depth_ >= limits_.max_call_depth)
    error(at, fmt::format("macro calls nested deeper than {} (runaway recursion?).",
                          limits_.max_call_depth));
  const Stmt& def = *m.macro;
  auto scope = std::make_shared<Scope>();
  scope->parent = m.closure.lock();
  size_t np = def.params.size();
  List varargs;
  for (size_t i = 0; i < args.pos.size(); ++i) {
    if (i < np) {
      scope->vars[def.params[i]] = std::move(args.pos[i]);
    } else {
      varargs.push_back(std::move(args.pos[i]));
    }
  }
  Dict kwargs;
  for (auto& [k, v] : args.kw) {
    auto it = std::find(def.params.begin(), def.params.end(), k);
    if (it == def.params.end()) {
      kwargs.set(k, std::move(v));
    } else if (static_cast<size_t>(it - def.params.begin()) < args.pos.size()) {
      error(at, fmt::format("macro '{}' got multiple values for argument '{}'.", m.name, k));
    } else {
      scope->vars[k] = std::move(v);
    }
  }
  for (size_t i = 0; i < np; ++i) {
    if (scope->vars.count(def.params[i])) continue;
    scope->vars[def.params[i]] =
        def.defaults[i] ? eval(*def.defaults[i], scope) : Value(Undefined{def.params[i]});
  }
  scope->vars["varargs"] = Value(std::move(varargs), true);
  scope->vars["kwargs"] = Value(std::move(kwargs));
  if (caller) scope->vars["caller"] = *caller;
  std::string out;
  ++call_depth_;
  try {
    exec(def.body, scope, out);
  } catch (...) {
    --call_depth_;
    throw;
  }
  --call_depth_;
  return Value(std::move(out));
}

}  // namespace hogwild::chat
