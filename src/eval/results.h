// The result folder of `hogwild eval --out DIR` (formats in docs/EVAL.md):
//   config.json        the configuration of the run (model, dataset, method, budgets, sampling,
//   ...) results.jsonl      one line per (problem, sample, budget), appended per (problem, sample)
//   transcripts/       one JSON transcript per (problem, sample)
//   summary.json, summary.md, accuracy.svg, accuracy.png   (summary.h)
// Resumable: a (problem, sample) whose lines are all in results.jsonl is done and skipped by a
// rerun; its lines are appended with one write() and fsync'ed, after its transcript, so a run
// killed at any point (kill -9) loses at most the problems in flight. On opening, a torn tail (a
// partial last line, or a problem with only some of its budget lines) is cut off.
// A folder holding results of a different configuration is refused, naming what differs.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace hogwild::eval {

class ResultStore {
 public:
  /// Opens or creates `dir` for `config` (a JSON object) with n_budgets lines per (problem,
  /// sample), and holds an exclusive lock (flock) on the folder until destroyed, so that a second
  /// eval into the same folder is refused instead of appending every line twice. Throws
  /// hogwild::Error when dir holds another configuration (listing the keys that differ, e.g.
  /// "budgets: [256,512] there, [256,1024] now"), when it is a file or a non-empty folder without
  /// config.json, when another eval holds its lock, when results.jsonl has a bad line before a
  /// good one (file:line), or when it cannot be written.
  ResultStore(const std::filesystem::path& dir, const nlohmann::json& config, size_t n_budgets);

  bool done(const std::string& problem_id, int sample) const {
    return done_.count({problem_id, sample}) != 0;
  }
  /// Writes the transcript, then appends `lines` (one per budget) in one write and fsyncs.
  void append(const std::string& problem_id, int sample, const std::vector<nlohmann::json>& lines,
              const nlohmann::json& transcript);
  /// Every complete line so far (those read at opening, then those appended).
  const std::vector<nlohmann::json>& lines() const { return lines_; }
  /// Lines cut off at opening (a torn tail of a killed run).
  size_t dropped() const { return dropped_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  size_t n_budgets_;
  std::set<std::pair<std::string, int>> done_;
  std::vector<nlohmann::json> lines_;
  size_t dropped_ = 0;
  struct FolderLock {  // the folder, open for flock; closing it (when destroyed) unlocks
    int fd = -1;
    FolderLock() = default;
    FolderLock(const FolderLock&) = delete;
    FolderLock& operator=(const FolderLock&) = delete;
    ~FolderLock();
  };
  FolderLock lock_;
};

/// config.json of a result folder. Throws hogwild::Error when it is missing, not JSON, or not an
/// eval configuration (an object with "method" and a list of whole-number "budgets").
nlohmann::json read_config(const std::filesystem::path& dir);

/// Complete lines of results.jsonl (a torn last line is ignored). Throws hogwild::Error when the
/// file is missing, holds no result line, or has a bad line before a good one (naming file:line).
std::vector<nlohmann::json> read_results(const std::filesystem::path& dir);

/// The transcript file name of (problem, sample): the id with characters outside [A-Za-z0-9._-]
/// replaced by '_', an 8-hex-digit hash of the id (ids differing only there stay apart), "-s<k>".
std::string transcript_name(const std::string& problem_id, int sample);

}  // namespace hogwild::eval
