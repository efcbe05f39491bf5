// Observers that turn a session into files and streams: a machine-readable transcript (`hogwild run
// --json`), the per-serial-step view dump (`--dump-views`, JSONL) and a fan-out to several
// observers.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hogwild/codec.h"
#include "hogwild/session.h"

namespace hogwild {

/// Calls every observer in order.
class MultiObserver : public SessionObserver {
 public:
  void add(SessionObserver* o) { obs_.push_back(o); }
  void on_forward(const ForwardRecord& r) override;
  void on_step_start(int w, int k, const std::string& b, bool c) override;
  void on_token(const TokenEvent& e) override;
  void on_step_end(int w, int k, const std::string& t,
                   const std::optional<std::string>& a) override;
  void on_snapshot(const FinisherResult& f) override;

 private:
  std::vector<SessionObserver*> obs_;
};

/// Records every sampled token and every step for the JSON transcript.
/// JSON (to_json): {"tokens": [{"worker", "step", "serial_step", "id", "text", "eos"?}...],
///  "steps": [{"worker", "name", "step", "text", "finished", "answer"?, "collab_check"}...] in
///  start order, "answer", "stop_reason", "stats": {...}, "snapshots": [...], "finisher": {...}}.
/// "text" fields are the raw token bytes made valid UTF-8 (invalid bytes → U+FFFD).
class TranscriptRecorder : public SessionObserver {
 public:
  TranscriptRecorder(std::vector<std::string> worker_names) : names_(std::move(worker_names)) {}
  void on_step_start(int w, int k, const std::string& b, bool c) override;
  void on_token(const TokenEvent& e) override;
  void on_step_end(int w, int k, const std::string& t,
                   const std::optional<std::string>& a) override;
  nlohmann::json to_json(const SessionResult& r) const;

 private:
  struct Step {
    int worker, step;
    std::string text;
    bool finished = false, collab = false;
    std::optional<std::string> answer;
  };
  std::vector<std::string> names_;
  std::vector<TokenEvent> tokens_;
  std::vector<Step> steps_;
};

/// Run statistics as JSON: serial_steps, prompt_tokens, tokens_per_worker, total_tokens, seconds
/// (prefill, decode, finisher), tok/s aggregate (generated tokens / decode seconds) and per worker.
nlohmann::json stats_json(const SessionResult& r);

/// `--dump-views`: one JSON line per forward (prefill = serial_step 0):
///   {"serial_step": s, "views": [[[block, len], ...] per view], "feeds": [{"worker", "step",
///    "token", "block", "index", "role"}...], "closed": [[worker, step]...],
///    "blocks": {"<id>": [token ids]}}
/// views: prefill lists the pseudo-writers' views (history; [history, constant block]); block
/// lengths and ids are those after the forward's appends and before its promotions; "blocks"
/// holds every block occurring in a view. Enough to replay the run in another implementation.
class ViewDumper : public SessionObserver {
 public:
  /// Opens `path` for writing ("-" = stdout). Throws hogwild::Error when it cannot be created.
  explicit ViewDumper(const std::string& path);
  ~ViewDumper() override;
  void attach(const Session* s) { session_ = s; }
  void on_forward(const ForwardRecord& r) override;

 private:
  std::FILE* f_ = nullptr;
  bool own_ = false;
  const Session* session_ = nullptr;
};

/// Valid UTF-8 for JSON: invalid bytes become U+FFFD.
std::string utf8_lossy(const std::string& bytes);

}  // namespace hogwild
