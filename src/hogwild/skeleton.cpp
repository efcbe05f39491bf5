// Skeleton-of-Thought: the outline reader (skeleton.h) and the method's phases (method.h
// SkeletonMethod; session.h, "Skeleton-of-Thought").
#include "hogwild/skeleton.h"

#include <algorithm>
#include <cctype>

#include "hogwild/kv_budget.h"
#include "hogwild/method.h"
#include "hogwild/session.h"

namespace hogwild {

std::vector<std::string> parse_outline(std::string_view outline, int max_points) {
  std::vector<std::string> points;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  size_t pos = 0;
  while (pos <= outline.size() && static_cast<int>(points.size()) < max_points) {
    size_t end = outline.find('\n', pos);
    if (end == std::string_view::npos) end = outline.size();
    std::string_view line = outline.substr(pos, end - pos);
    pos = end + 1;
    size_t i = 0;
    while (i < line.size() && space(line[i])) ++i;
    const size_t digits = i;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    if (i == digits || i >= line.size() || (line[i] != '.' && line[i] != ')')) continue;
    std::string_view text = line.substr(i + 1);
    auto trim = [&] {
      while (!text.empty() && space(text.front())) text.remove_prefix(1);
      while (!text.empty() && space(text.back())) text.remove_suffix(1);
    };
    trim();
    for (std::string_view mark : {"**", "__", "*", "_"})
      if (text.size() > 2 * mark.size() && text.starts_with(mark) && text.ends_with(mark)) {
        text = text.substr(mark.size(), text.size() - 2 * mark.size());
        trim();
        break;
      }
    if (!text.empty()) points.emplace_back(text);
  }
  return points;
}

// A worker whose expansion ended is woken again for the answer step, so max_tokens_per_worker
// bounds no serial step.
int64_t SkeletonMethod::serial_steps_bound(const SessionOptions& o) const { return o.budget; }

// Each point's text is a line of the outline, which has at most outline_max_tokens tokens (and at
// most one per serial step): allowed in full in every point's prefix.
void SkeletonMethod::add_kv_need(KvNeed& need, const SessionOptions& o, const Formatting& fmt,
                                 const TextCodec& codec, int64_t steps) const {
  auto count = [&](const std::string& text) {
    return static_cast<int64_t>(codec.encode(text).size());
  };
  const int64_t text = std::min(fmt.sot.outline_max_tokens, steps);
  need.skeleton = true;
  need.once_tokens = count(fmt.sot.outline_prefix) + count(fmt.sot.answer_prefix);
  for (int k = 1; k <= o.n_workers; ++k) need.once_tokens += count(fmt.point_prefix(k, "")) + text;
}

bool SkeletonMethod::continues_prompt(const Session& s, int w) const {
  return w == 0 && s.fmt_.sot.outline_prefix.empty();
}

// After the prefill: worker 0 opens the outline; the others wait for their points.
void SkeletonMethod::begin(Session& s) {
  phase_ = Phase::outline;
  for (size_t w = 1; w < s.workers_.size(); ++w) s.workers_[w].active = false;
  s.open_step(0, s.new_block(), s.fmt_.sot.outline_prefix, false);
}

// The outline's tokens are the phase's own: its end is not a step end of the usual rules.
bool SkeletonMethod::take_token(Session& s, int w, bool eos, StepReport& rep) {
  if (phase_ != Phase::outline) return false;
  outline_token(s, w, eos, rep);
  return true;
}

bool SkeletonMethod::on_step_end(Session& s, int w, const std::optional<std::string>& answer,
                                 StepReport& rep) {
  if (phase_ != Phase::expand) return HogwildMethod::on_step_end(s, w, answer, rep);
  expansion_end(s, w);
  return false;
}

bool SkeletonMethod::on_eos(Session& s, int w, const std::optional<std::string>& answer,
                            StepReport& rep) {
  if (phase_ != Phase::expand) return HogwildMethod::on_eos(s, w, answer, rep);
  expansion_end(s, w);
  return false;
}

bool SkeletonMethod::on_token_cap(Session& s, int w, StepReport&) {
  if (phase_ == Phase::expand) expansion_end(s, w);
  return false;
}

// A token of the outline was handled (fed next, or EOS). At the outline's end its block closes
// (it joins the history in the next forward, as a finished step does) and the expansions open.
void SkeletonMethod::outline_token(Session& s, int w, bool eos, StepReport& rep) {
  const Formatting& fmt = s.fmt_;
  Session::WorkerState& ws = s.workers_[w];
  const size_t opened = fmt.sot.outline_prefix.size();
  const bool ended = eos || ws.step_bytes.find(fmt.step_separator, opened) != std::string::npos ||
                     ws.generated >= fmt.sot.outline_max_tokens;
  if (!ended) return;
  rep.steps_finished += 1;
  if (s.obs_) s.obs_->on_step_end(w, ws.step, ws.step_bytes, std::nullopt);
  s.result_.outline_points = parse_outline(ws.step_bytes, s.opt_.n_workers);
  s.closing_.push_back(ws.cur);
  s.closing_steps_.emplace_back(w, ws.step);
  ws.cur = -1;
  ws.active = true;
  phase_ = Phase::expand;
  const std::vector<std::string>& points = s.result_.outline_points;
  if (points.empty()) {  // nothing to expand: the answer follows the outline
    begin_answer(s);
    return;
  }
  for (size_t k = 0; k < points.size(); ++k) {
    s.workers_[k].active = true;
    s.open_step(static_cast<int>(k), s.new_block(),
                fmt.point_prefix(static_cast<int>(k) + 1, points[k]), false);
  }
}

// Worker w's expansion ended (its last token, if any, waits in its feed). When no expansion is
// running any more, the answer phase begins.
void SkeletonMethod::expansion_end(Session& s, int w) {
  s.workers_[w].active = false;
  for (const Session::WorkerState& ws : s.workers_)
    if (ws.active) return;
  begin_answer(s);
}

// Every expansion closes in point order (its waiting last token fed in the next forward, without
// a row) and joins the history; worker 0 opens the answer step in that same forward.
void SkeletonMethod::begin_answer(Session& s) {
  for (size_t k = 0; k < s.workers_.size(); ++k) {
    Session::WorkerState& ws = s.workers_[k];
    if (ws.cur < 0) continue;
    s.closing_.push_back(ws.cur);
    s.closing_steps_.emplace_back(static_cast<int>(k), ws.step);
    ws.drain = !ws.feed.empty();
    ws.cur = -1;
  }
  phase_ = Phase::answer;
  Session::WorkerState& w0 = s.workers_[0];
  if (s.opt_.max_tokens_per_worker > 0 && w0.generated >= s.opt_.max_tokens_per_worker) {
    // No answer step: the finisher reads the expansions.
    s.result_.stop_reason = StopReason::max_tokens;
    s.stop_ = true;
    return;
  }
  w0.active = true;
  s.open_step(0, s.new_block(), s.fmt_.sot.answer_prefix, false);
}

}  // namespace hogwild
