// TranscriptRecorder, MultiObserver, stats (transcript.h).
#include "hogwild/transcript.h"

#include <numeric>

#include "core/io.h"
#include "core/json_text.h"

namespace hogwild {

void MultiObserver::on_forward(const ForwardRecord& r) {
  for (auto* o : obs_) o->on_forward(r);
}
void MultiObserver::on_step_start(int w, int k, const std::string& b, bool c) {
  for (auto* o : obs_) o->on_step_start(w, k, b, c);
}
void MultiObserver::on_token(const TokenEvent& e) {
  for (auto* o : obs_) o->on_token(e);
}
void MultiObserver::on_step_end(int w, int k, const std::string& t,
                                const std::optional<std::string>& a) {
  for (auto* o : obs_) o->on_step_end(w, k, t, a);
}
void MultiObserver::on_snapshot(const FinisherResult& f) {
  for (auto* o : obs_) o->on_snapshot(f);
}
void MultiObserver::on_finisher_forward(const ForwardRecord& r) {
  for (auto* o : obs_) o->on_finisher_forward(r);
}
void MultiObserver::on_forget(const ForgetEvent& e) {
  for (auto* o : obs_) o->on_forget(e);
}

void MultiObserver::on_note(const std::string& a, const std::string& t, int64_t s) {
  for (auto* o : obs_) o->on_note(a, t, s);
}

void TranscriptRecorder::stream_to(OutputFile* out, const nlohmann::json& header) {
  stream_ = out;
  emit("run", header);
  stream_->flush();
}

void TranscriptRecorder::emit(const char* event, nlohmann::json j) {
  if (!stream_) return;
  nlohmann::json line = {{"event", event}};
  line.update(j);
  stream_->write(dump_json(line) + "\n");
}

nlohmann::json TranscriptRecorder::token_json(const TokenEvent& t) const {
  nlohmann::json j = {
      {"worker", t.worker}, {"step", t.step}, {"serial_step", t.serial_step}, {"id", t.token}};
  set_text(j, "text", t.bytes);
  if (t.eos) j["eos"] = true;
  return j;
}

nlohmann::json TranscriptRecorder::step_json(const Step& s) const {
  nlohmann::json j = {{"worker", s.worker}, {"name", names_.at(s.worker)}, {"step", s.step}};
  set_text(j, "text", s.text);
  j["finished"] = s.finished;
  j["collab_check"] = s.collab;
  if (s.answer) set_text(j, "answer", *s.answer);
  return j;
}

void TranscriptRecorder::on_forward(const ForwardRecord& r) {
  if (!stream_) return;
  emit("forward", {{"serial_step", r.serial_step}});
  stream_->flush();  // a kill after this forward keeps every event up to here
}

void TranscriptRecorder::on_step_start(int w, int k, const std::string& b, bool c) {
  steps_.push_back({w, k, b, false, c, std::nullopt});
  emit("step_start", step_json(steps_.back()));
}

void TranscriptRecorder::on_token(const TokenEvent& e) {
  tokens_.push_back(e);
  emit("token", token_json(e));
  if (e.eos) return;
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it)
    if (it->worker == e.worker && it->step == e.step) {
      it->text += e.bytes;
      break;
    }
}

void TranscriptRecorder::on_step_end(int w, int k, const std::string& t,
                                     const std::optional<std::string>& a) {
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it)
    if (it->worker == w && it->step == k) {
      it->text = t;
      it->finished = true;
      it->answer = a;
      emit("step_end", step_json(*it));
      break;
    }
}

void TranscriptRecorder::on_snapshot(const FinisherResult& f) {
  if (!stream_) return;
  emit("snapshot", finisher_json(f));
  stream_->flush();
}

void TranscriptRecorder::on_note(const std::string& author, const std::string& text,
                                 int64_t serial_step) {
  nlohmann::json j = nlohmann::json::object();
  set_text(j, "author", author);
  set_text(j, "text", text);
  j["serial_step"] = serial_step;
  notes_.push_back(j);
  emit("note", j);
}

void TranscriptRecorder::on_forget(const ForgetEvent& e) {
  nlohmann::json ranges = nlohmann::json::array();
  for (size_t i = 0; i < e.ranges.size(); ++i) {
    nlohmann::json r = {{"begin", e.ranges[i].first}, {"end", e.ranges[i].second}};
    set_text(r, "text", i < e.texts.size() ? e.texts[i] : std::string());
    ranges.push_back(r);
  }
  nlohmann::json j = {{"serial_step", e.serial_step},
                      {"block", e.block},
                      {"ranges", ranges},
                      {"kept", e.kept},
                      {"history_len", e.history_len}};
  if (e.summary_worker >= 0)  // summarise-and-drop: the summary step that replaced the ranges
    j["summary"] = {{"worker", e.summary_worker},
                    {"step", e.summary_step},
                    {"begin", e.summary.first},
                    {"end", e.summary.second}};
  forgotten_.push_back(j);
  emit("forget", j);
}

nlohmann::json stats_json(const SessionResult& r) {
  const int64_t total =
      std::accumulate(r.tokens_per_worker.begin(), r.tokens_per_worker.end(), int64_t{0});
  nlohmann::json per = nlohmann::json::array();
  for (int64_t t : r.tokens_per_worker)
    per.push_back(r.decode_seconds > 0 ? t / r.decode_seconds : 0.0);
  return {{"serial_steps", r.serial_steps},
          {"prompt_tokens", r.prompt_tokens},
          {"prompt_cached_tokens", r.prompt_cached_tokens},
          {"tokens_per_worker", r.tokens_per_worker},
          {"total_tokens", total},
          {"prefill_seconds", r.prefill_seconds},
          {"decode_seconds", r.decode_seconds},
          {"decode_forward_seconds", r.decode_forward_seconds},
          {"finisher_seconds", r.finisher_seconds},
          {"tokens_per_second", r.decode_seconds > 0 ? total / r.decode_seconds : 0.0},
          {"tokens_per_second_per_worker", per}};
}

nlohmann::json finisher_json(const FinisherResult& f) {
  nlohmann::json j = {{"serial_step", f.serial_step}};
  set_text(j, "continuation", f.continuation);
  j["reached"] = f.reached;
  if (f.context_full) j["context_full"] = true;  // not run: its view would pass the context
  if (f.answer)
    set_text(j, "answer", *f.answer);
  else
    j["answer"] = nullptr;
  return j;
}

nlohmann::json TranscriptRecorder::to_json(const SessionResult& r) const {
  nlohmann::json toks = nlohmann::json::array();
  for (auto& t : tokens_) toks.push_back(token_json(t));
  nlohmann::json steps = nlohmann::json::array();
  for (auto& s : steps_) steps.push_back(step_json(s));
  nlohmann::json snaps = nlohmann::json::array();
  for (auto& f : r.snapshots) snaps.push_back(finisher_json(f));
  nlohmann::json j = {{"tokens", toks}, {"steps", steps}};
  if (r.answer)
    set_text(j, "answer", *r.answer);
  else
    j["answer"] = nullptr;
  j["answer_worker"] = r.answer_worker;
  j["stop_reason"] = stop_reason_name(r.stop_reason);
  j["stats"] = stats_json(r);
  j["snapshots"] = snaps;
  set_text(j, "history", r.history_text);
  j["notes"] = notes_;
  j["forgotten"] = forgotten_;
  j["finisher"] = r.finisher ? finisher_json(*r.finisher) : nlohmann::json(nullptr);
  return j;
}

}  // namespace hogwild
