// ViewDumper and LogitsDumper (view_dump.h; format in docs/DUMPS.md).
#include "hogwild/view_dump.h"

#include <algorithm>

#include "core/error.h"
#include "core/io.h"
#include "core/json_text.h"
#include "sampling/npy.h"

namespace hogwild {

namespace {

constexpr int kFinisherOwner = -2;  // Owner::worker of a finisher block
constexpr int kNoteOwner = -3;      // Owner::worker of a person's note block

const char* role_name(FeedRole r) {
  switch (r) {
    case FeedRole::prompt:
      return "prompt";
    case FeedRole::constant:
      return "constant";
    case FeedRole::step_start:
      return "step_start";
    case FeedRole::generated:
      return "generated";
    case FeedRole::note:
      return "note";
    case FeedRole::finisher:
      return "finisher";
    case FeedRole::step_end:
      return "step_end";
  }
  return "?";
}

const char* kind_name(ForwardKind k) {
  switch (k) {
    case ForwardKind::prefill:
      return "prefill";
    case ForwardKind::step:
      return "step";
    case ForwardKind::finisher:
      return "finisher";
  }
  return "?";
}

}  // namespace

nlohmann::json ViewDumper::block_json(BlockId b, const std::map<BlockId, Owner>& previous) const {
  const std::vector<int32_t>& ids = session_->block_tokens(b);
  nlohmann::json j = nlohmann::json::object();
  const ConstBlocks& c = session_->const_blocks();
  nlohmann::json roles = nlohmann::json::array();
  for (size_t w = 0; w < c.others_header.size(); ++w)
    if (c.others_header[w] == b) roles.push_back({{"role", "others_header"}, {"worker", w}});
  if (c.sep == b) roles.push_back({{"role", "separator"}});
  for (size_t w = 0; w < c.sep_own_header.size(); ++w)
    if (c.sep_own_header[w] == b)
      roles.push_back({{"role", "separator_own_header"}, {"worker", w}});
  auto owner = owners_.find(b);
  if (b == session_->history_block()) {
    j["kind"] = "history";
  } else if (!roles.empty()) {
    // Computed once in the prefill by a pseudo-writer whose view is [history, this block]; used by
    // the workers named in "roles" (equal texts share one block).
    j["kind"] = "constant";
    j["written_in"] = "prefill";
    j["writer_view"] = {session_->history_block(), b};
    j["roles"] = roles;
  } else if (owner != owners_.end() && owner->second.worker == kFinisherOwner) {
    j["kind"] = "finisher";
  } else if (owner != owners_.end() && owner->second.worker == kNoteOwner) {
    j["kind"] = "note";  // a person's note, appended to the history right after this forward
  } else if (owner != owners_.end()) {
    j["kind"] = "step";
    j["worker"] = owner->second.worker;
    j["step"] = owner->second.step;
    j["use"] = owner->second.use;  // the n-th block to hold this id
    auto prev = previous.find(b);
    if (prev != previous.end() && prev->second.use > 0) {
      if (prev->second.worker == kFinisherOwner)
        j["reuses"] = {{"kind", "finisher"}};
      else if (prev->second.worker == kNoteOwner)
        j["reuses"] = {{"kind", "note"}};
      else
        j["reuses"] = {
            {"kind", "step"}, {"worker", prev->second.worker}, {"step", prev->second.step}};
    }
  }
  j["ids"] = ids;
  set_text(j, "text", codec_.bytes(ids));
  return j;
}

void ViewDumper::write(const ForwardRecord& r) {
  HOGWILD_CHECK(session_ != nullptr);
  // Owners first: a fed token names the worker and step of its block; a new owner of a known id
  // is a block reused after a promotion (or after a finisher) freed the old one.
  std::map<BlockId, Owner> previous;  // this forward's new owners' predecessors
  for (const FedToken& t : r.tokens) {
    const int worker = t.role == FeedRole::finisher ? kFinisherOwner
                       : t.role == FeedRole::note   ? kNoteOwner
                                                    : t.worker;
    if (worker == -1) continue;  // prompt and constants
    Owner& o = owners_[t.block];
    if (o.use > 0 && o.worker == worker && o.step == t.step) continue;
    if (!previous.count(t.block)) previous[t.block] = o;
    o = Owner{worker, t.step, o.use + 1};
  }
  nlohmann::json views = nlohmann::json::array(), writers = nlohmann::json::array(),
                 blocks = nlohmann::json::object();
  for (size_t v = 0; v < r.views.size(); ++v) {
    nlohmann::json jv = nlohmann::json::array();
    for (BlockId b : r.views[v]) {
      jv.push_back({b, session_->block_tokens(b).size()});
      const std::string key = std::to_string(b);
      if (!blocks.contains(key)) blocks[key] = block_json(b, previous);
    }
    views.push_back(jv);
    if (r.kind == ForwardKind::prefill)
      writers.push_back(v == 0
                            ? nlohmann::json{{"writes", "prompt"}, {"block", r.views[v].back()}}
                            : nlohmann::json{{"writes", "constant"}, {"block", r.views[v].back()}});
    else if (r.kind == ForwardKind::finisher)
      writers.push_back({{"writes", "finisher"}, {"block", r.views[v].back()}});
    else if (static_cast<int>(v) < session_->options().n_workers)
      writers.push_back({{"worker", v}});
    else  // after the workers' views: a note's pseudo-writer
      writers.push_back({{"writes", "note"}, {"block", r.views[v].back()}});
  }
  nlohmann::json feeds = nlohmann::json::array();
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    const FedToken& t = r.tokens[i];
    feeds.push_back({{"worker", t.worker},
                     {"step", t.step},
                     {"token", t.token},
                     {"block", t.block},
                     {"index", t.index},
                     {"role", role_name(t.role)}});
  }
  nlohmann::json promoted = nlohmann::json::array();
  int64_t offset = static_cast<int64_t>(session_->block_tokens(session_->history_block()).size());
  for (size_t i = 0; i < r.promoted.size() && i < r.closed.size(); ++i) {
    promoted.push_back({{"block", r.promoted[i]},
                        {"worker", r.closed[i].first},
                        {"step", r.closed[i].second},
                        {"history_offset", offset}});
    offset += static_cast<int64_t>(session_->block_tokens(r.promoted[i]).size());
  }
  nlohmann::json j = {{"kind", kind_name(r.kind)}, {"serial_step", r.serial_step}};
  if (r.kind == ForwardKind::finisher) j["snapshot"] = r.snapshot;
  j["views"] = views;
  j["writers"] = writers;
  j["feeds"] = feeds;
  j["closed"] = r.closed;
  j["promoted"] = promoted;
  j["blocks"] = blocks;
  // Forgotten tokens (the KV budget, forgetting.h): the history's ranges no query of this forward
  // attended to; their positions still count in every offset.
  if (!session_->history_gaps().empty()) {
    nlohmann::json gaps = nlohmann::json::array();
    for (const auto& [b, e] : session_->history_gaps()) gaps.push_back({b, e});
    j["gaps"] = {{std::to_string(session_->history_block()), gaps}};
  }
  out_.write(dump_json(j) + "\n");
  out_.flush();
}

void ViewDumper::on_forget(const ForgetEvent& e) {
  nlohmann::json ranges = nlohmann::json::array();
  for (size_t i = 0; i < e.ranges.size(); ++i) {
    nlohmann::json r = {{"begin", e.ranges[i].first}, {"end", e.ranges[i].second}};
    set_text(r, "text", i < e.texts.size() ? e.texts[i] : std::string());
    ranges.push_back(r);
  }
  nlohmann::json j = {{"kind", "forget"}, {"serial_step", e.serial_step},
                      {"block", e.block}, {"ranges", ranges},
                      {"kept", e.kept},   {"history_len", e.history_len}};
  if (e.summary_worker >= 0)  // summarise-and-drop: the summary step that replaced the ranges
    j["summary"] = {{"worker", e.summary_worker},
                    {"step", e.summary_step},
                    {"begin", e.summary.first},
                    {"end", e.summary.second}};
  out_.write(dump_json(j) + "\n");
  out_.flush();
}

void ViewDumper::on_forward(const ForwardRecord& r) { write(r); }
void ViewDumper::on_finisher_forward(const ForwardRecord& r) { write(r); }

LogitsDumper::LogitsDumper(const std::string& path, int64_t vocab_size)
    : path_(path), vocab_(vocab_size) {
  check_npy_path(path, "--dump-logits");
  OutputFile probe(path, "--dump-logits");  // the same checks and messages as every output
  probe.close();
  npy_ = std::make_unique<NpyWriter>(path, vocab_size);
}

LogitsDumper::~LogitsDumper() = default;

void LogitsDumper::on_forward(const ForwardRecord& r) {
  if (!r.logits)
    fail(
        "--dump-logits: the forward of serial step {} kept no logits (device sampling without "
        "SessionOptions::keep_logits)",
        r.serial_step);
  serial_ = r.serial_step;
  workers_ = r.logit_workers;
  logits_ = *r.logits;
}

void LogitsDumper::on_token(const TokenEvent& e) {
  if (e.serial_step != serial_) return;  // (cannot happen: every token follows its forward)
  size_t row = 0;
  if (!(workers_.size() == 1 && workers_[0] == -1)) {
    auto it = std::find(workers_.begin(), workers_.end(), e.worker);
    HOGWILD_CHECK(it != workers_.end());
    row = static_cast<size_t>(it - workers_.begin());
  }
  HOGWILD_CHECK(logits_.size() >= (row + 1) * static_cast<size_t>(vocab_));
  npy_->append(logits_.data() + row * vocab_, 1);
  rows_.push_back({{"serial_step", e.serial_step}, {"worker", e.worker}});
}

void LogitsDumper::close() {
  if (!npy_) return;
  npy_->close();
  nlohmann::json j = {
      {"shape", {npy_->rows(), vocab_}},
      {"dtype", "float32"},
      {"what",
       "row i: the logits the i-th sampled token of the run was drawn from (the transcript's "
       "tokens, in order), as the model gave them, before forbidden ids and sampling processors"},
      {"rows", rows_}};
  npy_.reset();
  OutputFile side(path_ + ".json", "--dump-logits");
  side.write(dump_json(j, 1) + "\n");
  side.close();
}

}  // namespace hogwild
