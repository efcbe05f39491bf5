// Dumps for replaying a run in another implementation (docs/DUMPS.md):
//   ViewDumper    `hogwild run --dump-views FILE`: one JSON line per forward (prefill, serial
//                 steps, the finisher's forwards) with every view, every fed token and every
//                 block's ids and text.
//   LogitsDumper  `hogwild run --dump-logits FILE`: the fp32 logits row each sampled token was
//                 drawn from, in the order of the transcript's tokens (.npy), and FILE.json
//                 naming each row's serial step and worker.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hogwild/codec.h"
#include "hogwild/session.h"

namespace hogwild {

class OutputFile;
class NpyWriter;

/// One JSON line per forward (docs/DUMPS.md "View dump"):
///   {"kind": "prefill" | "step" | "finisher", "serial_step", "snapshot" (finisher only),
///    "views": [[[block, len], ...] per view], "writers": [what each view writes for],
///    "feeds": [{"writer", "worker", "step", "token", "block", "index", "role"}...],
///    "closed": [[worker, step]...], "promoted": [{"block", "worker", "step", "history_offset"}],
///    "blocks": {"<id>": {"kind", "ids", "text", ...who wrote it...}},
///    "gaps": {"<history id>": [[begin, end]...]} (only with a KV budget, once something is
///    forgotten: the history's tokens no query of this forward read; positions count them)}
/// Block lengths and ids are those after the forward's appends and before its promotions.
/// With a KV budget, a line {"kind": "forget", "serial_step", "block", "ranges": [{"begin",
/// "end", "text"}...], "kept", "history_len"} follows the serial step after which the history
/// forgot those ranges (Session forgetting, forgetting.h).
/// PRECONDITION: out, codec and the attached session outlive the dumper.
class ViewDumper : public SessionObserver {
 public:
  ViewDumper(OutputFile& out, const TextCodec& codec) : out_(out), codec_(codec) {}
  void attach(const Session* s) { session_ = s; }
  void on_forward(const ForwardRecord& r) override;
  void on_finisher_forward(const ForwardRecord& r) override;
  void on_forget(const ForgetEvent& e) override;

 private:
  struct Owner {  // who writes a step block: (worker, step); use = how many blocks had this id
    int worker = -1, step = 0, use = 0;
  };
  nlohmann::json block_json(BlockId b, const std::map<BlockId, Owner>& previous) const;
  void write(const ForwardRecord& r);

  OutputFile& out_;
  const TextCodec& codec_;
  const Session* session_ = nullptr;
  std::map<BlockId, Owner> owners_;  // step blocks by id: the newest owner
  BlockId finisher_block_ = -1;
};

/// The logits each sampled token was drawn from (docs/DUMPS.md "Logits dump"): FILE is a NumPy
/// .npy float32 array (rows, vocab_size), row i = the i-th entry of the transcript's "tokens"
/// (sampling order), as the model gave it (before forbidden ids, penalties and temperature);
/// FILE.json = {"shape", "dtype", "rows": [{"serial_step", "worker"}...]} written by close().
/// Workers whose first step opening is empty (formatting "plain") sample from the prompt's last
/// row (serial step 0), which is then repeated for each of them. Needs ForwardRecord::logits
/// (SessionOptions::keep_logits with device sampling); throws hogwild::Error when it is null.
class LogitsDumper : public SessionObserver {
 public:
  /// Creates FILE (throws hogwild::Error when it cannot).
  LogitsDumper(const std::string& path, int64_t vocab_size);
  ~LogitsDumper() override;
  void on_forward(const ForwardRecord& r) override;
  void on_token(const TokenEvent& e) override;
  /// Finishes FILE and writes FILE.json. Throws hogwild::Error on a write error.
  void close();

 private:
  std::string path_;
  int64_t vocab_;
  std::unique_ptr<NpyWriter> npy_;
  int64_t serial_ = -1;
  std::vector<int> workers_;   // logits row -> worker of the newest forward (-1: prompt row)
  std::vector<float> logits_;  // the newest forward's rows
  nlohmann::json rows_ = nlohmann::json::array();
};

}  // namespace hogwild
