#include "hogwild/transcript.h"

#include <numeric>

#include "core/error.h"

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

std::string utf8_lossy(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      i += 1;
    }
  }
  return out;
}

void TranscriptRecorder::on_step_start(int w, int k, const std::string& b, bool c) {
  steps_.push_back({w, k, b, false, c, std::nullopt});
}

void TranscriptRecorder::on_token(const TokenEvent& e) {
  tokens_.push_back(e);
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
      break;
    }
}

nlohmann::json stats_json(const SessionResult& r) {
  const int64_t total =
      std::accumulate(r.tokens_per_worker.begin(), r.tokens_per_worker.end(), int64_t{0});
  nlohmann::json per = nlohmann::json::array();
  for (int64_t t : r.tokens_per_worker)
    per.push_back(r.decode_seconds > 0 ? t / r.decode_seconds : 0.0);
  return {{"serial_steps", r.serial_steps},
          {"prompt_tokens", r.prompt_tokens},
          {"tokens_per_worker", r.tokens_per_worker},
          {"total_tokens", total},
          {"prefill_seconds", r.prefill_seconds},
          {"decode_seconds", r.decode_seconds},
          {"decode_forward_seconds", r.decode_forward_seconds},
          {"finisher_seconds", r.finisher_seconds},
          {"tokens_per_second", r.decode_seconds > 0 ? total / r.decode_seconds : 0.0},
          {"tokens_per_second_per_worker", per}};
}

namespace {
nlohmann::json finisher_json(const FinisherResult& f) {
  nlohmann::json j = {{"serial_step", f.serial_step},
                      {"continuation", utf8_lossy(f.continuation)},
                      {"reached", f.reached}};
  j["answer"] = f.answer ? nlohmann::json(*f.answer) : nlohmann::json(nullptr);
  return j;
}
}  // namespace

nlohmann::json TranscriptRecorder::to_json(const SessionResult& r) const {
  nlohmann::json toks = nlohmann::json::array();
  for (auto& t : tokens_) {
    nlohmann::json j = {{"worker", t.worker},
                        {"step", t.step},
                        {"serial_step", t.serial_step},
                        {"id", t.token},
                        {"text", utf8_lossy(t.bytes)}};
    if (t.eos) j["eos"] = true;
    toks.push_back(j);
  }
  nlohmann::json steps = nlohmann::json::array();
  for (auto& s : steps_) {
    nlohmann::json j = {{"worker", s.worker},     {"name", names_.at(s.worker)},
                        {"step", s.step},         {"text", utf8_lossy(s.text)},
                        {"finished", s.finished}, {"collab_check", s.collab}};
    if (s.answer) j["answer"] = *s.answer;
    steps.push_back(j);
  }
  nlohmann::json snaps = nlohmann::json::array();
  for (auto& f : r.snapshots) snaps.push_back(finisher_json(f));
  nlohmann::json j = {{"tokens", toks},
                      {"steps", steps},
                      {"answer", r.answer ? nlohmann::json(*r.answer) : nlohmann::json(nullptr)},
                      {"answer_worker", r.answer_worker},
                      {"stop_reason", r.stop_reason},
                      {"stats", stats_json(r)},
                      {"snapshots", snaps},
                      {"history", utf8_lossy(r.history_text)}};
  j["finisher"] = r.finisher ? finisher_json(*r.finisher) : nlohmann::json(nullptr);
  return j;
}

ViewDumper::ViewDumper(const std::string& path) {
  if (path == "-") {
    f_ = stdout;
  } else {
    f_ = std::fopen(path.c_str(), "w");
    if (!f_)
      fail("--dump-views: cannot create '{}'; check the directory exists and is writable", path);
    own_ = true;
  }
}

ViewDumper::~ViewDumper() {
  if (own_ && f_) std::fclose(f_);
}

void ViewDumper::on_forward(const ForwardRecord& r) {
  static const char* kRoles[] = {"prompt", "constant", "step_start", "generated"};
  nlohmann::json views = nlohmann::json::array(), blocks = nlohmann::json::object();
  for (auto& v : r.views) {
    nlohmann::json jv = nlohmann::json::array();
    for (BlockId b : v) {
      const auto& ids = session_->block_tokens(b);
      jv.push_back({b, ids.size()});
      blocks[std::to_string(b)] = ids;
    }
    views.push_back(jv);
  }
  nlohmann::json feeds = nlohmann::json::array();
  for (auto& t : r.tokens)
    feeds.push_back({{"worker", t.worker},
                     {"step", t.step},
                     {"token", t.token},
                     {"block", t.block},
                     {"index", t.index},
                     {"role", kRoles[static_cast<int>(t.role)]}});
  nlohmann::json j = {{"serial_step", r.serial_step},
                      {"views", views},
                      {"feeds", feeds},
                      {"closed", r.closed},
                      {"blocks", blocks}};
  std::string line = j.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace hogwild
