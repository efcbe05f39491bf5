// The frame of the scripted policies (policy.h): reading views into steps, the ledger line, claims.
#include "collab/policy.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace hogwild::collab {

namespace {

constexpr std::string_view kLeave = "leave it";
constexpr std::string_view kLedger = " Left:";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

}  // namespace

bool sees_current(Layout l) { return l != Layout::interleaved; }

int claimed_after(const std::string& content, std::string_view take_word) {
  const size_t take = content.rfind(take_word);
  const size_t leave = content.rfind(kLeave);
  if (leave != std::string::npos && (take == std::string::npos || leave > take)) return -1;
  if (take == std::string::npos) return 0;
  size_t e = take + take_word.size();
  const size_t b = e;
  int64_t v = 0;
  while (e < content.size() && std::isdigit(static_cast<unsigned char>(content[e])) && e - b < 12)
    v = v * 10 + (content[e++] - '0');
  return e == b ? 0 : static_cast<int>(std::min<int64_t>(v, 1000));
}

std::string ledger_line(const std::vector<std::pair<int, int>>& left, const Formatting& fmt) {
  std::string out(kLedger);
  for (size_t i = 0; i < left.size();) {
    out += i ? ", " : " ";
    size_t j = i;
    while (j + 1 < left.size() && left[j + 1].first == left[j].first + 1 && left[i].second < 0 &&
           left[j + 1].second < 0)
      ++j;
    if (left[i].second < 0 && j >= i + 2) {
      out += fmt::format("{}-{}", left[i].first, left[j].first);
      i = j + 1;
      continue;
    }
    out += std::to_string(left[i].first);
    if (left[i].second >= 0) out += " (" + fmt.worker_name(left[i].second) + ")";
    ++i;
  }
  return out + (left.empty() ? " none." : ".");
}

StepPolicy::StepPolicy(const Formatting& fmt, int n_workers, Layout layout)
    : fmt_(fmt), n_workers_(n_workers), layout_(layout) {
  fmt.check_workers(n_workers);
  if (fmt.step_prefix.find("{step}") != std::string::npos)
    fail(
        "formatting '{}': the oracle recognises steps by their prefix, which must not use {{step}}",
        fmt.name);
  if (fmt.forbidden.eos)
    fail("formatting '{}': the oracle's workers stop with EOS; set forbidden.eos to false",
         fmt.name);
  for (int w = 0; w < n_workers; ++w) prefix_.push_back(fmt.render_step_prefix(w, 1));
  check_text_ = fmt.collab_check.text;
}

SeenState StepPolicy::read(int me, const std::vector<ViewText>& view) const {
  SeenState s;
  s.me = me;
  const std::string& sep = fmt_.step_separator;
  // One paragraph (a step's bytes, separator removed) -> a SeenStep; writer -1 if unknown.
  auto add = [&](std::string_view para, bool finished, int writer) {
    SeenStep st;
    st.finished = finished;
    for (int o = 0; o < n_workers_ && st.writer < 0; ++o)
      if ((writer < 0 || writer == o) && starts_with(para, prefix_[o])) st.writer = o;
    if (st.writer < 0) return;
    std::string_view c = para.substr(prefix_[st.writer].size());
    if (!check_text_.empty() && starts_with(c, check_text_)) {
      st.check = true;
      c.remove_prefix(check_text_.size());
    }
    st.content = std::string(c);
    s.steps.push_back(std::move(st));
  };
  // Paragraphs of text: complete ones are finished; the rest (if any) is being written.
  auto split = [&](std::string_view text, int writer, bool last_unfinished) {
    size_t pos = 0;
    for (size_t e; (e = text.find(sep, pos)) != std::string_view::npos; pos = e + sep.size())
      add(text.substr(pos, e - pos), true, writer);
    if (pos < text.size()) add(text.substr(pos), !last_unfinished, writer);
  };
  for (const ViewText& v : view) {
    switch (v.kind) {
      case ViewText::Kind::history:
        split(v.bytes, -1, false);
        break;
      case ViewText::Kind::step: {
        std::string_view b = v.bytes;
        if (v.finished && ends_with(b, sep)) b.remove_suffix(sep.size());
        add(b, v.finished, v.writer);
        break;
      }
      case ViewText::Kind::output:
        split(v.bytes, v.writer, true);
        break;
      case ViewText::Kind::text:
        break;
    }
  }
  return s;
}

}  // namespace hogwild::collab
