// Dataset loaders; the names, files and fields are listed in dataset.h and docs/EVAL.md.
#include "eval/dataset.h"

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "core/error.h"
#include "eval/code_tests.h"
#include "hogwild/answer.h"

namespace hogwild::eval {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Record {
  json value;
  size_t line = 0;  // 1-based line (JSON array files: 1-based element index)
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) fail("cannot read '{}'; check the path and its permissions", p.string());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Every non-blank line of a JSONL file as a JSON object.
std::vector<Record> read_jsonl(const fs::path& p) {
  std::string all = read_file(p);
  std::vector<Record> out;
  size_t line = 0, begin = 0;
  while (begin < all.size()) {
    size_t end = all.find('\n', begin);
    if (end == std::string::npos) end = all.size();
    ++line;
    std::string_view s(all.data() + begin, end - begin);
    begin = end + 1;
    if (s.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    json j;
    try {
      j = json::parse(s);
    } catch (const json::parse_error& e) {
      fail("{}:{}: not a valid JSON line ({}); fix or remove that line", p.string(), line,
           e.what());
    }
    if (!j.is_object())
      fail("{}:{}: a JSON line must be an object with the problem's fields", p.string(), line);
    out.push_back({std::move(j), line});
  }
  if (out.empty())
    fail("'{}' holds no JSON lines; give a JSONL file with one problem per line", p.string());
  return out;
}

std::string fields_of(const json& j) {
  std::string s;
  for (auto it = j.begin(); it != j.end(); ++it) s += (s.empty() ? "" : ", ") + it.key();
  return s;
}

const json& field(const Record& r, const fs::path& p, const std::string& name, const char* flag) {
  auto it = r.value.find(name);
  if (it == r.value.end() || it->is_null())
    fail("{}:{}: no field '{}' (the record has: {}){}", p.string(), r.line, name,
         fields_of(r.value),
         flag ? fmt::format("; name the right one with {}", flag) : std::string());
  return *it;
}

std::string as_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return v.dump();
}

fs::path need_file(const fs::path& dir, const std::string& rel, const std::string& name) {
  fs::path p = dir / rel;
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    fail(
        "dataset '{}': file '{}' not found; give the datasets folder with --datasets-dir or "
        "HOGWILD_DATASETS",
        name, p.string());
  return p;
}

/// Gold from a free-form answer value (FieldMap): "#### n", else the last \boxed{}, else all.
std::string free_gold(const std::string& s) {
  if (auto g = gsm8k_gold(s)) return *g;
  if (auto b = extract_boxed(s)) return *b;
  return s;
}

Dataset load_gsm8k(const fs::path& dir, bool packed, uint64_t seed) {
  fs::path p = need_file(dir, "gsm8k/test.jsonl", packed ? "gsm8k5" : "gsm8k");
  std::vector<Problem> singles;
  for (const Record& r : read_jsonl(p)) {
    Problem q;
    q.id = std::to_string(singles.size());
    q.text = field(r, p, "question", nullptr).get<std::string>();
    std::string a = as_text(field(r, p, "answer", nullptr));
    auto g = gsm8k_gold(a);
    if (!g) fail("{}:{}: the answer has no '#### ' final answer line", p.string(), r.line);
    q.gold = {*g};
    singles.push_back(std::move(q));
  }
  Dataset d{packed ? "gsm8k5" : "gsm8k", ProblemKind::math, {}, ""};
  if (!packed) {
    d.problems = std::move(singles);
    return d;
  }
  for (const auto& group : gsm8k5_groups(singles.size(), seed)) {
    Problem q;
    std::vector<std::string> texts;
    for (size_t i : group) {
      q.id += (q.id.empty() ? "" : "+") + singles[i].id;
      texts.push_back(singles[i].text);
      q.gold.push_back(singles[i].gold[0]);
    }
    q.text = gsm8k5_text(texts);
    q.gold_ordered = true;
    d.problems.push_back(std::move(q));
  }
  d.note = fmt::format("gsm8k5: {} prompts of 5 GSM8k test questions, packed with seed {}",
                       d.problems.size(), seed);
  return d;
}

Dataset load_math500(const fs::path& dir) {
  fs::path p = need_file(dir, "math500/test.jsonl", "math500");
  Dataset d{"math500", ProblemKind::math, {}, ""};
  for (const Record& r : read_jsonl(p)) {
    Problem q;
    q.id = as_text(field(r, p, "unique_id", nullptr));
    q.text = field(r, p, "problem", nullptr).get<std::string>();
    q.gold = {as_text(field(r, p, "answer", nullptr))};
    d.problems.push_back(std::move(q));
  }
  return d;
}

Dataset load_aime(const fs::path& dir) {
  fs::path p = need_file(dir, "aime2025/aime25.jsonl", "aime2025");
  Dataset d{"aime2025", ProblemKind::math, {}, ""};
  int k = 0;
  for (const Record& r : read_jsonl(p)) {
    Problem q;
    // I-1..I-15 then II-1..II-15 (aime2025/SOURCE.md: same order as the files with ids).
    q.id = fmt::format("{}-{}", k < 15 ? "I" : "II", k % 15 + 1);
    ++k;
    q.text = field(r, p, "prompt", nullptr).get<std::string>();
    q.gold = {as_text(field(r, p, "answer", nullptr))};
    d.problems.push_back(std::move(q));
  }
  return d;
}

/// OlympiadBench's final_answer: a list of strings; "$a$ , $b$" inside one string is several
/// parts too (physics). Math items with is_multiple_answer keep their single string, which the
/// scorer reads as a list.
std::vector<std::string> olympiad_gold(const json& fa) {
  std::vector<std::string> out;
  if (fa.is_array()) {
    for (const auto& v : fa) out.push_back(as_text(v));
  } else {
    out.push_back(as_text(fa));
  }
  return out;
}

Dataset load_olympiad_math(const fs::path& dir) {
  fs::path p = need_file(dir, "olympiadbench/test.jsonl", "olympiadbench-math");
  Dataset d{"olympiadbench-math", ProblemKind::math, {}, ""};
  for (const Record& r : read_jsonl(p)) {
    Problem q;
    q.id = as_text(field(r, p, "id", nullptr));
    const auto c = r.value.find("context");
    const std::string ctx = c != r.value.end() && c->is_string() ? c->get<std::string>() : "";
    q.text = field(r, p, "question", nullptr).get<std::string>();
    if (!ctx.empty() && ctx != "None") q.text = ctx + "\n\n" + q.text;
    q.gold = olympiad_gold(field(r, p, "final_answer", nullptr));
    d.problems.push_back(std::move(q));
  }
  return d;
}

/// Splits "1e-1,1e2" (one tolerance per answer part; an empty part is 0, exact).
std::vector<double> parse_tolerances(const std::string& s, size_t parts, const fs::path& p,
                                     size_t line) {
  std::vector<double> out;
  std::stringstream ss(s);
  std::string t;
  while (std::getline(ss, t, ',')) {
    if (t.find_first_not_of(" ") == std::string::npos) {  // ",1e0": that part is exact
      out.push_back(0);
      continue;
    }
    char* end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (end == t.c_str())
      fail("{}: record {}: tolerance '{}' is not a number", p.string(), line, s);
    out.push_back(v);
  }
  if (out.size() == 1 && parts > 1) out.resize(parts, out[0]);
  return out;
}

Dataset load_olympiad_physics(const fs::path& dir) {
  fs::path p =
      need_file(dir, "olympiadbench/English_Olympiad_Physics.json", "olympiadbench-physics");
  json all;
  try {
    all = json::parse(read_file(p));
  } catch (const json::parse_error& e) {
    fail("{}: not valid JSON ({})", p.string(), e.what());
  }
  if (!all.is_array()) fail("{}: expected a JSON array of problems", p.string());
  Dataset d{"olympiadbench-physics", ProblemKind::physics, {}, ""};
  size_t index = 0;
  for (const json& j : all) {
    Record r{j, ++index};
    // Open-ended, auto-scorable, text-only (olympiadbench/SOURCE.md): 583 of 793.
    if (j.value("label", "") != "Open-ended_Questions" || !j.value("support_auto_scoring", false))
      continue;
    std::string question = field(r, p, "question", nullptr).get<std::string>();
    if (question.find("![") != std::string::npos) continue;
    Problem q;
    q.id = as_text(field(r, p, "id", nullptr));
    std::string ctx =
        j.contains("context") && j["context"].is_string() ? j["context"].get<std::string>() : "";
    q.text = ctx.empty() || ctx == "None" ? question : ctx + "\n\n" + question;
    q.gold = olympiad_gold(field(r, p, "final_answer", nullptr));
    if (j.contains("unit") && j["unit"].is_string()) q.unit = j["unit"].get<std::string>();
    if (j.contains("error") && j["error"].is_string())
      q.tolerance = parse_tolerances(j["error"].get<std::string>(), q.gold.size(), p, index);
    d.problems.push_back(std::move(q));
  }
  return d;
}

Dataset load_livecodebench(const fs::path& dir) {
  fs::path p = need_file(dir, "livecodebench/livecodebench_v5.jsonl", "livecodebench");
  Dataset d{"livecodebench", ProblemKind::code, {}, ""};
  for (const Record& r : read_jsonl(p)) {
    Problem q;
    q.id = as_text(field(r, p, "question_id", nullptr));
    q.text = field(r, p, "prompt", nullptr).get<std::string>();
    q.tests = statement_tests(q.text, &q.method);
    d.problems.push_back(std::move(q));
  }
  d.note =
      "livecodebench: scored on the sample tests in each statement only; the hidden tests are not "
      "available offline";
  return d;
}

Dataset load_limo(const fs::path& dir) {
  fs::path p = dir / "limo/limo.jsonl";
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    fail(
        "dataset 'limo': '{}' not found. LIMO is not bundled (see limo/SOURCE.md there): fetch "
        "limo.jsonl of the GAIR/LIMO dataset (817 lines with question, solution, answer) and "
        "put it at that path, or pass the file's path as --dataset",
        p.string());
  Dataset d{"limo", ProblemKind::math, {}, ""};
  for (const Record& r : read_jsonl(p)) {
    Problem q;
    q.id = std::to_string(r.line);
    q.text = field(r, p, "question", nullptr).get<std::string>();
    q.gold = {free_gold(as_text(field(r, p, "answer", nullptr)))};
    d.problems.push_back(std::move(q));
  }
  return d;
}

Dataset load_path(const fs::path& p, const FieldMap& m) {
  Dataset d{p.string(), ProblemKind::math, {}, ""};
  std::set<std::string> ids;
  const std::vector<Record> records = read_jsonl(p);
  auto is_countdown = [](const Record& r) {
    return r.value.contains("task") && r.value["task"] == "countdown";
  };
  if (is_countdown(records.front())) d.kind = ProblemKind::countdown;
  for (const Record& r : records) {
    Problem q;
    q.id = m.id.empty() ? std::to_string(r.line) : as_text(field(r, p, m.id, "--id-field"));
    if (!ids.insert(q.id).second)
      fail("{}:{}: id '{}' occurs twice; ids must be unique (--id-field)", p.string(), r.line,
           q.id);
    const json& qv = field(r, p, m.question, "--question-field");
    if (!qv.is_string() || qv.get<std::string>().empty())
      fail("{}:{}: field '{}' must be a non-empty string (the problem text)", p.string(), r.line,
           m.question);
    q.text = qv.get<std::string>();
    const json& av = field(r, p, m.answer, "--answer-field");
    if (av.is_array()) {
      for (const auto& v : av) q.gold.push_back(free_gold(as_text(v)));
    } else {
      q.gold = {free_gold(as_text(av))};
    }
    if (q.gold.empty() || q.gold[0].find_first_not_of(" \t\r\n") == std::string::npos)
      fail("{}:{}: field '{}' is empty; every problem needs a gold answer", p.string(), r.line,
           m.answer);
    if (is_countdown(r) != (d.kind == ProblemKind::countdown))
      fail(
          "{}:{}: countdown problems (\"task\": \"countdown\") and other problems in one file; "
          "give them in separate files",
          p.string(), r.line);
    if (d.kind == ProblemKind::countdown) {
      const json& nv = r.value.contains("numbers") ? r.value["numbers"] : json();
      const json& tv = r.value.contains("target") ? r.value["target"] : json();
      if (!nv.is_array() || nv.empty() || !tv.is_number_integer())
        fail(
            "{}:{}: a countdown problem needs \"numbers\" (a list of integers) and \"target\" "
            "(an integer)",
            p.string(), r.line);
      // Countdown's numbers and target are positive whole numbers (the checker's values stay
      // within 10^15).
      auto positive = [](const json& x) {
        return x.is_number_integer() && x.get<double>() >= 1 && x.get<double>() <= 1e15;
      };
      for (const json& x : nv) {
        if (!positive(x))
          fail("{}:{}: \"numbers\" must hold whole numbers from 1 to 10^15, got {}", p.string(),
               r.line, x.dump());
        q.numbers.push_back(x.get<int64_t>());
      }
      if (!positive(tv))
        fail("{}:{}: \"target\" must be a whole number from 1 to 10^15, got {}", p.string(), r.line,
             tv.dump());
      q.target = tv.get<int64_t>();
    }
    d.problems.push_back(std::move(q));
  }
  return d;
}

}  // namespace

const char* kind_name(ProblemKind k) {
  switch (k) {
    case ProblemKind::math:
      return "math";
    case ProblemKind::physics:
      return "physics";
    case ProblemKind::code:
      return "code";
    case ProblemKind::countdown:
      return "countdown";
  }
  return "?";
}

const std::vector<std::string>& dataset_names() {
  static const std::vector<std::string> names = {"gsm8k",
                                                 "gsm8k5",
                                                 "math500",
                                                 "aime2025",
                                                 "olympiadbench-math",
                                                 "olympiadbench-physics",
                                                 "livecodebench",
                                                 "limo"};
  return names;
}

fs::path find_datasets_dir(const std::string& explicit_dir,
                           const std::vector<fs::path>& candidates) {
  std::error_code ec;
  if (!explicit_dir.empty()) {
    if (!fs::is_directory(explicit_dir, ec))
      fail("--datasets-dir '{}' is not a directory", explicit_dir);
    return explicit_dir;
  }
  if (const char* env = std::getenv("HOGWILD_DATASETS"); env && *env) {
    if (!fs::is_directory(env, ec))
      fail("HOGWILD_DATASETS='{}' is not a directory; fix it or unset it", env);
    return env;
  }
  std::string tried;
  for (const fs::path& c : candidates) {
    if (fs::is_directory(c, ec)) return c;
    tried += (tried.empty() ? "" : ", ") + c.string();
  }
  fail("no datasets folder found (tried {}); give it with --datasets-dir DIR or HOGWILD_DATASETS",
       tried.empty() ? "nothing" : tried);
}

Dataset load_dataset(const DatasetOptions& o) {
  const std::string& n = o.name_or_path;
  if (n.empty())
    fail("--dataset is required: a name ({}) or a JSONL path", fmt::join(dataset_names(), ", "));
  const fs::path& dir = o.datasets_dir;
  if (n == "gsm8k") return load_gsm8k(dir, false, o.seed);
  if (n == "gsm8k5") return load_gsm8k(dir, true, o.seed);
  if (n == "math500") return load_math500(dir);
  if (n == "aime2025") return load_aime(dir);
  if (n == "olympiadbench-math") return load_olympiad_math(dir);
  if (n == "olympiadbench-physics") return load_olympiad_physics(dir);
  if (n == "livecodebench") return load_livecodebench(dir);
  if (n == "limo") return load_limo(dir);
  std::error_code ec;
  if (n.find('/') != std::string::npos || n.ends_with(".jsonl") || n.ends_with(".json")) {
    if (!fs::is_regular_file(n, ec)) fail("--dataset: file '{}' not found", n);
    return load_path(n, o.fields);
  }
  fail("unknown dataset '{}'; use one of {} or the path of a JSONL file", n,
       fmt::join(dataset_names(), ", "));
}

std::optional<std::string> gsm8k_gold(const std::string& a) {
  size_t p = a.rfind("#### ");
  if (p == std::string::npos) return std::nullopt;
  std::string g;
  for (char c : a.substr(p + 5))
    if (c != ',' && c != '\n' && c != '\r') g += c;
  while (!g.empty() && g.back() == ' ') g.pop_back();
  while (!g.empty() && g.front() == ' ') g.erase(g.begin());
  return g;
}

std::vector<std::vector<size_t>> gsm8k5_groups(size_t n, uint64_t seed) {
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = i;
  std::mt19937_64 rng(seed);
  for (size_t i = n; i > 1; --i) std::swap(idx[i - 1], idx[rng() % i]);
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i + 5 <= n; i += 5) out.emplace_back(idx.begin() + i, idx.begin() + i + 5);
  return out;
}

std::string gsm8k5_text(const std::vector<std::string>& questions) {
  std::string s = fmt::format(
      "Solve the following {} problems. Give the {} final answers in order, as numbers, in one "
      "\\boxed{{}} separated by semicolons, e.g. \\boxed{{1; 2; 3; 4; 5}}.",
      questions.size(), questions.size());
  for (size_t i = 0; i < questions.size(); ++i)
    s += fmt::format("\n\nProblem {}: {}", i + 1, questions[i]);
  return s;
}

}  // namespace hogwild::eval
