// The formatting file: built-in defaults, JSON parsing/validation, rendering. Keys:
// docs/FORMATTING.md.
#include "hogwild/formatting.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/io.h"
#include "hogwild/json_reader.h"

namespace hogwild {

using ojson = nlohmann::ordered_json;

namespace defaults {
#include "hogwild/formats/texts.inc"
}  // namespace defaults

namespace {

using json_reader::ObjReader;
using json_reader::type_name;

constexpr int kMaxNameIndex = 8;  // {name_1}..{name_8}

// ---- placeholders
// ----------------------------------------------------------------------------------

/// Which placeholders a template key may use.
enum Ph : unsigned {
  kPhWorkers = 1,  // {n_workers} {worker_names} {name_1}..{name_8}
  kPhName = 2,     // {name}
  kPhStep = 4,     // {step}
  kPhPrompt = 8,   // {rules} {example} {problem}
  kPhPoints = 16,  // {n_points}
  kPhPoint = 32,   // {point} {point_text}
};

bool is_name_k(std::string_view id, int* k = nullptr) {
  if (id.size() < 6 || id.substr(0, 5) != "name_") return false;
  std::string_view digits = id.substr(5);
  if (digits.size() > 1 || digits[0] < '1' || digits[0] > '9') return false;
  if (k) *k = digits[0] - '0';
  return true;
}

/// The placeholder class of identifier `id`, or 0 if `id` is not a placeholder (kept literally).
unsigned placeholder_class(std::string_view id) {
  if (id == "n_workers" || id == "worker_names" || is_name_k(id)) return kPhWorkers;
  if (id == "name") return kPhName;
  if (id == "step") return kPhStep;
  if (id == "rules" || id == "example" || id == "problem") return kPhPrompt;
  if (id == "n_points") return kPhPoints;
  if (id == "point" || id == "point_text") return kPhPoint;
  return 0;
}

/// Calls f(begin, end, id) for every "{identifier}" in s (identifier: [a-z0-9_]+).
template <typename F>
void for_each_brace_id(std::string_view s, F&& f) {
  for (size_t open = s.find('{'); open != std::string_view::npos; open = s.find('{', open + 1)) {
    size_t close = open + 1;
    while (close < s.size() &&
           (std::islower(static_cast<unsigned char>(s[close])) ||
            std::isdigit(static_cast<unsigned char>(s[close])) || s[close] == '_'))
      ++close;
    if (close == open + 1 || close >= s.size() || s[close] != '}') continue;
    f(open, close + 1, s.substr(open + 1, close - open - 1));
  }
}

/// Replaces the placeholders in `tmpl` that `vars` defines; other brace text stays as it is.
std::string render(std::string_view tmpl,
                   const std::map<std::string, std::string, std::less<>>& vars) {
  std::string out;
  size_t done = 0;
  for_each_brace_id(tmpl, [&](size_t b, size_t e, std::string_view id) {
    auto it = vars.find(id);
    if (it == vars.end() || b < done) return;
    out.append(tmpl.substr(done, b - done));
    out.append(it->second);
    done = e;
  });
  out.append(tmpl.substr(done));
  return out;
}

std::string join_names(const std::vector<std::string>& names, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i > 0) s += (i == n - 1) ? " and " : ", ";
    s += names[i];
  }
  return s;
}

/// Checks that template `text` of key `key` only uses the placeholder classes in `allowed`.
void check_placeholders(std::string_view origin, std::string_view key, std::string_view text,
                        unsigned allowed, size_t n_names) {
  for_each_brace_id(text, [&](size_t, size_t, std::string_view id) {
    unsigned cls = placeholder_class(id);
    if (cls == 0) return;
    if (!(cls & allowed))
      fail(
          "{}: key '{}' uses the placeholder {{{}}}, which is not available there. Remove it "
          "(docs/FORMATTING.md lists the placeholders of each key).",
          origin, key, id);
    int k = 0;
    if (is_name_k(id, &k) && size_t(k) > n_names)
      fail(
          "{}: key '{}' uses {{{}}} but worker_names has only {} names. Add names or use a smaller "
          "index.",
          origin, key, id, n_names);
  });
}

/// Overrides `base` with `over` key by key (objects merged recursively; anything else replaced).
void merge_into(ojson& base, const ojson& over) {
  for (const auto& [key, value] : over.items()) {
    auto it = base.find(key);
    if (it != base.end() && it->is_object() && value.is_object())
      merge_into(*it, value);
    else
      base[key] = value;
  }
}

// ---- built-in defaults
// -----------------------------------------------------------------------------

const char* const kFamilies[] = {"qwen3", "qwq", "deepseek-r1", "generic"};
const char* const kVariants[] = {"math", "code"};

std::vector<std::string> all_names() {
  std::vector<std::string> names(std::begin(defaults::kWorkerNames),
                                 std::end(defaults::kWorkerNames));
  return names;
}

Formatting make_plain() {
  Formatting f;
  f.name = "plain";
  f.chat.use_template = false;
  f.chat.user = "{problem}";
  f.worker_names = all_names();
  f.step_prefix = "";
  f.step_separator = "\n\n";
  f.collab_check.every = 0;
  f.finisher.suffix = defaults::kFinisherMath;
  f.finisher.max_tokens = 32;
  f.forbidden.eos = false;
  f.answer.kind = AnswerKind::boxed;
  f.sot = {defaults::kSotRulesMath, defaults::kSotOutline, defaults::kSotPoint,
           defaults::kSotAnswer, 256};
  f.summary = {defaults::kSummaryPrompt, 128};
  return f;
}

Formatting make_builtin(std::string_view family, std::string_view variant) {
  const bool code = variant == "code";
  Formatting f;
  f.name = fmt::format("{}-{}", family, variant);
  f.chat.use_template = true;
  f.chat.user = defaults::kUser;
  if (family == "qwen3") {
    f.chat.has_enable_thinking = true;
    f.chat.enable_thinking = true;
  }
  if (family != "generic") f.chat.assistant_prefix = "<think>\n";
  f.rules = std::string(defaults::kRulesCommon) +
            (code ? defaults::kRulesCodeEnd : defaults::kRulesMathEnd);
  f.rules_single = code ? defaults::kRulesSingleCode : defaults::kRulesSingleMath;
  f.example = code ? defaults::kExampleCode : defaults::kExampleMath;
  f.worker_names = all_names();
  f.layout.others_header = defaults::kOthersHeader;
  f.layout.other_separator = defaults::kOtherSeparator;
  f.layout.own_header = defaults::kOwnHeader;
  f.collab_check.every = 1024;
  f.collab_check.text = defaults::kCollabCheck;
  f.finisher.suffix = code ? defaults::kFinisherCode : defaults::kFinisherMath;
  f.finisher.max_tokens = code ? 1024 : 32;
  f.forbidden.eos = true;
  // End-of-turn / role tokens of the family, and the thinking markers.
  if (family == "qwen3" || family == "qwq")
    f.forbidden.texts = {"<|im_end|>", "<|im_start|>", "<|endoftext|>", "<think>", "</think>"};
  else if (family == "deepseek-r1")
    f.forbidden.texts = {"<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<think>",
                         "</think>"};
  // Bare markdown headers would read like layout structure. Code keeps "#" (Python comments).
  if (!code) f.forbidden.texts.push_back("#");
  for (const char* h : {"##", "###", "####"}) f.forbidden.texts.push_back(h);
  f.answer.kind = code ? AnswerKind::python : AnswerKind::boxed;
  f.answer.marker = code ? defaults::kCodeMarker : "";
  f.sot = {code ? defaults::kSotRulesCode : defaults::kSotRulesMath, defaults::kSotOutline,
           defaults::kSotPoint, defaults::kSotAnswer, 256};
  f.summary = {defaults::kSummaryPrompt, 128};
  return f;
}

}  // namespace

std::string_view answer_kind_name(AnswerKind kind) {
  return kind == AnswerKind::boxed ? "boxed" : "python";
}

// ---- Formatting methods
// ----------------------------------------------------------------------------

void Formatting::check_workers(int n_workers) const {
  if (n_workers < 1 || size_t(n_workers) > worker_names.size())
    fail(
        "{} workers requested, but formatting '{}' has {} worker names: use 1..{} workers, or add "
        "names "
        "to \"worker_names\" in a formatting file (--format).",
        n_workers, name, worker_names.size(), worker_names.size());
}

const std::string& Formatting::worker_name(int w) const {
  HOGWILD_CHECK(w >= 0 && size_t(w) < worker_names.size());
  return worker_names[w];
}

namespace {
std::map<std::string, std::string, std::less<>> worker_vars(const Formatting& f, int n_workers) {
  std::map<std::string, std::string, std::less<>> vars;
  vars["n_workers"] = std::to_string(n_workers);
  vars["worker_names"] = join_names(f.worker_names, n_workers);
  for (int k = 1; k <= kMaxNameIndex && size_t(k) <= f.worker_names.size(); ++k)
    vars[fmt::format("name_{}", k)] = f.worker_names[k - 1];
  return vars;
}
}  // namespace

std::string Formatting::render_rules(int n_workers) const {
  check_workers(n_workers);
  return render(n_workers == 1 ? rules_single : rules, worker_vars(*this, n_workers));
}

std::string Formatting::render_example(int n_workers) const {
  check_workers(n_workers);
  if (n_workers == 1) return "";
  return render(example, worker_vars(*this, n_workers));
}

std::vector<PromptMessage> Formatting::messages(std::string_view problem, int n_workers,
                                                int skeleton_points) const {
  const bool sk = skeleton_points > 0;
  auto vars = worker_vars(*this, sk ? 1 : n_workers);
  vars["rules"] = sk ? render(sot.rules, {{"n_points", std::to_string(skeleton_points)}})
                     : render_rules(n_workers);
  vars["example"] = sk ? "" : render_example(n_workers);
  vars["problem"] = std::string(problem);
  std::vector<PromptMessage> out;
  if (!chat.system.empty()) out.push_back({"system", render(chat.system, vars)});
  out.push_back({"user", render(chat.user, vars)});
  return out;
}

std::string Formatting::raw_prompt(std::string_view problem, int n_workers,
                                   int skeleton_points) const {
  std::string s;
  for (const auto& m : messages(problem, n_workers, skeleton_points)) s += m.content;
  return s + chat.assistant_prefix;
}

std::string Formatting::complete_prompt(std::string_view rendered) const {
  std::string s(rendered);
  const std::string& p = chat.assistant_prefix;
  if (s.size() < p.size() || s.compare(s.size() - p.size(), p.size(), p) != 0) s += p;
  return s;
}

std::string Formatting::note_text(std::string_view author, std::string_view note) const {
  std::string s = render(note_prefix, {{"name", std::string(author)}});
  s += note;
  if (s.size() < step_separator.size() ||
      s.compare(s.size() - step_separator.size(), step_separator.size(), step_separator) != 0)
    s += step_separator;
  return s;
}

std::string Formatting::render_step_prefix(int w, int step) const {
  return render(step_prefix, {{"name", worker_name(w)}, {"step", std::to_string(step)}});
}

std::string Formatting::step_start(int w, int step, bool with_collab_check) const {
  std::string s = render_step_prefix(w, step);
  if (with_collab_check) s += render(collab_check.text, {{"name", worker_name(w)}});
  return s;
}

std::string Formatting::summary_start(int w, int step) const {
  return render_step_prefix(w, step) + render(summary.prompt, {{"name", worker_name(w)}});
}

std::string Formatting::point_prefix(int point, std::string_view text) const {
  return render(sot.point_prefix,
                {{"point", std::to_string(point)}, {"point_text", std::string(text)}});
}

std::string Formatting::others_header(int w) const {
  return render(layout.others_header, {{"name", worker_name(w)}});
}

std::string Formatting::own_header(int w) const {
  return render(layout.own_header, {{"name", worker_name(w)}});
}

bool Formatting::is_forbidden_text(std::string_view token_text) const {
  auto sp = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!token_text.empty() && sp(token_text.front())) token_text.remove_prefix(1);
  while (!token_text.empty() && sp(token_text.back())) token_text.remove_suffix(1);
  if (token_text.empty()) return false;
  return std::find(forbidden.texts.begin(), forbidden.texts.end(), token_text) !=
         forbidden.texts.end();
}

ojson Formatting::to_json() const {
  ojson j;
  j["name"] = name;
  ojson c;
  c["use_template"] = chat.use_template;
  c["enable_thinking"] = chat.has_enable_thinking ? ojson(chat.enable_thinking) : ojson(nullptr);
  c["system"] = chat.system;
  c["user"] = chat.user;
  c["assistant_prefix"] = chat.assistant_prefix;
  j["chat"] = c;
  j["rules"] = rules;
  j["rules_single"] = rules_single;
  j["example"] = example;
  j["worker_names"] = worker_names;
  j["step_prefix"] = step_prefix;
  j["step_separator"] = step_separator;
  j["note_prefix"] = note_prefix;
  j["layout"] = ojson{{"history_header", layout.history_header},
                      {"others_header", layout.others_header},
                      {"other_separator", layout.other_separator},
                      {"own_header", layout.own_header}};
  j["collab_check"] = ojson{{"every", collab_check.every}, {"text", collab_check.text}};
  j["finisher"] = ojson{{"suffix", finisher.suffix}, {"max_tokens", finisher.max_tokens}};
  j["forbidden"] = ojson{{"eos", forbidden.eos}, {"texts", forbidden.texts}};
  j["answer"] = ojson{{"kind", answer_kind_name(answer.kind)}, {"marker", answer.marker}};
  j["sot"] = ojson{{"rules", sot.rules},
                   {"outline_prefix", sot.outline_prefix},
                   {"point_prefix", sot.point_prefix},
                   {"answer_prefix", sot.answer_prefix},
                   {"outline_max_tokens", sot.outline_max_tokens}};
  j["summary"] = ojson{{"prompt", summary.prompt}, {"max_tokens", summary.max_tokens}};
  return j;
}

// ---- built-ins, parsing, loading
// -------------------------------------------------------------------

std::vector<std::string> builtin_formatting_names() {
  std::vector<std::string> names;
  for (const char* fam : kFamilies)
    for (const char* var : kVariants) names.push_back(fmt::format("{}-{}", fam, var));
  names.push_back("plain");
  return names;
}

Formatting builtin_formatting(std::string_view name) {
  if (name == "plain") return make_plain();
  for (const char* fam : kFamilies)
    for (const char* var : kVariants)
      if (name == fmt::format("{}-{}", fam, var)) return make_builtin(fam, var);
  fail("unknown built-in formatting '{}'. Use one of: {} (or a path to a formatting JSON file).",
       name, fmt::join(builtin_formatting_names(), ", "));
}

namespace {

/// The values of a parsed formatting (names, separators, placeholders), each refused with the
/// key and what to do.
void check_formatting_values(const Formatting& f, std::string_view origin) {
  if (f.worker_names.empty())
    fail("{}: key 'worker_names' is empty; give at least one name per worker.", origin);
  std::set<std::string> seen;
  for (const auto& n : f.worker_names) {
    if (n.empty())
      fail("{}: key 'worker_names' has an empty name; every worker needs a name.", origin);
    if (n.find_first_of("{}") != std::string::npos)
      fail(
          "{}: worker name '{}' contains a brace; names are inserted into templates, use plain "
          "text.",
          origin, n);
    if (!seen.insert(n).second)
      fail(
          "{}: key 'worker_names' lists '{}' twice; names must be distinct so workers can tell "
          "each other apart.",
          origin, n);
  }
  if (f.step_separator.empty())
    fail("{}: key 'step_separator' is empty; steps could never end. Use e.g. \"\\n\\n\".", origin);
  for (const std::string& t : f.forbidden.texts)
    if (t.find_first_not_of(" \t\n\r") == std::string::npos)
      fail(
          "{}: key 'forbidden.texts' holds an empty or blank string; it would forbid every "
          "whitespace token (the step separator among them). Remove it.",
          origin);
  {
    bool has_name = false;
    for_each_brace_id(f.step_prefix,
                      [&](size_t, size_t, std::string_view id) { has_name |= id == "name"; });
    if (!f.step_prefix.empty() && !has_name)
      fail(
          "{}: key 'step_prefix' has no {{name}}, so no worker could tell whose step it reads. Add "
          "{{name}} (e.g. \"**{{name}} [{{step}}]:** \"), or make it \"\" for no prefix.",
          origin);
  }
  if (f.chat.user.empty())
    fail("{}: key 'chat.user' is empty; it must contain {{problem}}.", origin);
  bool has_problem = false;
  for (const std::string* t : {&f.chat.system, &f.chat.user})
    for_each_brace_id(*t,
                      [&](size_t, size_t, std::string_view id) { has_problem |= id == "problem"; });
  if (!has_problem)
    fail(
        "{}: neither 'chat.user' nor 'chat.system' contains {{problem}}, so the problem would "
        "never reach the "
        "model. Add {{problem}} to 'chat.user'.",
        origin);
  const size_t n = f.worker_names.size();
  check_placeholders(origin, "chat.system", f.chat.system, kPhWorkers | kPhPrompt, n);
  check_placeholders(origin, "chat.user", f.chat.user, kPhWorkers | kPhPrompt, n);
  check_placeholders(origin, "rules", f.rules, kPhWorkers, n);
  check_placeholders(origin, "rules_single", f.rules_single, kPhWorkers, n);
  check_placeholders(origin, "example", f.example, kPhWorkers, n);
  check_placeholders(origin, "step_prefix", f.step_prefix, kPhName | kPhStep, n);
  check_placeholders(origin, "note_prefix", f.note_prefix, kPhName, n);
  check_placeholders(origin, "layout.others_header", f.layout.others_header, kPhName, n);
  check_placeholders(origin, "layout.own_header", f.layout.own_header, kPhName, n);
  check_placeholders(origin, "layout.history_header", f.layout.history_header, 0, n);
  check_placeholders(origin, "layout.other_separator", f.layout.other_separator, 0, n);
  check_placeholders(origin, "collab_check.text", f.collab_check.text, kPhName, n);
  check_placeholders(origin, "finisher.suffix", f.finisher.suffix, 0, n);
  check_placeholders(origin, "sot.rules", f.sot.rules, kPhPoints, n);
  check_placeholders(origin, "sot.outline_prefix", f.sot.outline_prefix, 0, n);
  check_placeholders(origin, "sot.point_prefix", f.sot.point_prefix, kPhPoint, n);
  check_placeholders(origin, "sot.answer_prefix", f.sot.answer_prefix, 0, n);
  check_placeholders(origin, "summary.prompt", f.summary.prompt, kPhName, n);
}

}  // namespace

Formatting parse_formatting(const ojson& input, std::string_view origin) {
  if (!input.is_object())
    fail("{}: a formatting file must be a JSON object, got {}.", origin, type_name(input));
  ojson j = input;
  if (auto it = j.find("base"); it != j.end()) {
    if (!it->is_string())
      fail("{}: key 'base' must be a string naming a built-in formatting ({}).", origin,
           fmt::join(builtin_formatting_names(), ", "));
    ojson merged = builtin_formatting(it->get<std::string>()).to_json();
    j.erase("base");
    merge_into(merged, j);
    j = std::move(merged);
  }
  ObjReader top(j, "", origin,
                {"name", "chat", "rules", "rules_single", "example", "worker_names", "step_prefix",
                 "step_separator", "note_prefix", "layout", "collab_check", "finisher", "forbidden",
                 "answer", "sot", "summary"});
  Formatting f;
  f.name = top.str("name");
  ObjReader chat =
      top.object("chat", {"use_template", "enable_thinking", "system", "user", "assistant_prefix"});
  f.chat.use_template = chat.boolean("use_template");
  f.chat.enable_thinking = chat.optional_bool("enable_thinking", f.chat.has_enable_thinking);
  f.chat.system = chat.str("system");
  f.chat.user = chat.str("user");
  f.chat.assistant_prefix = chat.str("assistant_prefix");
  f.rules = top.str("rules");
  f.rules_single = top.str("rules_single");
  f.example = top.str("example");
  f.worker_names = top.str_list("worker_names");
  f.step_prefix = top.str("step_prefix");
  f.step_separator = top.str("step_separator");
  f.note_prefix = top.str("note_prefix");
  ObjReader layout =
      top.object("layout", {"history_header", "others_header", "other_separator", "own_header"});
  f.layout.history_header = layout.str("history_header");
  f.layout.others_header = layout.str("others_header");
  f.layout.other_separator = layout.str("other_separator");
  f.layout.own_header = layout.str("own_header");
  ObjReader check = top.object("collab_check", {"every", "text"});
  f.collab_check.every = check.integer("every", 0);
  f.collab_check.text = check.str("text");
  ObjReader fin = top.object("finisher", {"suffix", "max_tokens"});
  f.finisher.suffix = fin.str("suffix");
  f.finisher.max_tokens = fin.integer("max_tokens", 1);
  ObjReader forb = top.object("forbidden", {"eos", "texts"});
  f.forbidden.eos = forb.boolean("eos");
  f.forbidden.texts = forb.str_list("texts");
  ObjReader ans = top.object("answer", {"kind", "marker"});
  std::string kind = ans.str("kind");
  if (kind == "boxed")
    f.answer.kind = AnswerKind::boxed;
  else if (kind == "python")
    f.answer.kind = AnswerKind::python;
  else
    fail("{}: key 'answer.kind' must be \"boxed\" (math) or \"python\" (code), got \"{}\".", origin,
         kind);
  f.answer.marker = ans.str("marker");
  ObjReader sot = top.object(
      "sot", {"rules", "outline_prefix", "point_prefix", "answer_prefix", "outline_max_tokens"});
  f.sot = {sot.str("rules"), sot.str("outline_prefix"), sot.str("point_prefix"),
           sot.str("answer_prefix"), sot.integer("outline_max_tokens", 1)};
  ObjReader sum = top.object("summary", {"prompt", "max_tokens"});
  f.summary = {sum.str("prompt"), sum.integer("max_tokens", 1)};

  check_formatting_values(f, origin);
  return f;
}

Formatting parse_formatting(const nlohmann::json& j, std::string_view origin) {
  return parse_formatting(ojson::parse(j.dump()), origin);
}

Formatting load_formatting(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    fail("cannot read formatting file '{}'. Check the path, or pass a built-in name ({}).",
         file.string(), fmt::join(builtin_formatting_names(), ", "));
  const std::string text = read_file(file, "formatting file");
  ojson j;
  try {
    j = ojson::parse(text);
  } catch (const ojson::parse_error& e) {
    fail(
        "formatting file '{}' is not valid JSON: {}. Fix the syntax (strings need \\n for "
        "newlines).",
        file.string(), e.what());
  }
  return parse_formatting(j, file.string());
}

Formatting resolve_formatting(std::string_view name_or_path) {
  auto names = builtin_formatting_names();
  if (std::find(names.begin(), names.end(), name_or_path) != names.end())
    return builtin_formatting(name_or_path);
  return load_formatting(std::filesystem::path(std::string(name_or_path)));
}

std::string detect_formatting_family(std::string_view chat_template) {
  auto has = [&](std::string_view s) { return chat_template.find(s) != std::string_view::npos; };
  if (has("enable_thinking")) return "qwen3";
  if (has("<｜Assistant｜>")) return "deepseek-r1";
  if (has("<|im_start|>") && has("<think>")) return "qwq";
  return "generic";
}

std::vector<std::string> worker_labels(const Formatting& f, int n_workers, bool independent,
                                       bool skeleton) {
  std::vector<std::string> names;
  for (int w = 0; w < n_workers; ++w)
    names.push_back(f.name == "plain" && n_workers == 1 ? std::string("assistant")
                    : skeleton                          ? fmt::format("point {}", w + 1)
                    : independent                       ? fmt::format("sample {}", w + 1)
                                                        : f.worker_name(w));
  return names;
}

std::string default_formatting_name(std::string_view chat_template, AnswerKind kind) {
  return detect_formatting_family(chat_template) + (kind == AnswerKind::boxed ? "-math" : "-code");
}

std::string model_formatting_ref(const std::filesystem::path& model_dir,
                                 std::string_view chat_template, AnswerKind kind) {
  std::error_code ec;
  const std::filesystem::path own = model_dir / kModelFormattingFile;
  if (!model_dir.empty() && std::filesystem::is_regular_file(own, ec)) return own.string();
  return default_formatting_name(chat_template, kind);
}

}  // namespace hogwild
