// The result folder; see results.h.
#include "eval/results.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"

namespace hogwild::eval {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string json_reason(const std::exception& e) {
  std::string what = e.what();
  if (auto p = what.find("] "); what.rfind("[json.exception", 0) == 0 && p != std::string::npos)
    what = what.substr(p + 2);
  return what;
}

// Why a parsed results line is not a result line ("" when it is one).
std::string line_problem(const json& j) {
  if (!j.is_object()) return "not a JSON object";
  if (!j.contains("id") || !j["id"].is_string()) return "no string \"id\"";
  if (!j.contains("sample") || !j["sample"].is_number_integer()) return "no integer \"sample\"";
  if (!j.contains("budget") || !j["budget"].is_number_integer()) return "no integer \"budget\"";
  if (!j.contains("correct") || !(j["correct"].is_boolean() || j["correct"].is_null()))
    return "no \"correct\" (true, false, or null for a run that did not start)";
  return "";
}

/// The result lines of results.jsonl `path` (its bytes `text`). Only the last line may be bad: a
/// partial line, or a problem cut short, is the torn tail of a killed run (*torn counts it). A
/// bad line before a good one is corruption: throws hogwild::Error naming the file and the line.
std::vector<json> parse_lines(const std::string& text, const fs::path& path, size_t* torn) {
  std::vector<json> out;
  size_t begin = 0, line = 0;
  *torn = 0;
  while (begin < text.size()) {
    ++line;
    size_t end = text.find('\n', begin);
    const bool last = end == std::string::npos || end + 1 >= text.size();
    if (end == std::string::npos) end = text.size();
    std::string why;
    json j;
    try {
      j = json::parse(text.substr(begin, end - begin));
      why = line_problem(j);
    } catch (const json::parse_error& e) {
      why = "not valid JSON: " + json_reason(e);
    }
    if (why.empty() && end < text.size()) {
      out.push_back(std::move(j));
    } else if (last) {  // the torn tail of a killed run (also a whole line without its newline)
      ++*torn;
    } else {
      fail(
          "{}:{}: {}; the file is corrupt (only a run killed while writing leaves a bad last "
          "line): fix or remove that line, then run again",
          path.string(), line, why);
    }
    begin = end + 1;
  }
  return out;
}

void write_file(const fs::path& p, const std::string& data) {
  AtomicOutputFile f(p.string(), "--out");  // every write and the close checked (a full disk)
  f.write(data);
  f.commit();
}

std::string short_json(const json& j) {
  std::string s = j.is_null() ? "(absent)" : j.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

}  // namespace

std::string transcript_name(const std::string& id, int sample) {
  std::string safe;
  for (unsigned char c : id)
    safe += std::isalnum(c) || c == '.' || c == '-' || c == '_' ? static_cast<char>(c) : '_';
  if (safe.size() > 80) safe.resize(80);
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : id) h = (h ^ c) * 16777619u;
  return fmt::format("{}-{:08x}-s{}.json", safe, h, sample);
}

ResultStore::ResultStore(const fs::path& dir, const json& config, size_t n_budgets)
    : dir_(dir), n_budgets_(n_budgets) {
  std::error_code ec;
  const fs::path cfg = dir / "config.json", res = dir / "results.jsonl";
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    fail("--out '{}' is a file, not a folder; give a new or empty folder for the results",
         dir.string());
  const bool existed = fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) fail("--out: cannot create '{}': {}", dir.string(), ec.message());
  lock_.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_.fd < 0) fail("--out: cannot open '{}': {}", dir.string(), std::strerror(errno));
  // One eval per folder: a second one would append every line a second time.
  if (::flock(lock_.fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK)
      fail(
          "--out '{}' is in use by another hogwild eval (it holds the folder's lock); wait for it "
          "to finish, or give another --out folder",
          dir.string());
    fail("--out: cannot lock '{}': {}", dir.string(), std::strerror(err));
  }
  if (fs::exists(cfg, ec)) {
    json there = read_config(dir);
    std::string diff;
    std::set<std::string> keys;
    for (auto it = there.begin(); it != there.end(); ++it) keys.insert(it.key());
    for (auto it = config.begin(); it != config.end(); ++it) keys.insert(it.key());
    for (const std::string& k : keys) {
      json a = there.contains(k) ? there[k] : json(), b = config.contains(k) ? config[k] : json();
      if (a != b)
        diff += fmt::format("{}{}: {} there, {} now", diff.empty() ? "" : "; ", k, short_json(a),
                            short_json(b));
    }
    if (!diff.empty())
      fail(
          "--out '{}' holds results of a different configuration ({}); use another --out folder "
          "or remove that one",
          dir.string(), diff);
  } else if (existed && !fs::is_empty(dir, ec)) {
    fail(
        "--out '{}' is a non-empty folder without config.json (not an eval result folder); give "
        "a new or empty folder",
        dir.string());
  } else {
    fs::create_directories(dir / "transcripts", ec);
    if (ec) fail("--out: cannot create '{}': {}", dir.string(), ec.message());
    write_file(cfg, dump_json(config, 2) + "\n");
  }
  fs::create_directories(dir / "transcripts", ec);
  // Existing results: keep the (problem, sample) pairs with all their lines.
  if (fs::exists(res, ec)) {
    size_t torn = 0;
    std::vector<json> all = parse_lines(slurp(res), res, &torn);
    std::map<std::pair<std::string, int>, size_t> count;
    for (const json& j : all) ++count[{j.value("id", ""), j.value("sample", 0)}];
    std::string keep;
    for (json& j : all) {
      std::pair<std::string, int> key{j.value("id", ""), j.value("sample", 0)};
      if (count[key] != n_budgets_) {
        ++dropped_;
        continue;
      }
      done_.insert(key);
      keep += dump_json(j) + "\n";
      lines_.push_back(std::move(j));
    }
    dropped_ += torn;
    if (dropped_ > 0) write_file(res, keep);
  }
}

void ResultStore::append(const std::string& id, int sample, const std::vector<json>& lines,
                         const json& transcript) {
  write_file(dir_ / "transcripts" / transcript_name(id, sample), dump_json(transcript, 1) + "\n");
  std::string block;
  for (const json& j : lines) block += dump_json(j) + "\n";
  const std::string path = (dir_ / "results.jsonl").string();
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot open '{}' for appending: {}", path, std::strerror(errno));
  size_t off = 0;
  while (off < block.size()) {
    ssize_t n = write(fd, block.data() + off, block.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      fail("cannot append to '{}': {}", path, std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 && errno != EINVAL) {
    const int err = errno;
    close(fd);
    fail("cannot append to '{}': {}", path, std::strerror(err));
  }
  if (close(fd) != 0) fail("cannot append to '{}': {}", path, std::strerror(errno));
  done_.insert({id, sample});
  lines_.insert(lines_.end(), lines.begin(), lines.end());
}

ResultStore::FolderLock::~FolderLock() {
  if (fd >= 0) ::close(fd);
}

json read_config(const fs::path& dir) {
  const fs::path p = dir / "config.json";
  std::error_code ec;
  if (!fs::exists(p, ec))
    fail("'{}' has no config.json; is it a hogwild eval --out folder?", dir.string());
  json j;
  try {
    j = json::parse(slurp(p));
  } catch (const json::parse_error& e) {
    fail("{}: not valid JSON ({}); is '{}' a hogwild eval --out folder?", p.string(),
         json_reason(e), dir.string());
  }
  auto bad = [&](const char* what) {
    fail("{}: {}; it is not the config.json of a hogwild eval --out folder", p.string(), what);
  };
  if (!j.is_object()) bad("not a JSON object");
  if (!j.contains("method") || !j["method"].is_string()) bad("no string \"method\"");
  if (!j.contains("budgets") || !j["budgets"].is_array() || j["budgets"].empty())
    bad("no \"budgets\" list");
  for (const json& b : j["budgets"])
    if (!b.is_number_integer()) bad("\"budgets\" holds a value that is not a whole number");
  for (const char* k : {"samples", "workers"})
    if (j.contains(k) && !j[k].is_number_integer())
      bad(k[0] == 's' ? "\"samples\" is not a whole number" : "\"workers\" is not a whole number");
  for (const char* k : {"dataset", "layout", "compat"})
    if (j.contains(k) && !j[k].is_string()) bad("a field that should be a string is not one");
  return j;
}

std::vector<json> read_results(const fs::path& dir) {
  const fs::path p = dir / "results.jsonl";
  std::error_code ec;
  if (!fs::exists(p, ec))
    fail("'{}' has no results.jsonl yet; run hogwild eval --out {} first", dir.string(),
         dir.string());
  size_t torn = 0;
  const std::string text = slurp(p);
  std::vector<json> lines = parse_lines(text, p, &torn);
  if (lines.empty() && torn > 0)
    fail("{}:1: not a result line; is '{}' a hogwild eval --out folder?", p.string(), dir.string());
  return lines;
}

}  // namespace hogwild::eval
