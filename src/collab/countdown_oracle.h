// The scripted policy of a worker on a Countdown problem (countdown.h), from what that worker can
// see: the text it writes next in the hogwild layout. The search space is not split in advance:
// the workers claim its branches (first pairs of numbers) one at a time, like the parts of a pack
// (oracle.h), search each depth first one line per step, and the first to reach the target
// announces it; the others stop and the finder writes the final answer.
//
// The language (every step after the step prefix, e.g. "Bob:", ending with the step separator):
//   claim    " Left: 1 (Alice), 2, 3-6. I take branch 2 (25 and 3)."   an idle worker: the
//            ledger of its view (every branch not searched to its end, with the worker holding
//            it), then the branch it takes, with the pair it starts from
//   line     " 25+3=28, left 7 8 28."  /  " 28*7=196, then 196+8=204, 196-8=188, ..."
//            one tried combination of the held branch (countdown.h), in the search's order
//   found    " 28-7=21, then 21+8=29. Found: 25+3-7+8 = 29."   the line that reaches the target
//   answer   " The answer is \boxed{25+3-7+8}."   the finder's next step (it ends the run)
//   done     " Branch 2: no solution. Left: 4 (Bob), 5, 6. I take branch 5 (7 and 8)."
//            the held branch has no more lines: said so, then ledger and claim (or stop)
//   switch   " Alice took branch 2 too, so I take branch 3 (25 and 8)."   (or "..., so I leave
//            it."; or, as the answer to a check, " Bob took branch 2 too, but I keep it.")
//   stop     " Alice found it, so I stop."  /  " Left: 5 (Bob). Nothing is free, so I stop."
//            then, as the next step's first token, EOS: the worker leaves the run
// After the collaboration-check question the step opens with " yes." or " no." (is another worker
// on my branch?), then one of the above.
//
// The policy, for worker `me` (the claim rules are the packs' ones, oracle.h):
//   - a worker holds the branch of its last claim until its own "Branch N: no solution.", a
//     "leave it", or a switch;
//   - at a step start: my finished "Found:" step -> the answer; another worker's -> stop; holding
//     a branch that a lower-index worker also holds, or that another worker finished -> switch
//     (the lower index keeps a branch two workers took at once); holding one -> its next line, the
//     number of my line steps since the claim giving the position; else ledger, then claim or stop.
//   - claims: at the digit, the lower-index workers visibly at their own claim digit (or, when
//     others' unfinished steps are hidden — interleaved — that hold nothing) take the free
//     branches F[0], F[1], ...: me takes F[c], c = their number.
#pragma once

#include <string>
#include <vector>

#include "collab/countdown.h"
#include "collab/policy.h"

namespace hogwild::collab {

class CountdownOracle : public StepPolicy {
 public:
  /// Precomputes every branch's lines. Throws hogwild::Error as StepPolicy does.
  CountdownOracle(const Countdown& problem, const Formatting& fmt, int n_workers, Layout layout);

  StepPlan plan_step(const SeenState& s, bool check) const override;
  StepPlan plan_action(const SeenState& s) const override;
  int choose_part(const SeenState& s, bool careless) const override;
  bool contested(const SeenState& s) const override;
  int held_part(const SeenState& s, int w) const override;
  /// "4 (25 and 8)": the branch and the pair of numbers it starts from.
  std::string claim_text(int branch) const override;

  /// The ledger line of worker s.me's view (" Left: 1 (Alice), 2, 3-6.").
  std::string ledger(const SeenState& s) const;
  /// The truthful answer to the check: another worker holds my branch, or finished it.
  bool check_truth(const SeenState& s) const;
  /// Number of branches (n (n - 1) / 2 for n numbers).
  int branches() const { return static_cast<int>(lines_.size()); }
  /// The lines of branch b (1-based), up to the first that reaches the target.
  const std::vector<SearchLine>& lines(int b) const { return lines_.at(b - 1); }
  const Countdown& problem() const { return problem_; }

 private:
  struct Derived;
  Derived derive(const SeenState& s) const;
  std::vector<int> free_branches(const SeenState& s, const Derived& d) const;
  int claimers_before(const SeenState& s, const Derived& d) const;
  /// plan_action on a derived view; also_done: a branch to count as searched to its end (mine,
  /// while the step that says so is being planned).
  StepPlan plan_action(const SeenState& s, const Derived& d, int also_done) const;
  std::string ledger(const SeenState& s, const Derived& d, int also_done) const;

  const Countdown& problem_;
  std::vector<std::vector<SearchLine>> lines_;  // (branches)
};

/// The branch marked searched to its end in a step's content (" Branch N: no solution."), 0: none.
int branch_done_in(const std::string& content);

}  // namespace hogwild::collab
