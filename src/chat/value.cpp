#include "chat/value.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/ast.h"
#include "chat/ustr.h"
#include "core/error.h"

namespace hogwild::chat {
namespace {

// Values can nest arbitrarily deep (a loop can wrap a list in a list each step) and a namespace can
// hold itself: recursion over values is bounded, and repr() prints a namespace it is already
// inside as <Namespace {...}>, like Python's recursive-repr guard.
constexpr int kMaxValueDepth = 400;
thread_local int g_depth = 0;
thread_local std::vector<const Namespace*> g_ns_printing;

struct ValueDepth {
  ValueDepth() {
    if (++g_depth > kMaxValueDepth) {
      --g_depth;
      fail("value nested deeper than {} levels.", kMaxValueDepth);
    }
  }
  ~ValueDepth() { --g_depth; }
  ValueDepth(const ValueDepth&) = delete;
  ValueDepth& operator=(const ValueDepth&) = delete;
};

}  // namespace

const Value* Dict::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  for (auto& [k, old] : items)
    if (k == key) {
      old = std::move(v);
      return;
    }
  items.emplace_back(key, std::move(v));
}

int64_t Value::as_int() const { return is_bool() ? std::get<bool>(v) : std::get<int64_t>(v); }
double Value::as_double() const {
  return is_float() ? std::get<double>(v) : static_cast<double>(as_int());
}

bool truthy(const Value& v) {
  switch (v.v.index()) {
    case 0:
    case 1:
      return false;
    case 2:
      return std::get<bool>(v.v);
    case 3:
      return std::get<int64_t>(v.v) != 0;
    case 4:
      return std::get<double>(v.v) != 0.0;
    case 5:
      return !v.str().empty();
    case 6:
      return !v.list().empty();
    case 7:
      return !v.dict().items.empty();
    default:
      return true;
  }
}

const char* type_name(const Value& v) {
  static const char* names[] = {"undefined", "NoneType", "bool", "int",       "float",
                                "str",       "list",     "dict", "Namespace", "function"};
  if (v.is_list() && std::get<ListRef>(v.v).tuple) return "tuple";
  return names[v.v.index()];
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form, then laid out the way CPython's repr does:
  // positional for 1e-4 <= |d| < 1e16, else d.ddde[+-]XX.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  size_t e = s.find('e');
  int exp = std::stoi(s.substr(e + 1));
  std::string digits = s.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    out += fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', std::abs(exp));
  } else if (exp < 0) {
    out.append("0.").append(static_cast<size_t>(-exp - 1), '0').append(digits);
  } else {
    if (digits.size() <= static_cast<size_t>(exp) + 1) {
      out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
  }
  return neg ? "-" + out : out;
}

static std::string str_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (char32_t c : utf8_decode(s)) {
    if (c == static_cast<char32_t>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c >= 0xDC80 && c <= 0xDCFF) {
      out += fmt::format("\\udc{:02x}", static_cast<unsigned>(c - 0xDC00));
    } else if (!cp_is_printable(c)) {
      unsigned u = c;
      out += u < 0x100     ? fmt::format("\\x{:02x}", u)
             : u < 0x10000 ? fmt::format("\\u{:04x}", u)
                           : fmt::format("\\U{:08x}", u);
    } else {
      utf8_append(out, c);
    }
  }
  out += q;
  return out;
}

static std::string dict_repr(const Dict& d) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : d.items) {
    if (!first) out += ", ";
    first = false;
    out += str_repr(k) + ": " + to_repr(v);
  }
  return out + "}";
}

std::string to_repr(const Value& v) {
  ValueDepth guard;
  switch (v.v.index()) {
    case 0:
      return "Undefined";
    case 1:
      return "None";
    case 2:
      return std::get<bool>(v.v) ? "True" : "False";
    case 3:
      return std::to_string(std::get<int64_t>(v.v));
    case 4:
      return float_repr(std::get<double>(v.v));
    case 5:
      return str_repr(v.str());
    case 6: {
      bool tuple = std::get<ListRef>(v.v).tuple;
      std::string out = tuple ? "(" : "[";
      const List& l = v.list();
      for (size_t i = 0; i < l.size(); ++i) out += (i ? ", " : "") + to_repr(l[i]);
      if (tuple && l.size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case 7:
      return dict_repr(v.dict());
    case 8: {
      const Namespace* ns = std::get<NsRef>(v.v).get();
      if (std::find(g_ns_printing.begin(), g_ns_printing.end(), ns) != g_ns_printing.end())
        return "<Namespace {...}>";
      g_ns_printing.push_back(ns);
      std::string out;
      try {
        out = "<Namespace " + dict_repr(ns->attrs) + ">";
      } catch (...) {
        g_ns_printing.pop_back();
        throw;
      }
      g_ns_printing.pop_back();
      return out;
    }
    default:
      return "<function " + std::get<FnRef>(v.v)->name + ">";
  }
}

std::string to_str(const Value& v) {
  if (v.is_undefined()) return "";
  if (v.is_string()) return v.str();
  return to_repr(v);
}

bool equals(const Value& a, const Value& b) {
  ValueDepth guard;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.v.index() != b.v.index()) return false;
  switch (a.v.index()) {
    case 0:
    case 1:
      return true;
    case 5:
      return a.str() == b.str();
    case 6: {
      const List &x = a.list(), &y = b.list();
      if (x.size() != y.size() || std::get<ListRef>(a.v).tuple != std::get<ListRef>(b.v).tuple)
        return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!equals(x[i], y[i])) return false;
      return true;
    }
    case 7: {
      const Dict &x = a.dict(), &y = b.dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* o = y.find(k);
        if (!o || !equals(v, *o)) return false;
      }
      return true;
    }
    case 8:
      return std::get<NsRef>(a.v) == std::get<NsRef>(b.v);
    default:
      return std::get<FnRef>(a.v) == std::get<FnRef>(b.v);
  }
}

bool less(const Value& a, const Value& b) {
  ValueDepth guard;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order = code points
  if (a.is_list() && b.is_list()) {
    const List &x = a.list(), &y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  fail("'<' is not supported between instances of '{}' and '{}'", type_name(a), type_name(b));
}

Value from_json(const nlohmann::ordered_json& j) {
  ValueDepth guard;
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value(None{});
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      auto u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& e : j) l.push_back(from_json(e));
      return Value(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (const auto& [k, e] : j.items()) d.set(k, from_json(e));
      return Value(std::move(d));
    }
    default:
      fail("chat template: unsupported JSON value (binary data); pass plain JSON values.");
  }
}

// json.dumps string escaping with ensure_ascii=False: only ", \ and control characters are escaped.
static void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (char32_t c : utf8_decode(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || (c >= 0xDC80 && c <= 0xDCFF) ||
            (ensure_ascii && c >= 0x7F && c < 0x10000)) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else if (ensure_ascii && c >= 0x10000) {
          unsigned u = c - 0x10000;
          out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (u >> 10), 0xDC00 + (u & 0x3FF));
        } else {
          utf8_append(out, c);
        }
    }
  }
  out += '"';
}

static void json_value(std::string& out, const Value& v, const JsonStyle& st, int depth) {
  if (depth > 200) fail("tojson: value nested deeper than 200 levels.");
  bool pretty = st.indent >= 0 || !st.indent_str.empty();
  std::string ind =
      st.indent_str.empty() ? std::string(std::max(st.indent, 0), ' ') : st.indent_str;
  const std::string isep = st.item_sep ? *st.item_sep : pretty ? "," : ", ";
  auto newline = [&](int d) {
    out += '\n';
    for (int i = 0; i < d; ++i) out += ind;
  };
  switch (v.v.index()) {
    case 1:
      out += "null";
      return;
    case 2:
      out += std::get<bool>(v.v) ? "true" : "false";
      return;
    case 3:
      out += std::to_string(std::get<int64_t>(v.v));
      return;
    case 4: {
      double d = std::get<double>(v.v);
      out += std::isnan(d)   ? "NaN"
             : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                             : float_repr(d);
      return;
    }
    case 5:
      json_string(out, v.str(), st.ensure_ascii);
      return;
    case 6: {
      const List& l = v.list();
      if (l.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < l.size(); ++i) {
        if (i) out += isep;
        if (pretty) newline(depth + 1);
        json_value(out, l[i], st, depth + 1);
      }
      if (pretty) newline(depth);
      out += ']';
      return;
    }
    case 7: {
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.dict().items) items.push_back(&kv);
      if (items.empty()) {
        out += "{}";
        return;
      }
      if (st.sort_keys)
        std::stable_sort(items.begin(), items.end(),
                         [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += isep;
        if (pretty) newline(depth + 1);
        json_string(out, items[i]->first, st.ensure_ascii);
        out += st.key_sep;
        json_value(out, items[i]->second, st, depth + 1);
      }
      if (pretty) newline(depth);
      out += '}';
      return;
    }
    default:
      fail("tojson: Object of type {} is not JSON serializable.", type_name(v));
  }
}

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  json_value(out, v, style, 0);
  return out;
}

}  // namespace hogwild::chat
