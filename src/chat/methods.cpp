// Python str/dict/list methods that chat templates call (message.content.strip(), d.get(k), ...)
// and the globals jinja2 + transformers provide (range, namespace, dict, raise_exception,
// strftime_now).
#include <fmt/format.h>

#include <ctime>

#include "chat/interp.h"
#include "chat/strings.h"
#include "chat/ustr.h"

namespace hogwild::chat {

std::string percent_format(Interp& in, const Expr& at, const std::string& fmt, const Value& args);

static const std::string& need_str(Interp& in, const Expr& at, const Value* v, const char* what) {
  if (!v || !v->is_string()) in.error(at, fmt::format("{} must be a string.", what));
  return v->str();
}

static int64_t opt_int(Interp& in, const Expr& at, const Value* v, int64_t dflt, const char* what) {
  if (!v || v->is_none()) return dflt;
  if (!(v->is_int() || v->is_bool())) in.error(at, fmt::format("{} must be an integer.", what));
  return v->as_int();
}

static Value str_list(std::vector<std::string> parts) {
  List l;
  for (auto& p : parts) l.emplace_back(std::move(p));
  return Value(std::move(l));
}

static bool affix_match(Interp& in, const Expr& at, const std::string& s, const Args& a,
                        bool prefix) {
  const Value* p = a.get(0, "prefix");
  if (!p) in.error(at, "startswith/endswith need an argument.");
  auto bound = [&](const Value* v) {
    if (v && !(v->is_none() || v->is_int() || v->is_bool()))
      in.error(at, "startswith/endswith start and end must be integers or None.");
    return v ? *v : Value(None{});
  };
  std::u32string cps = utf8_decode(s);
  int64_t n = static_cast<int64_t>(cps.size());
  std::vector<size_t> idx =
      slice_indices(n, bound(a.get(1, "start")), bound(a.get(2, "end")), Value(None{}));
  std::string sub;
  for (size_t i : idx) utf8_append(sub, cps[i]);
  auto one = [&](const Value& x) {
    if (!x.is_string())
      in.error(at, "startswith/endswith arguments must be strings or tuples of strings.");
    const std::string& t = x.str();
    if (t.size() > sub.size()) return false;
    return prefix ? sub.compare(0, t.size(), t) == 0
                  : sub.compare(sub.size() - t.size(), t.size(), t) == 0;
  };
  if (p->is_list()) {
    for (const Value& x : p->list())
      if (one(x)) return true;
    return false;
  }
  return one(*p);
}

// str.format with {} / {0} / {name} fields (no format specs beyond an empty one).
static std::string str_format(Interp& in, const Expr& at, const std::string& f, const Args& a) {
  std::string out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      size_t e = f.find('}', i);
      if (e == std::string::npos)
        in.error(at, "str.format: single '{' encountered in format string.");
      std::string field = f.substr(i + 1, e - i - 1);
      if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
        in.error(at, "str.format: format specs and conversions are not supported.");
      const Value* v = nullptr;
      if (field.empty()) {
        v = auto_idx < a.pos.size() ? &a.pos[auto_idx] : nullptr;
        ++auto_idx;
      } else if (std::all_of(field.begin(), field.end(), ::isdigit) && field.size() < 9) {
        size_t k = std::stoul(field);
        v = k < a.pos.size() ? &a.pos[k] : nullptr;
      } else {
        for (const auto& [k, x] : a.kw)
          if (k == field) v = &x;
      }
      if (!v) in.error(at, "str.format: missing argument for field {" + field + "}.");
      out += to_str(*v);
      i = e;
    } else if (c == '}') {
      in.error(at, "str.format: single '}' encountered in format string.");
    } else {
      out += c;
    }
    in.check_size(at, out.size());
  }
  return out;
}

// str.find / rfind / index / count on `s`: positions and counts in code points, as Python's.
// Returns nullopt when `name` is none of these. Throws TemplateError when the substring is not a
// string, and for index() when it is not found.
static std::optional<Value> string_search(Interp& in, const std::string& s, const std::string& name,
                                          const Args& a, const Expr& at) {
  if (name == "find" || name == "rfind" || name == "index") {
    const std::string& t = need_str(in, at, a.get(0, "sub"), "find: substring");
    size_t p = name == "rfind" ? s.rfind(t) : s.find(t);
    if (p == std::string::npos) {
      if (name == "index") in.error(at, "substring not found.");
      return Value(int64_t{-1});
    }
    return Value(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, p))));
  }
  if (name == "count") {
    const std::string& t = need_str(in, at, a.get(0, "sub"), "count: substring");
    if (t.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
    int64_t n = 0;
    for (size_t p = s.find(t); p != std::string::npos; p = s.find(t, p + t.size())) ++n;
    return Value(n);
  }
  return std::nullopt;
}

// `sep.join(iterable)`: the items of argument 0, all strings, joined by `sep`. Throws
// TemplateError when the argument is missing, an item is not a string or the result exceeds
// Limits::max_bytes.
static std::string str_join(Interp& in, const Expr& at, const std::string& sep, const Args& a) {
  const Value* it = a.get(0, "iterable");
  if (!it) in.error(at, "join needs an argument.");
  std::string out;
  bool first = true;
  for (const Value& x : in.iterate(*it, at)) {
    if (!x.is_string())
      in.error(at, fmt::format("sequence item: expected str instance, {} found.", type_name(x)));
    if (!first) out += sep;
    first = false;
    out += x.str();
    in.check_size(at, out.size());
  }
  return out;
}

// The character-class tests isdigit / isalpha / isalnum / isspace / islower / isupper of `s`,
// over its code points with Python's rules (an empty string is false; islower/isupper need at
// least one cased character). Returns nullopt when `name` is none of these; throws nothing.
static std::optional<bool> string_predicate(const std::string& s, const std::string& name) {
  std::u32string cps = utf8_decode(s);
  auto all = [&](auto pred) { return !cps.empty() && std::all_of(cps.begin(), cps.end(), pred); };
  if (name == "isdigit") return all(cp_is_digit);
  if (name == "isalpha") return all(cp_is_alpha);
  if (name == "isalnum") return all([](char32_t c) { return cp_is_alpha(c) || cp_is_digit(c); });
  if (name == "isspace") return all(py_isspace);
  if (name == "islower" || name == "isupper") {
    bool cased = false, ok = true;
    for (char32_t c : cps) {
      if (cp_is_upper(c)) {
        cased = true;
        ok &= name == "isupper";
      } else if (cp_is_lower(c)) {
        cased = true;
        ok &= name == "islower";
      }
    }
    return cased && ok;
  }
  return std::nullopt;
}

// Python str method `name` called on `s` with `a`: the search, join and character-class families
// in their own functions above. Throws TemplateError for a bad argument or an unknown method.
static Value string_method(Interp& in, const std::string& s, const std::string& name, const Args& a,
                           const Expr& at) {
  in.step(at, 1 + static_cast<int64_t>(s.size() / 4096));
  if (name == "startswith" || name == "endswith")
    return Value(affix_match(in, at, s, a, name == "startswith"));
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = a.get(0, "chars");
    std::optional<std::string> set;
    if (chars && !chars->is_none()) set = need_str(in, at, chars, "strip characters");
    return Value(py_strip(s, set, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    const Value* sep = a.get(0, "sep");
    int64_t maxsplit = opt_int(in, at, a.get(1, "maxsplit"), -1, "maxsplit");
    if (sep && !sep->is_none()) {
      const std::string& t = need_str(in, at, sep, "separator");
      if (t.empty()) in.error(at, "empty separator.");
      return str_list(py_split_sep(s, t, maxsplit, name == "rsplit"));
    }
    return str_list(py_split_ws(s, maxsplit, name == "rsplit"));
  }
  if (name == "upper") return Value(str_upper(s));
  if (name == "lower") return Value(str_lower(s));
  if (name == "title") return Value(py_title(s));
  if (name == "capitalize") return Value(py_capitalize(s));
  if (name == "swapcase") {
    std::string out;
    for (char32_t c : utf8_decode(s)) utf8_append(out, cp_is_upper(c) ? cp_lower(c) : cp_upper(c));
    return Value(out);
  }
  if (name == "replace") {
    const std::string& old = need_str(in, at, a.get(0, "old"), "replace: old");
    const std::string& neu = need_str(in, at, a.get(1, "new"), "replace: new");
    std::string r = py_replace(s, old, neu, opt_int(in, at, a.get(2, "count"), -1, "count"),
                               in.limits().max_bytes);
    in.check_size(at, r.size());
    return Value(std::move(r));
  }
  if (auto r = string_search(in, s, name, a, at)) return std::move(*r);
  if (name == "join") return Value(str_join(in, at, s, a));
  if (name == "format") return Value(str_format(in, at, s, a));
  if (name == "removeprefix" || name == "removesuffix") {
    const std::string& t = need_str(in, at, a.get(0, "affix"), name.c_str());
    if (name == "removeprefix" && s.compare(0, t.size(), t) == 0) return Value(s.substr(t.size()));
    if (name == "removesuffix" && !t.empty() && s.size() >= t.size() &&
        s.compare(s.size() - t.size(), t.size(), t) == 0)
      return Value(s.substr(0, s.size() - t.size()));
    return Value(s);
  }
  if (name == "splitlines") return str_list(py_splitlines(s));
  if (auto r = string_predicate(s, name)) return Value(*r);
  in.error(at, "str." + name + "() is not supported.");
}

Value Interp::call_method(const Value& self, const std::string& name, const Args& a,
                          const Expr& at) {
  if (self.is_string()) return string_method(*this, self.str(), name, a, at);
  if (self.is_dict() && std::get<DictRef>(self.v).loop) {  // loop.cycle(a, b, ...)
    if (a.pos.empty()) error(at, "loop.cycle needs at least one argument.");
    int64_t i = self.dict().find("index0")->as_int();
    return a.pos[static_cast<size_t>(i) % a.pos.size()];
  }
  if (self.is_dict()) {
    const Dict& d = self.dict();
    step(at, 1 + static_cast<int64_t>(d.items.size()));
    if (name == "get") {
      const Value* k = a.get(0, "key");
      if (!k) error(at, "dict.get needs a key.");
      const Value* v = k->is_string() ? d.find(k->str()) : nullptr;
      if (v) return *v;
      const Value* dflt = a.get(1, "default");
      return dflt ? *dflt : Value(None{});
    }
    if (name == "copy") return self;
    List out;
    for (const auto& [k, v] : d.items) {
      if (name == "keys") {
        out.emplace_back(k);
      } else if (name == "values") {
        out.push_back(v);
      } else {
        out.emplace_back(List{Value(k), v}, true);
      }
    }
    return Value(std::move(out));
  }
  if (self.is_list()) {
    step(at, 1 + static_cast<int64_t>(self.list().size()));
    if (name == "copy") return self;
    const Value* x = a.get(0, "value");
    if (!x) error(at, "list." + name + "() needs an argument.");
    int64_t count = 0;
    for (size_t i = 0; i < self.list().size(); ++i) {
      if (equals(self.list()[i], *x)) {
        if (name == "index") return Value(static_cast<int64_t>(i));
        ++count;
      }
    }
    if (name == "index") error(at, to_repr(*x) + " is not in list.");
    return Value(count);
  }
  error(at, fmt::format("'{}' object has no method '{}'.", type_name(self), name));
}

Value Interp::call_global(const std::string& name, const Args& a, const Expr& at) {
  if (name == "range") {
    std::vector<int64_t> n;
    for (const Value& v : a.pos) {
      if (!(v.is_int() || v.is_bool())) error(at, "range() arguments must be integers.");
      n.push_back(v.as_int());
    }
    if (n.empty() || n.size() > 3) error(at, "range() takes 1 to 3 arguments.");
    int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1];
    int64_t st = n.size() == 3 ? n[2] : 1;
    if (st == 0) error(at, "range() arg 3 must not be zero.");
    List out;
    for (int64_t i = start; st > 0 ? i < stop : i > stop; i += st) {
      check_items(at, out.size() + 1);
      out.emplace_back(i);
      if ((st > 0 && i > INT64_MAX - st) || (st < 0 && i < INT64_MIN - st)) break;
    }
    step(at, static_cast<int64_t>(out.size()));
    return Value(std::move(out));
  }
  if (name == "namespace" || name == "dict") {
    Dict d;
    for (const Value& v : a.pos) {
      if (!v.is_dict()) error(at, name + "() positional arguments must be dicts.");
      for (const auto& [k, x] : v.dict().items) d.set(k, x);
    }
    for (const auto& [k, v] : a.kw) d.set(k, v);
    if (name == "dict") return Value(std::move(d));
    auto ns = std::make_shared<Namespace>();
    ns->attrs = std::move(d);
    namespaces_.push_back(ns);
    return Value(NsRef(ns));
  }
  if (name == "raise_exception") {
    const Value* m = a.get(0, "message");
    throw TemplateError(fmt::format("chat template raised an exception at line {}, column {}: {}",
                                    at.line, at.col, m ? to_str(*m) : std::string()));
  }
  if (name == "strftime_now") {
    const std::string& f = need_str(*this, at, a.get(0, "format"), "strftime_now format");
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[512];
    size_t n = f.size() < 200 ? std::strftime(buf, sizeof buf, f.c_str(), &tm) : 0;
    return Value(std::string(buf, n));
  }
  error(at, "unknown function " + name + "().");
}

}  // namespace hogwild::chat
