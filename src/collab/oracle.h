// The oracle policy of a worker in a pack (problems.h), from what that worker can see: the text it
// writes next in the hogwild layout. Scripted workers (oracle_picker.h) write it token by token to
// make training traces; the evaluation reads the same state to judge the model's collaboration.
//
// The oracle's language (every step starts after the step prefix, e.g. "Bob:", and ends with the
// formatting's step separator):
//   claim   " I take part 3."
//   work    " Part 3: 23 + 14 = 37. 37 - 5 = 32. Part 3 = 32."
//   switch  " Alice took part 3 too, so I take part 4."   (or "..., so I leave it.")
//   keep    " Bob took part 3 too, but I keep it."          (only as the answer to a check)
//   stop    " Nothing is free, so I stop."   then, as the next step's first token, EOS: the worker
//           leaves the run (the formatting must allow EOS: forbidden.eos false)
//   sum     " All parts are done: 32, 75, 12. 32 + 75 = 107. 107 + 12 = 119. The total is
//           \boxed{119}."
// After the collaboration-check question the step opens with " yes." or " no." (is another worker
// on the part I hold?), then one of the above.
//
// The policy, for worker `me`:
//   - free parts F: parts with no result in a finished step, held by no other worker (a worker
//   holds
//     the part of its last claim until its own result for it, or "leave it").
//   - claims are made one digit at a time: at the digit, the lower-index workers that are visibly
//   at
//     their own claim digit right now (or, when others' unfinished steps are hidden — interleaved —
//     that hold no part) will take F[0], F[1], ...: me takes F[c], c = their number. At step 1 all
//     workers are at the digit together, so worker w takes part w + 1.
//   - at a step start, holding part p: if a lower-index worker also holds p, or p already has a
//     result, switch (the lower index keeps a part two workers took at once); else work p.
//   - holding nothing: when every part has a result in a finished step, write the sum, unless
//     another worker visibly writes it or a lower-index idle worker is about to; else claim when
//     a free part is left for me after the lower-index claimers, else stop. Stopped workers
//     (last finished step "stop") neither claim nor sum; after my own stop step I end with EOS
//     unless the sum has become mine to write.
//   - the check's answer is true: "yes" iff another worker holds my part or it has a result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collab/problems.h"
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
  std::string text;  // "" = the claim hole (unless eos)
  bool decision;     // the piece's first token is chosen from the state of the others
  bool eos = false;  // the codec's EOS token
};

/// A planned step.
struct StepPlan {
  enum class Kind { claim, work, switch_part, leave, keep, stop, end, sum };
  Kind kind = Kind::stop;
  std::optional<bool> check_answer;  // set when the step opened with the check question
  std::vector<Piece> pieces;         // the step's text after the prefix, separator included
};

class Oracle {
 public:
  /// n_workers <= fmt.worker_names.size(); the formatting's step prefix must not use {step}
  /// (steps are recognised by their prefix) and EOS must not be forbidden (workers stop with it).
  /// Throws hogwild::Error otherwise.
  Oracle(const Pack& pack, const Formatting& fmt, int n_workers, Layout layout);

  /// Parses the parts of worker me's view into steps (writers from the step prefixes).
  SeenState read(int me, const std::vector<ViewText>& view) const;

  /// The step worker s.me writes now; `check` when the step opened with the check question.
  StepPlan plan_step(const SeenState& s, bool check) const;
  /// The part (1-based) to claim at the hole. careless: ignore the lower-index workers claiming
  /// at the same moment (take F[0]); used to put collisions in the traces.
  int choose_part(const SeenState& s, bool careless) const;
  /// True when a careless choice would differ from the careful one (someone claims with me).
  bool contested(const SeenState& s) const;

  /// The truthful answer to the check for worker s.me: another worker holds my part, or my part
  /// has a result.
  bool check_truth(const SeenState& s) const;
  /// The part worker w holds in s (0 = none).
  int held_part(const SeenState& s, int w) const;
  /// Results in finished steps: (part - 1) -> value, the first one seen.
  std::vector<std::optional<int64_t>> results(const SeenState& s) const;

  const Pack& pack() const { return pack_; }

 private:
  struct Derived;
  Derived derive(const SeenState& s) const;
  std::vector<int> free_parts(const SeenState& s, const Derived& d) const;
  std::string sum_text(const std::vector<std::optional<int64_t>>& r) const;
  /// How many other workers will write a claim digit before s.me's: lower-index idle ones when
  /// current steps are not seen, else the visible ones already claiming and lower-index ones with
  /// a fresh step.
  int claimers_before(const SeenState& s, const Derived& d) const;
  /// Fills `plan` for worker s.me, who holds part d.held[s.me]: switch_part (or leave, when no
  /// free part is left for it: !can_switch) when another worker's result or lower-index hold
  /// makes the part redundant, keep when the check found a higher-index holder, else work.
  void plan_held(const SeenState& s, const Derived& d, bool check, bool can_switch,
                 StepPlan& plan) const;
  /// True when another worker writes the sum now or will before s.me (a lower-index idle one).
  bool other_sums(const SeenState& s, const Derived& d) const;

  const Pack& pack_;
  const Formatting& fmt_;
  int n_workers_;
  Layout layout_;
  std::vector<std::string> prefix_;  // (n_workers) rendered step prefix
  std::string check_text_;
};

/// Parses a step's content: the part claimed last in it (0: none; -1: "leave it").
int claimed_in(const std::string& content);
/// "Part N = V." at the end of a finished work step: N (0 if none) and V.
std::pair<int, int64_t> result_in(const std::string& content);
/// Content with a leading check answer (" yes." / " no.", or a part of it) removed.
std::string strip_answer(const std::string& content);

}  // namespace hogwild::collab
