// The oracle policy of a worker in a pack (problems.h), from what that worker can see: the text it
// writes next in the hogwild layout. Scripted workers (oracle_picker.h) write it token by token to
// make training traces; the evaluation reads the same state to judge the model's collaboration.
//
// The oracle's language (every step starts after the step prefix, e.g. "Bob:", and ends with the
// formatting's step separator). A worker holding a part writes:
//   work    " Part 3: 23 + 14 = 37. 37 - 5 = 32. Part 3 = 32."
//   switch  " Alice took part 3 too, so I take part 4."   (or "..., so I leave it.")
//   keep    " Bob took part 3 too, but I keep it."          (only as the answer to a check)
// A worker holding nothing opens its step with the ledger of its view, then acts on it:
//   ledger  " Left: 2 (Bob), 4, 5 (Dave), 6-8."  every part without a result in a finished step,
//           in order, with the name of the worker holding it; a bare number is free (three or
//           more free parts in a row: a range); " Left: none." means every part has a result
//   claim   " Left: 2 (Bob), 4. I take part 4."
//   node    " Left: 3 (Carol). Sum 1-2: 206 + 183 = 389."   a partial sum (below)
//   total   " Left: none. All parts are done: 389 + 319 = 708. The total is \boxed{708}."
//   stop    " Left: 3 (Carol). Nothing is free, so I stop."   then, as the next step's first token,
//           EOS: the worker leaves the run (the formatting must allow EOS: forbidden.eos false)
// After the collaboration-check question the step opens with " yes." or " no." (is another worker
// on the part I hold?), then one of the above.
//
// The sum is a tree over the parts: node [a, b] adds its left child (the first 2^j parts of it,
// 2^j < b - a + 1 the largest such power) and its right child (the rest); leaves are the parts'
// results. K = 4: Sum 1-2, Sum 3-4, then the total; K = 8: 1-2, 3-4, 5-6, 7-8, 1-4, 5-8, total.
// The total is the root's sum, so it is written only once every part has a result (the join), and
// after the last part only about log2 K additions remain (each done by one worker).
//
// The policy, for worker `me`:
//   - free parts F: parts with no result in a finished step, held by no other worker (a worker
//     holds the part of its last claim until its own result for it, or "leave it").
//   - claims are made one digit at a time: at the digit, the lower-index workers that are visibly
//     at their own claim digit right now (or, when others' unfinished steps are hidden —
//     interleaved — that hold no part) will take F[0], F[1], ...: me takes F[c], c = their
//     number. At step 1 all workers are at the digit together, so worker w takes part w + 1.
//   - at a step start, holding part p: if a lower-index worker also holds p, or p already has a
//     result, switch (the lower index keeps a part two workers took at once); else work p.
//   - holding nothing: write the ledger, then (chosen on the view at that moment) the first node
//     of the tree that is mine to add, else claim when a free part is left for me after the
//     lower-index claimers, else stop. A node is mine when both its children have values in
//     finished steps, I wrote one of them, and mine is the later one in the history (so exactly
//     one worker adds each node, the one that completed it; in the contiguous layout, which has
//     no common history order, every writer of a child that sees both adds it unless another
//     worker visibly does). Stopped workers (last finished step a stop) end with EOS.
//   - the check's answer is true: "yes" iff another worker holds my part or it has a result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "collab/policy.h"
#include "collab/problems.h"
#include "hogwild/formatting.h"
#include "hogwild/layout.h"

namespace hogwild::collab {

class Oracle : public StepPolicy {
 public:
  /// n_workers <= fmt.worker_names.size(); the formatting's step prefix must not use {step}
  /// (steps are recognised by their prefix) and EOS must not be forbidden (workers stop with it).
  /// Throws hogwild::Error otherwise.
  Oracle(const Pack& pack, const Formatting& fmt, int n_workers, Layout layout);

  /// The step worker s.me writes now; `check` when the step opened with the check question.
  StepPlan plan_step(const SeenState& s, bool check) const override;
  /// The action of an idle worker after its ledger, from the view now (claim, node, sum, stop):
  /// the pieces from the action on (the first one marked `action`).
  StepPlan plan_action(const SeenState& s) const override;
  /// The ledger line of worker s.me's view (" Left: 2 (Bob), 4.").
  std::string ledger(const SeenState& s) const;
  /// The node [a, b] of the sum tree that worker s.me adds now ({0, 0}: none; {1, K}: the total).
  std::pair<int, int> my_node(const SeenState& s) const;
  /// The part (1-based) to claim at the hole. careless: ignore the lower-index workers claiming
  /// at the same moment (take F[0]); used to put collisions in the traces.
  int choose_part(const SeenState& s, bool careless) const override;
  /// True when a careless choice would differ from the careful one (someone claims with me).
  bool contested(const SeenState& s) const override;

  /// The truthful answer to the check for worker s.me: another worker holds my part, or my part
  /// has a result.
  bool check_truth(const SeenState& s) const;
  /// The part worker w holds in s (0 = none).
  int held_part(const SeenState& s, int w) const override;
  /// Results in finished steps: (part - 1) -> value, the first one seen.
  std::vector<std::optional<int64_t>> results(const SeenState& s) const;

  const Pack& pack() const { return pack_; }

 private:
  struct Derived;
  Derived derive(const SeenState& s) const;
  std::vector<int> free_parts(const SeenState& s, const Derived& d) const;
  std::pair<int, int> my_node(const SeenState& s, const Derived& d) const;
  std::optional<int64_t> node_value(const Derived& d, int a, int b, int* writer, int* pos) const;
  std::string node_text(const Derived& d, int a, int b) const;
  std::string ledger(const SeenState& s, const Derived& d) const;
  /// How many other workers will write a claim digit before s.me's: lower-index idle ones when
  /// current steps are not seen, else the visible ones already claiming and lower-index ones with
  /// a fresh step.
  int claimers_before(const SeenState& s, const Derived& d) const;
  /// Fills `plan` for worker s.me, who holds part d.held[s.me]: switch_part (or leave, when no
  /// free part is left for it: !can_switch) when another worker's result or lower-index hold
  /// makes the part redundant, keep when the check found a higher-index holder, else work.
  void plan_held(const SeenState& s, const Derived& d, bool check, bool can_switch,
                 StepPlan& plan) const;

  const Pack& pack_;
};

/// Parses a step's content: the part claimed last in it (0: none; -1: "leave it").
int claimed_in(const std::string& content);
/// "Part N = V." at the end of a finished work step: N (0 if none) and V.
std::pair<int, int64_t> result_in(const std::string& content);
/// " Sum A-B: X + Y = V." at the end of a finished node step: A, B (0, 0 if none) and V.
std::tuple<int, int, int64_t> sum_in(const std::string& content);
/// The children of node [a, b] of the sum tree: [a, m] and [m + 1, b].
int tree_split(int a, int b);
/// What an idle worker's step says after its ledger (" I take part 4."), "" while the ledger is
/// not complete; content without a ledger is returned whole.
std::string action_of(const std::string& content);
/// Content with a leading check answer (" yes." / " no.", or a part of it) removed.
std::string strip_answer(const std::string& content);

}  // namespace hogwild::collab
