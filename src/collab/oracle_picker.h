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
// Careless claims (the policy's deliberate collisions) are written but carry no loss.
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

/// One training example: token ids and a 0/1 loss flag per position (flag i: predict token i).
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
  uint64_t seed = 0;
};

/// Counts of what the scripted workers did (for the generator's summary and tests).
struct PickerStats {
  int64_t claims = 0, careless_claims = 0, switches = 0, checks = 0, check_yes = 0, stops = 0,
          sums = 0, decisions = 0;
  PickerStats& operator+=(const PickerStats& o) {
    claims += o.claims, careless_claims += o.careless_claims, switches += o.switches;
    checks += o.checks, check_yes += o.check_yes, stops += o.stops, sums += o.sums;
    decisions += o.decisions;
    return *this;
  }
};

class OraclePicker : public TokenPicker, public SessionObserver {
 public:
  /// PRECONDITION: oracle, codec outlive the picker; attach() before Session::run.
  OraclePicker(const Oracle& oracle, const TextCodec& codec, int n_workers, Layout layout,
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
    bool decision, trainable;
  };
  struct Worker {
    bool need_plan = false, check = false;
    StepPlan::Kind kind = StepPlan::Kind::stop;
    std::deque<Piece> pieces;
    std::deque<Pending> tokens;
    std::vector<uint8_t> segment;  // trainable flags of the segment's tokens so far
    std::deque<uint8_t> unfed;     // trainable flags of tokens picked, not yet fed
  };

  void record(int w, int32_t token, bool trainable, bool decision_end);

  const Oracle& oracle_;
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
