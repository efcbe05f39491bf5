// Skeleton-of-Thought phases of a Session (session.h, "Skeleton-of-Thought") and the outline
// reader (skeleton.h).
#include "hogwild/skeleton.h"

#include <cctype>

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

// After the prefill: worker 0 opens the outline; the others wait for their points.
void Session::sot_start() {
  sot_ = SotPhase::outline;
  for (size_t w = 1; w < workers_.size(); ++w) workers_[w].active = false;
  open_step(0, new_block(), fmt_.sot.outline_prefix, false);
}

// A token of the outline was handled (fed next, or EOS). At the outline's end its block closes
// (it joins the history in the next forward, as a finished step does) and the expansions open.
bool Session::sot_outline_token(int w, bool eos, StepReport& rep) {
  WorkerState& ws = workers_[w];
  const size_t opened = fmt_.sot.outline_prefix.size();
  const bool ended = eos || ws.step_bytes.find(fmt_.step_separator, opened) != std::string::npos ||
                     ws.generated >= fmt_.sot.outline_max_tokens;
  if (!ended) return false;
  rep.steps_finished += 1;
  if (obs_) obs_->on_step_end(w, ws.step, ws.step_bytes, std::nullopt);
  result_.outline_points = parse_outline(ws.step_bytes, opt_.n_workers);
  closing_.push_back(ws.cur);
  closing_steps_.emplace_back(w, ws.step);
  ws.cur = -1;
  ws.active = true;
  sot_ = SotPhase::expand;
  const std::vector<std::string>& points = result_.outline_points;
  if (points.empty()) {  // nothing to expand: the answer follows the outline
    sot_begin_answer();
    return false;
  }
  for (size_t k = 0; k < points.size(); ++k) {
    workers_[k].active = true;
    open_step(static_cast<int>(k), new_block(),
              fmt_.point_prefix(static_cast<int>(k) + 1, points[k]), false);
  }
  return false;
}

// Worker w's expansion ended (its last token, if any, waits in its feed). When no expansion is
// running any more, the answer phase begins.
bool Session::sot_expansion_end(int w) {
  workers_[w].active = false;
  for (const WorkerState& ws : workers_)
    if (ws.active) return false;
  sot_begin_answer();
  return false;
}

// Every expansion closes in point order (its waiting last token fed in the next forward, without
// a row) and joins the history; worker 0 opens the answer step in that same forward.
void Session::sot_begin_answer() {
  for (size_t k = 0; k < workers_.size(); ++k) {
    WorkerState& ws = workers_[k];
    if (ws.cur < 0) continue;
    closing_.push_back(ws.cur);
    closing_steps_.emplace_back(static_cast<int>(k), ws.step);
    ws.drain = !ws.feed.empty();
    ws.cur = -1;
  }
  sot_ = SotPhase::answer;
  WorkerState& w0 = workers_[0];
  if (opt_.max_tokens_per_worker > 0 && w0.generated >= opt_.max_tokens_per_worker) {
    result_.stop_reason =
        StopReason::max_tokens;  // no answer step: the finisher reads the expansions
    stop_ = true;
    return;
  }
  w0.active = true;
  open_step(0, new_block(), fmt_.sot.answer_prefix, false);
}

}  // namespace hogwild
