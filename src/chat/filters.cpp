// Filters and tests of the chat-template interpreter, following jinja2/filters.py and
// jinja2/tests.py (3.1), with tojson as transformers overrides it (json.dumps with
// ensure_ascii=False).
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "chat/interp.h"
#include "chat/strings.h"
#include "chat/ustr.h"

namespace hogwild::chat {

std::string percent_format(Interp& in, const Expr& at, const std::string& f, const Value& args) {
  List vals = args.is_list() && std::get<ListRef>(args.v).tuple ? args.list() : List{args};
  std::string out;
  size_t k = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    if (++i >= f.size()) in.error(at, "incomplete format.");
    char c = f[i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (k >= vals.size()) in.error(at, "not enough arguments for format string.");
    const Value& v = vals[k++];
    if (c == 's') {
      out += to_str(v);
    } else if (c == 'r') {
      out += to_repr(v);
    } else if ((c == 'd' || c == 'i') && v.is_number()) {
      out += std::to_string(v.is_float() ? static_cast<int64_t>(std::trunc(v.as_double()))
                                         : v.as_int());
    } else if (c == 'f' && v.is_number()) {
      out += fmt::format("{:.6f}", v.as_double());
    } else {
      in.error(at, std::string("unsupported format character '") + c +
                       "' (supported: %s %r %d %i %f %%).");
    }
    in.check_size(at, out.size());
  }
  if (k < vals.size()) in.error(at, "not all arguments converted during string formatting.");
  return out;
}

static Value lowered(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(str_lower(v.str())) : v;
}

static bool opt_bool(const Value* v, bool dflt) { return v ? truthy(*v) : dflt; }

// Stable sort of `items` by `key(item)` (Python's sorted with key=).
template <typename Key>
static List sorted(Interp& in, const Expr& at, List items, Key key, bool reverse) {
  in.step(at, static_cast<int64_t>(items.size()) * 4);
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) keyed.emplace_back(key(items[i]), i);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return reverse ? less(b.first, a.first) : less(a.first, b.first);
  });
  List out;
  for (auto& [k, i] : keyed) out.push_back(items[i]);
  return out;
}

static std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

static std::string jinja_title(const std::string& s) {
  // jinja2 do_title: split on runs of [-\s({\[<] and capitalize every piece.
  std::u32string cps = utf8_decode(s);
  auto is_sep = [](char32_t c) {
    return py_isspace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
  };
  std::string out;
  size_t i = 0;
  while (i < cps.size()) {
    size_t j = i;
    bool sep = is_sep(cps[i]);
    while (j < cps.size() && is_sep(cps[j]) == sep) ++j;
    for (size_t k = i; k < j; ++k) utf8_append(out, k == i ? cp_upper(cps[k]) : cp_lower(cps[k]));
    i = j;
  }
  return out;
}

static std::string do_indent(const std::string& s0, const std::string& ind, bool first,
                             bool blank) {
  std::vector<std::string> lines = py_splitlines(s0 + "\n");
  std::string rv;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      rv += '\n';
      if (blank || !lines[i].empty()) rv += ind;
    }
    rv += lines[i];
  }
  return first ? ind + rv : rv;
}

static Value to_int(const Value& v, const Value& dflt, int base) {
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return dflt;
    return Value(static_cast<int64_t>(std::trunc(d)));
  }
  if (!v.is_string()) return dflt;
  std::string s = py_strip(v.str(), std::nullopt, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (!s.empty()) {
    errno = 0;
    char* end = nullptr;
    long long x = std::strtoll(s.c_str(), &end, base);
    if (errno == 0 && end == s.c_str() + s.size() &&
        !std::isspace(static_cast<unsigned char>(s[0])))
      return Value(static_cast<int64_t>(x));
    char* fend = nullptr;
    double d = std::strtod(s.c_str(), &fend);
    if (s.find_first_of("xXpP") == std::string::npos && fend == s.c_str() + s.size() &&
        std::isfinite(d) && std::fabs(d) < 9.2e18)
      return Value(static_cast<int64_t>(std::trunc(d)));
  }
  return dflt;
}

static Value to_float(const Value& v, const Value& dflt) {
  if (v.is_number()) return Value(v.as_double());
  if (!v.is_string()) return dflt;
  std::string s = py_strip(v.str(), std::nullopt, true, true);
  if (s.empty() || s.find_first_of("xXpP") != std::string::npos) return dflt;
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() ? Value(d) : dflt;
}

static Value py_round(Interp& in, const Expr& at, const Value& v, int64_t prec,
                      const std::string& method) {
  if (!v.is_number()) in.error(at, "round needs a number.");
  if (method != "common" && method != "ceil" && method != "floor")
    in.error(at, "round method must be 'common', 'ceil' or 'floor'.");
  if (method == "common" && !v.is_float() && prec >= 0) return Value(v.as_int());
  double x = v.as_double();
  if (method == "common") {
    if (prec == 0) return Value(std::nearbyint(x));
    if (prec > 0 && prec < 300 && std::isfinite(x))
      return Value(std::strtod(fmt::format("{:.{}f}", x, prec).c_str(), nullptr));
    double p = std::pow(10.0, static_cast<double>(-prec));
    return Value(std::nearbyint(x / p) * p);
  }
  double p = std::pow(10.0, static_cast<double>(prec));
  return Value((method == "ceil" ? std::ceil(x * p) : std::floor(x * p)) / p);
}

// The string argument `x` (parameter `what`) of filter `name`; an error when absent or not a
// string.
static const std::string& string_arg(const Interp& in, const Expr& at, const std::string& name,
                                     const Value* x, const char* what) {
  if (!x || !x->is_string())
    in.error(at, fmt::format("filter '{}': {} must be a string.", name, what));
  return x->str();
}

// Any value: safe, string, tojson, default (d), length (count), pprint, attr.
std::optional<Value> Interp::value_filter(const std::string& name, const Value& v, const Args& a,
                                          const Expr& at) {
  auto arg = [&](size_t i, const char* n) { return a.get(i, n); };
  auto need_str = [&](const Value* x, const char* what) -> const std::string& {
    return string_arg(*this, at, name, x, what);
  };
  if (name == "safe" || name == "string") return name == "safe" ? v : Value(to_str(v));
  if (name == "tojson") {
    JsonStyle st;
    const Value* ea = arg(0, "ensure_ascii");
    const Value* ind = arg(1, "indent");
    const Value* sep = arg(2, "separators");
    if (ind && (ind->is_int() || ind->is_bool()))
      st.indent = static_cast<int>(std::clamp<int64_t>(ind->as_int(), -1, 64));
    if (ind && ind->is_string()) {
      st.indent_str = ind->str();
      if (st.indent_str.empty()) st.indent = 0;
    }
    if (sep && !sep->is_none()) {
      if (!sep->is_list() || sep->list().size() != 2 || !sep->list()[0].is_string() ||
          !sep->list()[1].is_string())
        error(at, "tojson separators must be a pair of strings.");
      st.item_sep = sep->list()[0].str();
      st.key_sep = sep->list()[1].str();
    }
    st.sort_keys = opt_bool(arg(3, "sort_keys"), false);
    st.ensure_ascii = opt_bool(ea, false);
    std::string s = to_json(v, st);
    check_size(at, s.size());
    return Value(std::move(s));
  }
  if (name == "default" || name == "d") {
    const Value* dv = arg(0, "default_value");
    bool boolean = opt_bool(arg(1, "boolean"), false);
    if (v.is_undefined() || (boolean && !truthy(v))) return dv ? *dv : Value(std::string());
    return v;
  }
  if (name == "length" || name == "count") {
    if (v.is_undefined()) return Value(int64_t{0});
    if (v.is_string()) return Value(static_cast<int64_t>(utf8_length(v.str())));
    if (v.is_list()) return Value(static_cast<int64_t>(v.list().size()));
    if (v.is_dict()) return Value(static_cast<int64_t>(v.dict().items.size()));
    if (v.is_namespace())
      return Value(static_cast<int64_t>(std::get<NsRef>(v.v)->attrs.items.size()));
    error(at, fmt::format("object of type '{}' has no len().", type_name(v)));
  }
  if (name == "pprint") return Value(to_repr(v));
  if (name == "attr") {  // getattr only: a dict's keys are not attributes
    Value r = get_attr(v, need_str(arg(0, "name"), "name"), at);
    if (v.is_dict() && !r.is_callable()) return Value(Undefined{arg(0, "name")->str()});
    return r;
  }
  return std::nullopt;
}

// Strings: trim, upper, lower, capitalize, title, escape (e, forceescape), replace, indent,
// wordcount, center, format.
std::optional<Value> Interp::text_filter(const std::string& name, const Value& v, const Args& a,
                                         const Expr& at) {
  auto arg = [&](size_t i, const char* n) { return a.get(i, n); };
  auto need_str = [&](const Value* x, const char* what) -> const std::string& {
    return string_arg(*this, at, name, x, what);
  };
  if (name == "trim") {
    const Value* chars = arg(0, "chars");
    std::optional<std::string> set;
    if (chars && !chars->is_none()) set = need_str(chars, "chars");
    return Value(py_strip(to_str(v), set, true, true));
  }
  if (name == "upper") return Value(str_upper(to_str(v)));
  if (name == "lower") return Value(str_lower(to_str(v)));
  if (name == "capitalize") return Value(py_capitalize(to_str(v)));
  if (name == "title") return Value(jinja_title(to_str(v)));
  if (name == "escape" || name == "e" || name == "forceescape")
    return Value(html_escape(to_str(v)));
  if (name == "replace") {
    const Value* cnt = arg(2, "count");
    int64_t count = cnt && !cnt->is_none() ? (cnt->is_int() ? cnt->as_int() : -1) : -1;
    std::string r = py_replace(to_str(v), need_str(arg(0, "old"), "old"),
                               need_str(arg(1, "new"), "new"), count, limits_.max_bytes);
    check_size(at, r.size());
    return Value(std::move(r));
  }
  if (name == "indent") {
    const Value* w = arg(0, "width");
    std::string ind =
        w && w->is_string()
            ? w->str()
            : std::string(static_cast<size_t>(std::clamp<int64_t>(
                              w ? ((w->is_int() || w->is_bool()) ? w->as_int() : 4) : 4, 0, 256)),
                          ' ');
    std::string s = to_str(v);
    step(at, static_cast<int64_t>(s.size() / 64));
    check_size(at, s.size() + (ind.size() + 1) *
                                  static_cast<size_t>(std::count(s.begin(), s.end(), '\n') + 1));
    return Value(
        do_indent(s, ind, opt_bool(arg(1, "first"), false), opt_bool(arg(2, "blank"), false)));
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    for (char32_t c : utf8_decode(to_str(v))) {
      bool w = cp_is_alpha(c) || cp_is_digit(c) || c == '_';
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value(n);
  }
  if (name == "center") {  // str.center(width): the odd pad goes left when width is odd
    std::string str = to_str(v);
    const Value* w = arg(0, "width");
    int64_t width =
        std::min<int64_t>(w && (w->is_int() || w->is_bool()) ? w->as_int() : 80, 1 << 20);
    int64_t len = static_cast<int64_t>(utf8_length(str));
    if (width <= len) return Value(str);
    int64_t pad = width - len, left = pad / 2 + (pad & width & 1);
    return Value(std::string(static_cast<size_t>(left), ' ') + str +
                 std::string(static_cast<size_t>(pad - left), ' '));
  }
  if (name == "format") {
    if (!v.is_string()) error(at, "filter 'format' needs a string.");
    return Value(percent_format(*this, at, v.str(), Value(a.pos, true)));
  }
  return std::nullopt;
}

// Numbers: int, float, abs, round.
std::optional<Value> Interp::number_filter(const std::string& name, const Value& v, const Args& a,
                                           const Expr& at) {
  auto arg = [&](size_t i, const char* n) { return a.get(i, n); };
  if (name == "int") {
    const Value* b = arg(1, "base");
    int base = b && b->is_int() ? static_cast<int>(b->as_int()) : 10;
    if (base < 2 || base > 36) base = 10;
    const Value* dflt = arg(0, "default");
    return to_int(v, dflt ? *dflt : Value(int64_t{0}), base);
  }
  if (name == "float") {
    const Value* dflt = arg(0, "default");
    return to_float(v, dflt ? *dflt : Value(0.0));
  }
  if (name == "abs") {
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    if (v.is_int() || v.is_bool()) {
      if (v.as_int() == INT64_MIN) error(at, "integer overflow.");
      return Value(std::abs(v.as_int()));
    }
    error(at, fmt::format("bad operand type for abs(): '{}'.", type_name(v)));
  }
  if (name == "round") {
    const Value* p = arg(0, "precision");
    const Value* m = arg(1, "method");
    return py_round(*this, at, v, p && p->is_int() ? p->as_int() : 0,
                    m && m->is_string() ? m->str() : "common");
  }
  return std::nullopt;
}

// Sequences: items, list, first, last, reverse, join, batch, sum.
std::optional<Value> Interp::sequence_filter(const std::string& name, const Value& v, const Args& a,
                                             const Expr& at) {
  auto arg = [&](size_t i, const char* n) { return a.get(i, n); };
  if (name == "items") {
    if (v.is_undefined()) return Value(List{});
    if (!v.is_dict()) error(at, "filter 'items' needs a mapping.");
    return call_method(v, "items", {}, at);
  }
  if (name == "list") return Value(iterate(v, at));
  if (name == "first" || name == "last") {
    List items = iterate(v, at);
    if (items.empty()) return Value(Undefined{"No " + name + " item"});
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::u32string cps = utf8_decode(v.str());
      std::reverse(cps.begin(), cps.end());
      return Value(utf8_encode(cps));
    }
    List items = iterate(v, at);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "join") {
    const std::string sep = arg(0, "d") ? to_str(*arg(0, "d")) : std::string();
    const Value* attr = arg(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& x : iterate(v, at)) {
      if (!first) out += sep;
      first = false;
      out += to_str(attr ? get_attr(x, to_str(*attr), at, true) : x);
      check_size(at, out.size());
    }
    return Value(std::move(out));
  }
  if (name == "batch") {  // batch(linecount, fill_with=None): lists of linecount items
    const Value* c = arg(0, "linecount");
    if (!c || !(c->is_int() || c->is_bool()) || c->as_int() <= 0)
      error(at, "batch needs a positive count.");
    const Value* fill = arg(1, "fill_with");
    size_t k = static_cast<size_t>(c->as_int());
    List out, cur;
    for (const Value& x : iterate(v, at)) {
      cur.push_back(x);
      if (cur.size() == k) out.emplace_back(std::exchange(cur, {}));
    }
    if (!cur.empty()) {
      if (fill && !fill->is_none())
        while (cur.size() < k) cur.push_back(*fill);
      out.emplace_back(std::move(cur));
    }
    return Value(std::move(out));
  }
  if (name == "sum") {
    const Value* attr = arg(0, "attribute");
    const Value* start = arg(1, "start");
    Value acc = start ? *start : Value(int64_t{0});
    for (const Value& x : iterate(v, at))
      acc = eval_binary(at, "+", acc, attr ? get_attr(x, to_str(*attr), at, true) : x);
    return acc;
  }
  return std::nullopt;
}

// Orders and comparisons of items: sort, dictsort, unique, min, max.
std::optional<Value> Interp::ordering_filter(const std::string& name, const Value& v, const Args& a,
                                             const Expr& at) {
  auto arg = [&](size_t i, const char* n) { return a.get(i, n); };
  if (name == "sort") {
    bool cs = opt_bool(arg(1, "case_sensitive"), false);
    const Value* attr = arg(2, "attribute");
    return Value(sorted(
        *this, at, iterate(v, at),
        [&](const Value& x) {
          return lowered(attr ? get_attr(x, to_str(*attr), at, true) : x, cs);
        },
        opt_bool(arg(0, "reverse"), false)));
  }
  if (name == "dictsort") {
    if (!v.is_dict()) error(at, "filter 'dictsort' needs a mapping.");
    bool cs = opt_bool(arg(0, "case_sensitive"), false);
    const Value* by = arg(1, "by");
    int pos = by && by->is_string() && by->str() == "value" ? 1 : 0;
    List items = call_method(v, "items", {}, at).list();
    return Value(sorted(
        *this, at, std::move(items), [&](const Value& kv) { return lowered(kv.list()[pos], cs); },
        opt_bool(arg(2, "reverse"), false)));
  }
  if (name == "unique") {
    bool cs = opt_bool(arg(0, "case_sensitive"), false);
    const Value* attr = arg(1, "attribute");
    List out, seen;
    for (const Value& x : iterate(v, at)) {
      Value k = lowered(attr ? get_attr(x, to_str(*attr), at, true) : x, cs);
      bool dup = false;
      for (const Value& s : seen) {
        step(at);
        if (equals(s, k)) {
          dup = true;
          break;
        }
      }
      if (!dup) {
        seen.push_back(k);
        out.push_back(x);
      }
    }
    return Value(std::move(out));
  }
  if (name == "min" || name == "max") {
    bool cs = opt_bool(arg(0, "case_sensitive"), false);
    const Value* attr = arg(1, "attribute");
    List items = iterate(v, at);
    if (items.empty()) return Value(Undefined{"No " + name + " item"});
    size_t best = 0;
    auto key = [&](const Value& x) {
      return lowered(attr ? get_attr(x, to_str(*attr), at, true) : x, cs);
    };
    for (size_t i = 1; i < items.size(); ++i) {
      bool better = name == "min" ? less(key(items[i]), key(items[best]))
                                  : less(key(items[best]), key(items[i]));
      if (better) best = i;
    }
    return items[best];
  }
  return std::nullopt;
}

// Filters that apply another filter, an attribute or a test to each item: map, select, reject,
// selectattr, rejectattr.
std::optional<Value> Interp::higher_order_filter(const std::string& name, const Value& v,
                                                 const Args& a, const Expr& at) {
  if (name == "map") {
    List out;
    const Value* attr = nullptr;
    for (const auto& [k, x] : a.kw)
      if (k == "attribute") attr = &x;
    if (attr) {
      const Value* dflt = nullptr;
      for (const auto& [k, x] : a.kw)
        if (k == "default") dflt = &x;
      for (const Value& x : iterate(v, at)) {
        Value r = get_attr(x, to_str(*attr), at, true);
        out.push_back(r.is_undefined() && dflt ? *dflt : r);
      }
      return Value(std::move(out));
    }
    if (a.pos.empty() || !a.pos[0].is_string()) error(at, "map needs a filter name or attribute=.");
    Args rest;
    rest.pos.assign(a.pos.begin() + 1, a.pos.end());
    rest.kw = a.kw;
    for (const Value& x : iterate(v, at)) out.push_back(apply_filter(a.pos[0].str(), x, rest, at));
    return Value(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    bool by_attr = name == "selectattr" || name == "rejectattr";
    bool keep_if = name == "select" || name == "selectattr";
    size_t t = by_attr ? 1 : 0;
    if (by_attr && (a.pos.empty() || !a.pos[0].is_string()))
      error(at, name + " needs an attribute name.");
    Args rest;
    if (a.pos.size() > t + 1)
      rest.pos.assign(a.pos.begin() + static_cast<long>(t) + 1, a.pos.end());
    rest.kw = a.kw;
    List out;
    for (const Value& x : iterate(v, at)) {
      Value subject = by_attr ? get_attr(x, a.pos[0].str(), at, true) : x;
      bool r;
      if (a.pos.size() > t) {
        if (!a.pos[t].is_string()) error(at, name + ": the test name must be a string.");
        r = apply_test(a.pos[t].str(), subject, rest, at);
      } else {
        r = truthy(subject);
      }
      if (r == keep_if) out.push_back(x);
    }
    return Value(std::move(out));
  }
  return std::nullopt;
}

// Jinja's filters (jinja2/filters.py), one family at a time; a name no family knows is an error.
Value Interp::apply_filter(const std::string& name, const Value& v, const Args& a, const Expr& at) {
  step(at);
  for (auto family :
       {&Interp::value_filter, &Interp::text_filter, &Interp::number_filter,
        &Interp::sequence_filter, &Interp::ordering_filter, &Interp::higher_order_filter})
    if (std::optional<Value> r = (this->*family)(name, v, a, at)) return std::move(*r);
  error(at, "unknown or unsupported filter '" + name + "'.");
}

bool Interp::apply_test(const std::string& name, const Value& v, const Args& a, const Expr& at) {
  step(at);
  const Value* x = a.get(0, "other");
  auto need_arg = [&]() -> const Value& {
    if (!x) error(at, "test '" + name + "' needs an argument.");
    return *x;
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && std::get<bool>(v.v);
  if (name == "false") return v.is_bool() && !std::get<bool>(v.v);
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict();
  if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "callable") return v.is_callable();
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper")
    return truthy(call_method(Value(to_str(v)), "is" + name, {}, at));
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!(v.is_int() || v.is_bool())) error(at, "test '" + name + "' needs an integer.");
    if (name == "divisibleby") {
      const Value& d = need_arg();
      if (!(d.is_int() || d.is_bool()) || d.as_int() == 0)
        error(at, "divisibleby needs a non-zero integer.");
      return d.as_int() == -1 || v.as_int() % d.as_int() == 0;
    }
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "sameas") {
    const Value& o = need_arg();
    if (v.v.index() != o.v.index()) return false;
    if (v.is_none() || v.is_bool() || v.is_undefined()) return equals(v, o);
    if (v.is_namespace() || v.is_callable()) return equals(v, o);
    if (v.is_list()) return std::get<ListRef>(v.v).p == std::get<ListRef>(o.v).p;
    if (v.is_dict()) return std::get<DictRef>(v.v).p == std::get<DictRef>(o.v).p;
    return equals(v, o) && (v.is_int() ? v.as_int() >= -5 && v.as_int() <= 256 : false);
  }
  if (name == "in") return compare(at, "in", v, need_arg());
  static const std::pair<const char*, const char*> cmp[] = {
      {"eq", "=="}, {"equalto", "=="},    {"==", "=="}, {"ne", "!="}, {"!=", "!="},
      {"lt", "<"},  {"lessthan", "<"},    {"<", "<"},   {"le", "<="}, {"<=", "<="},
      {"gt", ">"},  {"greaterthan", ">"}, {">", ">"},   {"ge", ">="}, {">=", ">="}};
  for (const auto& [n, op] : cmp)
    if (name == n) return compare(at, op, v, need_arg());
  error(at, "unknown or unsupported test '" + name + "'.");
}

}  // namespace hogwild::chat
