// The files a `hogwild run` writes (--json, --dump-views, --dump-logits), so that no result is
// lost (docs/DUMPS.md):
//   - every path is checked and opened before the model loads (a bad path fails at once);
//   - while the run goes, the transcript's events are appended to FILE.partial.jsonl (flushed
//     after every serial step), so even a kill -9 leaves what was produced (not when FILE is "-"
//     or a device or pipe, which are written once at the end);
//   - at the end the whole transcript is written to FILE.tmp and renamed to FILE (an old FILE
//     stays intact until then), and FILE.partial.jsonl is removed;
//   - every write is checked: a full disk is an error with a message, never a silent empty file.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hogwild/formatting.h"
#include "hogwild/session.h"
#include "hogwild/transcript.h"
#include "hogwild/view_dump.h"
#include "sampling/stop_policy.h"

namespace hogwild {

class OutputFile;

struct RunFilePaths {
  std::string json;         // --json: transcript; "-" = stdout at the end; "" = none
  std::string dump_views;   // --dump-views: JSON lines per forward; "-" = stdout; "" = none
  std::string dump_logits;  // --dump-logits: .npy + .npy.json; "" = none
};

/// The run's resolved settings for the transcript (docs/DUMPS.md): "formatting" (the whole
/// resolved formatting, not just its name), "forbidden_ids" (ascending), "stop" {"eos_ids",
/// "sources", "eos": "forbidden" | "ends the worker" | "ignored"}.
nlohmann::json run_settings_json(const Session& session, const Formatting& formatting,
                                 const StopPolicy& stop);

/// Throws hogwild::Error when two outputs name the same file, or both stdout. Cheap: call it
/// before anything slow (RunFiles' constructor calls it too).
void check_output_paths(const RunFilePaths& paths);

class RunFiles {
 public:
  /// Checks and opens every given path. Throws hogwild::Error when a path is "" (a flag given an
  /// empty name is refused, not ignored), a directory, cannot be created, or two outputs name
  /// the same file or both stdout.
  RunFiles(const RunFilePaths& paths, int64_t vocab_size);
  ~RunFiles();
  /// True when the transcript or the view dump goes to stdout (the live view then uses stderr).
  bool uses_stdout() const;
  bool keep_logits() const { return logits_ != nullptr; }

  /// The observer to give the session (it records nothing until start()).
  SessionObserver* observer() { return &obs_; }
  /// Starts recording `session` (created, not yet run): the transcript recorder, the dumps, and
  /// the partial transcript whose first line is {"event": "run", ...header}.
  void start(const Session& session, const TextCodec& codec, std::vector<std::string> worker_names,
             const nlohmann::json& header);
  /// Writes the transcript (header + TranscriptRecorder::to_json(result)), closes the dumps and
  /// removes the partial transcript. Throws hogwild::Error on any write error (then the partial
  /// transcript stays).
  void finish(const SessionResult& result);

 private:
  RunFilePaths paths_;
  std::unique_ptr<OutputFile> partial_, views_;
  std::unique_ptr<LogitsDumper> logits_;
  std::unique_ptr<TranscriptRecorder> transcript_;
  std::unique_ptr<ViewDumper> view_dumper_;
  MultiObserver obs_;
  nlohmann::json header_;
};

}  // namespace hogwild
