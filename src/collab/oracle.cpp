// The oracle policy (oracle.h): parsing a worker's view into steps, and the step it writes next.
#include "collab/oracle.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "core/error.h"

namespace hogwild::collab {

namespace {

constexpr std::string_view kTake = "take part ";
constexpr std::string_view kSumOpen = " All parts are done";
constexpr std::string_view kStop = " Nothing is free, so I stop.";
constexpr std::string_view kLedger = " Left:";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Digits at s[pos...]: value and end position; nullopt without a digit.
std::optional<std::pair<int64_t, size_t>> digits_at(std::string_view s, size_t pos) {
  size_t e = pos;
  int64_t v = 0;
  while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e])) && e - pos < 12)
    v = v * 10 + (s[e++] - '0');
  if (e == pos) return std::nullopt;
  return std::make_pair(v, e);
}

}  // namespace

int claimed_in(const std::string& content) { return claimed_after(content, kTake); }

std::pair<int, int64_t> result_in(const std::string& content) {
  const size_t p = content.rfind("Part ");
  if (p == std::string::npos) return {0, 0};
  auto n = digits_at(content, p + 5);
  if (!n || content.compare(n->second, 3, " = ") != 0) return {0, 0};
  auto v = digits_at(content, n->second + 3);
  if (!v || v->second + 1 != content.size() || content[v->second] != '.') return {0, 0};
  return {static_cast<int>(std::min<int64_t>(n->first, 1000)), v->first};
}

std::tuple<int, int, int64_t> sum_in(const std::string& c) {
  const std::tuple<int, int, int64_t> none{0, 0, 0};
  const size_t p = c.rfind(" Sum ");
  if (p == std::string::npos) return none;
  auto a = digits_at(c, p + 5);
  if (!a || c.compare(a->second, 1, "-") != 0) return none;
  auto b = digits_at(c, a->second + 1);
  if (!b || c.compare(b->second, 1, ":") != 0) return none;
  const size_t e = c.rfind(" = ");
  if (e == std::string::npos || e < b->second) return none;
  auto v = digits_at(c, e + 3);
  if (!v || v->second + 1 != c.size() || c[v->second] != '.') return none;
  return {static_cast<int>(std::min<int64_t>(a->first, 1000)),
          static_cast<int>(std::min<int64_t>(b->first, 1000)), v->first};
}

int tree_split(int a, int b) {
  const int n = b - a + 1;
  int left = 1;
  while (left * 2 < n) left *= 2;
  return a + left - 1;
}

std::string action_of(const std::string& content) {
  const std::string c = strip_answer(content);
  if (!starts_with(c, kLedger)) {
    if (starts_with(kLedger, c)) return "";  // the ledger's first bytes (or nothing yet)
    return c;
  }
  const size_t end = c.find('.', kLedger.size());
  if (end == std::string::npos) return "";
  return c.substr(end + 1);
}

std::string strip_answer(const std::string& content) {
  for (std::string_view a : {" yes.", " no."})
    if (starts_with(content, a)) return content.substr(a.size());
  if (content == " yes" || content == " no") return "";
  return content;
}

Oracle::Oracle(const Pack& pack, const Formatting& fmt, int n_workers, Layout layout)
    : StepPolicy(fmt, n_workers, layout), pack_(pack) {}

struct Oracle::Derived {
  std::vector<int> held;       // (n_workers) part held, 0 = none
  std::vector<bool> visible;   // an unfinished step of the worker is in the view
  std::vector<bool> at_digit;  // its unfinished step ends with "take part "
  std::vector<bool> fresh;     // its unfinished step has no content yet (but a check answer)
  std::vector<std::pair<int, int>> writing;  // the node its unfinished step adds ({0, 0}: none)
  std::vector<bool> stopped;         // its last finished step is a stop step, nothing written since
  std::vector<std::string> current;  // its unfinished step's content, check answer removed
  std::vector<std::optional<int64_t>> result;  // (K)
  std::vector<int> result_writer;              // (K)
  std::vector<int> result_pos;                 // (K) index of the step in the view
  struct Sum {
    int64_t value;
    int writer, pos;
  };
  std::map<std::pair<int, int>, Sum> sums;  // partial sums in finished steps, the first of each
  std::vector<bool> mine;                   // (K) I wrote a result of the part (any copy)
  std::set<std::pair<int, int>> my_sums;    // nodes I added (any copy)
};

Oracle::Derived Oracle::derive(const SeenState& s) const {
  const int n = n_workers_;
  const int k = static_cast<int>(pack_.parts.size());
  Derived d{std::vector<int>(n, 0),
            std::vector<bool>(n, false),
            std::vector<bool>(n, false),
            std::vector<bool>(n, false),
            std::vector<std::pair<int, int>>(n, {0, 0}),
            std::vector<bool>(n, false),
            std::vector<std::string>(n),
            std::vector<std::optional<int64_t>>(k),
            std::vector<int>(k, -1),
            std::vector<int>(k, -1),
            {},
            std::vector<bool>(k, false),
            {}};
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const SeenStep& st = s.steps[i];
    const int pos = static_cast<int>(i);
    const int o = st.writer;
    const int c = claimed_in(st.content);
    if (c > 0) d.held[o] = c;
    if (c < 0) d.held[o] = 0;
    if (st.finished) {
      auto [part, value] = result_in(st.content);
      if (part >= 1 && part <= k) {
        if (!d.result[part - 1])
          d.result[part - 1] = value, d.result_writer[part - 1] = o, d.result_pos[part - 1] = pos;
        if (d.held[o] == part) d.held[o] = 0;
        if (o == s.me) d.mine[part - 1] = true;
      }
      auto [a, b, v] = sum_in(st.content);
      if (a >= 1 && a < b && b <= k) {
        if (!d.sums.count({a, b})) d.sums[{a, b}] = {v, o, pos};
        if (o == s.me) d.my_sums.insert({a, b});
      }
      d.visible[o] = false;
      d.writing[o] = {0, 0};
      d.stopped[o] = ends_with(st.content, kStop);
    } else {
      d.visible[o] = true;
      d.current[o] = strip_answer(st.content);
      d.at_digit[o] = ends_with(st.content, kTake);
      const std::string act = action_of(st.content);
      d.fresh[o] = act.size() < 2;  // no action word yet (a lone space starts every one)
      // Writing the total from its first word on (" All" is one token of the trained tokenizer),
      // a partial sum from its node's numbers on.
      d.writing[o] = {0, 0};
      if (starts_with(act, " All") || (act.size() >= 2 && starts_with(kSumOpen, act)))
        d.writing[o] = {1, k};
      if (starts_with(act, " Sum ")) {
        auto a = digits_at(act, 5);
        auto b =
            a && act.compare(a->second, 1, "-") == 0 ? digits_at(act, a->second + 1) : std::nullopt;
        d.writing[o] = {a ? static_cast<int>(a->first) : -1, b ? static_cast<int>(b->first) : -1};
      }
      if (!d.current[o].empty()) d.stopped[o] = false;
    }
  }
  return d;
}

std::vector<std::optional<int64_t>> Oracle::results(const SeenState& s) const {
  return derive(s).result;
}

int Oracle::held_part(const SeenState& s, int w) const { return derive(s).held.at(w); }

std::vector<int> Oracle::free_parts(const SeenState& s, const Derived& d) const {
  std::vector<int> f;
  for (int p = 1; p <= static_cast<int>(pack_.parts.size()); ++p) {
    bool taken = d.result[p - 1].has_value();
    for (int o = 0; o < n_workers_ && !taken; ++o) taken = o != s.me && d.held[o] == p;
    if (!taken) f.push_back(p);
  }
  return f;
}

bool Oracle::check_truth(const SeenState& s) const {
  const Derived d = derive(s);
  const int my = d.held[s.me];
  if (my <= 0 || my > static_cast<int>(pack_.parts.size())) return false;
  if (d.result[my - 1]) return true;
  for (int o = 0; o < n_workers_; ++o)
    if (o != s.me && d.held[o] == my) return true;
  return false;
}

int Oracle::choose_part(const SeenState& s, bool careless) const {
  const Derived d = derive(s);
  const std::vector<int> f = free_parts(s, d);
  int c = 0;
  for (int o = 0; o < s.me && !careless; ++o)
    c += sees_current(layout_) ? d.at_digit[o] : d.held[o] == 0 && !d.stopped[o];
  if (c < static_cast<int>(f.size())) return f[c];
  // Nothing left for me (others claimed faster than the step's opening foresaw): collide where
  // it costs least — with a lower-index worker (I give way at my next step), else with a claim
  // whose work has not started, else on any part without a result.
  for (int o = 0; o < s.me; ++o)
    if (d.held[o] > 0) return d.held[o];
  for (int o = 0; o < n_workers_; ++o)
    if (o != s.me && d.held[o] > 0 && d.visible[o] && claimed_in(d.current[o]) == d.held[o])
      return d.held[o];
  for (int p = 1; p <= static_cast<int>(pack_.parts.size()); ++p)
    if (!d.result[p - 1]) return p;
  return 1;
}

bool Oracle::contested(const SeenState& s) const {
  const Derived d = derive(s);
  if (free_parts(s, d).empty()) return false;
  for (int o = 0; o < s.me; ++o)
    if (sees_current(layout_) ? d.at_digit[o] : d.held[o] == 0 && !d.stopped[o]) return true;
  return false;
}

std::optional<int64_t> Oracle::node_value(const Derived& d, int a, int b, int* writer,
                                          int* pos) const {
  if (a == b) {
    *writer = d.result_writer[a - 1], *pos = d.result_pos[a - 1];
    return d.result[a - 1];
  }
  auto it = d.sums.find({a, b});
  if (it == d.sums.end()) return std::nullopt;
  *writer = it->second.writer, *pos = it->second.pos;
  return it->second.value;
}

std::pair<int, int> Oracle::my_node(const SeenState& s, const Derived& d) const {
  const int k = static_cast<int>(pack_.parts.size());
  if (k == 1)
    return d.result[0] && d.result_writer[0] == s.me ? std::make_pair(1, 1) : std::make_pair(0, 0);
  // Internal nodes, smallest first (then left to right): pairs before pairs of pairs.
  std::vector<std::pair<int, int>> nodes;
  auto walk = [&](auto&& self, int a, int b) -> void {
    if (a == b) return;
    const int m = tree_split(a, b);
    self(self, a, m);
    self(self, m + 1, b);
    nodes.push_back({a, b});
  };
  walk(walk, 1, k);
  std::stable_sort(nodes.begin(), nodes.end(),
                   [](auto& x, auto& y) { return x.second - x.first < y.second - y.first; });
  for (auto [a, b] : nodes) {
    if (d.sums.count({a, b})) continue;
    const int m = tree_split(a, b);
    int wl = -1, pl = -1, wr = -1, pr = -1;
    if (!node_value(d, a, m, &wl, &pl) || !node_value(d, m + 1, b, &wr, &pr)) continue;
    // Contiguous: the first copy of a value depends on the view's order of the outputs, so any
    // copy of mine counts.
    auto wrote = [&](int x, int y) { return x == y ? d.mine[x - 1] : d.my_sums.count({x, y}) > 0; };
    if (layout_ == Layout::contiguous ? !wrote(a, m) && !wrote(m + 1, b) : wl != s.me && wr != s.me)
      continue;
    bool other = false;
    for (int o = 0; o < n_workers_ && !other; ++o)
      other = o != s.me && d.writing[o] == std::make_pair(a, b);
    if (other) continue;
    if (layout_ != Layout::contiguous && (pl > pr ? wl : wr) != s.me) continue;
    return {a, b};
  }
  return {0, 0};
}

std::pair<int, int> Oracle::my_node(const SeenState& s) const { return my_node(s, derive(s)); }

std::string Oracle::node_text(const Derived& d, int a, int b) const {
  const int k = static_cast<int>(pack_.parts.size());
  int w = 0, p = 0;
  if (a == b) {  // one part: its result is the total
    const int64_t v = *node_value(d, a, b, &w, &p);
    return fmt::format("{}: {}. The total is \\boxed{{{}}}.", kSumOpen, v, v);
  }
  const int m = tree_split(a, b);
  const int64_t x = *node_value(d, a, m, &w, &p), y = *node_value(d, m + 1, b, &w, &p);
  if (a == 1 && b == k)
    return fmt::format("{}: {} + {} = {}. The total is \\boxed{{{}}}.", kSumOpen, x, y, x + y,
                       x + y);
  return fmt::format(" Sum {}-{}: {} + {} = {}.", a, b, x, y, x + y);
}

std::string Oracle::ledger(const SeenState& s, const Derived& d) const {
  // Parts without a result: (part, holder or -1); runs of 3+ free parts are written "3-8".
  std::vector<std::pair<int, int>> left;
  for (int p = 1; p <= static_cast<int>(pack_.parts.size()); ++p) {
    if (d.result[p - 1]) continue;
    int holder = -1;
    for (int o = 0; o < n_workers_ && holder < 0; ++o)
      if (o != s.me && d.held[o] == p) holder = o;
    left.push_back({p, holder});
  }
  return ledger_line(left, fmt_);
}

std::string Oracle::ledger(const SeenState& s) const { return ledger(s, derive(s)); }

// The pieces of a claim: `opening` (ending "take part "), the hole for the part's number, then
// "." and the step separator.
static void add_claim_pieces(StepPlan& plan, std::string opening, const std::string& sep,
                             bool action = false) {
  plan.pieces.push_back({std::move(opening), true, false, false, action});
  plan.pieces.push_back({"", true});
  plan.pieces.push_back({"." + sep, false});
}

int Oracle::claimers_before(const SeenState& s, const Derived& d) const {
  const int me = s.me;
  int claimers = 0;
  for (int o = 0; o < n_workers_; ++o) {
    if (o == me || d.held[o] != 0 || d.stopped[o]) continue;
    if (!sees_current(layout_)) {
      claimers += o < me;
    } else if (d.visible[o]) {
      const std::string act = action_of(d.current[o]);
      // (its first token " I" on: a lone space is the start of every action)
      const bool claiming =
          ends_with(act, kTake) || (act.size() >= 2 && starts_with(" I take part ", act));
      claimers += claiming || (o < me && d.fresh[o]);
    }
  }
  return claimers;
}

void Oracle::plan_held(const SeenState& s, const Derived& d, bool check, bool can_switch,
                       StepPlan& plan) const {
  const std::string& sep = fmt_.step_separator;
  const int me = s.me;
  const int my = d.held[me];
  int other = -1;  // the worker whose hold or result makes my part redundant
  bool lose = false;
  if (d.result[my - 1]) {
    other = d.result_writer[my - 1];
    lose = true;
  }
  for (int o = 0; o < n_workers_ && other < 0; ++o)
    if (o != me && d.held[o] == my) other = o, lose = o < me;
  const std::string name = other >= 0 ? fmt_.worker_name(other) : "";
  if (lose) {
    if (can_switch) {
      plan.kind = StepPlan::Kind::switch_part;
      add_claim_pieces(plan, fmt::format(" {} took part {} too, so I take part ", name, my), sep);
    } else {
      plan.kind = StepPlan::Kind::leave;
      plan.pieces.push_back(
          {fmt::format(" {} took part {} too, so I leave it.", name, my) + sep, true});
    }
  } else if (check && other >= 0) {
    plan.kind = StepPlan::Kind::keep;
    plan.pieces.push_back(
        {fmt::format(" {} took part {} too, but I keep it.", name, my) + sep, true});
  } else {
    plan.kind = StepPlan::Kind::work;
    const Part& part = pack_.parts[my - 1];
    plan.pieces.push_back(
        {fmt::format(" Part {}: {} Part {} = {}.", my, part.equations(), my, part.result) + sep,
         true});
  }
}

StepPlan Oracle::plan_action(const SeenState& s) const {
  const Derived d = derive(s);
  const std::string& sep = fmt_.step_separator;
  StepPlan plan;
  const auto [a, b] = my_node(s, d);
  if (a > 0) {
    const bool total = a == 1 && b == static_cast<int>(pack_.parts.size());
    plan.kind = total ? StepPlan::Kind::sum : StepPlan::Kind::node;
    plan.pieces.push_back({node_text(d, a, b) + sep, true, false, false, true});
    return plan;
  }
  // A free part is left for me when fewer workers claim before my digit than there are free parts.
  if (claimers_before(s, d) < static_cast<int>(free_parts(s, d).size())) {
    plan.kind = StepPlan::Kind::claim;
    add_claim_pieces(plan, " I take part ", sep, true);
    return plan;
  }
  plan.kind = StepPlan::Kind::stop;
  plan.pieces.push_back({std::string(kStop) + sep, true, false, false, true});
  return plan;
}

StepPlan Oracle::plan_step(const SeenState& s, bool check) const {
  const Derived d = derive(s);
  const int me = s.me;
  const int my = d.held[me];
  const int k = static_cast<int>(pack_.parts.size());
  StepPlan plan;
  if (check) {
    plan.check_answer = check_truth(s);
    plan.pieces.push_back({*plan.check_answer ? " yes." : " no.", true});
  }
  if (my > 0 && my <= k) {
    const bool part_left = claimers_before(s, d) < static_cast<int>(free_parts(s, d).size());
    plan_held(s, d, check, part_left, plan);
    return plan;
  }
  if (d.stopped[me] && my_node(s, d).first == 0) {  // said so in my last step: leave the run
    plan.kind = StepPlan::Kind::end;
    plan.check_answer.reset();
    plan.pieces.assign(1, Piece{"", true, true});
    return plan;
  }
  plan.pieces.push_back({ledger(s, d), false, false, true});
  StepPlan act = plan_action(s);
  plan.kind = act.kind;
  plan.pieces.insert(plan.pieces.end(), act.pieces.begin(), act.pieces.end());
  return plan;
}

}  // namespace hogwild::collab
