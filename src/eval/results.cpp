// The result folder; see results.h.
#include "eval/results.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
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

/// Whole lines of `text` that parse as JSON objects; *good_end = the offset after the last of
/// them that is followed by nothing but whole good lines (the file is cut there).
std::vector<json> parse_lines(const std::string& text, size_t* torn) {
  std::vector<json> out;
  size_t begin = 0;
  *torn = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) {  // no newline: a partial last line
      ++*torn;
      break;
    }
    try {
      json j = json::parse(text.substr(begin, end - begin));
      if (j.is_object())
        out.push_back(std::move(j));
      else
        ++*torn;
    } catch (const json::parse_error&) {
      ++*torn;
    }
    begin = end + 1;
  }
  return out;
}

void write_file(const fs::path& p, const std::string& data) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << data;
    if (!f) fail("cannot write '{}'; check the folder's permissions and free space", tmp.string());
  }
  fs::rename(tmp, p);
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
  } else if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
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
    std::vector<json> all = parse_lines(slurp(res), &torn);
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
  fsync(fd);
  close(fd);
  done_.insert({id, sample});
  lines_.insert(lines_.end(), lines.begin(), lines.end());
}

json read_config(const fs::path& dir) {
  const fs::path p = dir / "config.json";
  std::error_code ec;
  if (!fs::exists(p, ec))
    fail("'{}' has no config.json; is it a hogwild eval --out folder?", dir.string());
  try {
    return json::parse(slurp(p));
  } catch (const json::parse_error& e) {
    fail("{}: not valid JSON ({})", p.string(), e.what());
  }
}

std::vector<json> read_results(const fs::path& dir) {
  const fs::path p = dir / "results.jsonl";
  std::error_code ec;
  if (!fs::exists(p, ec))
    fail("'{}' has no results.jsonl yet; run hogwild eval --out {} first", dir.string(),
         dir.string());
  size_t torn = 0;
  return parse_lines(slurp(p), &torn);
}

}  // namespace hogwild::eval
