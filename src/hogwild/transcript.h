// Observers that turn a session into a machine-readable record: the JSON transcript (`hogwild run
// --json`), written as JSON lines while the run goes and as one document at the end, and a fan-out
// to several observers. The view and logits dumps are in view_dump.h; the files of a run and
// their order of writing in run_files.h. Formats: docs/DUMPS.md.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/utf8.h"  // utf8_lossy: every text of a transcript is valid UTF-8
#include "hogwild/session.h"

namespace hogwild {

class OutputFile;

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
  void on_finisher_forward(const ForwardRecord& r) override;
  void on_note(const std::string& author, const std::string& text, int64_t serial_step) override;
  void on_forget(const ForgetEvent& e) override;

 private:
  std::vector<SessionObserver*> obs_;
};

/// Records every sampled token and every step for the JSON transcript (docs/DUMPS.md).
/// to_json(): {"tokens": [{"worker", "step", "serial_step", "id", "text", "eos"?}...],
///  "steps": [{"worker", "name", "step", "text", "finished", "answer"?, "collab_check"}...] in
///  start order, "answer", "answer_worker", "stop_reason", "stats": {...}, "snapshots": [...],
///  "finisher": {...}, "history", "notes": [{"author", "text", "serial_step"}...],
///  "forgotten": [{"serial_step", "block", "ranges": [{"begin", "end", "text"}...], "kept",
///  "history_len", "summary"?: {"worker", "step", "begin", "end"}}...] (the KV budget's
///  forgetting, forgetting.h; "summary": the summary step that replaced the ranges, with
///  kv_policy summarise; the history text keeps every
///  token, these say which ones no worker read any more from the next serial step on)}. Every text
///  is valid UTF-8 (invalid bytes → U+FFFD); where the raw bytes were not UTF-8 they are beside it
///  as "<key>_bytes" (core/json_text.h set_text).
/// With stream_to(), every event is also written at once as one JSON line ({"event": "token",
/// ...}), flushed after every forward, so a killed run leaves what it produced.
class TranscriptRecorder : public SessionObserver {
 public:
  explicit TranscriptRecorder(std::vector<std::string> worker_names)
      : names_(std::move(worker_names)) {}
  /// Writes events to `out` as JSON lines as they happen, starting with {"event": "run", ...
  /// header} (the run's settings). PRECONDITION: out outlives the recorder's use.
  void stream_to(OutputFile* out, const nlohmann::json& header);
  void on_forward(const ForwardRecord& r) override;
  void on_step_start(int w, int k, const std::string& b, bool c) override;
  void on_token(const TokenEvent& e) override;
  void on_step_end(int w, int k, const std::string& t,
                   const std::optional<std::string>& a) override;
  void on_snapshot(const FinisherResult& f) override;
  void on_note(const std::string& author, const std::string& text, int64_t serial_step) override;
  void on_forget(const ForgetEvent& e) override;
  nlohmann::json to_json(const SessionResult& r) const;

 private:
  struct Step {
    int worker, step;
    std::string text;
    bool finished = false, collab = false;
    std::optional<std::string> answer;
  };
  nlohmann::json token_json(const TokenEvent& t) const;
  nlohmann::json step_json(const Step& s) const;
  void emit(const char* event, nlohmann::json j);

  std::vector<std::string> names_;
  std::vector<TokenEvent> tokens_;
  std::vector<Step> steps_;
  nlohmann::json notes_ = nlohmann::json::array();
  nlohmann::json forgotten_ = nlohmann::json::array();
  OutputFile* stream_ = nullptr;
};

/// Run statistics as JSON: serial_steps, prompt_tokens, tokens_per_worker, total_tokens, seconds
/// (prefill, decode, finisher), tok/s aggregate (generated tokens / decode seconds) and per worker.
nlohmann::json stats_json(const SessionResult& r);

/// A finisher result as JSON: {"serial_step", "continuation", "reached", "answer"}.
nlohmann::json finisher_json(const FinisherResult& f);

}  // namespace hogwild
