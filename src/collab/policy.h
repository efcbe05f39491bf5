// The scripted policies of the collaboration tasks share one frame: a worker's view is parsed
// into steps (StepPolicy::read, from the formatting's step prefixes, separator and check text),
// and the policy plans the step the worker writes next as pieces of text (StepPlan), some of them
// decisions chosen from the state of the other workers. OraclePicker (oracle_picker.h) writes the
// pieces token by token in a real Session. Policies: the packs' oracle (oracle.h) and the
// countdown search (countdown_oracle.h).
//
// Both speak the same claim language: an idle worker opens its step with the ledger of its view
// (" Left: 2 (Bob), 4, 5-8." every unit of work not yet done, with the worker holding it), then
// claims a unit (" I take part 4." / " I take branch 4 (25 and 8).") or stops; the claimed
// number is the "hole" of the plan, chosen at the moment it is written (choose_part) and
// rendered by claim_text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hogwild/formatting.h"
#include "hogwild/layout.h"

namespace hogwild::collab {

/// One step as a worker sees it.
struct SeenStep {
  int writer = -1;        // worker index (0-based)
  bool finished = false;  // ended with the separator (history, or a finished paragraph)
  bool check = false;     // opened with the collaboration-check question
  std::string content;    // after the prefix (and the question); separator removed
};

/// Text of one part of a worker's view, in view order.
struct ViewText {
  enum class Kind {
    history,  // finished steps of any writers after the prompt (prompt removed by the caller)
    step,     // one step of `writer`: finished (closing) or being written
    output,   // contiguous layout: the whole output of `writer`; the last paragraph is unfinished
    text,     // a layout text (header, separator): ignored
  };
  Kind kind = Kind::text;
  int writer = -1;
  bool finished = false;  // for Kind::step
  std::string bytes;
};

/// What worker `me` sees, parsed.
struct SeenState {
  int me = 0;
  std::vector<SeenStep> steps;  // view order
};

/// A piece of a planned step: text, or the hole where the claimed part's number goes.
struct Piece {
  std::string text;     // "" = the claim hole (unless eos)
  bool decision;        // the piece's first token is chosen from the state of the others
  bool eos = false;     // the codec's EOS token
  bool ledger = false;  // the ledger: written from the view at the step's start
  bool action = false;  // the action after the ledger: this and the pieces after it may be planned
                        // again (Oracle::plan_action) from the view when it is reached
};

/// A planned step.
struct StepPlan {
  // claim .. node: the packs' oracle (oracle.h); found, answer: the countdown search
  // (countdown_oracle.h): a step that reaches the target, the finder's final answer.
  enum class Kind { claim, work, switch_part, leave, keep, stop, end, sum, node, found, answer };
  Kind kind = Kind::stop;
  std::optional<bool> check_answer;  // set when the step opened with the check question
  std::vector<Piece> pieces;         // the step's text after the prefix, separator included
};

/// The frame of a scripted policy: the formatting it reads and writes, the team size and the
/// layout (which decides whether the others' unfinished steps are visible).
class StepPolicy {
 public:
  /// n_workers <= fmt.worker_names.size(); the formatting's step prefix must not use {step}
  /// (steps are recognised by their prefix) and EOS must not be forbidden (workers stop with it).
  /// Throws hogwild::Error otherwise.
  StepPolicy(const Formatting& fmt, int n_workers, Layout layout);
  virtual ~StepPolicy() = default;

  /// Parses the parts of worker me's view into steps (writers from the step prefixes).
  SeenState read(int me, const std::vector<ViewText>& view) const;

  /// The step worker s.me writes now; `check` when the step opened with the check question.
  virtual StepPlan plan_step(const SeenState& s, bool check) const = 0;
  /// The action of an idle worker after its ledger, from the view now: the pieces from the action
  /// on (the first one marked `action`).
  virtual StepPlan plan_action(const SeenState& s) const = 0;
  /// The unit (1-based) to claim at the hole. careless: ignore the lower-index workers claiming
  /// at the same moment; used to put collisions in the traces.
  virtual int choose_part(const SeenState& s, bool careless) const = 0;
  /// True when a careless choice would differ from the careful one (someone claims with me).
  virtual bool contested(const SeenState& s) const = 0;
  /// The unit worker w holds in s (0 = none).
  virtual int held_part(const SeenState& s, int w) const = 0;
  /// The text written at the hole for unit `unit` (its first token is the decision): "4" for a
  /// part; a policy may add what the unit is ("4 (25 and 8)").
  virtual std::string claim_text(int unit) const { return std::to_string(unit); }

  const Formatting& formatting() const { return fmt_; }

 protected:
  const Formatting& fmt_;
  int n_workers_;
  Layout layout_;
  std::vector<std::string> prefix_;  // (n_workers) rendered step prefix
  std::string check_text_;
};

/// The ledger line " Left: 2 (Bob), 4, 5 (Dave), 6-8." from the units without a result, in order:
/// (unit, holder: a worker index, or -1 when free); runs of three or more free units are written
/// as a range; " Left: none." when `left` is empty.
std::string ledger_line(const std::vector<std::pair<int, int>>& left, const Formatting& fmt);

/// The unit claimed last in a step's content: the number after the last `take` ("take part ",
/// "take branch "); 0: none; -1 when "leave it" comes after it.
int claimed_after(const std::string& content, std::string_view take);

/// Whether the layout shows the other workers' unfinished steps (all but interleaved).
bool sees_current(Layout l);

}  // namespace hogwild::collab
