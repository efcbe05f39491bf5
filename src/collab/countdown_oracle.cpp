// The countdown search policy (countdown_oracle.h).
#include "collab/countdown_oracle.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "collab/oracle.h"
#include "core/error.h"

namespace hogwild::collab {

namespace {

constexpr std::string_view kTake = "take branch ";
constexpr std::string_view kFound = " Found: ";
constexpr std::string_view kDoneOpen = " Branch ";
constexpr std::string_view kDoneClose = ": no solution.";
constexpr std::string_view kStopEnd = " so I stop.";
constexpr std::string_view kNothing = " Nothing is free, so I stop.";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// What an idle worker's step says after its "Branch N: no solution." (if any) and its ledger;
// "" while those are not complete.
std::string action_after(const std::string& content) {
  std::string c = strip_answer(content);
  if (starts_with(c, kDoneOpen)) {
    const size_t e = c.find(kDoneClose);
    if (e == std::string::npos) return "";
    c = c.substr(e + kDoneClose.size());
    if (c.empty()) return "";
  }
  return action_of(c);
}

// The expression of a "Found: EXPR = N." in content; nullopt without one.
std::optional<std::string> found_in(const std::string& content) {
  const size_t f = content.find(kFound);
  if (f == std::string::npos) return std::nullopt;
  const size_t b = f + kFound.size();
  const size_t e = content.find(" = ", b);
  if (e == std::string::npos) return std::nullopt;
  return content.substr(b, e - b);
}

// A search line: a space, then a digit.
bool is_line(const std::string& body) {
  return body.size() >= 2 && body[0] == ' ' && std::isdigit(static_cast<unsigned char>(body[1]));
}

}  // namespace

int branch_done_in(const std::string& content) {
  const size_t e = content.find(kDoneClose);
  if (e == std::string::npos) return 0;
  const size_t b = content.rfind(kDoneOpen, e);
  if (b == std::string::npos) return 0;
  const size_t d = b + kDoneOpen.size();
  if (d >= e || e - d > 4) return 0;
  int v = 0;
  for (size_t i = d; i < e; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(content[i]))) return 0;
    v = v * 10 + (content[i] - '0');
  }
  return v;
}

CountdownOracle::CountdownOracle(const Countdown& problem, const Formatting& fmt, int n_workers,
                                 Layout layout)
    : StepPolicy(fmt, n_workers, layout), problem_(problem) {
  const int n = static_cast<int>(problem.numbers.size());
  for (int b = 1; b <= n * (n - 1) / 2; ++b) lines_.push_back(branch_lines(problem, b));
}

struct CountdownOracle::Derived {
  std::vector<int> held;             // (n_workers) branch held, 0 = none
  std::vector<bool> visible;         // an unfinished step of the worker is in the view
  std::vector<bool> at_digit;        // its unfinished step ends with "take branch "
  std::vector<bool> fresh;           // its unfinished step has no action yet
  std::vector<bool> stopped;         // its last finished step is a stop, nothing written since
  std::vector<std::string> current;  // its unfinished step's content, check answer removed
  std::vector<int> progress;         // (n_workers) finished line steps since its last claim
  std::vector<std::optional<std::string>> found;  // (n_workers) its finished "Found:" expression
  int finder = -1;                                // writer of the first finished "Found:"
  std::vector<int> done_by;  // (branches) the worker that searched it to its end, -1: not yet
};

CountdownOracle::Derived CountdownOracle::derive(const SeenState& s) const {
  const int n = n_workers_;
  Derived d{std::vector<int>(n, 0),
            std::vector<bool>(n, false),
            std::vector<bool>(n, false),
            std::vector<bool>(n, false),
            std::vector<bool>(n, false),
            std::vector<std::string>(n),
            std::vector<int>(n, 0),
            std::vector<std::optional<std::string>>(n),
            -1,
            std::vector<int>(branches(), -1)};
  for (const SeenStep& st : s.steps) {
    const int o = st.writer;
    const std::string body = strip_answer(st.content);
    const int done = branch_done_in(body);
    if (done >= 1 && done <= branches()) {
      if (d.done_by[done - 1] < 0) d.done_by[done - 1] = o;
      if (d.held[o] == done) d.held[o] = 0;
    }
    const int c = claimed_after(body, kTake);
    if (c > 0) d.held[o] = c, d.progress[o] = 0;
    if (c < 0) d.held[o] = 0;
    if (st.finished) {
      if (auto f = found_in(body)) {
        if (!d.found[o]) d.found[o] = *f;
        if (d.finder < 0) d.finder = o;
      }
      if (c == 0 && is_line(body)) d.progress[o] += 1;
      d.visible[o] = false;
      d.stopped[o] = ends_with(body, kStopEnd);
    } else {
      d.visible[o] = true;
      d.current[o] = body;
      d.at_digit[o] = ends_with(st.content, kTake);
      d.fresh[o] = action_after(st.content).size() < 2;
      if (!body.empty()) d.stopped[o] = false;
    }
  }
  return d;
}

int CountdownOracle::held_part(const SeenState& s, int w) const { return derive(s).held.at(w); }

std::string CountdownOracle::claim_text(int branch) const {
  const auto pairs = countdown_branches(static_cast<int>(problem_.numbers.size()));
  if (branch < 1 || branch > static_cast<int>(pairs.size())) return std::to_string(branch);
  const auto [i, j] = pairs[branch - 1];
  return fmt::format("{} ({} and {})", branch, problem_.numbers[i], problem_.numbers[j]);
}

std::vector<int> CountdownOracle::free_branches(const SeenState& s, const Derived& d) const {
  std::vector<int> f;
  for (int b = 1; b <= branches(); ++b) {
    bool taken = d.done_by[b - 1] >= 0;
    for (int o = 0; o < n_workers_ && !taken; ++o) taken = o != s.me && d.held[o] == b;
    if (!taken) f.push_back(b);
  }
  return f;
}

bool CountdownOracle::check_truth(const SeenState& s) const {
  const Derived d = derive(s);
  const int my = d.held[s.me];
  if (my <= 0 || my > branches()) return false;
  if (d.done_by[my - 1] >= 0 && d.done_by[my - 1] != s.me) return true;
  for (int o = 0; o < n_workers_; ++o)
    if (o != s.me && d.held[o] == my) return true;
  return false;
}

int CountdownOracle::choose_part(const SeenState& s, bool careless) const {
  const Derived d = derive(s);
  const std::vector<int> f = free_branches(s, d);
  int c = 0;
  for (int o = 0; o < s.me && !careless; ++o)
    c += sees_current(layout_) ? d.at_digit[o] : d.held[o] == 0 && !d.stopped[o];
  if (c < static_cast<int>(f.size())) return f[c];
  // Nothing left for me: collide where it costs least (as the packs' oracle does).
  for (int o = 0; o < s.me; ++o)
    if (d.held[o] > 0) return d.held[o];
  for (int o = 0; o < n_workers_; ++o)
    if (o != s.me && d.held[o] > 0) return d.held[o];
  for (int b = 1; b <= branches(); ++b)
    if (d.done_by[b - 1] < 0) return b;
  return 1;
}

bool CountdownOracle::contested(const SeenState& s) const {
  const Derived d = derive(s);
  if (free_branches(s, d).empty()) return false;
  for (int o = 0; o < s.me; ++o)
    if (sees_current(layout_) ? d.at_digit[o] : d.held[o] == 0 && !d.stopped[o]) return true;
  return false;
}

int CountdownOracle::claimers_before(const SeenState& s, const Derived& d) const {
  int claimers = 0;
  for (int o = 0; o < n_workers_; ++o) {
    if (o == s.me || d.held[o] != 0 || d.stopped[o]) continue;
    if (!sees_current(layout_)) {
      claimers += o < s.me;
    } else if (d.visible[o]) {
      const std::string act = action_after(d.current[o]);
      const bool claiming =
          ends_with(act, kTake) || (act.size() >= 2 && starts_with(" I take branch ", act));
      claimers += claiming || (o < s.me && d.fresh[o]);
    }
  }
  return claimers;
}

std::string CountdownOracle::ledger(const SeenState& s, const Derived& d, int also_done) const {
  std::vector<std::pair<int, int>> left;
  for (int b = 1; b <= branches(); ++b) {
    if (d.done_by[b - 1] >= 0 || b == also_done) continue;
    int holder = -1;
    for (int o = 0; o < n_workers_ && holder < 0; ++o)
      if (o != s.me && d.held[o] == b) holder = o;
    left.push_back({b, holder});
  }
  return ledger_line(left, fmt_);
}

std::string CountdownOracle::ledger(const SeenState& s) const { return ledger(s, derive(s), 0); }

StepPlan CountdownOracle::plan_action(const SeenState& s) const {
  return plan_action(s, derive(s), 0);
}

StepPlan CountdownOracle::plan_action(const SeenState& s, const Derived& d, int also_done) const {
  const std::string& sep = fmt_.step_separator;
  StepPlan plan;
  std::vector<int> f = free_branches(s, d);
  f.erase(std::remove(f.begin(), f.end(), also_done), f.end());
  if (claimers_before(s, d) < static_cast<int>(f.size())) {
    plan.kind = StepPlan::Kind::claim;
    plan.pieces.push_back({" I take branch ", true, false, false, true});
    plan.pieces.push_back({"", true});
    plan.pieces.push_back({"." + sep, false});
    return plan;
  }
  plan.kind = StepPlan::Kind::stop;
  plan.pieces.push_back({std::string(kNothing) + sep, true, false, false, true});
  return plan;
}

StepPlan CountdownOracle::plan_step(const SeenState& s, bool check) const {
  const Derived d = derive(s);
  const std::string& sep = fmt_.step_separator;
  const int me = s.me;
  const int my = d.held[me];
  StepPlan plan;
  if (check) {
    plan.check_answer = check_truth(s);
    plan.pieces.push_back({*plan.check_answer ? " yes." : " no.", true});
  }
  auto end_run = [&] {
    plan.kind = StepPlan::Kind::end;
    plan.check_answer.reset();
    plan.pieces.assign(1, Piece{"", true, true});
    return plan;
  };
  if (d.found[me]) {  // I reached the target: the final answer
    plan.kind = StepPlan::Kind::answer;
    plan.pieces.push_back({fmt::format(" The answer is \\boxed{{{}}}.", *d.found[me]) + sep, true});
    return plan;
  }
  if (d.finder >= 0) {  // another worker did: stop
    if (d.stopped[me]) return end_run();
    plan.kind = StepPlan::Kind::stop;
    plan.pieces.push_back(
        {fmt::format(" {} found it, so I stop.", fmt_.worker_name(d.finder)) + sep, true});
    return plan;
  }
  if (my > 0 && my <= branches()) {
    int other = -1;  // the worker whose hold or finished search makes my branch redundant
    bool lose = false;
    if (d.done_by[my - 1] >= 0 && d.done_by[my - 1] != me) other = d.done_by[my - 1], lose = true;
    for (int o = 0; o < n_workers_ && other < 0; ++o)
      if (o != me && d.held[o] == my) other = o, lose = o < me;
    const std::string name = other >= 0 ? fmt_.worker_name(other) : "";
    if (lose) {
      if (claimers_before(s, d) < static_cast<int>(free_branches(s, d).size())) {
        plan.kind = StepPlan::Kind::switch_part;
        plan.pieces.push_back(
            {fmt::format(" {} took branch {} too, so I take branch ", name, my), true});
        plan.pieces.push_back({"", true});
        plan.pieces.push_back({"." + sep, false});
      } else {
        plan.kind = StepPlan::Kind::leave;
        plan.pieces.push_back(
            {fmt::format(" {} took branch {} too, so I leave it.", name, my) + sep, true});
      }
      return plan;
    }
    if (check && other >= 0) {
      plan.kind = StepPlan::Kind::keep;
      plan.pieces.push_back(
          {fmt::format(" {} took branch {} too, but I keep it.", name, my) + sep, true});
      return plan;
    }
    const std::vector<SearchLine>& ls = lines(my);
    const int pos = d.progress[me];
    if (pos < static_cast<int>(ls.size())) {
      plan.kind = ls[pos].found ? StepPlan::Kind::found : StepPlan::Kind::work;
      plan.pieces.push_back({ls[pos].text + sep, true});
      return plan;
    }
    // The branch is searched to its end: say so, then the ledger and the next action.
    plan.pieces.push_back({fmt::format("{}{}{}", kDoneOpen, my, kDoneClose), true});
    plan.pieces.push_back({ledger(s, d, my), false, false, true});
    const StepPlan act = plan_action(s, d, my);
    plan.kind = act.kind;
    plan.pieces.insert(plan.pieces.end(), act.pieces.begin(), act.pieces.end());
    return plan;
  }
  if (d.stopped[me]) return end_run();
  plan.pieces.push_back({ledger(s, d, 0), false, false, true});
  const StepPlan act = plan_action(s, d, 0);
  plan.kind = act.kind;
  plan.pieces.insert(plan.pieces.end(), act.pieces.begin(), act.pieces.end());
  return plan;
}

}  // namespace hogwild::collab
