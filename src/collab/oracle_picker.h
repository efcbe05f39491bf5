// Scripted workers for a real Session: a TokenPicker that ignores the logits and writes, token by
// token, what the oracle (oracle.h) says given the state the worker can see; and a SessionObserver
// that keeps that state (every worker's view at the last forward, as block token ids) and records
// training examples from it.
//
// An example is a worker's view at a moment: the token ids of its view at the forward whose logits
// chose a token, followed by that token; the loss is on the worker's own generated tokens only
// (never on the prompt, layout texts, step prefixes, check questions or other workers' tokens).
//   segments  (several workers) a worker's tokens are cut into segments that end at each decision
//             token (the first token of a step, the type after a check answer, a claimed digit)
//             and at the step's last token; each segment becomes one example holding the exact
//             view at its last token, loss on the segment's tokens. Tokens chosen from others'
//             state are thus trained on exactly the view they were chosen from.
//   whole     (one worker) the whole run as one example, loss on every generated token.
//   ledger    the ledger of an idle worker's step (oracle.h) is computed from the view at the
//   step's
//             start; its tokens form one segment trained on that view followed by the step's own
//             tokens, so the ledger always follows from the view it is trained on (the action
//             after it is chosen, and trained, on the view when it is reached).
// Loss flags: 0 none, 1 a token to train, 2 a token to train with more weight (decision tokens
// and the ledger: train.py --decision-weight). Careless claims (the policy's deliberate
// collisions) are written but carry no loss.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "collab/oracle.h"
#include "collab/problems.h"
#include "hogwild/codec.h"
#include "hogwild/session.h"

namespace hogwild::collab {

/// One training example: token ids and a loss flag per position (flag i: predict token i; 0 none,
/// 1 train, 2 train with the decision weight).
struct Example {
  std::vector<int32_t> tokens;
  std::vector<uint8_t> loss;
  int worker = 0;
};

struct PickerOptions {
  bool whole = false;          // one example of the whole run (use with one worker)
  double careless = 0.0;       // probability of a careless claim when another claims with me
  double keep_decision = 1.0;  // probability of recording a segment that ends at a decision
  double keep_step_end = 1.0;  // probability of recording a segment that ends a step
  double keep_stop = 1.0;      // probability of recording a segment of a stop step (or its EOS)
  double keep_ledger = 1.0;    // probability of recording a ledger segment
  double keep_check_no = 1.0;  // probability of recording a check's " no" (its own segment)
  uint64_t seed = 0;
};

/// Counts of what the scripted workers did (for the generator's summary and tests).
struct PickerStats {
  int64_t claims = 0, careless_claims = 0, switches = 0, checks = 0, check_yes = 0, stops = 0,
          sums = 0, decisions = 0, nodes = 0, ledgers = 0, collisions_yes = 0;
  // Steps of work (a part's equations, a search line), countdown lines that reach the target,
  // countdown final answers.
  int64_t work = 0, found = 0, answers = 0;
  PickerStats& operator+=(const PickerStats& o) {
    claims += o.claims, careless_claims += o.careless_claims, switches += o.switches;
    checks += o.checks, check_yes += o.check_yes, stops += o.stops, sums += o.sums;
    decisions += o.decisions, nodes += o.nodes, ledgers += o.ledgers;
    collisions_yes += o.collisions_yes;
    work += o.work, found += o.found, answers += o.answers;
    return *this;
  }
};

class OraclePicker : public TokenPicker, public SessionObserver {
 public:
  /// The policy: the packs' Oracle (oracle.h) or the countdown search (countdown_oracle.h).
  /// PRECONDITION: oracle, codec outlive the picker; attach() before Session::run.
  OraclePicker(const StepPolicy& oracle, const TextCodec& codec, int n_workers, Layout layout,
               PickerOptions options);
  /// Throws hogwild::Error when the codec has no EOS or the session forbids it (the workers stop
  /// with it).
  void attach(const Session* s);

  int32_t pick(int worker, std::vector<float>& logits) override;
  void on_forward(const ForwardRecord& r) override;
  void on_step_start(int worker, int step, const std::string& bytes, bool check) override;

  std::vector<Example>& examples() { return examples_; }
  const PickerStats& stats() const { return stats_; }

  /// Worker w's view at the last forward, as the oracle reads it (for tests and evaluation).
  std::vector<ViewText> view_text(int w) const;

 private:
  struct Block {  // one block of a view snapshot
    BlockId id;
    ViewText::Kind kind;
    int writer;
    bool finished;
    size_t begin, end;  // range in the worker's snapshot ids
  };
  struct Snapshot {
    std::vector<int32_t> ids;
    std::vector<uint8_t> loss;
    std::vector<Block> blocks;
  };
  struct Pending {
    int32_t token;
    bool decision, trainable, ledger_end;
    uint8_t flag;  // loss flag (0, 1, 2)
  };
  struct Worker {
    bool need_plan = false, check = false, answer_yes = false;
    StepPlan::Kind kind = StepPlan::Kind::stop;
    std::deque<Piece> pieces;
    std::deque<Pending> tokens;
    std::vector<uint8_t> segment;      // loss flags of the segment's tokens so far
    std::deque<uint8_t> unfed;         // loss flags of tokens picked, not yet fed
    Snapshot start;                    // the view at the step's first token
    std::vector<int32_t> step_tokens;  // tokens picked in this step so far
  };

  void count(StepPlan::Kind kind);
  void record(int w, int32_t token, uint8_t flag, bool decision_end, bool ledger_end);

  const StepPolicy& oracle_;
  const TextCodec& codec_;
  int n_workers_;
  Layout layout_;
  PickerOptions opt_;
  Rng rng_;
  const Session* session_ = nullptr;
  BlockId history_ = -1;
  size_t prompt_len_ = 0;
  std::map<BlockId, std::pair<int, int>> owner_;   // block -> (worker, step) of its last feed
  std::map<BlockId, std::vector<uint8_t>> flags_;  // block -> loss flag per token
  std::vector<BlockId> constants_;
  std::vector<Snapshot> snap_;  // (n_workers) views at the last forward
  std::vector<Worker> workers_;
  std::vector<Example> examples_;
  PickerStats stats_;
};

}  // namespace hogwild::collab
